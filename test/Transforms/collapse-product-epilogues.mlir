// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-collapse-product-epilogues),canonicalize)' --verify-each | FileCheck %s

#id4 = affine_map<(n, f, h, w) -> (n, f, h, w)>
#chan = affine_map<(n, f, h, w) -> (f)>
#chan4 = affine_map<(n, f, h, w) -> (0, f, 0, 0)>

// A 1x1 convolution's product [F, H*W] reshaped to [1, F, H, W], then a
// bias (per channel, as a 1-D vector and as a [1, F, 1, 1] tensor), a
// residual add and a ReLU: the generic runs on [F, H*W] and reads the bias
// per row and the residual collapsed; the reshape moves after it.
// CHECK-LABEL: func.func @conv_bias_residual
// CHECK-SAME: (%[[W:[^:]*]]: tensor<8x4xf32>, %[[X:[^:]*]]: tensor<4x6xf32>, %[[B:[^:]*]]: tensor<8xf32>, %[[B4:[^:]*]]: tensor<1x8x1x1xf32>, %[[R:[^:]*]]: tensor<1x8x2x3xf32>)
// CHECK: %[[P:.*]] = linalg.matmul
// CHECK-DAG: %[[B1:.*]] = tensor.collapse_shape %[[B4]] {{\[}}[0, 1, 2, 3]] : tensor<1x8x1x1xf32> into tensor<8xf32>
// CHECK-DAG: %[[R2:.*]] = tensor.collapse_shape %[[R]] {{\[}}[0, 1], [2, 3]] : tensor<1x8x2x3xf32> into tensor<8x6xf32>
// CHECK: %[[G:.*]] = linalg.generic {indexing_maps = [#[[FULL:.*]], #[[ROW:.*]], #[[ROW]], #[[FULL]], #[[FULL]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%[[P]], %[[B]], %[[B1]], %[[R2]] : tensor<8x6xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x6xf32>)
// CHECK-SAME: outs(%{{.*}} : tensor<8x6xf32>)
// CHECK: %[[E:.*]] = tensor.expand_shape %[[G]] {{\[}}[0, 1], [2, 3]] output_shape [1, 8, 2, 3]
// CHECK: return %[[E]]
func.func @conv_bias_residual(%w: tensor<8x4xf32>, %x: tensor<4x6xf32>,
    %b: tensor<8xf32>, %b4: tensor<1x8x1x1xf32>, %r: tensor<1x8x2x3xf32>) -> tensor<1x8x2x3xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x6xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x6xf32>) -> tensor<8x6xf32>
  %p = linalg.matmul ins(%w, %x : tensor<8x4xf32>, tensor<4x6xf32>) outs(%f : tensor<8x6xf32>) -> tensor<8x6xf32>
  %p4 = tensor.expand_shape %p [[0, 1], [2, 3]] output_shape [1, 8, 2, 3] : tensor<8x6xf32> into tensor<1x8x2x3xf32>
  %o = tensor.empty() : tensor<1x8x2x3xf32>
  %g = linalg.generic {indexing_maps = [#id4, #chan, #chan4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%p4, %b, %b4, %r : tensor<1x8x2x3xf32>, tensor<8xf32>, tensor<1x8x1x1xf32>, tensor<1x8x2x3xf32>) outs(%o : tensor<1x8x2x3xf32>) {
  ^bb0(%v: f32, %bias: f32, %bias4: f32, %res: f32, %out: f32):
    %0 = arith.addf %v, %bias : f32
    %1 = arith.addf %0, %bias4 : f32
    %2 = arith.addf %1, %res : f32
    %3 = arith.maximumf %2, %z : f32
    linalg.yield %3 : f32
  } -> tensor<1x8x2x3xf32>
  return %g : tensor<1x8x2x3xf32>
}

#id3 = affine_map<(b, s, c) -> (b, s, c)>
#col = affine_map<(b, s, c) -> (c)>

