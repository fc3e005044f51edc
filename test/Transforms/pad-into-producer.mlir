// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-pad-into-producer))' --verify-each | FileCheck %s

// The pad's border strips are filled (top, bottom, then left and right
// within the interior rows); the elementwise producer writes its result
// straight into the interior of the padded tensor, which then holds it.
// CHECK-LABEL: func.func @into_producer
// CHECK: %[[P:.*]] = bufferization.alloc_tensor() : tensor<1x2x6x7xf32>
// CHECK: tensor.extract_slice %[[P]][0, 0, 0, 0] [1, 2, 1, 7]
// CHECK: linalg.fill
// CHECK: tensor.extract_slice {{.*}}[0, 0, 5, 0] [1, 2, 1, 7]
// CHECK: linalg.fill
// CHECK: tensor.extract_slice {{.*}}[0, 0, 1, 0] [1, 2, 4, 1]
// CHECK: linalg.fill
// CHECK: tensor.extract_slice {{.*}}[0, 0, 1, 5] [1, 2, 4, 2]
// CHECK: %[[F:.*]] = tensor.insert_slice
// CHECK: %[[IN:.*]] = tensor.extract_slice %[[F]][0, 0, 1, 1] [1, 2, 4, 4]
// CHECK: %[[R:.*]] = linalg.generic {{.*}} outs(%[[IN]] : tensor<1x2x4x4xf32>)
// CHECK: %[[OUT:.*]] = tensor.insert_slice %[[R]] into %[[F]][0, 0, 1, 1] [1, 2, 4, 4]
// CHECK-NOT: tensor.pad
// CHECK: return %[[OUT]]
func.func @into_producer(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x6x7xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x4x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<1x2x4x4xf32>) outs(%e : tensor<1x2x4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x2x4x4xf32>
  %p = tensor.pad %r low[0, 0, 1, 1] high[0, 0, 1, 2] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x2x4x4xf32> to tensor<1x2x6x7xf32>
  return %p : tensor<1x2x6x7xf32>
}

// A source with another reader (or no linalg producer) is inserted as it is.
// CHECK-LABEL: func.func @shared_source
// CHECK: bufferization.alloc_tensor() : tensor<1x1x4x4xf32>
// CHECK-COUNT-4: linalg.fill
// CHECK: tensor.insert_slice %arg0 into {{.*}}[0, 0, 1, 1] [1, 1, 2, 2]
// CHECK-NOT: tensor.pad
func.func @shared_source(%x: tensor<1x1x2x2xf32>) -> (tensor<1x1x4x4xf32>, tensor<1x1x2x2xf32>) {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x1x2x2xf32> to tensor<1x1x4x4xf32>
  return %p, %x : tensor<1x1x4x4xf32>, tensor<1x1x2x2xf32>
}

// Dynamic shapes keep the pad.
// CHECK-LABEL: func.func @dynamic
// CHECK: tensor.pad
func.func @dynamic(%x: tensor<?x1x2x2xf32>) -> tensor<?x1x4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<?x1x2x2xf32> to tensor<?x1x4x4xf32>
  return %p : tensor<?x1x4x4xf32>
}

// Behind a reshape that only adds a unit dim (a convolution run as one
// group pads [N, 1, C, H, W]), the producer writes a rank-reduced interior
// slice and its result goes back in rank-reduced: no reshape between them
// for bufferization to copy through.
// CHECK-LABEL: func.func @through_unit_reshape
// CHECK: %[[P:.*]] = bufferization.alloc_tensor() : tensor<1x1x2x6x6xf32>
// CHECK: %[[IN:.*]] = tensor.extract_slice %{{.*}}[0, 0, 0, 1, 1] [1, 1, 2, 4, 4] [1, 1, 1, 1, 1] : tensor<1x1x2x6x6xf32> to tensor<1x2x4x4xf32>
// CHECK: %[[R:.*]] = linalg.generic {{.*}} outs(%[[IN]] : tensor<1x2x4x4xf32>)
// CHECK: %[[OUT:.*]] = tensor.insert_slice %[[R]] into %{{.*}}[0, 0, 0, 1, 1] [1, 1, 2, 4, 4] [1, 1, 1, 1, 1] : tensor<1x2x4x4xf32> into tensor<1x1x2x6x6xf32>
// CHECK-NOT: tensor.pad
// CHECK: return %[[OUT]]
func.func @through_unit_reshape(%x: tensor<1x2x4x4xf32>) -> tensor<1x1x2x6x6xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x4x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<1x2x4x4xf32>) outs(%e : tensor<1x2x4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x2x4x4xf32>
  %ex = tensor.expand_shape %r [[0, 1], [2], [3], [4]] output_shape [1, 1, 2, 4, 4] : tensor<1x2x4x4xf32> into tensor<1x1x2x4x4xf32>
  %p = tensor.pad %ex low[0, 0, 0, 1, 1] high[0, 0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index, %e2: index):
    tensor.yield %zero : f32
  } : tensor<1x1x2x4x4xf32> to tensor<1x1x2x6x6xf32>
  return %p : tensor<1x1x2x6x6xf32>
}

// A depthwise convolution's zero padding is read in place by the CPU kernel
// (mcc-vectorize-depthwise-conv drops the buffer built here): the producer
// keeps its own result, which is copied into the interior, so that a
// product's epilogue can write it.
// CHECK-LABEL: func.func @depthwise_input
// CHECK: %[[R:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x4x4xf32>)
// CHECK: bufferization.alloc_tensor() : tensor<1x2x6x6xf32>
// CHECK-COUNT-4: linalg.fill
// CHECK: %[[P:.*]] = tensor.insert_slice %[[R]] into {{.*}}[0, 0, 1, 1] [1, 2, 4, 4]
// CHECK: linalg.depthwise_conv_2d_nchw_chw {{.*}} ins(%[[P]],
func.func @depthwise_input(%x: tensor<1x2x4x4xf32>, %w: tensor<2x3x3xf32>, %o: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x4x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<1x2x4x4xf32>) outs(%e : tensor<1x2x4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x2x4x4xf32>
  %p = tensor.pad %r low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x2x4x4xf32> to tensor<1x2x6x6xf32>
  %c = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%p, %w : tensor<1x2x6x6xf32>, tensor<2x3x3xf32>) outs(%o : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %c : tensor<1x2x4x4xf32>
}
