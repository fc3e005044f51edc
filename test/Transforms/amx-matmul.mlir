// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-amx-matmul))' --verify-each | FileCheck %s

// A product of whole tiles: K = 96 is one K block of 3 tile steps. A's
// rows and B's pairs of rows are packed as bf16 high and low parts (the
// low part is the rounding of what the high part leaves), B's pairs
// interleaved; each 32 x 16 block of C loads two accumulator tiles from C,
// takes six tile products per step (Ahi*Bhi, Ahi*Blo, Alo*Bhi for both
// rows of tiles) and stores them back.
// CHECK-LABEL: func.func @whole_tiles
// CHECK-NOT: linalg.matmul
// CHECK-DAG: %[[AP:.*]] = memref.alloc() : memref<2x64x96xbf16>
// CHECK-DAG: %[[BP:.*]] = memref.alloc() : memref<2x48x96xbf16>
// CHECK-NOT: linalg.fill
// CHECK: vector.transfer_read %arg0
// CHECK: %[[HI:.*]] = arith.truncf %{{.*}} : vector<16xf32> to vector<16xbf16>
// CHECK: %[[BACK:.*]] = arith.extf %[[HI]]
// CHECK: %[[REST:.*]] = arith.subf %{{.*}}, %[[BACK]]
// CHECK: %[[LO:.*]] = arith.truncf %[[REST]]
// CHECK: vector.store %[[HI]], %[[AP]][%{{c0[_0-9]*}},
// CHECK: vector.store %[[LO]], %[[AP]][%{{c1[_0-9]*}},
// CHECK: memref.prefetch %arg1
// CHECK: vector.transfer_read %arg1
// CHECK: vector.transfer_read %arg1
// CHECK: vector.interleave {{.*}} : vector<16xbf16> -> vector<32xbf16>
// CHECK: vector.store {{.*}}, %[[BP]][%{{c0[_0-9]*}},
// CHECK: vector.interleave
// CHECK: vector.store {{.*}}, %[[BP]][%{{c1[_0-9]*}},
// CHECK: scf.for %[[M0:.*]] = %{{.*}} to %{{c64[_0-9]*}} step %{{c32[_0-9]*}}
// CHECK: scf.for %[[N0:.*]] = %{{.*}} to %{{c48[_0-9]*}} step %{{c16[_0-9]*}}
// CHECK: %[[C0:.*]] = amx.tile_load %arg2[%[[M0]], %[[N0]]] : memref<64x48xf32> into !amx.tile<16x16xf32>
// CHECK: amx.tile_load %arg2
// CHECK-COUNT-18: amx.tile_mulf
// CHECK: amx.tile_store %arg2[%[[M0]], %[[N0]]]
// CHECK: amx.tile_store %arg2
// CHECK: memref.dealloc %[[AP]]
// CHECK: memref.dealloc %[[BP]]
func.func @whole_tiles(%a: memref<64x96xf32>, %b: memref<96x48xf32>,
                       %c: memref<64x48xf32>) {
  linalg.matmul ins(%a, %b : memref<64x96xf32>, memref<96x48xf32>)
                outs(%c : memref<64x48xf32>)
  return
}

// Ragged shapes: M = 250 rounds up to 256 rows, N = 200 to 208 columns, K = 310
// is one whole K block of 256 and a last block of 54 (two tile steps, the
// second partly padding). A's 6 padding rows are zeroed once; before the
// last block, whose 27 pairs of K do not fill B's pack, the 5 pairs after
// them are zeroed; C is computed in a padded copy and copied back.
// CHECK-LABEL: func.func @ragged
// CHECK-DAG: %[[AP:.*]] = memref.alloc() : memref<2x256x256xbf16>
// CHECK-DAG: %[[BP:.*]] = memref.alloc() : memref<2x128x416xbf16>
// CHECK: %[[APAD:.*]] = memref.subview %[[AP]][0, 250, 0] [2, 6, 256] [1, 1, 1]
// CHECK: linalg.fill ins(%{{.*}} : bf16) outs(%[[APAD]]
// CHECK: %[[PAD:.*]] = memref.alloc() : memref<256x208xf32>
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[PAD]]
// CHECK: %[[IN:.*]] = memref.subview %[[PAD]][0, 0] [250, 200] [1, 1]
// CHECK: linalg.copy ins(%arg2 {{.*}} outs(%[[IN]]
// CHECK-COUNT-48: amx.tile_mulf
// CHECK: %[[BPAD:.*]] = memref.subview %[[BP]][0, 27, 0] [2, 5, 416] [1, 1, 1]
// CHECK: linalg.fill ins(%{{.*}} : bf16) outs(%[[BPAD]]
// CHECK-COUNT-12: amx.tile_mulf
// CHECK-NOT: amx.tile_mulf
// CHECK: %[[OUT:.*]] = memref.subview %[[PAD]][0, 0] [250, 200] [1, 1]
// CHECK: linalg.copy ins(%[[OUT]] {{.*}} outs(%arg2
// CHECK: memref.dealloc %[[PAD]]
func.func @ragged(%a: memref<250x310xf32>, %b: memref<310x200xf32>,
                  %c: memref<250x200xf32>) {
  linalg.matmul ins(%a, %b : memref<250x310xf32>, memref<310x200xf32>)
                outs(%c : memref<250x200xf32>)
  return
}