// A linear layer [S, C] -> [1, S, C] with its bias along the columns.
// CHECK-LABEL: func.func @linear_bias
// CHECK: %[[P:.*]] = linalg.matmul
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[COL:.*]], #{{.*}}]
// CHECK-SAME: ins(%[[P]], %{{.*}} : tensor<4x16xf32>, tensor<16xf32>)
// CHECK: tensor.expand_shape {{.*}} output_shape [1, 4, 16]
func.func @linear_bias(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<1x4x16xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %p = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
  %p3 = tensor.expand_shape %p [[0, 1], [2]] output_shape [1, 4, 16] : tensor<4x16xf32> into tensor<1x4x16xf32>
  %o = tensor.empty() : tensor<1x4x16xf32>
  %g = linalg.generic {indexing_maps = [#id3, #col, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%p3, %b : tensor<1x4x16xf32>, tensor<16xf32>) outs(%o : tensor<1x4x16xf32>) {
  ^bb0(%v: f32, %bias: f32, %out: f32):
    %0 = arith.addf %v, %bias : f32
    linalg.yield %0 : f32
  } -> tensor<1x4x16xf32>
  return %g : tensor<1x4x16xf32>
}

#hmap = affine_map<(n, f, h, w) -> (h)>

// Left alone: a result that is padded (pad-into-producer writes it into
// the padded buffer), and an operand that varies along part of a group
// (h of the columns' h * w).
// CHECK-LABEL: func.func @left_alone
// CHECK-COUNT-2: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel"]
func.func @left_alone(%w: tensor<8x4xf32>, %x: tensor<4x6xf32>, %w2: tensor<8x4xf32>, %h: tensor<2xf32>) -> (tensor<1x8x4x5xf32>, tensor<1x8x2x3xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x6xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x6xf32>) -> tensor<8x6xf32>
  %p = linalg.matmul ins(%w, %x : tensor<8x4xf32>, tensor<4x6xf32>) outs(%f : tensor<8x6xf32>) -> tensor<8x6xf32>
  %p4 = tensor.expand_shape %p [[0, 1], [2, 3]] output_shape [1, 8, 2, 3] : tensor<8x6xf32> into tensor<1x8x2x3xf32>
  %o = tensor.empty() : tensor<1x8x2x3xf32>
  %g = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%p4 : tensor<1x8x2x3xf32>) outs(%o : tensor<1x8x2x3xf32>) {
  ^bb0(%v: f32, %out: f32):
    %0 = arith.maximumf %v, %z : f32
    linalg.yield %0 : f32
  } -> tensor<1x8x2x3xf32>
  %pad = tensor.pad %g low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %z : f32
  } : tensor<1x8x2x3xf32> to tensor<1x8x4x5xf32>
  %p2 = linalg.matmul ins(%w2, %x : tensor<8x4xf32>, tensor<4x6xf32>) outs(%f : tensor<8x6xf32>) -> tensor<8x6xf32>
  %q4 = tensor.expand_shape %p2 [[0, 1], [2, 3]] output_shape [1, 8, 2, 3] : tensor<8x6xf32> into tensor<1x8x2x3xf32>
  %g2 = linalg.generic {indexing_maps = [#id4, #hmap, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%q4, %h : tensor<1x8x2x3xf32>, tensor<2xf32>) outs(%o : tensor<1x8x2x3xf32>) {
  ^bb0(%v: f32, %hv: f32, %out: f32):
    %0 = arith.addf %v, %hv : f32
    linalg.yield %0 : f32
  } -> tensor<1x8x2x3xf32>
  return %pad, %g2 : tensor<1x8x4x5xf32>, tensor<1x8x2x3xf32>
}

// A padded result whose only reader is a depthwise convolution is collapsed
// after all: that kernel reads the unpadded tensor in place.
// CHECK-LABEL: func.func @into_depthwise
// CHECK: %[[P:.*]] = linalg.matmul
// CHECK: %[[G:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK-SAME: ins(%[[P]]
// CHECK: %[[E:.*]] = tensor.expand_shape %[[G]]
// CHECK: tensor.pad %[[E]]
func.func @into_depthwise(%w: tensor<8x4xf32>, %x: tensor<4x6xf32>, %dw: tensor<8x3x3xf32>) -> tensor<1x8x2x3xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x6xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x6xf32>) -> tensor<8x6xf32>
  %p = linalg.matmul ins(%w, %x : tensor<8x4xf32>, tensor<4x6xf32>) outs(%f : tensor<8x6xf32>) -> tensor<8x6xf32>
  %p4 = tensor.expand_shape %p [[0, 1], [2, 3]] output_shape [1, 8, 2, 3] : tensor<8x6xf32> into tensor<1x8x2x3xf32>
  %o = tensor.empty() : tensor<1x8x2x3xf32>
  %g = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%p4 : tensor<1x8x2x3xf32>) outs(%o : tensor<1x8x2x3xf32>) {
  ^bb0(%v: f32, %out: f32):
    %0 = arith.maximumf %v, %z : f32
    linalg.yield %0 : f32
  } -> tensor<1x8x2x3xf32>
  %pad = tensor.pad %g low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %z : f32
  } : tensor<1x8x2x3xf32> to tensor<1x8x4x5xf32>
  %c = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%pad, %dw : tensor<1x8x4x5xf32>, tensor<8x3x3xf32>) outs(%o : tensor<1x8x2x3xf32>) -> tensor<1x8x2x3xf32>
  return %c : tensor<1x8x2x3xf32>
}
