// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-register-tile-matmul{k-block=64}))' --verify-each | FileCheck %s

// A pre-packed weight streams from memory. The first row block of a panel
// fetches that panel 64 rows ahead into L1; every later row block fetches
// its slice of the next panel (the next column block, or the tile's first
// one in the next K block) into L2, one line every fourth K step: row block
// b >= 1 takes lines (b - 1) * 16 ... of the next panel's 64 x 2 lines.
// CHECK-LABEL: func.func @forward
// CHECK: %[[P:.*]] = memref.reinterpret_cast %arg1 {{.*}} to memref<2x128x32xf32>
// The next panel: past the last full column block, the first one of the
// next K block.
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %{{.*}}, %{{c0[_0-9]*}}
// CHECK: %[[NEXTN:.*]] = arith.addi %{{.*}}, %{{c32[_0-9]*}}
// CHECK: %[[WRAP:.*]] = arith.cmpi uge, %[[NEXTN]],
// CHECK: arith.select %[[WRAP]], %{{c0[_0-9]*}}, %[[NEXTN]]
// CHECK: %[[NEXTK:.*]] = arith.select %[[WRAP]],
// CHECK: %[[NEXT:.*]] = arith.divui {{.*}}, %{{c32[_0-9]*}}
// CHECK: scf.for {{.*}} iter_args
// CHECK: scf.if %[[FIRST]] {
// CHECK: memref.prefetch %[[P]][{{.*}}], read, locality<3>, data
// CHECK: memref.prefetch %[[P]][{{.*}}], read, locality<3>, data
// CHECK: } else {
// CHECK: arith.remui %{{.*}}, %{{c4[_0-9]*}}
// CHECK: arith.cmpi ult, %{{.*}}, %{{c128[_0-9]*}}
// CHECK: scf.if
// CHECK: arith.addi %{{.*}}, %[[NEXTK]]
// CHECK: memref.prefetch %[[P]][%[[NEXT]], {{.*}}], read, locality<2>, data
// CHECK: vector.load %[[P]]
// CHECK: vector.fma
func.func @forward(%arg0: memref<32x128xf32>, %arg1: memref<128x64xf32>,
                   %out: memref<32x64xf32>)
    attributes {mcc.num_inputs = 1 : i64} {
  linalg.matmul ins(%arg0, %arg1 : memref<32x128xf32>, memref<128x64xf32>)
                outs(%out : memref<32x64xf32>)
  return
}