// A product whose C was just filled with zeros absorbs the fill. Of one K
// block (K = 64) the accumulators start with tile_zero, C is not loaded;
// of several (K = 288: a block of 256 steps and one of 32), the first
// block zeroes each 32 x 16 block of C in L1 before loading it (peeling
// the first block doubled the unrolled code), the second loads what the
// first stored.
// CHECK-LABEL: func.func @from_zero
// CHECK-NOT: linalg.fill
// CHECK-NOT: amx.tile_load %arg2
// CHECK: amx.tile_zero : !amx.tile<16x16xf32>
// CHECK: amx.tile_zero : !amx.tile<16x16xf32>
// CHECK-COUNT-12: amx.tile_mulf
// CHECK-NOT: amx.tile_mulf
// CHECK: amx.tile_store %arg2
// CHECK: amx.tile_store %arg2
// CHECK: scf.for %[[K0:.*]] = %{{c0[_0-9]*}} to %{{c256[_0-9]*}} step
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[K0]], %{{c0[_0-9]*}}
// CHECK: scf.if %[[FIRST]] {
// CHECK-NEXT: %[[Z:.*]] = amx.tile_zero
// CHECK-NEXT: amx.tile_store %arg5{{.*}}, %[[Z]]
// CHECK-NEXT: amx.tile_store %arg5{{.*}}, %[[Z]]
// CHECK-NEXT: }
// CHECK: amx.tile_load %arg5
// CHECK: amx.tile_load %arg5
// CHECK-COUNT-48: amx.tile_mulf
// CHECK: amx.tile_load %arg5
// CHECK: amx.tile_load %arg5
// CHECK-COUNT-6: amx.tile_mulf
// CHECK-NOT: amx.tile_mulf
func.func @from_zero(%a: memref<64x64xf32>, %b: memref<64x32xf32>,
                     %c: memref<64x32xf32>, %a2: memref<64x288xf32>,
                     %b2: memref<288x32xf32>, %c2: memref<64x32xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<64x32xf32>)
  linalg.matmul ins(%a, %b : memref<64x64xf32>, memref<64x32xf32>)
                outs(%c : memref<64x32xf32>)
  linalg.fill ins(%zero : f32) outs(%c2 : memref<64x32xf32>)
  linalg.matmul ins(%a2, %b2 : memref<64x288xf32>, memref<288x32xf32>)
                outs(%c2 : memref<64x32xf32>)
  return
}

