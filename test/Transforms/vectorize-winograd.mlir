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

#x4 = affine_map<(c, n, ty, tx, p, q, i, j) -> (n, c, ty * 4 + i, tx * 4 + j)>

// F(4x4, 3x3): 6x6 tiles from rows 4ty and columns 4tx. Each of the 6 tile
// rows is two wide loads of 4 vectors (columns from 4tx and 4tx + 4), split
// by stride-4 shuffles into the 6 columns (the second load gives columns 4
// and 5 only); B^T's 4 and 5 are multiply-adds; 36 masked stores.
// CHECK-LABEL: func.func @input_f4
// CHECK-NOT: linalg.fill
// CHECK: scf.for %[[TX:.*]] = %{{.*}} to %{{.*}} step %c16
// CHECK-COUNT-12: vector.maskedload {{.*}} : memref<1x16x26x26xf32>, vector<64xi1>, vector<64xf32> into vector<64xf32>
// CHECK: vector.shuffle {{.*}} [0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60] : vector<64xf32>, vector<64xf32>
// CHECK: vector.shuffle {{.*}} [1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 41, 45, 49, 53, 57, 61] : vector<64xf32>, vector<64xf32>
// CHECK: vector.fma {{.*}} : vector<16xf32>
// CHECK-COUNT-36: vector.maskedstore {{.*}} : memref<6x6x16x1x6x6xf32>, vector<16xi1>, vector<16xf32>
// CHECK-NOT: vector.maskedstore
// CHECK-NOT: linalg.generic
// AVX2-LABEL: func.func @input_f4
// AVX2: vector.maskedload {{.*}} vector<32xf32>
// AVX2: vector.maskedstore {{.*}} vector<8xf32>
func.func @input_f4(%x: memref<1x16x26x26xf32>, %coef: memref<6x6x6x6xf32>,
                    %v: memref<6x6x16x1x6x6xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%v : memref<6x6x16x1x6x6xf32>)
  linalg.generic {indexing_maps = [#x4, #k, #v],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel",
                                    "parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %coef : memref<1x16x26x26xf32>, memref<6x6x6x6xf32>)
      outs(%v : memref<6x6x16x1x6x6xf32>) attrs = {mcc.winograd = "input"} {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %p = arith.mulf %a, %c : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}

// F(4x4, 3x3)'s output transform: 36 masked loads of the products; each of
// the 4 output rows interleaves its 4 columns (pairs first, then pairs of
// pairs) into 4 contiguous masked stores.
// CHECK-LABEL: func.func @output_f4
// CHECK-NOT: linalg.fill
// CHECK: %[[ROWS4:.*]] = memref.collapse_shape %{{.*}} {{\[}}[0], [1], [2], [3], [4, 5]] : memref<1x16x6x4x6x4xf32> into memref<1x16x6x4x24xf32>
// CHECK-COUNT-36: vector.maskedload {{.*}} : memref<6x6x16x1x6x6xf32>, vector<16xi1>, vector<16xf32> into vector<16xf32>
// CHECK: vector.fma
// CHECK: vector.shuffle {{.*}} [0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31] : vector<16xf32>, vector<16xf32>
// CHECK: vector.shuffle {{.*}} [0, 1, 32, 33, 2, 3, 34, 35, 4, 5, 36, 37, 6, 7, 38, 39] : vector<32xf32>, vector<32xf32>
// CHECK-COUNT-16: vector.maskedstore %[[ROWS4]]
// CHECK-NOT: vector.maskedstore
// CHECK-NOT: linalg.generic
func.func @output_f4(%m: memref<6x6x16x1x6x6xf32>, %coef: memref<4x4x6x6xf32>,
                     %y: memref<1x16x6x4x6x4xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<1x16x6x4x6x4xf32>)
  linalg.generic {indexing_maps = [#m, #k, #y],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel",
                                    "parallel", "parallel", "reduction", "reduction"]}
      ins(%m, %coef : memref<6x6x16x1x6x6xf32>, memref<4x4x6x6xf32>)
      outs(%y : memref<1x16x6x4x6x4xf32>) attrs = {mcc.winograd = "output"} {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %p = arith.mulf %a, %c : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}

// A tile the emitter has no transforms for (5 x 5) keeps the reference loops.
// CHECK-LABEL: func.func @other_tile
// CHECK: linalg.fill
// CHECK: linalg.generic
// CHECK-SAME: mcc.winograd = "input"
func.func @other_tile(%x: memref<1x16x26x26xf32>, %coef: memref<5x5x5x5xf32>,
                      %v: memref<5x5x16x1x6x6xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%v : memref<5x5x16x1x6x6xf32>)
  linalg.generic {indexing_maps = [#x4, #k, #v],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel",
                                    "parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %coef : memref<1x16x26x26xf32>, memref<5x5x5x5xf32>)
      outs(%v : memref<5x5x16x1x6x6xf32>) attrs = {mcc.winograd = "input"} {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %p = arith.mulf %a, %c : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}
