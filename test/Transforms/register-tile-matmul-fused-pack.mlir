// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-register-tile-matmul{rows=4 vectors=2 lanes=8 k-block=64 panels=2}))' --verify-each | FileCheck %s

// With a static M and K of at least a K block, the first row block of each
// panel reads B in place (fetching its rows ahead) and stores each vector
// into a one-panel stack slot as it computes; the other row blocks read
// the slot. No copy loop runs before the kernels.
// CHECK-LABEL: func.func @fused
// CHECK: %[[PACK:.*]] = memref.alloca() : memref<1x64x16xf32>
// CHECK-NOT: scf.for
// CHECK: scf.for {{.*}} step %c64
// CHECK: scf.for {{.*}} step %c16
// CHECK: scf.for {{.*}} step %c16
// The first row block (rows 0-3): loads of B, stored into the slot.
// CHECK: scf.for %[[K:[^ ]*]] = {{.*}} iter_args
// CHECK: memref.prefetch %arg1
// CHECK: %[[B0:.*]] = vector.load %arg1[%[[K]], {{.*}}] : memref<128x40xf32>, vector<8xf32>
// CHECK: vector.store %[[B0]], %[[PACK]]
// CHECK: %[[B1:.*]] = vector.load %arg1[%[[K]], {{.*}}] : memref<128x40xf32>, vector<8xf32>
// CHECK: vector.store %[[B1]], %[[PACK]]
// CHECK-COUNT-8: vector.fma
// CHECK: scf.yield
// CHECK-COUNT-8: vector.store {{.*}}, %arg2
// The other row blocks start at row 4 and read the slot only.
// CHECK: scf.for {{.*}} = %c4{{.*}} to %c16{{.*}} step %c4
// CHECK: scf.for {{.*}} iter_args
// CHECK-NOT: %arg1[
// CHECK: vector.load %[[PACK]]
// CHECK-NOT: %arg1[
// CHECK: vector.load %[[PACK]]
// CHECK: scf.yield
// The masked rest (40 = 2 * 16 + 8) packs the same way, zeros past column 40.
// CHECK: scf.if
// CHECK: vector.maskedload %arg1
// CHECK: vector.store {{.*}}, %[[PACK]]
// CHECK-NOT: linalg.matmul
func.func @fused(%a: memref<16x128xf32>, %b: memref<128x40xf32>, %c: memref<16x40xf32>) {
  linalg.matmul ins(%a, %b : memref<16x128xf32>, memref<128x40xf32>) outs(%c : memref<16x40xf32>)
  return
}

// K shorter than a K block keeps the copy loop (its first row block's few
// steps would not hide the fetch of B's rows), two panels at a time.
// CHECK-LABEL: func.func @short_k
// CHECK: %[[PACK:.*]] = memref.alloca() : memref<2x64x16xf32>
// CHECK: vector.load %arg1
// CHECK: vector.store {{.*}}, %[[PACK]]
// CHECK: scf.for {{.*}} step %c4
// CHECK-NOT: vector.store {{.*}}, %[[PACK]]
// CHECK: vector.load %[[PACK]]
func.func @short_k(%a: memref<16x32xf32>, %b: memref<32x40xf32>, %c: memref<16x40xf32>) {
  linalg.matmul ins(%a, %b : memref<16x32xf32>, memref<32x40xf32>) outs(%c : memref<16x40xf32>)
  return
}

// A dynamic M keeps the copy loop: the first block's rows are not known.
// CHECK-LABEL: func.func @dynamic_m
// CHECK: memref.alloca() : memref<2x64x16xf32>
func.func @dynamic_m(%a: memref<?x128xf32>, %b: memref<128x40xf32>, %c: memref<?x40xf32>) {
  linalg.matmul ins(%a, %b : memref<?x128xf32>, memref<128x40xf32>) outs(%c : memref<?x40xf32>)
  return
}

// A product that starts from its fill and has no epilogue fetches its C
// block's lines for writing in the first K block, before the K loop (the
// block is stored right after a short K loop); partial column blocks
// (masked) fetch nothing.
// CHECK-LABEL: func.func @fill_no_epilogue
// CHECK: scf.if %{{.*}} -> (vector<8xf32>
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %{{.*}}, %c0
// CHECK-NEXT: scf.if %[[FIRST]] {
// CHECK-COUNT-4: memref.prefetch %arg2[{{.*}}], write, locality<3>, data
// CHECK: }
// CHECK: scf.for {{.*}} iter_args
// CHECK-NOT: linalg.fill
func.func @fill_no_epilogue(%a: memref<16x128xf32>, %b: memref<128x32xf32>, %c: memref<16x32xf32>) {
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%c : memref<16x32xf32>)
  linalg.matmul ins(%a, %b : memref<16x128xf32>, memref<128x32xf32>) outs(%c : memref<16x32xf32>)
  return
}
