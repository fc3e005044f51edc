// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-vectorize-depthwise-conv{lanes=8 vectors=2}))' --verify-each | FileCheck %s

// Stride 1, 3x3, rows wider than four strips of two vectors (68 = 8 x 8 +
// 4): loops over (n, c, oh); the channel's 9 weights are broadcast once per
// channel, then 2 x 8 outputs of a row ride 9 fmas each, with one
// unit-stride vector load of the input per fma. The last 4 outputs of each
// row are masked on output and input.
// CHECK-LABEL: func.func @stride1
// CHECK: scf.for %[[N:.*]] =
// CHECK: scf.for %[[C:.*]] =
// CHECK-COUNT-9: vector.broadcast {{.*}} : f32 to vector<8xf32>
// CHECK: scf.for %[[OH:.*]] =
// CHECK: scf.for {{.*}} step %c16
// CHECK-COUNT-2: vector.load %arg2[%[[N]], %[[C]], %[[OH]], {{.*}}] : memref<1x4x18x68xf32>, vector<8xf32>
// CHECK-COUNT-18: vector.fma
// CHECK-COUNT-2: vector.store {{.*}}, %arg2
// CHECK: scf.for {{.*}} step %c8
// CHECK-COUNT-9: vector.fma
// CHECK: scf.for {{.*}} step %c8
// CHECK: vector.maskedload %arg2
// CHECK: vector.maskedload %arg0{{.*}} : memref<1x4x20x70xf32>, vector<8xi1>, vector<8xf32> into vector<8xf32>
// CHECK: vector.maskedstore %arg2
// CHECK-NOT: linalg.depthwise_conv_2d_nchw_chw
func.func @stride1(%x: memref<1x4x20x70xf32>, %w: memref<4x3x3xf32>, %o: memref<1x4x18x68xf32>) {
  linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : memref<1x4x20x70xf32>, memref<4x3x3xf32>) outs(%o : memref<1x4x18x68xf32>)
  return
}

// Stride 2: each input vector is a 16-float load of which every other float
// is kept.
// CHECK-LABEL: func.func @stride2
// CHECK: vector.load %arg0{{.*}} : memref<1x2x17x17xf32, strided<[578, 289, 17, 1], offset: ?>>, vector<16xf32>
// CHECK: vector.shuffle {{.*}} [0, 2, 4, 6, 8, 10, 12, 14] : vector<16xf32>, vector<16xf32>
// CHECK: vector.fma
// CHECK-NOT: linalg.depthwise_conv_2d_nchw_chw
func.func @stride2(%x: memref<1x2x17x17xf32, strided<[578, 289, 17, 1], offset: ?>>, %w: memref<2x3x3xf32>, %o: memref<1x2x8x8xf32>) {
  linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
    ins(%x, %w : memref<1x2x17x17xf32, strided<[578, 289, 17, 1], offset: ?>>, memref<2x3x3xf32>) outs(%o : memref<1x2x8x8xf32>)
  return
}

// A static image whose rows are at most two vectors (7 x 7 from 11 x 11,
// 5 x 5 window) keeps all 7 output rows in registers: no loop over rows,
// each of the 11 input rows loaded once per window column (55 loads, the
// last column's masked at the row's end) and used by every output row
// whose window holds it (175 fmas in 7 independent chains), then 7 masked
// stores of 7 outputs.
// CHECK-LABEL: func.func @narrow
// CHECK: scf.for
// CHECK: scf.for
// CHECK-COUNT-25: vector.broadcast
// CHECK-NOT: scf.for
// CHECK-COUNT-7: vector.maskedload %arg2
// CHECK-NOT: scf.for
// CHECK-COUNT-175: vector.fma
// CHECK-NOT: vector.fma
// CHECK-COUNT-7: vector.maskedstore %arg2
// CHECK-NOT: vector.maskedstore
func.func @narrow(%x: memref<1x2x11x11xf32>, %w: memref<2x5x5xf32>, %o: memref<1x2x7x7xf32>) {
  linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : memref<1x2x11x11xf32>, memref<2x5x5xf32>) outs(%o : memref<1x2x7x7xf32>)
  return
}

