// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-fuse-elementwise{keep-conv-epilogues}))' --verify-each | FileCheck %s --check-prefix=KEEP
// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-fuse-elementwise))' --verify-each | FileCheck %s --check-prefix=FUSE

#id4 = affine_map<(n, c, h, w) -> (n, c, h, w)>
#bias = affine_map<(n, c, h, w) -> (c, 0, 0)>

// A depthwise convolution's bias and ReLU read by two consumers (squeeze-
// excite's scaling and a residual add): on the CPU it stays one generic
// (the convolution's kernel applies it) that both read; by default it is
// recomputed in each consumer.
// KEEP-LABEL: func.func @two_consumers
// KEEP: %[[D:.*]] = linalg.depthwise_conv_2d_nchw_chw
// KEEP: %[[A:.*]] = linalg.generic {{.*}} ins(%[[D]], %{{.*}} : tensor<1x4x6x6xf32>, tensor<4x1x1xf32>)
// KEEP: linalg.generic {{.*}} ins(%[[A]], %{{.*}} : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>)
// KEEP: linalg.generic {{.*}} ins(%[[A]], %{{.*}} : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>)
// FUSE-LABEL: func.func @two_consumers
// FUSE: %[[D:.*]] = linalg.depthwise_conv_2d_nchw_chw
// FUSE-COUNT-2: linalg.generic {{.*}} ins(%[[D]],
func.func @two_consumers(%x: tensor<1x4x8x8xf32>, %w: tensor<4x3x3xf32>, %b: tensor<4x1x1xf32>,
                         %s: tensor<1x4x6x6xf32>, %r: tensor<1x4x6x6xf32>) -> (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4x6x6xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %d = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x4x8x8xf32>, tensor<4x3x3xf32>) outs(%f : tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %a = linalg.generic {indexing_maps = [#id4, #bias, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%d, %b : tensor<1x4x6x6xf32>, tensor<4x1x1xf32>) outs(%e : tensor<1x4x6x6xf32>) {
  ^bb0(%v: f32, %bv: f32, %out: f32):
    %0 = arith.addf %v, %bv : f32
    %1 = arith.maximumf %0, %z : f32
    linalg.yield %1 : f32
  } -> tensor<1x4x6x6xf32>
  %m = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%a, %s : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) outs(%e : tensor<1x4x6x6xf32>) {
  ^bb0(%v: f32, %sv: f32, %out: f32):
    %0 = arith.mulf %v, %sv : f32
    linalg.yield %0 : f32
  } -> tensor<1x4x6x6xf32>
  %n = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%a, %r : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) outs(%e : tensor<1x4x6x6xf32>) {
  ^bb0(%v: f32, %rv: f32, %out: f32):
    %0 = arith.addf %v, %rv : f32
    linalg.yield %0 : f32
  } -> tensor<1x4x6x6xf32>
  return %m, %n : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>
}
