// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-register-tile-matmul{rows=4 vectors=2 lanes=8 k-block=64 panels=2 fuse-packs=false}))' --verify-each | FileCheck %s

// (fuse-packs=false: the copy loop; register-tile-matmul-fused-pack.mlir
// tests the pack made by the first row block.)
// A 4 x (2 * 8) register block: B is packed two 16-column panels at a time
// into a stack buffer of 2 x k-block x 16 floats, each row of B walked
// across both panels; then 8 accumulators (4 rows x 2 vectors) ride the K
// loop as iter_args, one broadcast of A per row and one fma per vector.
// CHECK-LABEL: func.func @matmul
// CHECK: memref.alloca_scope
// CHECK: %[[PACK:.*]] = memref.alloca() : memref<2x64x16xf32>
// CHECK: scf.for
// CHECK: scf.for %[[C0:[^ ]*]] = {{.*}} step %c32
// CHECK: scf.for %[[K:[^ ]*]] =
// CHECK: scf.for %[[N0:[^ ]*]] = %[[C0]]
// CHECK: %[[OFF:.*]] = arith.subi %[[N0]], %[[C0]]
// CHECK: %[[PANEL:.*]] = arith.divui %[[OFF]], %c16
// CHECK: vector.load %arg1[%[[K]], {{.*}}] : memref<100x37xf32>, vector<8xf32>
// CHECK: vector.store {{.*}}, %[[PACK]][%[[PANEL]],
// CHECK: scf.for {{.*}} step %c4
// CHECK-COUNT-8: vector.load %arg2
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK-COUNT-2: vector.load %[[PACK]]
// CHECK: memref.load %arg0
// CHECK: vector.broadcast
// CHECK: vector.fma
// CHECK: vector.fma
// CHECK-COUNT-8: vector.store {{.*}}, %arg2
// The leftover 5 columns (37 = 2 * 16 + 5) use masked loads and stores.
// CHECK: scf.if
// CHECK: vector.create_mask
// CHECK: vector.maskedload %arg1
// CHECK: vector.maskedstore %arg2
// CHECK-NOT: linalg.matmul
func.func @matmul(%a: memref<18x100xf32>, %b: memref<100x37xf32>, %c: memref<18x37xf32>) {
  linalg.matmul ins(%a, %b : memref<18x100xf32>, memref<100x37xf32>) outs(%c : memref<18x37xf32>)
  return
}

// At most three row blocks (10 rows: 4, 4 and 2) read B in place: a panel
// packed for so few reads costs more than it saves.
// CHECK-LABEL: func.func @few_row_blocks
// CHECK-NOT: memref.alloca() : memref<2x64x16xf32>
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK-COUNT-2: vector.load %arg1
// CHECK: vector.fma
// CHECK-NOT: linalg.matmul
func.func @few_row_blocks(%a: memref<10x100xf32>, %b: memref<100x37xf32>, %c: memref<10x37xf32>) {
  linalg.matmul ins(%a, %b : memref<10x100xf32>, memref<100x37xf32>) outs(%c : memref<10x37xf32>)
  return
}

// A short K (at most 64) runs a packed chunk's row blocks outside its
// column blocks: each block of rows is written left to right across the
// chunk instead of a block's rows at a time, one store stream per row.
// CHECK-LABEL: func.func @short_k_rows_outer
// CHECK: %[[PACK:.*]] = memref.alloca() : memref<2x64x16xf32>
// CHECK: scf.for %[[C0:[^ ]*]] = {{.*}} step %c32
// CHECK: vector.store {{.*}}, %[[PACK]]
// CHECK: scf.for %[[M0:[^ ]*]] = {{.*}} to %c12 step %c4
// CHECK-NOT: iter_args
// CHECK: scf.for %{{.*}} = %[[C0]] to {{.*}} step %c16
// CHECK: iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK: vector.store {{.*}}, %arg2[%[[M0]],
// The last 6 rows (two blocks of 3) also walk the chunk's columns.
// CHECK: scf.for %{{.*}} = %[[C0]] to {{.*}} step %c16
// CHECK: iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
func.func @short_k_rows_outer(%a: memref<18x16xf32>, %b: memref<16x64xf32>, %c: memref<18x64xf32>) {
  linalg.matmul ins(%a, %b : memref<18x16xf32>, memref<16x64xf32>) outs(%c : memref<18x64xf32>)
  return
}