// Wider static rows go in strips of at most two vectors (24 = 2 + 1
// vectors of 8), 7 rows at a time: the blocks whose window rows all lie in
// x (rows 0 to 20) run in a loop, the last 3 rows after it.
// CHECK-LABEL: func.func @row_blocks
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c21{{.*}} step %c7
// CHECK-COUNT-126: vector.fma
// CHECK-COUNT-63: vector.fma
// CHECK: }
// CHECK-COUNT-54: vector.fma
// CHECK-COUNT-27: vector.fma
// CHECK-NOT: vector.fma
func.func @row_blocks(%x: memref<1x2x26x26xf32>, %w: memref<2x3x3xf32>, %o: memref<1x2x24x24xf32>) {
  linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : memref<1x2x26x26xf32>, memref<2x3x3xf32>) outs(%o : memref<1x2x24x24xf32>)
  return
}

// Tensors, other element types and non-unit-stride rows are left alone.
// CHECK-LABEL: func.func @left_alone
// CHECK: linalg.depthwise_conv_2d_nchw_chw {{.*}} memref<1x2x5x5xf64>
// CHECK: linalg.depthwise_conv_2d_nchw_chw {{.*}} memref<1x2x5x5xf32, strided<[50, 25, 5, 2]>>
func.func @left_alone(%x: memref<1x2x5x5xf64>, %w: memref<2x3x3xf64>, %o: memref<1x2x3x3xf64>,
                      %y: memref<1x2x5x5xf32, strided<[50, 25, 5, 2]>>, %v: memref<2x3x3xf32>, %p: memref<1x2x3x3xf32>) {
  linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : memref<1x2x5x5xf64>, memref<2x3x3xf64>) outs(%o : memref<1x2x3x3xf64>)
  linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%y, %v : memref<1x2x5x5xf32, strided<[50, 25, 5, 2]>>, memref<2x3x3xf32>) outs(%p : memref<1x2x3x3xf32>)
  return
}

// The output's fill just before the op seeds the accumulators instead of
// being written and read back.
// CHECK-LABEL: func.func @filled
// CHECK-NOT: linalg.fill
// CHECK: %[[INIT:.*]] = vector.broadcast %arg3 : f32 to vector<8xf32>
// CHECK-NOT: vector.load %arg2
// CHECK: vector.fma {{.*}}, {{.*}}, %[[INIT]]
func.func @filled(%x: memref<1x1x10x10xf32>, %w: memref<1x3x3xf32>, %o: memref<1x1x8x8xf32>, %bias: f32) {
  linalg.fill ins(%bias : f32) outs(%o : memref<1x1x8x8xf32>)
  linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : memref<1x1x10x10xf32>, memref<1x3x3xf32>) outs(%o : memref<1x1x8x8xf32>)
  return
}

// Max pooling: the -inf fill seeds the accumulators, each window step is a
// maximumf of the running vector with an input vector (a 16-float load of
// which every other float is kept at stride 2); no weights are read.
// CHECK-LABEL: func.func @max_pool
// CHECK-NOT: linalg.fill
// CHECK: %[[INIT:.*]] = vector.broadcast %arg3 : f32 to vector<8xf32>
// CHECK: vector.load %arg0{{.*}} : memref<1x4x22x23xf32>, vector<16xf32>
// CHECK: vector.shuffle {{.*}} [0, 2, 4, 6, 8, 10, 12, 14]
// CHECK: arith.maximumf %[[INIT]], {{.*}} : vector<8xf32>
// CHECK-COUNT-8: arith.maximumf
// CHECK-NOT: vector.fma
// CHECK: vector.store
// CHECK-NOT: linalg.pooling_nchw_max
func.func @max_pool(%x: memref<1x4x22x23xf32>, %window: memref<3x3xf32>, %o: memref<1x4x10x11xf32>, %ninf: f32) {
  linalg.fill ins(%ninf : f32) outs(%o : memref<1x4x10x11xf32>)
  linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
    ins(%x, %window : memref<1x4x22x23xf32>, memref<3x3xf32>) outs(%o : memref<1x4x10x11xf32>)
  return
}

// Sum pooling (an average pool's numerator) adds; without a fill before
// it, the accumulators start from the output.
// CHECK-LABEL: func.func @sum_pool
// CHECK: vector.load %arg2
// CHECK-COUNT-4: arith.addf {{.*}} : vector<8xf32>
// CHECK-NOT: linalg.pooling_nchw_sum
func.func @sum_pool(%x: memref<1x2x9x9xf32>, %window: memref<2x2xf32>, %o: memref<1x2x8x8xf32>) {
  linalg.pooling_nchw_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %window : memref<1x2x9x9xf32>, memref<2x2xf32>) outs(%o : memref<1x2x8x8xf32>)
  return
}

