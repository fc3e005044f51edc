// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-conv-to-matmul))' --verify-each | FileCheck %s

// 3x3 stride-2 convolution of one image: the im2col copy reads the input
// through (oh * 2 + kh, ow * 2 + kw); W[8, 3*3*3] x col[27, 4*4] is a
// matmul, reshaped back to NCHW without a copy.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d3, d0, d4 * 2 + d1, d5 * 2 + d2)>
// CHECK-LABEL: func.func @strided
// CHECK: %[[COL:.*]] = linalg.generic {indexing_maps = [#[[IN]], {{.*}}]
// CHECK: } -> tensor<3x3x3x1x4x4xf32>
// CHECK: %[[C2:.*]] = tensor.collapse_shape %[[COL]] {{\[}}[0, 1, 2], [3, 4, 5]] {{.*}} into tensor<27x16xf32>
// CHECK: %[[W2:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0], [1, 2, 3]] {{.*}} into tensor<8x27xf32>
// CHECK: %[[FILL:.*]] = linalg.fill ins(%{{.*}} : f32) {{.*}} -> tensor<8x16xf32>
// CHECK: linalg.matmul ins(%[[W2]], %[[C2]] : tensor<8x27xf32>, tensor<27x16xf32>) outs(%[[FILL]]
// CHECK-NOT: linalg.transpose
// CHECK-NOT: linalg.conv
// CHECK: return {{.*}} : tensor<1x8x4x4xf32>
func.func @strided(%x: tensor<1x3x9x9xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<1x8x4x4xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x4x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : tensor<1x3x9x9xf32>, tensor<8x3x3x3xf32>) outs(%f : tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  return %r : tensor<1x8x4x4xf32>
}

// A 1x1 stride-1 convolution of one image needs no copy at all.
// CHECK-LABEL: func.func @pointwise
// CHECK-NOT: linalg.generic
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0, 1], [2, 3]] {{.*}} into tensor<16x25xf32>
// CHECK: linalg.matmul ins({{.*}} : tensor<32x16xf32>, tensor<16x25xf32>)
func.func @pointwise(%x: tensor<1x16x5x5xf32>, %w: tensor<32x16x1x1xf32>) -> tensor<1x32x5x5xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x32x5x5xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x32x5x5xf32>) -> tensor<1x32x5x5xf32>
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x16x5x5xf32>, tensor<32x16x1x1xf32>) outs(%f : tensor<1x32x5x5xf32>) -> tensor<1x32x5x5xf32>
  return %r : tensor<1x32x5x5xf32>
}

// Two images: per-image column matrices [N, C*KH*KW, OH*OW] and one
// batch_matmul whose weights are shared by the batch; the product is
// already [N, F, OH*OW], so no transpose follows.
// CHECK-LABEL: func.func @batched
// CHECK: } -> tensor<2x2x3x3x3x3xf32>
// CHECK: tensor.collapse_shape {{.*}} into tensor<2x18x9xf32>
// CHECK: linalg.batch_matmul indexing_maps = [{{.*}}] ins({{.*}} : tensor<4x18xf32>, tensor<2x18x9xf32>) {{.*}} -> tensor<2x4x9xf32>
// CHECK-NOT: linalg.transpose
// CHECK: tensor.expand_shape {{.*}} into tensor<2x4x3x3xf32>

// Two images through a 1x1 convolution: the input already is [N, C, H*W].
// CHECK-LABEL: func.func @batched_pointwise
// CHECK-NOT: linalg.generic
// CHECK: tensor.collapse_shape %arg0 {{\[}}[0], [1], [2, 3]] {{.*}} into tensor<2x16x25xf32>
// CHECK: linalg.batch_matmul
func.func @batched(%x: tensor<2x2x5x5xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<2x4x3x3xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4x3x3xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x4x3x3xf32>) -> tensor<2x4x3x3xf32>
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<2x2x5x5xf32>, tensor<4x2x3x3xf32>) outs(%f : tensor<2x4x3x3xf32>) -> tensor<2x4x3x3xf32>
  return %r : tensor<2x4x3x3xf32>
}