// batch_matmul: the same kernel inside a loop over the batch, which shares
// one packing buffer (allocated outside the loop, so the stack does not
// grow per iteration); N = 16 packs one panel.
// CHECK-LABEL: func.func @batch
// CHECK: memref.alloca_scope
// CHECK: memref.alloca() : memref<1x64x16xf32>
// CHECK: scf.for %[[BATCH:.*]] =
// CHECK-NOT: memref.alloca
// CHECK: vector.load %arg1[%[[BATCH]],
// CHECK-NOT: linalg.batch_matmul
func.func @batch(%a: memref<3x16x16xf32>, %b: memref<3x16x16xf32>, %c: memref<3x16x16xf32>) {
  linalg.batch_matmul ins(%a, %b : memref<3x16x16xf32>, memref<3x16x16xf32>) outs(%c : memref<3x16x16xf32>)
  return
}

// Weights shared by the batch (convolutions of several images): A takes no
// batch index.
// CHECK-LABEL: func.func @broadcast_a
// CHECK: scf.for %[[N:.*]] =
// CHECK: memref.load %arg0[%{{[^,]*}}, %{{[^,]*}}] : memref<8x16xf32>
// CHECK-NOT: linalg.batch_matmul
func.func @broadcast_a(%a: memref<8x16xf32>, %b: memref<3x16x16xf32>, %c: memref<3x8x16xf32>) {
  linalg.batch_matmul indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d3)>,
                                       affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>,
                                       affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]
      ins(%a, %b : memref<8x16xf32>, memref<3x16x16xf32>) outs(%c : memref<3x8x16xf32>)
  return
}

// Other element types, and B with a non-unit inner stride, are left alone.
// CHECK-LABEL: func.func @left_alone
// CHECK: linalg.matmul {{.*}} memref<4x4xf64>
// CHECK: linalg.matmul {{.*}} memref<4x4xf32, strided<[1, 4]>>
func.func @left_alone(%a: memref<4x4xf64>, %c: memref<4x4xf64>, %x: memref<4x4xf32>,
                      %y: memref<4x4xf32, strided<[1, 4]>>, %z: memref<4x4xf32>) {
  linalg.matmul ins(%a, %a : memref<4x4xf64>, memref<4x4xf64>) outs(%c : memref<4x4xf64>)
  linalg.matmul ins(%x, %y : memref<4x4xf32>, memref<4x4xf32, strided<[1, 4]>>) outs(%z : memref<4x4xf32>)
  return
}

// A dynamic M (rows = batch * sequence) and a tile view of it: the same
// register-blocked kernel, its row count read from the buffer, with the
// 4-, 2- and 1-row remainders.
// CHECK-LABEL: func.func @dynamic_rows
// CHECK: memref.alloca() : memref<2x64x16xf32>
// CHECK: memref.dim %arg2, %c0
// CHECK: scf.for {{.*}} step %c4
// CHECK: vector.fma
// CHECK: scf.for {{.*}} step %c2
// CHECK: scf.for {{.*}} step %c1
// CHECK-NOT: linalg.matmul
func.func @dynamic_rows(%a: memref<?x64xf32>, %b: memref<64x32xf32, strided<[64, 1], offset: ?>>, %c: memref<?x32xf32, strided<[64, 1], offset: ?>>) {
  linalg.matmul ins(%a, %b : memref<?x64xf32>, memref<64x32xf32, strided<[64, 1], offset: ?>>) outs(%c : memref<?x32xf32, strided<[64, 1], offset: ?>>)
  return
}