// Left to the AVX-512 kernels: a matrix-vector product (one row), dynamic
// shapes, a transposed B (a user-given indexing map), N = 17 (32 columns
// computed for 17) and K = 16 (padded to 32 steps: a product of one step is
// bound by moving C through the tiles).
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: amx.
// CHECK: linalg.matmul
// CHECK: linalg.matmul
// CHECK: linalg.matmul
// CHECK: linalg.matmul
// CHECK: linalg.matmul
// CHECK-NOT: amx.
#mA = affine_map<(m, n, k) -> (m, k)>
#mBt = affine_map<(m, n, k) -> (n, k)>
#mC = affine_map<(m, n, k) -> (m, n)>
func.func @left_alone(%a1: memref<1x64xf32>, %b: memref<64x64xf32>,
                      %c1: memref<1x64xf32>, %ad: memref<?x64xf32>,
                      %cd: memref<?x64xf32>, %a: memref<64x64xf32>,
                      %c: memref<64x64xf32>) {
  linalg.matmul ins(%a1, %b : memref<1x64xf32>, memref<64x64xf32>)
                outs(%c1 : memref<1x64xf32>)
  linalg.matmul ins(%ad, %b : memref<?x64xf32>, memref<64x64xf32>)
                outs(%cd : memref<?x64xf32>)
  linalg.matmul indexing_maps = [#mA, #mBt, #mC]
                ins(%a, %b : memref<64x64xf32>, memref<64x64xf32>)
                outs(%c : memref<64x64xf32>)
  %b17 = memref.alloc() : memref<64x17xf32>
  %c17 = memref.alloc() : memref<64x17xf32>
  linalg.matmul ins(%a, %b17 : memref<64x64xf32>, memref<64x17xf32>)
                outs(%c17 : memref<64x17xf32>)
  %a16 = memref.alloc() : memref<64x16xf32>
  %b16 = memref.alloc() : memref<16x64xf32>
  linalg.matmul ins(%a16, %b16 : memref<64x16xf32>, memref<16x64xf32>)
                outs(%c : memref<64x64xf32>)
  return
}

// A weight read only as B of such products, in whole tiles (a tile loop's
// 32-column subviews), is read from its record laid out at compile time as
// bf16x3 tiles ([N/16][K/32][2][16][16] f32 of bf16 pairs; the function is
// marked with its weight index): no B pack, tile loads from the view, and
// each block of rows fetches its share of the next K block's tiles.
// CHECK-LABEL: func.func @weight_tiles
// CHECK-SAME: mcc.amx_weights = array<i64: 0, 1>
// CHECK: %[[T:.*]] = memref.reinterpret_cast %arg1 to offset: [0], sizes: [4, 2, 2, 16, 16], strides: [1024, 512, 256, 16, 1] : memref<64x64xf32> to memref<4x2x2x16x16xf32>
// CHECK: scf.forall
// CHECK-NOT: vector.interleave
// CHECK: memref.prefetch %[[T]]{{.*}} read, locality<2>, data
// CHECK: amx.tile_load %[[T]][
// CHECK: amx.tile_mulf
func.func @weight_tiles(%x: memref<32x64xf32>, %w: memref<64x64xf32>,
                        %y: memref<32x64xf32>)
    attributes {mcc.num_inputs = 1 : i64} {
  scf.forall (%j) = (0) to (64) step (32) {
    %ws = memref.subview %w[0, %j] [64, 32] [1, 1]
        : memref<64x64xf32> to memref<64x32xf32, strided<[64, 1], offset: ?>>
    %ys = memref.subview %y[0, %j] [32, 32] [1, 1]
        : memref<32x64xf32> to memref<32x32xf32, strided<[64, 1], offset: ?>>
    linalg.matmul ins(%x, %ws : memref<32x64xf32>, memref<64x32xf32, strided<[64, 1], offset: ?>>)
                  outs(%ys : memref<32x32xf32, strided<[64, 1], offset: ?>>)
  }
  return
}

// A weight that something else reads too keeps its layout (packed per run).
// CHECK-LABEL: func.func @weight_read_elsewhere
// CHECK-NOT: mcc.amx_weights
// CHECK-NOT: memref.reinterpret_cast
// CHECK: vector.interleave
func.func @weight_read_elsewhere(%x: memref<32x64xf32>, %w: memref<64x64xf32>,
                                 %y: memref<32x64xf32>, %z: memref<64x64xf32>)
    attributes {mcc.num_inputs = 1 : i64} {
  linalg.matmul ins(%x, %w : memref<32x64xf32>, memref<64x64xf32>)
                outs(%y : memref<32x64xf32>)
  linalg.copy ins(%w : memref<64x64xf32>) outs(%z : memref<64x64xf32>)
  return
}

// A convolution's weight read as A through its collapse to M x K, in whole
// 32-row blocks: its record is laid out as row tiles ([M/16][K/32][2][16]
// [16] f32 of bf16 rows; marked [weight index, 2]) and A is not packed.
// CHECK-LABEL: func.func @conv_weight_as_a
// CHECK-SAME: mcc.amx_weights = array<i64: 0, 2>
// CHECK: %[[T:.*]] = memref.reinterpret_cast %arg1 to offset: [0], sizes: [4, 2, 2, 16, 16], strides: [1024, 512, 256, 16, 1] : memref<64x64x1x1xf32> to memref<4x2x2x16x16xf32>
// CHECK-NOT: memref<2x64x64xbf16>
// CHECK: amx.tile_load %[[T]][
// CHECK: amx.tile_mulf
func.func @conv_weight_as_a(%x: memref<64x224xf32>, %w: memref<64x64x1x1xf32>,
                            %y: memref<64x224xf32>)
    attributes {mcc.num_inputs = 1 : i64} {
  %a = memref.collapse_shape %w [[0], [1, 2, 3]]
      : memref<64x64x1x1xf32> into memref<64x64xf32>
  linalg.matmul ins(%a, %x : memref<64x64xf32>, memref<64x224xf32>)
                outs(%y : memref<64x224xf32>)
  return
}

// M = 48 is one 32-row block and one row tile: the weight is laid out as
// its 3 row tiles, the last block computes only its first row tile (a 16 x
// 16 block: one accumulator, three tile products a step) and loads no A
// tile past them, and C (48 rows, whole tiles) needs no padded copy.
// CHECK-LABEL: func.func @odd_row_tiles
// CHECK-SAME: mcc.amx_weights = array<i64: 0, 2>
// CHECK: %[[T:.*]] = memref.reinterpret_cast %arg1 to offset: [0], sizes: [3, 2, 2, 16, 16]
// CHECK-NOT: memref.alloc() : memref<64x
// CHECK: scf.for %[[M0:.*]] = %{{.*}} to %c32{{.*}} step %c32
// CHECK-COUNT-12: amx.tile_mulf
// CHECK: amx.tile_store %arg2[%[[M0]],
// CHECK: amx.tile_store %arg2[
// CHECK: scf.for
// CHECK-COUNT-6: amx.tile_mulf
// CHECK-NOT: amx.tile_mulf
// CHECK: amx.tile_store %arg2[%c32{{.*}}, %{{.*}}], %{{.*}} : memref<48x224xf32>
// CHECK-NOT: amx.tile_store
// CHECK: return
func.func @odd_row_tiles(%x: memref<64x224xf32>, %w: memref<48x64x1x1xf32>,
                         %y: memref<48x224xf32>)
    attributes {mcc.num_inputs = 1 : i64} {
  %a = memref.collapse_shape %w [[0], [1, 2, 3]]
      : memref<48x64x1x1xf32> into memref<48x64xf32>
  linalg.matmul ins(%a, %x : memref<48x64xf32>, memref<64x224xf32>)
                outs(%y : memref<48x224xf32>)
  return
}

// An A that every tile of a tile loop reads whole (a linear layer's
// activation, its columns tiled) is packed once before the loop as row
// tiles, read by every tile, and freed after the loop.
// CHECK-LABEL: func.func @shared_a
// CHECK: %[[T:.*]] = memref.alloc() : memref<2x2x2x16x32xbf16>
// CHECK: vector.transfer_read %arg0
// CHECK: vector.store {{.*}}, %[[T]][
// CHECK: scf.forall
// CHECK-NOT: vector.transfer_read %arg0
// CHECK: amx.tile_load %[[T]][
// CHECK: amx.tile_mulf
// CHECK: }
// CHECK: memref.dealloc %[[T]]
func.func @shared_a(%x: memref<32x64xf32>, %w: memref<64x64xf32>,
                    %y: memref<32x64xf32>) {
  scf.forall (%j) = (0) to (64) step (32) {
    %ws = memref.subview %w[0, %j] [64, 32] [1, 1]
        : memref<64x64xf32> to memref<64x32xf32, strided<[64, 1], offset: ?>>
    %ys = memref.subview %y[0, %j] [32, 32] [1, 1]
        : memref<32x64xf32> to memref<32x32xf32, strided<[64, 1], offset: ?>>
    linalg.matmul ins(%x, %ws : memref<32x64xf32>, memref<64x32xf32, strided<[64, 1], offset: ?>>)
                  outs(%ys : memref<32x32xf32, strided<[64, 1], offset: ?>>)
  }
  return
}

// A B that every tile of a tile loop reads whole (a convolution's
// activation, its output channels tiled) is packed once before the loop as
// column tiles (pairs of rows interleaved, padded from 49 to 64 columns
// with the zeros its masked reads give: K is whole steps, nothing is
// filled), in a parallel loop over steps of K that reads B's rows whole,
// read by every tile, and freed after the loop; a pack of this run's B is
// not fetched ahead like a weight streaming from memory. The 7 x 7 image's
// padding (N = 49 computes 64 columns) is worth the tiles; C goes through
// a padded copy.
// CHECK-LABEL: func.func @shared_b
// CHECK: %[[T:.*]] = memref.alloc() : memref<4x2x2x16x32xbf16>
// CHECK-NOT: linalg.fill
// CHECK: scf.forall (%{{.*}}) in (2)
// CHECK: vector.transfer_read %arg0
// CHECK: vector.interleave
// CHECK: vector.store {{.*}}, %[[T]][
// CHECK: scf.forall
// CHECK-NOT: vector.transfer_read %arg0
// CHECK-NOT: memref.prefetch
// CHECK: amx.tile_load %[[T]][
// CHECK: amx.tile_mulf
// CHECK: }
// CHECK: memref.dealloc %[[T]]
func.func @shared_b(%x: memref<64x49xf32>, %w: memref<64x64xf32>,
                    %y: memref<64x49xf32>) {
  scf.forall (%i) = (0) to (64) step (32) {
    %ws = memref.subview %w[%i, 0] [32, 64] [1, 1]
        : memref<64x64xf32> to memref<32x64xf32, strided<[64, 1], offset: ?>>
    %ys = memref.subview %y[%i, 0] [32, 49] [1, 1]
        : memref<64x49xf32> to memref<32x49xf32, strided<[49, 1], offset: ?>>
    linalg.matmul ins(%ws, %x : memref<32x64xf32, strided<[64, 1], offset: ?>>, memref<64x49xf32>)
                  outs(%ys : memref<32x49xf32, strided<[49, 1], offset: ?>>)
  }
  return
}

// An elementwise generic after a product whose C goes through a padded
// copy (N = 49 computes 64 columns) is applied as C leaves the copy: 16
// columns at a time (the last one masked), the bias per row, the ReLU, the
// stores into the generic's output; no copy back into C, and the generic
// goes.
// CHECK-LABEL: func.func @epilogue_on_copy_back
// CHECK: %[[P:.*]] = memref.alloc() : memref<32x64xf32>
// CHECK: amx.tile_store %[[P]]
// CHECK-NOT: linalg.copy
// CHECK: scf.for %[[R:.*]] = %c0{{.*}} to %c32
// CHECK: scf.for %[[C:.*]] = %c0{{.*}} to %c48{{.*}} step %c16
// CHECK: %[[V:.*]] = vector.load %[[P]][%[[R]], %[[C]]] : memref<32x64xf32>, vector<16xf32>
// CHECK: %[[B:.*]] = memref.load %arg2[%[[R]]]
// CHECK: arith.addf %[[V]], %{{.*}} : vector<16xf32>
// CHECK: arith.maximumf
// CHECK: vector.store {{.*}}, %arg3[%[[R]], %[[C]]]
// CHECK: vector.maskedload %[[P]][%[[R]], %c48
// CHECK: vector.maskedstore %arg3[%[[R]], %c48
// CHECK: memref.dealloc %[[P]]
// CHECK-NOT: linalg.generic
// CHECK: return
#ep_id = affine_map<(d0, d1) -> (d0, d1)>
#ep_row = affine_map<(d0, d1) -> (d0)>
func.func @epilogue_on_copy_back(%x: memref<64x49xf32>, %w: memref<32x64xf32>,
                                 %bias: memref<32xf32>, %y: memref<32x49xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<32x49xf32>
  linalg.matmul ins(%w, %x : memref<32x64xf32>, memref<64x49xf32>)
                outs(%c : memref<32x49xf32>)
  linalg.generic {indexing_maps = [#ep_id, #ep_row, #ep_id], iterator_types = ["parallel", "parallel"]}
      ins(%c, %bias : memref<32x49xf32>, memref<32xf32>) outs(%y : memref<32x49xf32>) {
  ^bb0(%v: f32, %b: f32, %o: f32):
    %s = arith.addf %v, %b : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  }
  memref.dealloc %c : memref<32x49xf32>
  return
}

// A batch of products (attention's heads, Winograd's transformed tiles)
// runs the same tile products on each element's 2-D views, in a loop.
// CHECK-LABEL: func.func @batch
// CHECK-NOT: linalg.batch_matmul
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{c4[_0-9]*}} step
// CHECK: memref.subview %arg0[%[[I]], 0, 0] [1, 64, 64] [1, 1, 1] : memref<4x64x64xf32> to memref<64x64xf32, strided<[64, 1], offset: ?>>
// CHECK: memref.subview %arg2[%[[I]], 0, 0] [1, 64, 32] [1, 1, 1]
// CHECK-COUNT-12: amx.tile_mulf
func.func @batch(%a: memref<4x64x64xf32>, %b: memref<4x64x32xf32>,
                 %c: memref<4x64x32xf32>) {
  linalg.batch_matmul ins(%a, %b : memref<4x64x64xf32>, memref<4x64x32xf32>)
                      outs(%c : memref<4x64x32xf32>)
  return
}

// A weight read only as A of batch products, in whole elements (Winograd's
// transformed weights, E x M x K, a batch element per tile of the tile
// loop) is laid out as the row tiles of its (E * M) x K view (marked
// [weight index, 3]); element i reads rows i * M on. A is not packed, and
// the 7 x 7 image's 49 columns (64 computed) are worth the tiles.
// CHECK-LABEL: func.func @batch_weight_tiles
// CHECK-SAME: mcc.amx_weights = array<i64: 0, 3>
// CHECK: %[[T:.*]] = memref.reinterpret_cast %arg1 to offset: [0], sizes: [16, 2, 2, 16, 16], strides: [1024, 512, 256, 16, 1] : memref<4x64x64xf32> to memref<16x2x2x16x16xf32>
// CHECK: scf.forall (%[[E:.*]]) in (4)
// CHECK-NOT: memref<2x64x64xbf16>
// CHECK: %[[ROW:.*]] = arith.muli %{{.*}}, %{{c64[_0-9]*}}
// CHECK: memref.alloc() : memref<64x64xf32>
// CHECK: amx.tile_load %[[T]][
// CHECK: amx.tile_mulf
func.func @batch_weight_tiles(%x: memref<4x64x49xf32>, %w: memref<4x64x64xf32>,
                              %y: memref<4x64x49xf32>)
    attributes {mcc.num_inputs = 1 : i64} {
  scf.forall (%e) in (4) {
    %ws = memref.subview %w[%e, 0, 0] [1, 64, 64] [1, 1, 1]
        : memref<4x64x64xf32> to memref<1x64x64xf32, strided<[4096, 64, 1], offset: ?>>
    %xs = memref.subview %x[%e, 0, 0] [1, 64, 49] [1, 1, 1]
        : memref<4x64x49xf32> to memref<1x64x49xf32, strided<[3136, 49, 1], offset: ?>>
    %ys = memref.subview %y[%e, 0, 0] [1, 64, 49] [1, 1, 1]
        : memref<4x64x49xf32> to memref<1x64x49xf32, strided<[3136, 49, 1], offset: ?>>
    linalg.batch_matmul ins(%ws, %xs : memref<1x64x64xf32, strided<[4096, 64, 1], offset: ?>>, memref<1x64x49xf32, strided<[3136, 49, 1], offset: ?>>)
                        outs(%ys : memref<1x64x49xf32, strided<[3136, 49, 1], offset: ?>>)
  }
  return
}

// Fewer than 32 rows keep the AVX-512 kernels when B is packed on every run
// (an activation: a convolution's 24 x 64 x 3136 product packed all of B
// for 24 rows); with B a weight, whose tiles are laid out at compile time,
// 24 rows take the tiles.
// CHECK-LABEL: func.func @few_rows
// CHECK-NOT: amx.
// CHECK: linalg.matmul
// CHECK-NOT: linalg.matmul
// CHECK: amx.tile_mulf
func.func @few_rows(%w: memref<24x64xf32>, %x: memref<64x48xf32>,
                    %y: memref<24x48xf32>, %v: memref<64x48xf32>,
                    %z: memref<24x48xf32>)
    attributes {mcc.num_inputs = 3 : i64} {
  linalg.matmul ins(%w, %x : memref<24x64xf32>, memref<64x48xf32>)
                outs(%y : memref<24x48xf32>)
  linalg.matmul ins(%w, %v : memref<24x64xf32>, memref<64x48xf32>)
                outs(%z : memref<24x48xf32>)
  return
}
