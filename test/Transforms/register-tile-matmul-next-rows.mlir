// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-register-tile-matmul{k-block=64}))' --verify-each | FileCheck %s
// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-register-tile-matmul{k-block=64 rows=6 lanes=8 prefetch-a=false}))' --verify-each | FileCheck %s --check-prefix=NOFETCH

// With prefetch-a=false (the AVX2 pipeline's: on Zen 3 the fetch's index
// arithmetic cost more than it saved) no product fetches A's rows.
// NOFETCH-LABEL: func.func @conv_like
// NOFETCH-NOT: memref.prefetch %arg0
// NOFETCH: vector.fma
// NOFETCH-LABEL: func.func @batched
// NOFETCH-NOT: memref.prefetch %arg0
// NOFETCH: return

// A product whose A has unit stride along K (a convolution's weights)
// fetches, in each row block, the rows of A that the next row block reads
// into L2: the next 8 rows, or after the last block the first 8 rows of
// the next K block; one line every second K step (8 rows x 4 lines of a
// 64-step K block), rows cycling fastest. Indices are clamped to A.
// CHECK-LABEL: func.func @conv_like
// CHECK: %[[NEXT:.*]] = arith.addi %{{.*}}, %{{c8[_0-9]*}}
// CHECK: %[[END:.*]] = arith.addi %[[NEXT]], %{{c8[_0-9]*}}
// CHECK: %[[WRAP:.*]] = arith.cmpi sgt, %[[END]],
// CHECK: %[[ROW0:.*]] = arith.select %[[WRAP]], %{{c0[_0-9]*}}, %[[NEXT]]
// CHECK: %[[K0N:.*]] = arith.select %[[WRAP]],
// CHECK: scf.for %[[K:[^ ]*]] = %[[K0:[^ ]*]] to {{.*}} iter_args
// CHECK: arith.subi %[[K]], %[[K0]]
// CHECK: %[[R:.*]] = arith.remui %[[T:[0-9]+]], %{{c2[_0-9]*}}
// CHECK: %[[ON:.*]] = arith.cmpi eq, %[[R]], %{{c0[_0-9]*}}
// CHECK: scf.if %[[ON]] {
// CHECK: %[[LINE:.*]] = arith.divui %[[T]], %{{c2[_0-9]*}}
// CHECK: arith.remui %[[LINE]], %{{c8[_0-9]*}}
// CHECK: arith.addi %[[ROW0]],
// CHECK: arith.minsi
// CHECK: arith.divui %[[LINE]], %{{c8[_0-9]*}}
// CHECK: arith.muli {{.*}}, %{{c16[_0-9]*}}
// CHECK: arith.addi %[[K0N]],
// CHECK: %[[COL:.*]] = arith.minsi
// CHECK: memref.prefetch %arg0[{{.*}}, %[[COL]]], read, locality<2>, data
// CHECK: vector.fma
func.func @conv_like(%a: memref<32x128xf32>, %b: memref<128x64xf32>,
                     %c: memref<32x64xf32>) {
  linalg.matmul ins(%a, %b : memref<32x128xf32>, memref<128x64xf32>)
                outs(%c : memref<32x64xf32>)
  return
}

// B a pre-packed weight (a linear layer): A is an activation already in
// cache, and is not fetched.
// CHECK-LABEL: func.func @linear
// CHECK-NOT: memref.prefetch %arg0
// CHECK: return
func.func @linear(%x: memref<32x128xf32>, %w: memref<128x64xf32>,
                  %y: memref<32x64xf32>) attributes {mcc.num_inputs = 1 : i64} {
  linalg.matmul ins(%x, %w : memref<32x128xf32>, memref<128x64xf32>)
                outs(%y : memref<32x64xf32>)
  return
}

// A batched product (Winograd's) fetches the next rows of A at its batch
// index.
// CHECK-LABEL: func.func @batched
// CHECK: scf.for %[[BATCH:[^ ]*]] =
// CHECK: scf.for {{.*}} iter_args
// CHECK: memref.prefetch %arg0[%[[BATCH]], {{.*}}], read, locality<2>, data
func.func @batched(%a: memref<4x32x128xf32>, %b: memref<4x128x64xf32>,
                   %c: memref<4x32x64xf32>) {
  linalg.batch_matmul ins(%a, %b : memref<4x32x128xf32>, memref<4x128x64xf32>)
                      outs(%c : memref<4x32x64xf32>)
  return
}
