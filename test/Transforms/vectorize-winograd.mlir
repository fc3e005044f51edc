// RUN: mcc-opt %s --pass-pipeline="builtin.module(func.func(mcc-vectorize-winograd))" | FileCheck %s
// RUN: mcc-opt %s --pass-pipeline="builtin.module(func.func(mcc-vectorize-winograd{lanes=8}))" | FileCheck %s --check-prefix=AVX2

#x = affine_map<(c, n, ty, tx, p, q, i, j) -> (n, c, ty * 2 + i, tx * 2 + j)>
#k = affine_map<(c, n, ty, tx, p, q, i, j) -> (p, q, i, j)>
#v = affine_map<(c, n, ty, tx, p, q, i, j) -> (p, q, c, n, ty, tx)>
#m = affine_map<(f, n, ty, tx, a, b, p, q) -> (p, q, f, n, ty, tx)>
#y = affine_map<(f, n, ty, tx, a, b, p, q) -> (n, f, ty, a, tx, b)>

// The input transform: per row of tiles, each of the 4 tile rows is two
// wide masked loads (columns from 2tx and 2tx + 2) split into even and odd
// columns; 32 subtractions/additions; 16 masked stores. The zeroing fill
// of the reference loops goes.
// CHECK-LABEL: func.func @input
// CHECK-NOT: linalg.fill
// CHECK-NOT: linalg.generic
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for %[[TX:.*]] = %{{.*}} to %{{.*}} step %c16
// CHECK-COUNT-8: vector.maskedload {{.*}} : memref<1x16x14x22xf32>, vector<32xi1>, vector<32xf32> into vector<32xf32>
// CHECK: vector.shuffle {{.*}} [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30] : vector<32xf32>, vector<32xf32>
// CHECK: vector.shuffle {{.*}} [1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31] : vector<32xf32>, vector<32xf32>
// CHECK: arith.subf {{.*}} : vector<16xf32>
// CHECK-COUNT-16: vector.maskedstore {{.*}} : memref<4x4x16x1x6x10xf32>, vector<16xi1>, vector<16xf32>
// CHECK-NOT: vector.maskedstore
// AVX2-LABEL: func.func @input
// AVX2: vector.maskedload {{.*}} vector<16xf32>
// AVX2: vector.maskedstore {{.*}} vector<8xf32>
func.func @input(%x: memref<1x16x14x22xf32>, %coef: memref<4x4x4x4xf32>,
                 %v: memref<4x4x16x1x6x10xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%v : memref<4x4x16x1x6x10xf32>)
  linalg.generic {indexing_maps = [#x, #k, #v],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel",
                                    "parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %coef : memref<1x16x14x22xf32>, memref<4x4x4x4xf32>)
      outs(%v : memref<4x4x16x1x6x10xf32>) attrs = {mcc.winograd = "input"} {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %p = arith.mulf %a, %c : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}

// The output transform on a tile of output channels: 16 masked loads of
// the products, the two columns of each output row interleaved into two
// contiguous stores of the row's (tx, b) pairs.
// CHECK-LABEL: func.func @output
// CHECK-NOT: linalg.fill
// CHECK: %[[ROWS:.*]] = memref.collapse_shape %{{.*}} {{\[}}[0], [1], [2], [3], [4, 5]] : memref<1x8x6x2x10x2xf32, strided<[3840, 240, 40, 20, 2, 1], offset: ?>> into memref<1x8x6x2x20xf32, strided<[3840, 240, 40, 20, 1], offset: ?>>
// CHECK-COUNT-16: vector.maskedload {{.*}} : memref<4x4x8x1x6x10xf32, strided<[3840, 960, 60, 60, 10, 1], offset: ?>>, vector<16xi1>, vector<16xf32> into vector<16xf32>
// CHECK: vector.shuffle {{.*}} [0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23] : vector<16xf32>, vector<16xf32>
// CHECK: vector.shuffle {{.*}} [8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31] : vector<16xf32>, vector<16xf32>
// CHECK-COUNT-4: vector.maskedstore %[[ROWS]]
// CHECK-NOT: linalg.generic
func.func @output(%m: memref<4x4x16x1x6x10xf32>, %coef: memref<2x2x4x4xf32>,
                  %y: memref<1x16x6x2x10x2xf32>, %f0: index) {
  %zero = arith.constant 0.0 : f32
  %mt = memref.subview %m[0, 0, %f0, 0, 0, 0] [4, 4, 8, 1, 6, 10] [1, 1, 1, 1, 1, 1]
      : memref<4x4x16x1x6x10xf32> to memref<4x4x8x1x6x10xf32, strided<[3840, 960, 60, 60, 10, 1], offset: ?>>
  %yt = memref.subview %y[0, %f0, 0, 0, 0, 0] [1, 8, 6, 2, 10, 2] [1, 1, 1, 1, 1, 1]
      : memref<1x16x6x2x10x2xf32> to memref<1x8x6x2x10x2xf32, strided<[3840, 240, 40, 20, 2, 1], offset: ?>>
  linalg.fill ins(%zero : f32) outs(%yt : memref<1x8x6x2x10x2xf32, strided<[3840, 240, 40, 20, 2, 1], offset: ?>>)
  linalg.generic {indexing_maps = [#m, #k, #y],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel",
                                    "parallel", "parallel", "reduction", "reduction"]}
      ins(%mt, %coef : memref<4x4x8x1x6x10xf32, strided<[3840, 960, 60, 60, 10, 1], offset: ?>>, memref<2x2x4x4xf32>)
      outs(%yt : memref<1x8x6x2x10x2xf32, strided<[3840, 240, 40, 20, 2, 1], offset: ?>>)
      attrs = {mcc.winograd = "output"} {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %p = arith.mulf %a, %c : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}

// Rows that are not unit-stride keep the reference loops (and their fill).
// CHECK-LABEL: func.func @strided_rows
// CHECK: linalg.fill
// CHECK: linalg.generic
// CHECK-SAME: mcc.winograd = "input"
func.func @strided_rows(%x: memref<1x16x14x22xf32, strided<[9856, 616, 44, 2]>>,
                        %coef: memref<4x4x4x4xf32>, %v: memref<4x4x16x1x6x10xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%v : memref<4x4x16x1x6x10xf32>)
  linalg.generic {indexing_maps = [#x, #k, #v],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel",
                                    "parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %coef : memref<1x16x14x22xf32, strided<[9856, 616, 44, 2]>>, memref<4x4x4x4xf32>)
      outs(%v : memref<4x4x16x1x6x10xf32>) attrs = {mcc.winograd = "input"} {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %p = arith.mulf %a, %c : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}
