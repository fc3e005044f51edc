// RUN: mcc-opt %s --mcc-gpu-library-calls --verify-each | FileCheck %s
// RUN: mcc-opt %s --mcc-gpu-library-calls=fold-transposes=0 --verify-each | FileCheck %s --check-prefix=NOFOLD
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#heads = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>
#keys = affine_map<(d0, d1, d2, d3) -> (d0, d3, d1, d2)>

// f32 products on unit-stride rows become cuBLAS calls through the shim.
// CHECK: func.func private @mcc_gpu_sgemm_bias(memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?xf32, strided<[?], offset: ?>>, f32, f32)
// CHECK: func.func private @mcc_gpu_sgemm_batched(memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, {{.*}}, f32, f32)
// CHECK: func.func private @mcc_gpu_sgemm(memref<?x?xf32, strided<[?, ?], offset: ?>>, {{.*}}, f32, f32)
// CHECK-LABEL: func.func @products
// CHECK: %[[A:.*]] = memref.cast %arg0 : memref<4x8xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK: %[[ALPHA:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: call @mcc_gpu_sgemm(%[[A]], %{{.*}}, %{{.*}}, %[[ALPHA]], %[[ONE]])
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
// CHECK-NEXT: %[[Z1A:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[Z1:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: call @mcc_gpu_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %[[Z1A]], %[[Z1]])
// CHECK-NOT: linalg.fill
// CHECK: memref.cast %arg3
// CHECK-NEXT: %[[Z2A:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[Z2:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: call @mcc_gpu_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %[[Z2A]], %[[Z2]])
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
// CHECK-NEXT: %[[O1A:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[O1:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: call @mcc_gpu_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %[[O1A]], %[[O1]])
// CHECK: linalg.fill
// CHECK: memref.cast %arg3
// CHECK-NEXT: %[[O2A:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[O2:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: call @mcc_gpu_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %[[O2A]], %[[O2]])
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