// At most one row block (a matrix-vector product): no packing, the kernel
// loads B in place.
// CHECK-LABEL: func.func @one_row
// CHECK-NOT: memref.alloca()
// CHECK: scf.for {{.*}} iter_args
// CHECK: vector.load %arg1
// CHECK: vector.fma
func.func @one_row(%a: memref<1x64xf32>, %b: memref<64x32xf32>, %c: memref<1x32xf32>) {
  linalg.matmul ins(%a, %b : memref<1x64xf32>, memref<64x32xf32>) outs(%c : memref<1x32xf32>)
  return
}

// One row reads a wide strip of B per K step: rows x vectors accumulators
// (here 4 x 2) all go to its columns, 8 vectors of 8 for N = 64.
// CHECK-LABEL: func.func @one_row_wide
// CHECK: scf.for {{.*}} iter_args
// CHECK-COUNT-8: vector.load %arg1
// CHECK-COUNT-8: vector.fma
// CHECK-NOT: vector.fma
// CHECK: scf.yield
func.func @one_row_wide(%a: memref<1x64xf32>, %b: memref<64x64xf32>, %c: memref<1x64xf32>) {
  linalg.matmul ins(%a, %b : memref<1x64xf32>, memref<64x64xf32>) outs(%c : memref<1x64xf32>)
  return
}

// B one contiguous column (a 1x1 convolution over a 1x1 image): dot products
// along K, one row of A at a time (one sequential stream), four vector
// accumulators along K (K = 44: one step of 4 x 8), summed into one, the
// remaining full vectors (one of 8), then a masked rest (4), summed across
// lanes into C.
// CHECK-LABEL: func.func @column_vector
// CHECK-NOT: memref.alloca()
// CHECK: %[[X:.*]] = memref.reinterpret_cast %{{.*}} to offset: [{{.*}}], sizes: [44], strides: [1]
// CHECK: scf.for %[[M:.*]] = %{{.*}} to %{{.*}} step %c1
// CHECK: scf.for {{.*}} step %c32{{.*}} iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK-COUNT-4: vector.fma
// CHECK: scf.yield
// CHECK-COUNT-3: arith.addf {{.*}} : vector<8xf32>
// CHECK: scf.for {{.*}} step %c8{{.*}} -> (vector<8xf32>)
// CHECK: vector.load %[[X]]
// CHECK: vector.load %arg0[%[[M]],
// CHECK: vector.maskedload %[[X]]
// CHECK: vector.maskedload %arg0[%[[M]],
// CHECK: vector.reduction <add>, {{.*}} fastmath<reassoc>
// CHECK-NOT: vector.reduction
// CHECK: memref.store {{.*}}, %arg2[%[[M]], %{{.*}}]
// A column of B that is not contiguous keeps the general kernel.
// CHECK-LABEL: func.func @strided_column
// CHECK-NOT: vector.reduction
func.func @column_vector(%a: memref<10x44xf32>, %b: memref<44x1xf32>, %c: memref<10x1xf32>) {
  linalg.matmul ins(%a, %b : memref<10x44xf32>, memref<44x1xf32>) outs(%c : memref<10x1xf32>)
  return
}
func.func @strided_column(%a: memref<10x20xf32>, %b: memref<20x1xf32, strided<[4, 1]>>, %c: memref<10x1xf32>) {
  linalg.matmul ins(%a, %b : memref<10x20xf32>, memref<20x1xf32, strided<[4, 1]>>) outs(%c : memref<10x1xf32>)
  return
}

