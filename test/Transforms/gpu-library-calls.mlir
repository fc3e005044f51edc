// RUN: mcc-opt %s --mcc-gpu-library-calls --verify-each | FileCheck %s

// f32 products on unit-stride rows become cuBLAS calls through the shim.
// CHECK: func.func private @mcc_gpu_sgemm_batched(memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
// CHECK: func.func private @mcc_gpu_sgemm(memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK-LABEL: func.func @products
// CHECK: %[[A:.*]] = memref.cast %arg0 : memref<4x8xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK: call @mcc_gpu_sgemm(%[[A]]
// CHECK: call @mcc_gpu_sgemm_batched(
// CHECK-NOT: linalg.matmul
// CHECK-NOT: linalg.batch_matmul
func.func @products(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xf32>,
                    %x: memref<2x4x8xf32>, %y: memref<2x8x16xf32>, %z: memref<2x4x16xf32>) {
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf32>)
  linalg.batch_matmul ins(%x, %y : memref<2x4x8xf32>, memref<2x8x16xf32>) outs(%z : memref<2x4x16xf32>)
  return
}

// A constant (host) operand, and integer products, stay linalg (kernels).
memref.global "private" constant @w : memref<8x16xf32> = dense<1.0>
// CHECK-LABEL: func.func @kept
// CHECK: linalg.matmul
// CHECK: linalg.matmul
func.func @kept(%a: memref<4x8xf32>, %c: memref<4x16xf32>, %i: memref<4x8xi32>, %j: memref<8x16xi32>, %k: memref<4x16xi32>) {
  %w = memref.get_global @w : memref<8x16xf32>
  linalg.matmul ins(%a, %w : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf32>)
  linalg.matmul ins(%i, %j : memref<4x8xi32>, memref<8x16xi32>) outs(%k : memref<4x16xi32>)
  return
}

// Weights shared by a batch (convolutions of several images) reach cuBLAS
// as a [batch, m, k] view with batch stride 0.
// CHECK-LABEL: func.func @shared_weights
// CHECK: %[[BASE:.*]], %[[OFF:.*]], %{{.*}}:2, %[[STR:.*]]:2 = memref.extract_strided_metadata %arg0
// CHECK: %[[VIEW:.*]] = memref.reinterpret_cast %[[BASE]] to offset: [%[[OFF]]], sizes: [3, 8, 16], strides: [0, %[[STR]]#0, %[[STR]]#1]
// CHECK: %[[A:.*]] = memref.cast %[[VIEW]]
// CHECK: call @mcc_gpu_sgemm_batched(%[[A]],
func.func @shared_weights(%a: memref<8x16xf32>, %b: memref<3x16x16xf32>, %c: memref<3x8x16xf32>) {
  linalg.batch_matmul indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d3)>,
                                       affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>,
                                       affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]
      ins(%a, %b : memref<8x16xf32>, memref<3x16x16xf32>) outs(%c : memref<3x8x16xf32>)
  return
}
