// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-conv-to-matmul{direct-grouped}))' --verify-each | FileCheck %s

// With direct-grouped (the CPU pipeline), a grouped 3x3 convolution with
// output rows of at least 12 stays a convolution for
// mcc-vectorize-grouped-conv: no im2col, no batch_matmul.
// CHECK-LABEL: func.func @wide_rows
// CHECK-NOT: linalg.batch_matmul
// CHECK: linalg.conv_2d_ngchw_gfchw
// CHECK-NOT: linalg.batch_matmul
func.func @wide_rows(%x: tensor<1x2x4x16x16xf32>, %w: tensor<2x4x4x3x3xf32>) -> tensor<1x2x4x14x14xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x4x14x14xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x2x4x14x14xf32>) -> tensor<1x2x4x14x14xf32>
  %r = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x2x4x16x16xf32>, tensor<2x4x4x3x3xf32>) outs(%f : tensor<1x2x4x14x14xf32>) -> tensor<1x2x4x14x14xf32>
  return %r : tensor<1x2x4x14x14xf32>
}

// Rows narrower than 12 (a 7x7 stage) and 1x1 windows still become
// products.
// CHECK-LABEL: func.func @narrow_rows
// CHECK: linalg.batch_matmul
// CHECK-NOT: linalg.conv_2d_ngchw_gfchw
func.func @narrow_rows(%x: tensor<1x2x4x9x9xf32>, %w: tensor<2x4x4x3x3xf32>) -> tensor<1x2x4x7x7xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x4x7x7xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x2x4x7x7xf32>) -> tensor<1x2x4x7x7xf32>
  %r = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x2x4x9x9xf32>, tensor<2x4x4x3x3xf32>) outs(%f : tensor<1x2x4x7x7xf32>) -> tensor<1x2x4x7x7xf32>
  return %r : tensor<1x2x4x7x7xf32>
}

// CHECK-LABEL: func.func @pointwise
// CHECK: linalg.batch_matmul
// CHECK-NOT: linalg.conv_2d_ngchw_gfchw
func.func @pointwise(%x: tensor<1x2x4x16x16xf32>, %w: tensor<2x4x4x1x1xf32>) -> tensor<1x2x4x16x16xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x4x16x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x2x4x16x16xf32>) -> tensor<1x2x4x16x16xf32>
  %r = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x2x4x16x16xf32>, tensor<2x4x4x1x1xf32>) outs(%f : tensor<1x2x4x16x16xf32>) -> tensor<1x2x4x16x16xf32>
  return %r : tensor<1x2x4x16x16xf32>
}