// The accumulator's fill is folded into the kernel: the first K block starts
// from the fill's value instead of loading C, and the fill goes away. With a
// dynamic K (possibly empty, C then holds only the fill) the fill stays.
// CHECK-LABEL: func.func @from_fill
// CHECK-SAME: %[[INIT:[^:]*]]: f32
// CHECK-NOT: linalg.fill
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[K0:.*]], %c0
// CHECK: scf.if %[[FIRST]]
// CHECK: %[[SPLAT:.*]] = vector.broadcast %[[INIT]] : f32 to vector<8xf32>
// CHECK: scf.yield %[[SPLAT]], %[[SPLAT]]
// CHECK: } else {
// CHECK: vector.load %arg2
// CHECK-LABEL: func.func @dynamic_k_keeps_fill
// CHECK: linalg.fill
// CHECK-NOT: vector.broadcast %arg3
func.func @from_fill(%a: memref<10x100xf32>, %b: memref<100x37xf32>, %c: memref<10x37xf32>, %init: f32) {
  linalg.fill ins(%init : f32) outs(%c : memref<10x37xf32>)
  linalg.matmul ins(%a, %b : memref<10x100xf32>, memref<100x37xf32>) outs(%c : memref<10x37xf32>)
  return
}
func.func @dynamic_k_keeps_fill(%a: memref<10x?xf32>, %b: memref<?x37xf32>, %c: memref<10x37xf32>, %init: f32) {
  linalg.fill ins(%init : f32) outs(%c : memref<10x37xf32>)
  linalg.matmul ins(%a, %b : memref<10x?xf32>, memref<?x37xf32>) outs(%c : memref<10x37xf32>)
  return
}

// A static M = 14 in 4-row blocks leaves 2 rows: the last full block and
// those 2 run as two 3-row blocks (6 accumulators each) instead of a 2-row
// block whose 4 accumulators cannot cover the FMA latency.
// CHECK-LABEL: func.func @balanced_rows
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c8 step %c4
// CHECK: iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK: iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK: iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK-NOT: step %c2
func.func @balanced_rows(%a: memref<14x64xf32>, %b: memref<64x16xf32>, %c: memref<14x16xf32>) {
  linalg.matmul ins(%a, %b : memref<14x64xf32>, memref<64x16xf32>) outs(%c : memref<14x16xf32>)
  return
}

// N = 22 leaves 6 columns, less than a vector and more than run as dot
// products: that remainder runs one vector wide on 8-row blocks (here
// M = 10 as 5 + 5 rows) instead of two vectors, one of them all masked off.
// CHECK-LABEL: func.func @narrow_rest
// CHECK: scf.if
// CHECK: vector.maskedload %arg1
// CHECK-NOT: vector.maskedload %arg1
// CHECK: iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK: iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK-NOT: iter_args
func.func @narrow_rest(%a: memref<10x64xf32>, %b: memref<64x22xf32>, %c: memref<10x22xf32>) {
  linalg.matmul ins(%a, %b : memref<10x64xf32>, memref<64x22xf32>) outs(%c : memref<10x22xf32>)
  return
}

// N = 17 = 2 vectors + 1 column: the last column is first copied to a
// contiguous 1 x K buffer; the vectors run one vector wide on 8-row blocks,
// unmasked; then, in the same K block, each row's dot product with the
// column runs along K, 8 rows (one vector accumulator each) at a time, then
// the 2 rows left one by one.
// CHECK-LABEL: func.func @dot_tail
// CHECK: %[[COL:.*]] = memref.alloca() : memref<1x64xf32>
// CHECK: memref.load %arg1[%{{.*}}, %c16{{.*}}] : memref<64x17xf32>
// CHECK: memref.store {{.*}}, %[[COL]]
// CHECK: iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK: scf.for {{.*}} step %c8
// CHECK: iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK: vector.load %[[COL]]
// CHECK-COUNT-8: vector.fma
// CHECK-COUNT-8: vector.reduction <add>, {{.*}} fastmath<reassoc>
// CHECK: scf.for {{.*}} step %c1
// CHECK: iter_args({{.*}}) -> (vector<8xf32>)
// CHECK: vector.reduction <add>, {{.*}} fastmath<reassoc>
// CHECK: memref.store {{.*}}, %arg2
func.func @dot_tail(%a: memref<10x64xf32>, %b: memref<64x17xf32>, %c: memref<10x17xf32>) {
  linalg.matmul ins(%a, %b : memref<10x64xf32>, memref<64x17xf32>) outs(%c : memref<10x17xf32>)
  return
}

