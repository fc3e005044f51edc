// RUN: mcc-opt %s --mcc-cpu-profile-marks --verify-each | FileCheck %s

// A mark before each op of forward that does work (a tiled product, a
// loop nest, a copy), none before allocations, views, deallocations or
// scalar loads; the end before the return. The labels say what each op is,
// its output's shape and its ONNX nodes, in mark order.
// CHECK: memref.global "public" constant @mcc_profile_labels : memref<75xi8>
// CHECK-LABEL: func.func @forward
// CHECK-SAME: mcc.profile_labels = ["matmul k=8 4x16 [/fc/MatMul]", "map_tanh 4x16 [/act/Tanh, /fc/Add]", "copy 4x16"]
// CHECK: memref.alloc
// CHECK-NEXT: %[[C0:.*]] = arith.constant 0 : i64
// CHECK-NEXT: call @mcc_profile_mark(%[[C0]])
// CHECK-NEXT: scf.forall
// CHECK: memref.subview
// CHECK-NOT: call @mcc_profile_mark
// CHECK: %[[C1:.*]] = arith.constant 1 : i64
// CHECK-NEXT: call @mcc_profile_mark(%[[C1]])
// CHECK-NEXT: linalg.generic
// CHECK: %[[C2:.*]] = arith.constant 2 : i64
// CHECK-NEXT: call @mcc_profile_mark(%[[C2]])
// CHECK-NEXT: memref.copy
// CHECK-NEXT: memref.load
// CHECK-NEXT: memref.dealloc
// CHECK-NEXT: call @mcc_profile_end()
// CHECK-NEXT: return
// Other functions (a load-time init) are left alone.
// CHECK-LABEL: func.func @init
// CHECK-NOT: mcc_profile
func.func @forward(%a: memref<4x8xf32>, %w: memref<8x16xf32>, %out: memref<4x16xf32>, %s: memref<1xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %r = memref.alloc() : memref<4x16xf32>
  scf.forall (%i) in (2) {
    %row = affine.apply affine_map<(d0) -> (d0 * 2)>(%i)
    %at = memref.subview %a[%row, 0] [2, 8] [1, 1] : memref<4x8xf32> to memref<2x8xf32, strided<[8, 1], offset: ?>>
    %rt = memref.subview %r[%row, 0] [2, 16] [1, 1] : memref<4x16xf32> to memref<2x16xf32, strided<[16, 1], offset: ?>>
    linalg.fill ins(%zero : f32) outs(%rt : memref<2x16xf32, strided<[16, 1], offset: ?>>)
    linalg.matmul ins(%at, %w : memref<2x8xf32, strided<[8, 1], offset: ?>>, memref<8x16xf32>) outs(%rt : memref<2x16xf32, strided<[16, 1], offset: ?>>) loc("/fc/MatMul")
  }
  %y = memref.alloc() : memref<4x16xf32>
  %r2 = memref.expand_shape %r [[0], [1, 2]] output_shape [4, 16, 1] : memref<4x16xf32> into memref<4x16x1xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%r : memref<4x16xf32>) outs(%y : memref<4x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %t = math.tanh %x : f32
    linalg.yield %t : f32
  } loc(fused["/act/Tanh", "/fc/Add"])
  memref.copy %y, %out : memref<4x16xf32> to memref<4x16xf32>
  %v = memref.load %s[%c0] : memref<1xf32>
  memref.dealloc %r : memref<4x16xf32>
  return %v : f32
}
func.func @init(%a: memref<4xf32>, %b: memref<4xf32>) {
  memref.copy %a, %b : memref<4xf32> to memref<4xf32>
  return
}
