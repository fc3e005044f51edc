// A small CNN over a dynamic batch N: padded strided 3x3 convolution with
// bias and ReLU, max pool, 1x1 convolution, depthwise and grouped 3x3
// convolutions, global pooling and a classifier, against its static twins.
// RUN: %dynamic_check %t %s '1x3x18x18;1x32x4x4,1x10' '3x3x18x18;3x32x4x4,3x10' | FileCheck %s --check-prefix=EXEC
// RUN: mcc-opt %s --mcc-cpu-fuse | FileCheck %s --check-prefix=FUSE
// RUN: mcc-opt %s --mcc-cpu-pipeline --verify-each | FileCheck %s

// EXEC-COUNT-4: ok
// EXEC-NOT: MISMATCH

// Plain convolutions become per-image products with shared weights, the
// grouped one a product per group over N*OH*OW columns.
// FUSE-LABEL: func.func @forward
// FUSE: linalg.batch_matmul {{.*}} ins({{.*}} : tensor<16x27xf32>, tensor<?x27x81xf32>)
// FUSE: linalg.pooling_nchw_max
// FUSE: linalg.batch_matmul {{.*}} ins({{.*}} : tensor<32x16xf32>, tensor<?x16x16xf32>)
// FUSE: linalg.depthwise_conv_2d_nchw_chw
// FUSE: linalg.batch_matmul ins({{.*}} : tensor<4x8x72xf32>, tensor<4x72x?xf32>)
// FUSE: linalg.matmul

// CHECK-LABEL: llvm.func @forward
// CHECK: omp.wsloop
#nchw = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#chan = affine_map<(d0, d1, d2, d3) -> (d1, 0, 0)>
func.func @forward(%x: tensor<?x3x18x18xf32>, %w1: tensor<16x3x3x3xf32>, %b1: tensor<16x1x1xf32>, %w2: tensor<32x16x1x1xf32>, %wd: tensor<32x3x3xf32>, %wg: tensor<4x8x8x3x3xf32>, %fc: tensor<32x10xf32>) -> (tensor<?x32x4x4xf32>, tensor<?x10xf32>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x3x18x18xf32>
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  // 3x3 stride-2 convolution of the padded input, bias + relu
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %zero : f32
  } : tensor<?x3x18x18xf32> to tensor<?x3x20x20xf32>
  %e1 = tensor.empty(%n) : tensor<?x16x9x9xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<?x16x9x9xf32>) -> tensor<?x16x9x9xf32>
  %c1 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%p, %w1 : tensor<?x3x20x20xf32>, tensor<16x3x3x3xf32>) outs(%f1 : tensor<?x16x9x9xf32>) -> tensor<?x16x9x9xf32>
  %e2 = tensor.empty(%n) : tensor<?x16x9x9xf32>
  %r1 = linalg.generic {indexing_maps = [#nchw, #chan, #nchw], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c1, %b1 : tensor<?x16x9x9xf32>, tensor<16x1x1xf32>) outs(%e2 : tensor<?x16x9x9xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    %m = arith.maximumf %s, %zero : f32
    linalg.yield %m : f32
  } -> tensor<?x16x9x9xf32>
  // 3x3 stride-2 max pool
  %win = tensor.empty() : tensor<3x3xf32>
  %e3 = tensor.empty(%n) : tensor<?x16x4x4xf32>
  %f3 = linalg.fill ins(%ninf : f32) outs(%e3 : tensor<?x16x4x4xf32>) -> tensor<?x16x4x4xf32>
  %mp = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%r1, %win : tensor<?x16x9x9xf32>, tensor<3x3xf32>) outs(%f3 : tensor<?x16x4x4xf32>) -> tensor<?x16x4x4xf32>
  // 1x1 convolution to 32 channels
  %e4 = tensor.empty(%n) : tensor<?x32x4x4xf32>
  %f4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<?x32x4x4xf32>) -> tensor<?x32x4x4xf32>
  %c2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%mp, %w2 : tensor<?x16x4x4xf32>, tensor<32x16x1x1xf32>) outs(%f4 : tensor<?x32x4x4xf32>) -> tensor<?x32x4x4xf32>
  // depthwise 3x3, padded
  %p2 = tensor.pad %c2 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %zero : f32
  } : tensor<?x32x4x4xf32> to tensor<?x32x6x6xf32>
  %e5 = tensor.empty(%n) : tensor<?x32x4x4xf32>
  %f5 = linalg.fill ins(%zero : f32) outs(%e5 : tensor<?x32x4x4xf32>) -> tensor<?x32x4x4xf32>
  %dw = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%p2, %wd : tensor<?x32x6x6xf32>, tensor<32x3x3xf32>) outs(%f5 : tensor<?x32x4x4xf32>) -> tensor<?x32x4x4xf32>
  // grouped 3x3 (4 groups of 8), padded
  %p3 = tensor.pad %dw low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %zero : f32
  } : tensor<?x32x4x4xf32> to tensor<?x32x6x6xf32>
  %xg = tensor.expand_shape %p3 [[0], [1, 2], [3], [4]] output_shape [%n, 4, 8, 6, 6] : tensor<?x32x6x6xf32> into tensor<?x4x8x6x6xf32>
  %e6 = tensor.empty(%n) : tensor<?x4x8x4x4xf32>
  %f6 = linalg.fill ins(%zero : f32) outs(%e6 : tensor<?x4x8x4x4xf32>) -> tensor<?x4x8x4x4xf32>
  %gc = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%xg, %wg : tensor<?x4x8x6x6xf32>, tensor<4x8x8x3x3xf32>) outs(%f6 : tensor<?x4x8x4x4xf32>) -> tensor<?x4x8x4x4xf32>
  %y = tensor.collapse_shape %gc [[0], [1, 2], [3], [4]] : tensor<?x4x8x4x4xf32> into tensor<?x32x4x4xf32>
  // global average pool and a classifier
  %e7 = tensor.empty(%n) : tensor<?x32xf32>
  %f7 = linalg.fill ins(%zero : f32) outs(%e7 : tensor<?x32xf32>) -> tensor<?x32xf32>
  %gp = linalg.generic {indexing_maps = [#nchw, affine_map<(d0, d1, d2, d3) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%y : tensor<?x32x4x4xf32>) outs(%f7 : tensor<?x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<?x32xf32>
  %e8 = tensor.empty(%n) : tensor<?x10xf32>
  %f8 = linalg.fill ins(%zero : f32) outs(%e8 : tensor<?x10xf32>) -> tensor<?x10xf32>
  %lg = linalg.matmul ins(%gp, %fc : tensor<?x32xf32>, tensor<32x10xf32>) outs(%f8 : tensor<?x10xf32>) -> tensor<?x10xf32>
  return %y, %lg : tensor<?x32x4x4xf32>, tensor<?x10xf32>
}