func.func @batched_pointwise(%x: tensor<2x16x5x5xf32>, %w: tensor<32x16x1x1xf32>) -> tensor<2x32x5x5xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x32x5x5xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x32x5x5xf32>) -> tensor<2x32x5x5xf32>
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<2x16x5x5xf32>, tensor<32x16x1x1xf32>) outs(%f : tensor<2x32x5x5xf32>) -> tensor<2x32x5x5xf32>
  return %r : tensor<2x32x5x5xf32>
}

// Grouped: one product per group, as a batch_matmul over G.
// CHECK-LABEL: func.func @grouped
// CHECK: linalg.generic
// CHECK: } -> tensor<2x2x3x3x1x3x3xf32>
// CHECK: linalg.batch_matmul ins({{.*}} : tensor<2x3x18xf32>, tensor<2x18x9xf32>)
// CHECK: return {{.*}} : tensor<1x2x3x3x3xf32>
func.func @grouped(%x: tensor<1x2x2x5x5xf32>, %w: tensor<2x3x2x3x3xf32>) -> tensor<1x2x3x3x3xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x3x3x3xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x2x3x3x3xf32>) -> tensor<1x2x3x3x3xf32>
  %r = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x2x2x5x5xf32>, tensor<2x3x2x3x3xf32>) outs(%f : tensor<1x2x3x3x3xf32>) -> tensor<1x2x3x3x3xf32>
  return %r : tensor<1x2x3x3x3xf32>
}

// Depthwise convolutions stay as they are.
// CHECK-LABEL: func.func @depthwise
// CHECK: linalg.depthwise_conv_2d_nchw_chw
func.func @depthwise(%x: tensor<1x4x5x5xf32>, %w: tensor<4x3x3xf32>, %o: tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32> {
  %r = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x4x5x5xf32>, tensor<4x3x3xf32>) outs(%o : tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  return %r : tensor<1x4x3x3xf32>
}

// A dynamic batch: per-image products whose batch is the run-time N, the
// column buffer and the result sized from the input's dim 0.
// CHECK-LABEL: func.func @dynamic_batch
// CHECK: linalg.fill
// CHECK: %[[N:.*]] = tensor.dim %arg0, %{{.*}} : tensor<?x2x5x5xf32>
// CHECK-NEXT: tensor.empty(%[[N]]) : tensor<?x2x3x3x3x3xf32>
// CHECK: linalg.batch_matmul {{.*}} ins({{.*}} : tensor<4x18xf32>, tensor<?x18x9xf32>)
// CHECK: tensor.expand_shape {{.*}} output_shape [%[[N]], 4, 3, 3] : tensor<?x4x9xf32> into tensor<?x4x3x3xf32>
// CHECK-NOT: linalg.conv
func.func @dynamic_batch(%x: tensor<?x2x5x5xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<?x4x3x3xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x2x5x5xf32>
  %e = tensor.empty(%n) : tensor<?x4x3x3xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x4x3x3xf32>) -> tensor<?x4x3x3xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<?x2x5x5xf32>, tensor<4x2x3x3xf32>) outs(%f : tensor<?x4x3x3xf32>) -> tensor<?x4x3x3xf32>
  return %c : tensor<?x4x3x3xf32>
}

// Grouped with a dynamic batch: N*OH*OW columns per group, then the
// transpose back to NGFHW into a tensor sized by N.
// CHECK-LABEL: func.func @dynamic_grouped
// CHECK: linalg.batch_matmul ins({{.*}} : tensor<2x3x18xf32>, tensor<2x18x?xf32>)
// CHECK: linalg.transpose
// CHECK-NOT: linalg.conv
func.func @dynamic_grouped(%x: tensor<?x2x2x5x5xf32>, %w: tensor<2x3x2x3x3xf32>) -> tensor<?x2x3x3x3xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x2x2x5x5xf32>
  %e = tensor.empty(%n) : tensor<?x2x3x3x3xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x2x3x3x3xf32>) -> tensor<?x2x3x3x3xf32>
  %c = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<?x2x2x5x5xf32>, tensor<2x3x2x3x3xf32>) outs(%f : tensor<?x2x3x3x3xf32>) -> tensor<?x2x3x3x3xf32>
  return %c : tensor<?x2x3x3x3xf32>
}