// A zero-padded input built by mcc-pad-into-producer (border fills, then a
// copy of the source into the interior) is read in place: the kernel reads
// the source, the first vector of a row masks off the lanes left of it (a
// load from column -1 with lane 0 off), window rows above and below the
// source are skipped in the edge rows only, and the buffer, its fills,
// the copy and their profile marks go. The source's dealloc, after the
// copy until now, moves past the reads.
// CHECK-LABEL: func.func @padded_in_place
// CHECK: linalg.copy ins(%arg0
// CHECK-NOT: memref.alloc
// CHECK-NOT: linalg.fill
// CHECK-NOT: linalg.copy
// CHECK: %[[TILE:.*]] = memref.subview %arg3[0, 0, 0, 0] [1, 2, 6, 68] [1, 1, 1, 1]
// CHECK: scf.for
// CHECK: scf.for
// First the top row, with its window rows checked; then the rows in
// between, whose edge vector's loads are not under a check.
// CHECK: scf.for
// CHECK: scf.if
// CHECK: vector.maskedload %[[TILE]][%{{.*}}, %{{.*}}, %{{.*}}, %c-1{{[_0-9]*}}]
// CHECK: scf.for
// CHECK: %[[EDGE:.*]] = vector.maskedload %[[TILE]][%{{.*}}, %{{.*}}, %{{.*}}, %c-1{{[_0-9]*}}]
// CHECK-NEXT: vector.fma %[[EDGE]]
// CHECK-NOT: linalg.depthwise_conv_2d_nchw_chw
// CHECK: memref.dealloc %arg3
// CHECK-NOT: mcc_profile_mark
// CHECK: return
func.func private @mcc_profile_mark(i64)
func.func @padded_in_place(%x: memref<1x2x6x68xf32>, %w: memref<2x3x3xf32>, %o: memref<1x2x6x68xf32>, %src: memref<1x2x6x68xf32>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  linalg.copy ins(%x : memref<1x2x6x68xf32>) outs(%src : memref<1x2x6x68xf32>)
  %p = memref.alloc() : memref<1x2x8x70xf32>
  %top = memref.subview %p[0, 0, 0, 0] [1, 2, 1, 70] [1, 1, 1, 1] : memref<1x2x8x70xf32> to memref<1x2x1x70xf32, strided<[1120, 560, 70, 1]>>
  func.call @mcc_profile_mark(%c0) : (i64) -> ()
  linalg.fill ins(%zero : f32) outs(%top : memref<1x2x1x70xf32, strided<[1120, 560, 70, 1]>>)
  %in = memref.subview %p[0, 0, 1, 1] [1, 2, 6, 68] [1, 1, 1, 1] : memref<1x2x8x70xf32> to memref<1x2x6x68xf32, strided<[1120, 560, 70, 1], offset: 71>>
  func.call @mcc_profile_mark(%c1) : (i64) -> ()
  linalg.copy ins(%src : memref<1x2x6x68xf32>) outs(%in : memref<1x2x6x68xf32, strided<[1120, 560, 70, 1], offset: 71>>)
  memref.dealloc %src : memref<1x2x6x68xf32>
  %v = memref.subview %p[0, 0, 0, 0] [1, 2, 8, 70] [1, 1, 1, 1] : memref<1x2x8x70xf32> to memref<1x2x8x70xf32, strided<[1120, 560, 70, 1]>>
  linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%v, %w : memref<1x2x8x70xf32, strided<[1120, 560, 70, 1]>>, memref<2x3x3xf32>) outs(%o : memref<1x2x6x68xf32>)
  memref.dealloc %p : memref<1x2x8x70xf32>
  return
}

