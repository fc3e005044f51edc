// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-register-tile-matmul))' --verify-each | FileCheck %s
// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-register-tile-matmul{prepack-weights=false}))' | FileCheck %s --check-prefix=OFF
// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-register-tile-matmul{weight-rows=12}))' | FileCheck %s --check-prefix=W12

// Weights (arguments past mcc.num_inputs) read only as B of the kernel's
// products, in whole 32-column panels, are read in place as [N/32][K][32]
// panels: no stack copy, a prefetch 64 rows ahead, and the function names
// them (weight index, panel width) for the compiler to write them so.
// %arg1: whole B; %arg2: B through subviews of a forall stepping 64
// columns. Not packed: %arg0 (an input), %arg3 (N = 40 is not whole
// panels), %arg4 (also read by a memref.load), %arg5 (a subview at
// column 16).

// CHECK-LABEL: func.func @forward
// CHECK-SAME: mcc.packed_weights = array<i64: 0, 32, 1, 32>
// CHECK-DAG: %[[P1:.*]] = memref.reinterpret_cast %arg1 to offset: [0], sizes: [2, 128, 32], strides: [4096, 32, 1] : memref<128x64xf32> to memref<2x128x32xf32>
// CHECK-DAG: %[[P2:.*]] = memref.reinterpret_cast %arg2 to offset: [0], sizes: [4, 128, 32], strides: [4096, 32, 1]
// CHECK-NOT: memref.reinterpret_cast

// The whole-B product: no pack buffer; per vector a panel and a column in
// it (64 = 0 + 32 * 2 columns from the panel start), loads along K.
// CHECK: memref.alloca_scope
// CHECK-NOT: memref.alloca()
// CHECK: arith.divui {{.*}}, %{{c32[_0-9]*}}
// CHECK: arith.remui {{.*}}, %{{c32[_0-9]*}}
// CHECK: scf.for %[[K:[^ ]*]] = {{.*}} iter_args
// CHECK: %[[ROW:.*]] = arith.addi %{{c0[_0-9]*}}, %[[K]]
// CHECK: %[[AHEAD:.*]] = arith.addi %[[ROW]], %{{c64[_0-9]*}}
// CHECK: %[[CLAMP:.*]] = arith.minsi %[[AHEAD]], %{{c127[_0-9]*}}
// CHECK: memref.prefetch %[[P1]][{{.*}}, %[[CLAMP]], %{{c0[_0-9]*}}], read, locality<3>, data
// CHECK: memref.prefetch %[[P1]][{{.*}}, %[[CLAMP]], %{{c16[_0-9]*}}], read, locality<3>, data
// CHECK: vector.load %[[P1]][{{.*}}] : memref<2x128x32xf32>, vector<16xf32>
// CHECK: vector.load %[[P1]][{{.*}}] : memref<2x128x32xf32>, vector<16xf32>
// CHECK: vector.fma

// The tiled product reads from the tile's column offset in the panels.
// CHECK: scf.forall (%[[N:.*]]) =
// CHECK: memref.alloca_scope
// CHECK-NOT: memref.alloca()
// CHECK: arith.addi %[[N]],
// CHECK: vector.load %[[P2]]

// The others still copy B.
// CHECK: memref.alloca() : memref<{{.*}}x256x32xf32>
// CHECK: memref.alloca() : memref<{{.*}}x256x32xf32>
// CHECK: memref.alloca() : memref<{{.*}}x256x32xf32>
// CHECK: memref.alloca() : memref<{{.*}}x256x32xf32>

// weight-rows=12: the products reading pre-packed weights take 12-row
// blocks (24 accumulators; 64 = 5 x 12 + 4 rows), the others keep 8.
// W12-LABEL: func.func @forward
// W12: scf.for {{.*}} iter_args({{.*}}) -> (vector<16xf32>{{(, vector<16xf32>){23} *}}) {
// W12: memref.alloca() : memref<{{.*}}x256x32xf32>
// W12-NOT: vector<16xf32>{{(, vector<16xf32>){23} *}}) {

// OFF-NOT: mcc.packed_weights
// OFF-NOT: memref.reinterpret_cast
func.func @forward(%arg0: memref<64x128xf32>, %arg1: memref<128x64xf32>,
                   %arg2: memref<128x128xf32>, %arg3: memref<128x40xf32>,
                   %arg4: memref<128x64xf32>, %arg5: memref<128x64xf32>,
                   %out1: memref<64x64xf32>, %out2: memref<64x128xf32>,
                   %out3: memref<64x40xf32>, %out4: memref<64x64xf32>,
                   %out5: memref<64x32xf32>, %out6: memref<64x128xf32>,
                   %s: memref<f32>)
    attributes {mcc.num_inputs = 1 : i64} {
  linalg.matmul ins(%arg0, %arg1 : memref<64x128xf32>, memref<128x64xf32>)
                outs(%out1 : memref<64x64xf32>)
  scf.forall (%n) = (0) to (128) step (64) {
    %b = memref.subview %arg2[0, %n] [128, 64] [1, 1] : memref<128x128xf32> to memref<128x64xf32, strided<[128, 1], offset: ?>>
    %c = memref.subview %out2[0, %n] [64, 64] [1, 1] : memref<64x128xf32> to memref<64x64xf32, strided<[128, 1], offset: ?>>
    linalg.matmul ins(%arg0, %b : memref<64x128xf32>, memref<128x64xf32, strided<[128, 1], offset: ?>>)
                  outs(%c : memref<64x64xf32, strided<[128, 1], offset: ?>>)
  }
  linalg.matmul ins(%arg0, %arg3 : memref<64x128xf32>, memref<128x40xf32>)
                outs(%out3 : memref<64x40xf32>)
  linalg.matmul ins(%arg0, %arg4 : memref<64x128xf32>, memref<128x64xf32>)
                outs(%out4 : memref<64x64xf32>)
  %c0 = arith.constant 0 : index
  %v = memref.load %arg4[%c0, %c0] : memref<128x64xf32>
  memref.store %v, %s[] : memref<f32>
  %b5 = memref.subview %arg5[0, 16] [128, 32] [1, 1] : memref<128x64xf32> to memref<128x32xf32, strided<[64, 1], offset: 16>>
  linalg.matmul ins(%arg0, %b5 : memref<64x128xf32>, memref<128x32xf32, strided<[64, 1], offset: 16>>)
                outs(%out5 : memref<64x32xf32>)
  // An input as B stays where the caller put it.
  linalg.matmul ins(%out1, %arg0 : memref<64x64xf32>, memref<64x128xf32>)
                outs(%out6 : memref<64x128xf32>)
  return
}
