// RUN: mcc-opt %s --mcc-gpu-library-calls --verify-each | FileCheck %s

// f32 products on unit-stride rows become cuBLAS calls through the shim.
// CHECK: func.func private @mcc_gpu_sgemm_batched(memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
// CHECK: func.func private @mcc_gpu_sgemm(memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK-LABEL: func.func @products
// CHECK: %[[A:.*]] = memref.cast %arg0 : memref<4x8xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: call @mcc_gpu_sgemm(%[[A]], %{{.*}}, %{{.*}}, %[[ONE]])
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

// An output zeroed right before the product (a fill, or a copy of a zero
// buffer) is overwritten instead: beta = 0, and the zeroing goes away,
// with the zero buffer's fill once no copy reads it.
// CHECK-LABEL: func.func @zeroed_outputs
// CHECK-NOT: linalg.fill
// CHECK-NOT: memref.copy
// CHECK: memref.cast %arg2
// CHECK-NEXT: %[[Z1:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: call @mcc_gpu_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %[[Z1]])
// CHECK-NOT: linalg.fill
// CHECK: memref.cast %arg3
// CHECK-NEXT: %[[Z2:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: call @mcc_gpu_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %[[Z2]])
// CHECK-NOT: linalg.fill
func.func @zeroed_outputs(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xf32>, %d: memref<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %z = memref.alloc() : memref<4x16xf32>
  linalg.fill ins(%zero : f32) outs(%z : memref<4x16xf32>)
  memref.copy %z, %c : memref<4x16xf32> to memref<4x16xf32>
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf32>)
  linalg.fill ins(%zero : f32) outs(%d : memref<4x16xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%d : memref<4x16xf32>)
  memref.dealloc %z : memref<4x16xf32>
  return
}

// Not when the zeros are read in between (through a view), or are not
// zeros: beta stays 1 and the fill stays.
// CHECK-LABEL: func.func @zeros_read
// CHECK: linalg.fill
// CHECK: memref.copy
// CHECK: memref.cast %arg2
// CHECK-NEXT: %[[O1:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: call @mcc_gpu_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %[[O1]])
// CHECK: linalg.fill
// CHECK: memref.cast %arg3
// CHECK-NEXT: %[[O2:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: call @mcc_gpu_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %[[O2]])
func.func @zeros_read(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xf32>, %d: memref<4x16xf32>, %out: memref<64xf32>) {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %view = memref.collapse_shape %c [[0, 1]] : memref<4x16xf32> into memref<64xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x16xf32>)
  memref.copy %view, %out : memref<64xf32> to memref<64xf32>
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf32>)
  linalg.fill ins(%two : f32) outs(%d : memref<4x16xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%d : memref<4x16xf32>)
  return
}

// Dynamic sizes (rows over a symbolic batch x sequence, attention over a
// symbolic length) still reach cuBLAS: the shim reads m, n, k and the
// leading dimensions from the descriptors at run time.
// CHECK-LABEL: func.func @dynamic_products
// CHECK: memref.cast %arg0 : memref<?x768xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK: call @mcc_gpu_sgemm(
// CHECK: memref.cast %arg3 : memref<?x?x64xf32> to memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
// CHECK: call @mcc_gpu_sgemm_batched(
// CHECK-NOT: linalg.matmul
// CHECK-NOT: linalg.batch_matmul
func.func @dynamic_products(%a: memref<?x768xf32>, %b: memref<768x768xf32>, %c: memref<?x768xf32>,
                            %q: memref<?x?x64xf32>, %k: memref<?x64x?xf32>, %s: memref<?x?x?xf32>) {
  linalg.matmul ins(%a, %b : memref<?x768xf32>, memref<768x768xf32>) outs(%c : memref<?x768xf32>)
  linalg.batch_matmul ins(%q, %k : memref<?x?x64xf32>, memref<?x64x?xf32>) outs(%s : memref<?x?x?xf32>)
  return
}

// Weights shared by a dynamic batch of images: the view's batch is the
// output's run-time batch.
// CHECK-LABEL: func.func @shared_weights_dynamic_batch
// CHECK: %[[N:.*]] = memref.dim %arg2, %c0
// CHECK: %[[BASE:.*]], %[[OFF:.*]], %{{.*}}:2, %[[STR:.*]]:2 = memref.extract_strided_metadata %arg0
// CHECK: memref.reinterpret_cast %[[BASE]] to offset: [%[[OFF]]], sizes: [%[[N]], 8, 16], strides: [0, %[[STR]]#0, %[[STR]]#1] {{.*}} to memref<?x8x16xf32
// CHECK: call @mcc_gpu_sgemm_batched(
func.func @shared_weights_dynamic_batch(%a: memref<8x16xf32>, %b: memref<?x16x49xf32>, %c: memref<?x8x49xf32>) {
  linalg.batch_matmul indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d3)>,
                                       affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>,
                                       affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]
      ins(%a, %b : memref<8x16xf32>, memref<?x16x49xf32>) outs(%c : memref<?x8x49xf32>)
  return
}