// N = 25 = 3 vectors + 1 column (a 7 x 7 image at 16 lanes: 49 = 48 + 1):
// one block of rows x 3 vectors covers the vectors, 12 accumulators at 4
// rows, and the last column is a dot product.
// CHECK-LABEL: func.func @three_vectors
// CHECK: memref.alloca() : memref<2x64x24xf32>
// CHECK: memref.alloca() : memref<1x64xf32>
// CHECK: iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK-COUNT-12: vector.fma
// CHECK: vector.reduction <add>, {{.*}} fastmath<reassoc>
func.func @three_vectors(%a: memref<16x64xf32>, %b: memref<64x25xf32>, %c: memref<16x25xf32>) {
  linalg.matmul ins(%a, %b : memref<16x64xf32>, memref<64x25xf32>) outs(%c : memref<16x25xf32>)
  return
}

#full = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>

// An epilogue (bias per row, residual, ReLU) right after the product, with
// its output view in between: applied to the accumulators in the last K
// block and stored to its output; C, a temporary nothing else reads, is
// stored only by earlier K blocks. The generic is gone.
// CHECK-LABEL: func.func @epilogue
// CHECK-SAME: (%[[A:[^:]*]]: memref<10x100xf32>, %[[B:[^:]*]]: memref<100x37xf32>, %[[BIAS:[^:]*]]: memref<10xf32>, %[[R:[^:]*]]: memref<10x37xf32>, %[[Y:[^:]*]]: memref<10x37xf32>)
// CHECK: %[[C:.*]] = memref.alloc
// CHECK: %[[YV:.*]] = memref.subview %[[Y]]
// CHECK: memref.alloca_scope
// CHECK: %[[LAST:.*]] = arith.cmpi eq
// CHECK: scf.for
// Before the K loop of the last K block, the residual's lines and the
// output's (for writing) are fetched for the block's rows.
// CHECK: scf.if %[[LAST]] {
// CHECK: memref.prefetch %[[R]][{{.*}}], read
// CHECK: memref.prefetch %[[YV]][{{.*}}], write
// CHECK: scf.for {{.*}} iter_args
// CHECK: scf.if %[[LAST]] {
// CHECK-NOT: %[[C]]
// CHECK: memref.load %[[BIAS]]
// CHECK: vector.broadcast
// CHECK: vector.load %[[R]]
// CHECK: arith.addf {{.*}} : vector<8xf32>
// CHECK: arith.addf {{.*}} : vector<8xf32>
// CHECK: arith.maximumf {{.*}} : vector<8xf32>
// CHECK: vector.store {{.*}}, %[[YV]]
// CHECK: } else {
// CHECK: vector.store {{.*}}, %[[C]]
// The masked columns load the residual and store the output masked.
// CHECK: vector.maskedload %[[R]]
// CHECK: vector.maskedstore %[[YV]]
// CHECK-NOT: linalg.generic
// CHECK: memref.dealloc %[[C]]
func.func @epilogue(%a: memref<10x100xf32>, %b: memref<100x37xf32>, %bias: memref<10xf32>, %r: memref<10x37xf32>, %y: memref<10x37xf32>) {
  %z = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<10x37xf32>
  linalg.fill ins(%z : f32) outs(%c : memref<10x37xf32>)
  linalg.matmul ins(%a, %b : memref<10x100xf32>, memref<100x37xf32>) outs(%c : memref<10x37xf32>)
  %yv = memref.subview %y[0, 0] [10, 37] [1, 1] : memref<10x37xf32> to memref<10x37xf32, strided<[37, 1]>>
  linalg.generic {indexing_maps = [#full, #row, #full, #full], iterator_types = ["parallel", "parallel"]}
      ins(%c, %bias, %r : memref<10x37xf32>, memref<10xf32>, memref<10x37xf32>) outs(%yv : memref<10x37xf32, strided<[37, 1]>>) {
  ^bb0(%v: f32, %bv: f32, %rv: f32, %out: f32):
    %0 = arith.addf %v, %bv : f32
    %1 = arith.addf %0, %rv : f32
    %2 = arith.maximumf %1, %z : f32
    linalg.yield %2 : f32
  }
  memref.dealloc %c : memref<10x37xf32>
  return
}

// C is an output of the function: the last K block stores it as well as
// the epilogue's result (a bias per column). N = 33 = 32 + 1 ends in a
// dot-product column, whose epilogue is scalar.
// CHECK-LABEL: func.func @epilogue_keeps_c
// CHECK: scf.if
// CHECK: vector.store {{.*}}, %arg2
// CHECK: vector.load %arg3
// CHECK: vector.store {{.*}}, %arg4
// CHECK: vector.reduction <add>, {{.*}} fastmath<reassoc>
// CHECK: scf.if
// CHECK: memref.store {{.*}}, %arg2
// CHECK: memref.load %arg3
// CHECK: arith.mulf {{.*}} : f32
// CHECK: memref.store {{.*}}, %arg4
// CHECK-NOT: linalg.generic
func.func @epilogue_keeps_c(%a: memref<16x64xf32>, %b: memref<64x33xf32>, %c: memref<16x33xf32>, %bias: memref<33xf32>, %y: memref<16x33xf32>) {
  linalg.matmul ins(%a, %b : memref<16x64xf32>, memref<64x33xf32>) outs(%c : memref<16x33xf32>)
  linalg.generic {indexing_maps = [#full, #col, #full], iterator_types = ["parallel", "parallel"]}
      ins(%c, %bias : memref<16x33xf32>, memref<33xf32>) outs(%y : memref<16x33xf32>) {
  ^bb0(%v: f32, %bv: f32, %out: f32):
    %0 = arith.mulf %v, %bv : f32
    linalg.yield %0 : f32
  }
  return
}

// Not an epilogue: the generic writes B, which the product reads.
// CHECK-LABEL: func.func @not_into_an_operand
// CHECK: linalg.generic
func.func @not_into_an_operand(%a: memref<16x64xf32>, %b: memref<64x16xf32>, %c: memref<16x16xf32>) {
  linalg.matmul ins(%a, %b : memref<16x64xf32>, memref<64x16xf32>) outs(%c : memref<16x16xf32>)
  %bv = memref.subview %b[0, 0] [16, 16] [1, 1] : memref<64x16xf32> to memref<16x16xf32, strided<[16, 1]>>
  linalg.generic {indexing_maps = [#full, #full], iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<16x16xf32>) outs(%bv : memref<16x16xf32, strided<[16, 1]>>) {
  ^bb0(%v: f32, %out: f32):
    %0 = arith.negf %v : f32
    linalg.yield %0 : f32
  }
  return
}

// Not an epilogue: C read a second time, as another operand (its other
// elements are not in memory when the last K block runs).
// CHECK-LABEL: func.func @c_read_twice
// CHECK: linalg.generic
func.func @c_read_twice(%a: memref<16x64xf32>, %b: memref<64x16xf32>, %y: memref<16x16xf32>) {
  %c = memref.alloc() : memref<16x16xf32>
  linalg.matmul ins(%a, %b : memref<16x64xf32>, memref<64x16xf32>) outs(%c : memref<16x16xf32>)
  linalg.generic {indexing_maps = [#full, #full, #full], iterator_types = ["parallel", "parallel"]}
      ins(%c, %c : memref<16x16xf32>, memref<16x16xf32>) outs(%y : memref<16x16xf32>) {
  ^bb0(%v: f32, %w: f32, %out: f32):
    %0 = arith.mulf %v, %w : f32
    linalg.yield %0 : f32
  }
  memref.dealloc %c : memref<16x16xf32>
  return
}

// A tall product tiled over m: both tiles read all of B, which is packed
// once before the tile loop (one panel per iteration of a parallel loop,
// the last of 40 = 2 * 16 + 8 columns zero-padded by a masked load) into a
// heap buffer that the kernels read as pre-packed panels (without the
// prefetches a weight's panels get: this one is in cache) and that is freed
// after the loop; no tile packs B on its stack.
// CHECK-LABEL: func.func @shared_pack
// CHECK: %[[P:.*]] = memref.alloc() : memref<3x32x16xf32>
// CHECK: scf.forall (%[[PANEL:.*]]) in (3)
// CHECK: vector.create_mask
// CHECK: scf.for %[[K:.*]] =
// CHECK: vector.maskedload %arg1[%[[K]],
// CHECK: vector.store {{.*}}, %[[P]][%[[PANEL]], %[[K]],
// CHECK: scf.forall
// CHECK-NOT: memref.alloca() : memref<{{.*}}x16xf32>
// CHECK: vector.load %[[P]]
// CHECK-NOT: memref.prefetch
// CHECK-NOT: linalg.matmul
// CHECK: memref.dealloc %[[P]]
func.func @shared_pack(%a: memref<64x32xf32>, %b: memref<32x40xf32>, %c: memref<64x40xf32>) {
  scf.forall (%i) = (0) to (64) step (32) {
    %as = memref.subview %a[%i, 0] [32, 32] [1, 1] : memref<64x32xf32> to memref<32x32xf32, strided<[32, 1], offset: ?>>
    %cs = memref.subview %c[%i, 0] [32, 40] [1, 1] : memref<64x40xf32> to memref<32x40xf32, strided<[40, 1], offset: ?>>
    linalg.matmul ins(%as, %b : memref<32x32xf32, strided<[32, 1], offset: ?>>, memref<32x40xf32>) outs(%cs : memref<32x40xf32, strided<[40, 1], offset: ?>>)
  }
  return
}

// Tiles over n only: each reads its own columns of B once, so each packs
// them itself, on its stack.
// CHECK-LABEL: func.func @no_shared_pack
// CHECK-NOT: memref.alloc()
// CHECK: scf.forall
// CHECK: memref.alloca() : memref<2x64x16xf32>
func.func @no_shared_pack(%a: memref<32x32xf32>, %b: memref<32x64xf32>, %c: memref<32x64xf32>) {
  scf.forall (%j) = (0) to (64) step (32) {
    %bs = memref.subview %b[0, %j] [32, 32] [1, 1] : memref<32x64xf32> to memref<32x32xf32, strided<[64, 1], offset: ?>>
    %cs = memref.subview %c[0, %j] [32, 32] [1, 1] : memref<32x64xf32> to memref<32x32xf32, strided<[64, 1], offset: ?>>
    linalg.matmul ins(%a, %bs : memref<32x32xf32>, memref<32x32xf32, strided<[64, 1], offset: ?>>) outs(%cs : memref<32x32xf32, strided<[64, 1], offset: ?>>)
  }
  return
}

// With a dot-product tail (36 = 32 + 4 columns), the tail's columns are
// also copied once before the loop, as 4 x K floats, not per tile.
// CHECK-LABEL: func.func @shared_dot_pack
// CHECK: %[[P:.*]] = memref.alloc() : memref<3x32x16xf32>
// CHECK: %[[D:.*]] = memref.alloc() : memref<4x32xf32>
// CHECK: scf.for %[[K:.*]] =
// CHECK: memref.load %arg1[%[[K]], %c32{{.*}}]
// CHECK: memref.store {{.*}}, %[[D]][%c0{{.*}}, %[[K]]]
// CHECK: scf.forall
// CHECK-NOT: memref.alloca() : memref<4x32xf32>
// CHECK: vector.load %[[D]]
// CHECK: memref.dealloc %[[D]]
func.func @shared_dot_pack(%a: memref<64x32xf32>, %b: memref<32x36xf32>, %c: memref<64x36xf32>) {
  scf.forall (%i) = (0) to (64) step (32) {
    %as = memref.subview %a[%i, 0] [32, 32] [1, 1] : memref<64x32xf32> to memref<32x32xf32, strided<[32, 1], offset: ?>>
    %cs = memref.subview %c[%i, 0] [32, 36] [1, 1] : memref<64x36xf32> to memref<32x36xf32, strided<[36, 1], offset: ?>>
    linalg.matmul ins(%as, %b : memref<32x32xf32, strided<[32, 1], offset: ?>>, memref<32x36xf32>) outs(%cs : memref<32x36xf32, strided<[36, 1], offset: ?>>)
  }
  return
}
