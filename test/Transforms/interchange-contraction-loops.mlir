// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-interchange-contraction-loops))' --verify-each | FileCheck %s

// A non-f32 matmul (m, n, k) becomes a generic iterating (m, k, n): the
// innermost loop walks a row of C and B with unit stride. f32 products stay
// named for mcc-register-tile-matmul.
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func.func @matmul
// CHECK: linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[C]]], iterator_types = ["parallel", "reduction", "parallel"]}
func.func @matmul(%a: tensor<4x8xi32>, %b: tensor<8x16xi32>, %c: tensor<4x16xi32>) -> tensor<4x16xi32> {
  %m = linalg.matmul ins(%a, %b : tensor<4x8xi32>, tensor<8x16xi32>) outs(%c : tensor<4x16xi32>) -> tensor<4x16xi32>
  return %m : tensor<4x16xi32>
}

// CHECK-LABEL: func.func @matmul_f32
// CHECK: linalg.matmul
// CHECK: linalg.batch_matmul
func.func @matmul_f32(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<4x16xf32>,
                      %x: tensor<2x4x8xf32>, %y: tensor<2x8x16xf32>, %z: tensor<2x4x16xf32>) -> (tensor<4x16xf32>, tensor<2x4x16xf32>) {
  %m = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%c : tensor<4x16xf32>) -> tensor<4x16xf32>
  %n = linalg.batch_matmul ins(%x, %y : tensor<2x4x8xf32>, tensor<2x8x16xf32>) outs(%z : tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  return %m, %n : tensor<4x16xf32>, tensor<2x4x16xf32>
}

// CHECK-LABEL: func.func @batch_matmul
// CHECK: iterator_types = ["parallel", "parallel", "reduction", "parallel"]
func.func @batch_matmul(%a: tensor<2x4x8xf64>, %b: tensor<2x8x16xf64>, %c: tensor<2x4x16xf64>) -> tensor<2x4x16xf64> {
  %m = linalg.batch_matmul ins(%a, %b : tensor<2x4x8xf64>, tensor<2x8x16xf64>) outs(%c : tensor<2x4x16xf64>) -> tensor<2x4x16xf64>
  return %m : tensor<2x4x16xf64>
}

// Convolution: output width last, reductions (c, kh, kw) before it.
// CHECK-LABEL: func.func @conv
// CHECK: iterator_types = ["parallel", "parallel", "reduction", "reduction", "reduction", "parallel", "parallel"]
func.func @conv(%x: tensor<1x3x10x10xf32>, %w: tensor<8x3x3x3xf32>, %o: tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32> {
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x3x10x10xf32>, tensor<8x3x3x3xf32>) outs(%o : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  return %r : tensor<1x8x8x8xf32>
}

// Depthwise: an f32 one stays named for mcc-vectorize-depthwise-conv;
// others iterate (n, c, kh, kw, oh, ow).
// CHECK-LABEL: func.func @depthwise
// CHECK: linalg.depthwise_conv_2d_nchw_chw
// CHECK: iterator_types = ["parallel", "parallel", "reduction", "reduction", "parallel", "parallel"]
func.func @depthwise(%x: tensor<1x3x10x10xf32>, %w: tensor<3x3x3xf32>, %o: tensor<1x3x8x8xf32>,
                     %y: tensor<1x3x10x10xf64>, %v: tensor<3x3x3xf64>, %p: tensor<1x3x8x8xf64>) -> (tensor<1x3x8x8xf32>, tensor<1x3x8x8xf64>) {
  %r = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x3x10x10xf32>, tensor<3x3x3xf32>) outs(%o : tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
  %s = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%y, %v : tensor<1x3x10x10xf64>, tensor<3x3x3xf64>) outs(%p : tensor<1x3x8x8xf64>) -> tensor<1x3x8x8xf64>
  return %r, %s : tensor<1x3x8x8xf32>, tensor<1x3x8x8xf64>
}

// Elementwise ops are left alone.
// CHECK-LABEL: func.func @other
// CHECK: linalg.transpose
func.func @other(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %t = linalg.transpose ins(%a : tensor<4x8xf32>) outs(%b : tensor<8x4xf32>) permutation = [1, 0]
  return %t : tensor<8x4xf32>
}