// Attention's head transposes fold into the products: Q (times 0.5) is
// read in place as [heads, tokens, dim] at strides [8, 48, 1], K^T (times
// 0.5) as a transposed operand (strides [8, 1, 48]), both scales become
// alpha = 0.25, and the context is written straight into the merged
// [tokens, heads, dim] layout. No copy kernel is left.
// CHECK-LABEL: func.func @attention_heads
// CHECK-NOT: linalg.generic
// CHECK-DAG: %[[Q:.*]] = memref.reinterpret_cast %{{.*}} to offset: [%{{.*}}], sizes: [2, 8, 8], strides: [8, 48, 1]
// CHECK-DAG: %[[K:.*]] = memref.reinterpret_cast %{{.*}} to offset: [%{{.*}}], sizes: [2, 8, 8], strides: [8, 1, 48]
// CHECK-DAG: %[[QC:.*]] = memref.cast %[[Q]]
// CHECK-DAG: %[[KC:.*]] = memref.cast %[[K]]
// CHECK: %[[QUARTER:.*]] = arith.constant 2.500000e-01 : f32
// CHECK: call @mcc_gpu_sgemm_batched(%[[QC]], %[[KC]], %{{.*}}, %[[QUARTER]], %{{.*}})
// CHECK: %[[MERGED:.*]] = memref.alloc() : memref<1x8x2x8xf32>
// CHECK: %[[CTX:.*]] = memref.reinterpret_cast %{{.*}} to offset: [%{{.*}}], sizes: [2, 8, 8], strides: [8, 16, 1]
// CHECK: %[[CTXC:.*]] = memref.cast %[[CTX]]
// CHECK: call @mcc_gpu_sgemm_batched(%{{.*}}, %{{.*}}, %[[CTXC]],
// CHECK-NOT: linalg.generic
// CHECK: memref.collapse_shape %[[MERGED]]
// NOFOLD-LABEL: func.func @attention_heads
// NOFOLD-COUNT-3: linalg.generic
func.func @attention_heads(%qkv: memref<1x8x48xf32>, %v: memref<2x8x8xf32>, %out: memref<8x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %q = memref.subview %qkv[0, 0, 0] [1, 8, 16] [1, 1, 1] : memref<1x8x48xf32> to memref<1x8x16xf32, strided<[384, 48, 1]>>
  %k = memref.subview %qkv[0, 0, 16] [1, 8, 16] [1, 1, 1] : memref<1x8x48xf32> to memref<1x8x16xf32, strided<[384, 48, 1], offset: 16>>
  %q4 = memref.expand_shape %q [[0], [1], [2, 3]] output_shape [1, 8, 2, 8] : memref<1x8x16xf32, strided<[384, 48, 1]>> into memref<1x8x2x8xf32, strided<[384, 48, 8, 1]>>
  %k4 = memref.expand_shape %k [[0], [1], [2, 3]] output_shape [1, 8, 2, 8] : memref<1x8x16xf32, strided<[384, 48, 1], offset: 16>> into memref<1x8x2x8xf32, strided<[384, 48, 8, 1], offset: 16>>
  %qt = memref.alloc() : memref<1x2x8x8xf32>
  linalg.generic {indexing_maps = [#heads, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%q4 : memref<1x8x2x8xf32, strided<[384, 48, 8, 1]>>) outs(%qt : memref<1x2x8x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.mulf %in, %half : f32
    linalg.yield %s : f32
  }
  %kt = memref.alloc() : memref<1x2x8x8xf32>
  linalg.generic {indexing_maps = [#keys, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%k4 : memref<1x8x2x8xf32, strided<[384, 48, 8, 1], offset: 16>>) outs(%kt : memref<1x2x8x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.mulf %in, %half : f32
    linalg.yield %s : f32
  }
  %q3 = memref.collapse_shape %qt [[0, 1], [2], [3]] : memref<1x2x8x8xf32> into memref<2x8x8xf32>
  %k3 = memref.collapse_shape %kt [[0, 1], [2], [3]] : memref<1x2x8x8xf32> into memref<2x8x8xf32>
  %scores = memref.alloc() : memref<2x8x8xf32>
  linalg.fill ins(%zero : f32) outs(%scores : memref<2x8x8xf32>)
  linalg.batch_matmul ins(%q3, %k3 : memref<2x8x8xf32>, memref<2x8x8xf32>) outs(%scores : memref<2x8x8xf32>)
  %ctx = memref.alloc() : memref<2x8x8xf32>
  linalg.fill ins(%zero : f32) outs(%ctx : memref<2x8x8xf32>)
  linalg.batch_matmul ins(%scores, %v : memref<2x8x8xf32>, memref<2x8x8xf32>) outs(%ctx : memref<2x8x8xf32>)
  %ctx4 = memref.expand_shape %ctx [[0, 1], [2], [3]] output_shape [1, 2, 8, 8] : memref<2x8x8xf32> into memref<1x2x8x8xf32>
  %merged = memref.alloc() : memref<1x8x2x8xf32>
  linalg.generic {indexing_maps = [#heads, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%ctx4 : memref<1x2x8x8xf32>) outs(%merged : memref<1x8x2x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  %m2 = memref.collapse_shape %merged [[0, 1], [2, 3]] : memref<1x8x2x8xf32> into memref<8x16xf32>
  memref.copy %m2, %out : memref<8x16xf32> to memref<8x16xf32>
  return
}

// Not when the copy's source is written between the copy and the product
// (the view would read the new values), nor when its result has another
// reader, nor when the view would be strided in both of its last two
// dimensions (cuBLAS needs one of them contiguous).
// CHECK-LABEL: func.func @transposes_kept
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT: linalg.generic
func.func @transposes_kept(%x: memref<1x8x2x8xf32>, %v: memref<2x8x8xf32>, %c: memref<2x8x8xf32>,
                           %d: memref<2x8x8xf32>, %seen: memref<1x2x8x8xf32>, %y: memref<1x8x8x2xf32>, %e: memref<2x8x8xf32>) {
  %one = arith.constant 1.0 : f32
  %a = memref.alloc() : memref<1x2x8x8xf32>
  linalg.generic {indexing_maps = [#heads, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : memref<1x8x2x8xf32>) outs(%a : memref<1x2x8x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  linalg.fill ins(%one : f32) outs(%x : memref<1x8x2x8xf32>)
  %a3 = memref.collapse_shape %a [[0, 1], [2], [3]] : memref<1x2x8x8xf32> into memref<2x8x8xf32>
  linalg.batch_matmul ins(%a3, %v : memref<2x8x8xf32>, memref<2x8x8xf32>) outs(%c : memref<2x8x8xf32>)
  %b = memref.alloc() : memref<1x2x8x8xf32>
  linalg.generic {indexing_maps = [#heads, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : memref<1x8x2x8xf32>) outs(%b : memref<1x2x8x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  %b3 = memref.collapse_shape %b [[0, 1], [2], [3]] : memref<1x2x8x8xf32> into memref<2x8x8xf32>
  linalg.batch_matmul ins(%b3, %v : memref<2x8x8xf32>, memref<2x8x8xf32>) outs(%d : memref<2x8x8xf32>)
  memref.copy %b, %seen : memref<1x2x8x8xf32> to memref<1x2x8x8xf32>
  %t = memref.alloc() : memref<1x2x8x8xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d3, d2, d1)>, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%y : memref<1x8x8x2xf32>) outs(%t : memref<1x2x8x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  %t3 = memref.collapse_shape %t [[0, 1], [2], [3]] : memref<1x2x8x8xf32> into memref<2x8x8xf32>
  linalg.batch_matmul ins(%t3, %v : memref<2x8x8xf32>, memref<2x8x8xf32>) outs(%e : memref<2x8x8xf32>)
  return
}

// Bufferization reuses one buffer for the same copy in every layer: each
// layer's copy feeds only its own product before the next overwrites the
// buffer, so both fold.
// CHECK-LABEL: func.func @buffer_reused_by_layers
// CHECK-NOT: linalg.generic
// CHECK: strides: [8, 16, 1]
// CHECK: call @mcc_gpu_sgemm_batched
// CHECK: strides: [8, 16, 1]
// CHECK: call @mcc_gpu_sgemm_batched
func.func @buffer_reused_by_layers(%x: memref<1x8x2x8xf32>, %y: memref<1x8x2x8xf32>, %v: memref<2x8x8xf32>,
                                   %c: memref<2x8x8xf32>, %d: memref<2x8x8xf32>) {
  %a = memref.alloc() : memref<1x2x8x8xf32>
  %a3 = memref.collapse_shape %a [[0, 1], [2], [3]] : memref<1x2x8x8xf32> into memref<2x8x8xf32>
  linalg.generic {indexing_maps = [#heads, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : memref<1x8x2x8xf32>) outs(%a : memref<1x2x8x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  linalg.batch_matmul ins(%a3, %v : memref<2x8x8xf32>, memref<2x8x8xf32>) outs(%c : memref<2x8x8xf32>)
  linalg.generic {indexing_maps = [#heads, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%y : memref<1x8x2x8xf32>) outs(%a : memref<1x2x8x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  linalg.batch_matmul ins(%a3, %v : memref<2x8x8xf32>, memref<2x8x8xf32>) outs(%d : memref<2x8x8xf32>)
  memref.dealloc %a : memref<1x2x8x8xf32>
  return
}

// GPT-2's order: V's head copy comes first, then Q's; when V's product is
// reached, Q's has become a call that reads the same source (and writes
// only its C), so V's copy folds too. A call that writes the source in
// between keeps the copy.
// CHECK-LABEL: func.func @values_copied_before_scores
// CHECK-NOT: linalg.generic
// CHECK: call @mcc_gpu_sgemm_batched
// CHECK: %[[V:.*]] = memref.reinterpret_cast %{{.*}} to offset: [%{{.*}}], sizes: [2, 8, 8], strides: [8, 16, 1]
// CHECK: %[[VC:.*]] = memref.cast %[[V]]
// CHECK: call @mcc_gpu_sgemm_batched(%{{.*}}, %[[VC]],
// CHECK-LABEL: func.func @values_source_written_by_a_product
// CHECK: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @values_copied_before_scores(%q: memref<1x8x2x8xf32>, %vs: memref<1x8x2x8xf32>, %k: memref<2x8x8xf32>,
                                       %s: memref<2x8x8xf32>, %c: memref<2x8x8xf32>) {
  %v = memref.alloc() : memref<1x2x8x8xf32>
  linalg.generic {indexing_maps = [#heads, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%vs : memref<1x8x2x8xf32>) outs(%v : memref<1x2x8x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  %qt = memref.alloc() : memref<1x2x8x8xf32>
  linalg.generic {indexing_maps = [#heads, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%vs : memref<1x8x2x8xf32>) outs(%qt : memref<1x2x8x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  %q3 = memref.collapse_shape %qt [[0, 1], [2], [3]] : memref<1x2x8x8xf32> into memref<2x8x8xf32>
  linalg.batch_matmul ins(%q3, %k : memref<2x8x8xf32>, memref<2x8x8xf32>) outs(%s : memref<2x8x8xf32>)
  %v3 = memref.collapse_shape %v [[0, 1], [2], [3]] : memref<1x2x8x8xf32> into memref<2x8x8xf32>
  linalg.batch_matmul ins(%s, %v3 : memref<2x8x8xf32>, memref<2x8x8xf32>) outs(%c : memref<2x8x8xf32>)
  memref.dealloc %v : memref<1x2x8x8xf32>
  memref.dealloc %qt : memref<1x2x8x8xf32>
  return
}
func.func @values_source_written_by_a_product(%vs: memref<1x8x2x8xf32>, %k: memref<2x8x8xf32>,
                                              %s: memref<2x8x8xf32>, %c: memref<2x8x8xf32>) {
  %v = memref.alloc() : memref<1x2x8x8xf32>
  linalg.generic {indexing_maps = [#heads, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%vs : memref<1x8x2x8xf32>) outs(%v : memref<1x2x8x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  %vs3 = memref.collapse_shape %vs [[0, 1], [2, 3]] : memref<1x8x2x8xf32> into memref<8x16xf32>
  %kk = memref.subview %k[0, 0, 0] [1, 8, 8] [1, 1, 1] : memref<2x8x8xf32> to memref<8x8xf32, strided<[8, 1]>>
  %w = memref.alloc() : memref<8x16xf32>
  linalg.matmul ins(%kk, %w : memref<8x8xf32, strided<[8, 1]>>, memref<8x16xf32>) outs(%vs3 : memref<8x16xf32>)
  %v3 = memref.collapse_shape %v [[0, 1], [2], [3]] : memref<1x2x8x8xf32> into memref<2x8x8xf32>
  linalg.batch_matmul ins(%s, %v3 : memref<2x8x8xf32>, memref<2x8x8xf32>) outs(%c : memref<2x8x8xf32>)
  memref.dealloc %v : memref<1x2x8x8xf32>
  return
}

// A Linear layer's bias: the add moves into the product (cuBLASLt's bias
// epilogue), and the copy left of the generic goes too: the product writes
// the generic's buffer.
// GPT-2's MLP: bias, then GELU's tanh form (x^3 as a powf, as the
// TorchScript exporter writes it). Both go into the product's epilogue and
// the product writes the GELU's buffer. The erf form (BERT's) differs by
// up to 5e-4 and stays a generic, as does a GELU whose input is read again.
// CHECK-LABEL: func.func @bias_then_tanh_gelu
// CHECK-NOT: linalg.generic
// CHECK-NOT: math.tanh
// CHECK: %[[BASE:[a-z0-9_]+]], %{{.*}} = memref.extract_strided_metadata %[[G:[a-z0-9_]+]]
// CHECK: %[[VIEW:.*]] = memref.reinterpret_cast %[[BASE]] to offset: [%{{.*}}], sizes: [4, 16], strides: [16, 1]
// CHECK: %[[C:.*]] = memref.cast %[[VIEW]]
// CHECK: call @mcc_gpu_sgemm_bias_gelu(%{{.*}}, %{{.*}}, %[[C]], %{{.*}},
// CHECK: memref.copy %[[G]], %arg3
// CHECK-LABEL: func.func @bias_then_erf_gelu
// CHECK: call @mcc_gpu_sgemm_bias(
// CHECK: linalg.generic
// CHECK: math.erf
// CHECK-LABEL: func.func @tanh_gelu_input_read_again
// CHECK: call @mcc_gpu_sgemm(
// CHECK: linalg.generic
// CHECK: math.tanh
func.func @bias_then_tanh_gelu(%a: memref<4x8xf32>, %w: memref<8x16xf32>, %b: memref<16xf32>, %out: memref<1x4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %one = arith.constant 1.0 : f32
  %three = arith.constant 3.0 : f32
  %c = arith.constant 0.044715 : f32
  %k = arith.constant 0.797884583 : f32
  %r = memref.alloc() : memref<4x16xf32>
  linalg.fill ins(%zero : f32) outs(%r : memref<4x16xf32>)
  linalg.matmul ins(%a, %w : memref<4x8xf32>, memref<8x16xf32>) outs(%r : memref<4x16xf32>)
  %r3 = memref.expand_shape %r [[0, 1], [2]] output_shape [1, 4, 16] : memref<4x16xf32> into memref<1x4x16xf32>
  %g = memref.alloc() : memref<1x4x16xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>],
                  iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%r3, %b : memref<1x4x16xf32>, memref<16xf32>) outs(%g : memref<1x4x16xf32>) {
  ^bb0(%in: f32, %bias: f32, %o: f32):
    %x = arith.addf %in, %bias : f32
    %p = math.powf %x, %three : f32
    %p2 = arith.mulf %p, %c : f32
    %s = arith.addf %x, %p2 : f32
    %t = arith.mulf %s, %k : f32
    %th = math.tanh %t : f32
    %u = arith.addf %th, %one : f32
    %h = arith.mulf %x, %half : f32
    %y = arith.mulf %h, %u : f32
    linalg.yield %y : f32
  }
  memref.dealloc %r : memref<4x16xf32>
  memref.copy %g, %out : memref<1x4x16xf32> to memref<1x4x16xf32>
  return
}
func.func @bias_then_erf_gelu(%a: memref<4x8xf32>, %w: memref<8x16xf32>, %b: memref<16xf32>, %out: memref<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %one = arith.constant 1.0 : f32
  %rsqrt2 = arith.constant 0.707106769 : f32
  %r = memref.alloc() : memref<4x16xf32>
  linalg.fill ins(%zero : f32) outs(%r : memref<4x16xf32>)
  linalg.matmul ins(%a, %w : memref<4x8xf32>, memref<8x16xf32>) outs(%r : memref<4x16xf32>)
  %g = memref.alloc() : memref<4x16xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%r, %b : memref<4x16xf32>, memref<16xf32>) outs(%g : memref<4x16xf32>) {
  ^bb0(%in: f32, %bias: f32, %o: f32):
    %x = arith.addf %in, %bias : f32
    %s = arith.mulf %x, %rsqrt2 : f32
    %e = math.erf %s : f32
    %u = arith.addf %e, %one : f32
    %h = arith.mulf %x, %half : f32
    %y = arith.mulf %h, %u : f32
    linalg.yield %y : f32
  }
  memref.copy %g, %out : memref<4x16xf32> to memref<4x16xf32>
  return
}
func.func @tanh_gelu_input_read_again(%a: memref<4x8xf32>, %w: memref<8x16xf32>, %b: memref<16xf32>,
                                      %out: memref<4x16xf32>, %raw: memref<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %one = arith.constant 1.0 : f32
  %c = arith.constant 0.044715 : f32
  %k = arith.constant 0.797884583 : f32
  %r = memref.alloc() : memref<4x16xf32>
  linalg.fill ins(%zero : f32) outs(%r : memref<4x16xf32>)
  linalg.matmul ins(%a, %w : memref<4x8xf32>, memref<8x16xf32>) outs(%r : memref<4x16xf32>)
  %g = memref.alloc() : memref<4x16xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%r, %b : memref<4x16xf32>, memref<16xf32>) outs(%g : memref<4x16xf32>) {
  ^bb0(%in: f32, %bias: f32, %o: f32):
    %x = arith.addf %in, %bias : f32
    %x2 = arith.mulf %x, %x : f32
    %x3 = arith.mulf %x2, %x : f32
    %p2 = arith.mulf %x3, %c : f32
    %s = arith.addf %x, %p2 : f32
    %t = arith.mulf %s, %k : f32
    %th = math.tanh %t : f32
    %u = arith.addf %th, %one : f32
    %h = arith.mulf %x, %half : f32
    %y = arith.mulf %h, %u : f32
    linalg.yield %y : f32
  }
  memref.copy %g, %out : memref<4x16xf32> to memref<4x16xf32>
  memref.copy %r, %raw : memref<4x16xf32> to memref<4x16xf32>
  return
}

// CHECK-LABEL: func.func @linear_bias
// CHECK-NOT: linalg.generic
// CHECK: %[[BASE:[a-z0-9_]+]], %{{.*}} = memref.extract_strided_metadata %[[OUT:[a-z0-9_]+]]
// CHECK: %[[VIEW:.*]] = memref.reinterpret_cast %[[BASE]]
// CHECK: %[[C:.*]] = memref.cast %[[VIEW]]
// CHECK: %[[BIAS:.*]] = memref.cast %arg2 : memref<16xf32> to memref<?xf32, strided<[?], offset: ?>>
// CHECK: call @mcc_gpu_sgemm_bias(%{{.*}}, %{{.*}}, %[[C]], %[[BIAS]],
// CHECK-NOT: linalg.generic
// CHECK: memref.copy %[[OUT]], %arg3
// NOFOLD-LABEL: func.func @linear_bias
// NOFOLD: call @mcc_gpu_sgemm_bias
// NOFOLD: linalg.generic
func.func @linear_bias(%a: memref<4x8xf32>, %w: memref<8x16xf32>, %b: memref<16xf32>, %out: memref<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %r = memref.alloc() : memref<4x16xf32>
  linalg.fill ins(%zero : f32) outs(%r : memref<4x16xf32>)
  linalg.matmul ins(%a, %w : memref<4x8xf32>, memref<8x16xf32>) outs(%r : memref<4x16xf32>)
  %y = memref.alloc() : memref<4x16xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%r, %b : memref<4x16xf32>, memref<16xf32>) outs(%y : memref<4x16xf32>) {
  ^bb0(%x: f32, %bias: f32, %o: f32):
    %s = arith.addf %x, %bias : f32
    linalg.yield %s : f32
  }
  memref.copy %y, %out : memref<4x16xf32> to memref<4x16xf32>
  return
}

// BERT's Q projection: bias, head split, transpose and scale in one
// generic. The bias moves into the projection, whose output the generic
// then only transposes and scales; that copy folds into Q K^T (alpha 0.5,
// not into the projection: alpha there would not scale the bias).
// CHECK-LABEL: func.func @query_bias_heads
// CHECK: call @mcc_gpu_sgemm_bias(
// CHECK-NOT: linalg.generic
// CHECK: %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
// CHECK: call @mcc_gpu_sgemm_batched(%{{.*}}, %{{.*}}, %{{.*}}, %[[HALF]],
func.func @query_bias_heads(%x: memref<8x16xf32>, %w: memref<16x16xf32>, %b: memref<16xf32>,
                            %k: memref<2x8x8xf32>, %s: memref<2x8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %r = memref.alloc() : memref<8x16xf32>
  linalg.fill ins(%zero : f32) outs(%r : memref<8x16xf32>)
  linalg.matmul ins(%x, %w : memref<8x16xf32>, memref<16x16xf32>) outs(%r : memref<8x16xf32>)
  %b2 = memref.expand_shape %b [[0, 1]] output_shape [2, 8] : memref<16xf32> into memref<2x8xf32>
  %r4 = memref.expand_shape %r [[0, 1], [2, 3]] output_shape [1, 8, 2, 8] : memref<8x16xf32> into memref<1x8x2x8xf32>
  %q = memref.alloc() : memref<1x2x8x8xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d3)>, #heads, #id],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%b2, %r4 : memref<2x8xf32>, memref<1x8x2x8xf32>) outs(%q : memref<1x2x8x8xf32>) {
  ^bb0(%bias: f32, %y: f32, %o: f32):
    %a = arith.addf %bias, %y : f32
    %m = arith.mulf %a, %half : f32
    linalg.yield %m : f32
  }
  %q3 = memref.collapse_shape %q [[0, 1], [2], [3]] : memref<1x2x8x8xf32> into memref<2x8x8xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<2x8x8xf32>)
  linalg.batch_matmul ins(%q3, %k : memref<2x8x8xf32>, memref<2x8x8xf32>) outs(%s : memref<2x8x8xf32>)
  return
}

// Not a vector along the rows (indexed by m): no epilogue adds that.
// CHECK-LABEL: func.func @row_vector_kept
// CHECK: call @mcc_gpu_sgemm(
// CHECK: linalg.generic
func.func @row_vector_kept(%a: memref<4x8xf32>, %w: memref<8x4xf32>, %b: memref<4xf32>, %y: memref<4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %r = memref.alloc() : memref<4x4xf32>
  linalg.fill ins(%zero : f32) outs(%r : memref<4x4xf32>)
  linalg.matmul ins(%a, %w : memref<4x8xf32>, memref<8x4xf32>) outs(%r : memref<4x4xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%r, %b : memref<4x4xf32>, memref<4xf32>) outs(%y : memref<4x4xf32>) {
  ^bb0(%x: f32, %bias: f32, %o: f32):
    %s = arith.addf %x, %bias : f32
    linalg.yield %s : f32
  }
  return
}

// Not when the vector is computed after the product (a recurrent cell
// summing its two biases): the product would read it too early.
// CHECK-LABEL: func.func @bias_computed_later
// CHECK: call @mcc_gpu_sgemm(
// CHECK: linalg.generic
func.func @bias_computed_later(%a: memref<4x8xf32>, %w: memref<8x16xf32>, %b: memref<16xf32>, %y: memref<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %r = memref.alloc() : memref<4x16xf32>
  linalg.fill ins(%zero : f32) outs(%r : memref<4x16xf32>)
  linalg.matmul ins(%a, %w : memref<4x8xf32>, memref<8x16xf32>) outs(%r : memref<4x16xf32>)
  %sum = memref.alloc() : memref<16xf32>
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%b : memref<16xf32>) outs(%sum : memref<16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %d = arith.addf %x, %x : f32
    linalg.yield %d : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%r, %sum : memref<4x16xf32>, memref<16xf32>) outs(%y : memref<4x16xf32>) {
  ^bb0(%x: f32, %bias: f32, %o: f32):
    %s = arith.addf %x, %bias : f32
    linalg.yield %s : f32
  }
  return
}