// The padded buffer stays when the source is written between the copy and
// the convolution (bufferization may reuse a buffer it thinks dead), or
// when the convolution writes the source itself.
// CHECK-LABEL: func.func @source_overwritten
// CHECK: memref.alloc
// CHECK: linalg.copy
// CHECK: vector.{{(masked)?}}load %{{.*}} : memref<1x1x5x5xf32, strided<[25, 25, 5, 1]>>
// CHECK-LABEL: func.func @writes_its_source
// CHECK: memref.alloc
// CHECK: linalg.copy
func.func @source_overwritten(%x: memref<1x1x3x3xf32>, %w: memref<1x3x3xf32>, %o: memref<1x1x3x3xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %p = memref.alloc() : memref<1x1x5x5xf32>
  linalg.fill ins(%zero : f32) outs(%p : memref<1x1x5x5xf32>)
  %in = memref.subview %p[0, 0, 1, 1] [1, 1, 3, 3] [1, 1, 1, 1] : memref<1x1x5x5xf32> to memref<1x1x3x3xf32, strided<[25, 25, 5, 1], offset: 6>>
  linalg.copy ins(%x : memref<1x1x3x3xf32>) outs(%in : memref<1x1x3x3xf32, strided<[25, 25, 5, 1], offset: 6>>)
  linalg.fill ins(%one : f32) outs(%x : memref<1x1x3x3xf32>)
  %v = memref.subview %p[0, 0, 0, 0] [1, 1, 5, 5] [1, 1, 1, 1] : memref<1x1x5x5xf32> to memref<1x1x5x5xf32, strided<[25, 25, 5, 1]>>
  linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%v, %w : memref<1x1x5x5xf32, strided<[25, 25, 5, 1]>>, memref<1x3x3xf32>) outs(%o : memref<1x1x3x3xf32>)
  memref.dealloc %p : memref<1x1x5x5xf32>
  return
}
func.func @writes_its_source(%x: memref<1x1x3x3xf32>, %w: memref<1x3x3xf32>) {
  %zero = arith.constant 0.0 : f32
  %p = memref.alloc() : memref<1x1x5x5xf32>
  linalg.fill ins(%zero : f32) outs(%p : memref<1x1x5x5xf32>)
  %in = memref.subview %p[0, 0, 1, 1] [1, 1, 3, 3] [1, 1, 1, 1] : memref<1x1x5x5xf32> to memref<1x1x3x3xf32, strided<[25, 25, 5, 1], offset: 6>>
  linalg.copy ins(%x : memref<1x1x3x3xf32>) outs(%in : memref<1x1x3x3xf32, strided<[25, 25, 5, 1], offset: 6>>)
  %v = memref.subview %p[0, 0, 0, 0] [1, 1, 5, 5] [1, 1, 1, 1] : memref<1x1x5x5xf32> to memref<1x1x5x5xf32, strided<[25, 25, 5, 1]>>
  linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%v, %w : memref<1x1x5x5xf32, strided<[25, 25, 5, 1]>>, memref<1x3x3xf32>) outs(%x : memref<1x1x3x3xf32>)
  memref.dealloc %p : memref<1x1x5x5xf32>
  return
}

// The generic after the convolution (a bias per channel, a residual read at
// the output's index, a ReLU) runs on each output vector before its store;
// the convolution's own output, read by nothing else, is not stored.
// CHECK-LABEL: func.func @epilogue
// CHECK-NOT: linalg.generic
// CHECK: vector.fma
// CHECK: %[[B:.*]] = memref.load %arg3[%{{.*}}, %c0{{.*}}, %c0{{.*}}] : memref<2x1x1xf32>
// CHECK: %[[BV:.*]] = vector.broadcast %[[B]] : f32 to vector<8xf32>
// CHECK: %[[R:.*]] = vector.load %arg4
// CHECK: %[[S:.*]] = arith.addf %{{.*}}, %[[BV]] : vector<8xf32>
// CHECK: arith.addf %[[S]], %[[R]] : vector<8xf32>
// CHECK: arith.maximumf {{.*}} : vector<8xf32>
// CHECK: vector.store {{.*}}, %arg5
// CHECK-NOT: vector.store {{.*}}, %alloc
// CHECK-NOT: linalg.generic
func.func @epilogue(%x: memref<1x2x10x18xf32>, %w: memref<2x3x3xf32>, %zero: f32, %bias: memref<2x1x1xf32>, %res: memref<1x2x8x16xf32>, %y: memref<1x2x8x16xf32>) {
  %c = arith.constant 0.0 : f32
  %o = memref.alloc() : memref<1x2x8x16xf32>
  linalg.fill ins(%zero : f32) outs(%o : memref<1x2x8x16xf32>)
  linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : memref<1x2x10x18xf32>, memref<2x3x3xf32>) outs(%o : memref<1x2x8x16xf32>)
  linalg.generic {indexing_maps = [affine_map<(n, c, h, w) -> (n, c, h, w)>, affine_map<(n, c, h, w) -> (c, 0, 0)>, affine_map<(n, c, h, w) -> (n, c, h, w)>, affine_map<(n, c, h, w) -> (n, c, h, w)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%o, %bias, %res : memref<1x2x8x16xf32>, memref<2x1x1xf32>, memref<1x2x8x16xf32>) outs(%y : memref<1x2x8x16xf32>) {
  ^bb0(%v: f32, %bv: f32, %r: f32, %out: f32):
    %0 = arith.addf %v, %bv : f32
    %1 = arith.addf %0, %r : f32
    %2 = arith.maximumf %1, %c : f32
    linalg.yield %2 : f32
  }
  memref.dealloc %o : memref<1x2x8x16xf32>
  return
}
