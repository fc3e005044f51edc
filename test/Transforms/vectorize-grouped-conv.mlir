// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-vectorize-grouped-conv{rows=4 lanes=8 vectors=2}))' --verify-each | FileCheck %s
// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-vectorize-grouped-conv{rows=8 lanes=8 vectors=1}))' --verify-each | FileCheck %s --check-prefix=AVX2

// The AVX2 pipeline's blocks: 8 output channels by one vector, the whole
// group of 8 in one block, 8 accumulators, 9 taps x 8 fmas.
// AVX2-LABEL: func.func @stride1
// AVX2: scf.for {{.*}} step %c8
// AVX2: scf.for {{.*}} iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// AVX2-COUNT-72: vector.fma
// AVX2: scf.yield
// AVX2-COUNT-8: vector.store {{.*}}, %arg2
// AVX2-LABEL: func.func @stride2

// 2 groups of 8 -> 8 channels, 3x3, stride 1, 20-wide rows: loops over
// (n, g), blocks of 4 output channels, output rows; each block of 4 x 2
// vectors walks the group's 8 input channels in an scf.for with 8
// accumulators, the 9 taps unrolled: 2 unit-stride input loads, 4 weight
// broadcasts and 8 fmas per tap. The fill seeds the accumulators; the
// row's last 4 outputs are masked on input and output.
// CHECK-LABEL: func.func @stride1
// CHECK-NOT: linalg.fill
// CHECK: scf.for %[[N:[^ ]*]] =
// CHECK: scf.for %[[G:[^ ]*]] =
// CHECK: scf.for %[[F:[^ ]*]] = {{.*}} step %c4
// CHECK: scf.for %[[OH:[^ ]*]] =
// CHECK: scf.for {{.*}} step %c16
// CHECK: %[[INIT:.*]] = vector.broadcast %arg3 : f32 to vector<8xf32>
// CHECK: scf.for %[[C:[^ ]*]] = {{.*}} iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK-COUNT-2: vector.load %arg0[%[[N]], %[[G]], %[[C]], {{.*}}] : memref<1x2x8x22x22xf32>, vector<8xf32>
// CHECK: memref.load %arg1[%[[G]], {{.*}}, %[[C]], %c0{{.*}}, %c0{{.*}}] : memref<2x8x8x3x3xf32>
// CHECK-COUNT-72: vector.fma
// CHECK: scf.yield
// CHECK-COUNT-8: vector.store {{.*}}, %arg2
// CHECK: vector.maskedload %arg0
// CHECK: vector.maskedstore %arg2
// CHECK-NOT: linalg.conv_2d_ngchw_gfchw
func.func @stride1(%x: memref<1x2x8x22x22xf32>, %w: memref<2x8x8x3x3xf32>, %o: memref<1x2x8x20x20xf32>, %zero: f32) {
  linalg.fill ins(%zero : f32) outs(%o : memref<1x2x8x20x20xf32>)
  linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : memref<1x2x8x22x22xf32>, memref<2x8x8x3x3xf32>) outs(%o : memref<1x2x8x20x20xf32>)
  return
}

// Stride 2 reads 16 floats per vector and keeps every other one; 6 output
// channels are one block of 4 and two single channels; without a fill the
// accumulators start from the output.
// CHECK-LABEL: func.func @stride2
// CHECK: scf.for {{.*}} step %c4
// CHECK: vector.load %arg2
// CHECK: vector.load %arg0{{.*}} : memref<1x2x4x17x17xf32>, vector<16xf32>
// CHECK: vector.shuffle {{.*}} [0, 2, 4, 6, 8, 10, 12, 14] : vector<16xf32>, vector<16xf32>
// CHECK: scf.for {{.*}} step %c1
// CHECK-NOT: linalg.conv_2d_ngchw_gfchw
func.func @stride2(%x: memref<1x2x4x17x17xf32>, %w: memref<2x6x4x3x3xf32>, %o: memref<1x2x6x8x8xf32>) {
  linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
    ins(%x, %w : memref<1x2x4x17x17xf32>, memref<2x6x4x3x3xf32>) outs(%o : memref<1x2x6x8x8xf32>)
  return
}

// Tensors and other element types are left alone.
// CHECK-LABEL: func.func @left_alone
// CHECK: linalg.conv_2d_ngchw_gfchw {{.*}} memref<1x2x4x5x5xf64>
func.func @left_alone(%x: memref<1x2x4x5x5xf64>, %w: memref<2x4x4x3x3xf64>, %o: memref<1x2x4x3x3xf64>) {
  linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : memref<1x2x4x5x5xf64>, memref<2x4x4x3x3xf64>) outs(%o : memref<1x2x4x3x3xf64>)
  return
}

// A 7x7 window (resnet's stem: 3 input channels, stride 2): inside the
// channel loop the window's rows are a loop carrying the accumulators, and
// only a row's 7 taps are unrolled.
// CHECK-LABEL: func.func @large_window
// CHECK: scf.for %[[C:[^ ]*]] = {{.*}} iter_args(
// CHECK: scf.for %[[P:[^ ]*]] = %c0{{.*}} to %c7{{.*}} step %c1{{.*}} iter_args(
// CHECK: memref.load %arg1[{{.*}}, %[[C]], %[[P]], %c6{{.*}}] : memref<1x8x3x7x7xf32>
// CHECK: scf.yield
// CHECK: scf.yield
func.func @large_window(%x: memref<1x1x3x38x38xf32>, %w: memref<1x8x3x7x7xf32>, %o: memref<1x1x8x16x16xf32>) {
  linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
    ins(%x, %w : memref<1x1x3x38x38xf32>, memref<1x8x3x7x7xf32>) outs(%o : memref<1x1x8x16x16xf32>)
  return
}

// A zero-padded input built as border fills plus a copy of the source into
// the interior (a product's result cannot be written row-strided) is read
// in place. The convolution reads a tile of rows of the padded buffer, as
// mcc-tile-for-cpu leaves it: the kernel reads the same rows of the source
// (row offset = tile row - 1), the first vector of a row masks off the
// lanes left of it (column -1), window rows outside the source are skipped
// in the top and bottom output rows with the window rows outside the
// channel loop, and the buffer, its fills, the copy and their profile
// marks go. The source's dealloc moves past the reads.
// CHECK-LABEL: func.func @padded_in_place
// CHECK: linalg.copy ins(%arg0
// CHECK-NOT: memref.alloc
// CHECK-NOT: linalg.fill
// CHECK-NOT: linalg.copy
// CHECK: arith.subi %arg5, %c1
// CHECK: %[[TILE:.*]] = memref.subview %arg4[0, 0, 0, 0, 0] [1, 2, 8, 20, 20] [1, 1, 1, 1, 1]
// First the top rows: window rows outer, each under a check, the channel
// loop inside it.
// CHECK: scf.for
// CHECK: scf.if
// CHECK-NOT: scf.yield
// CHECK: scf.for {{.*}} iter_args(
// CHECK: vector.maskedload %[[TILE]][%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c-1{{[_0-9]*}}]
// CHECK-NOT: linalg.conv_2d_ngchw_gfchw
// CHECK: memref.dealloc %arg4
// CHECK-NOT: mcc_profile_mark
// CHECK: return
func.func private @mcc_profile_mark(i64)
func.func @padded_in_place(%x: memref<1x2x8x20x20xf32>, %w: memref<2x8x8x3x3xf32>, %o: memref<1x2x8x10x20xf32>, %zero: f32, %src: memref<1x2x8x20x20xf32>, %row: index) {
  %z = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  linalg.copy ins(%x : memref<1x2x8x20x20xf32>) outs(%src : memref<1x2x8x20x20xf32>)
  %p = memref.alloc() : memref<1x2x8x22x22xf32>
  %top = memref.subview %p[0, 0, 0, 0, 0] [1, 2, 8, 1, 22] [1, 1, 1, 1, 1] : memref<1x2x8x22x22xf32> to memref<1x2x8x1x22xf32, strided<[7744, 3872, 484, 22, 1]>>
  func.call @mcc_profile_mark(%c0) : (i64) -> ()
  linalg.fill ins(%z : f32) outs(%top : memref<1x2x8x1x22xf32, strided<[7744, 3872, 484, 22, 1]>>)
  %in = memref.subview %p[0, 0, 0, 1, 1] [1, 2, 8, 20, 20] [1, 1, 1, 1, 1] : memref<1x2x8x22x22xf32> to memref<1x2x8x20x20xf32, strided<[7744, 3872, 484, 22, 1], offset: 23>>
  func.call @mcc_profile_mark(%c1) : (i64) -> ()
  memref.copy %src, %in : memref<1x2x8x20x20xf32> to memref<1x2x8x20x20xf32, strided<[7744, 3872, 484, 22, 1], offset: 23>>
  memref.dealloc %src : memref<1x2x8x20x20xf32>
  %v = memref.subview %p[0, 0, 0, %row, 0] [1, 2, 8, 12, 22] [1, 1, 1, 1, 1] : memref<1x2x8x22x22xf32> to memref<1x2x8x12x22xf32, strided<[7744, 3872, 484, 22, 1], offset: ?>>
  linalg.fill ins(%zero : f32) outs(%o : memref<1x2x8x10x20xf32>)
  linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%v, %w : memref<1x2x8x12x22xf32, strided<[7744, 3872, 484, 22, 1], offset: ?>>, memref<2x8x8x3x3xf32>) outs(%o : memref<1x2x8x10x20xf32>)
  memref.dealloc %p : memref<1x2x8x22x22xf32>
  return
}

// A window that starts further left than the first output vector holds (12
// columns of padding, 8 lanes) keeps the padded buffer.
// CHECK-LABEL: func.func @pad_too_wide
// CHECK: memref.alloc
// CHECK: memref.copy
// CHECK: vector.load %{{.*}} : memref<1x1x4x10x34xf32>
func.func @pad_too_wide(%x: memref<1x1x4x8x10xf32>, %w: memref<1x4x4x3x3xf32>, %o: memref<1x1x4x8x32xf32>) {
  %z = arith.constant 0.0 : f32
  %p = memref.alloc() : memref<1x1x4x10x34xf32>
  linalg.fill ins(%z : f32) outs(%p : memref<1x1x4x10x34xf32>)
  %in = memref.subview %p[0, 0, 0, 1, 12] [1, 1, 4, 8, 10] [1, 1, 1, 1, 1] : memref<1x1x4x10x34xf32> to memref<1x1x4x8x10xf32, strided<[1360, 1360, 340, 34, 1], offset: 46>>
  memref.copy %x, %in : memref<1x1x4x8x10xf32> to memref<1x1x4x8x10xf32, strided<[1360, 1360, 340, 34, 1], offset: 46>>
  linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%p, %w : memref<1x1x4x10x34xf32>, memref<1x4x4x3x3xf32>) outs(%o : memref<1x1x4x8x32xf32>)
  memref.dealloc %p : memref<1x1x4x10x34xf32>
  return
}

// The generic after the convolution (a bias per output channel, a ReLU)
// runs on each output vector before its store; the convolution's own
// output, read by nothing else, is not stored.
// CHECK-LABEL: func.func @epilogue
// CHECK-NOT: linalg.generic
// CHECK: vector.fma
// CHECK: %[[B:.*]] = memref.load %arg3[%{{.*}}, %{{.*}}] : memref<2x8xf32>
// CHECK: %[[BV:.*]] = vector.broadcast %[[B]] : f32 to vector<8xf32>
// CHECK: %[[S:.*]] = arith.addf %{{.*}}, %[[BV]] : vector<8xf32>
// CHECK: arith.maximumf %[[S]], {{.*}} : vector<8xf32>
// CHECK: vector.store {{.*}}, %arg4
// CHECK-NOT: vector.store {{.*}}, %alloc
// CHECK-NOT: linalg.generic
func.func @epilogue(%x: memref<1x2x8x22x22xf32>, %w: memref<2x8x8x3x3xf32>, %zero: f32, %bias: memref<2x8xf32>, %y: memref<1x2x8x20x16xf32>) {
  %c = arith.constant 0.0 : f32
  %o = memref.alloc() : memref<1x2x8x20x16xf32>
  linalg.fill ins(%zero : f32) outs(%o : memref<1x2x8x20x16xf32>)
  linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : memref<1x2x8x22x22xf32>, memref<2x8x8x3x3xf32>) outs(%o : memref<1x2x8x20x16xf32>)
  linalg.generic {indexing_maps = [affine_map<(n, g, f, h, w) -> (n, g, f, h, w)>, affine_map<(n, g, f, h, w) -> (g, f)>, affine_map<(n, g, f, h, w) -> (n, g, f, h, w)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%o, %bias : memref<1x2x8x20x16xf32>, memref<2x8xf32>) outs(%y : memref<1x2x8x20x16xf32>) {
  ^bb0(%v: f32, %bv: f32, %out: f32):
    %0 = arith.addf %v, %bv : f32
    %1 = arith.maximumf %0, %c : f32
    linalg.yield %1 : f32
  }
  memref.dealloc %o : memref<1x2x8x20x16xf32>
  return
}

// A generic that reads the output at another index is not an epilogue:
// the convolution stores its output and the generic stays.
// CHECK-LABEL: func.func @not_an_epilogue
// CHECK: vector.store {{.*}}, %alloc
// CHECK: linalg.generic
func.func @not_an_epilogue(%x: memref<1x2x8x22x22xf32>, %w: memref<2x8x8x3x3xf32>, %zero: f32, %y: memref<1x2x8x16x20xf32>) {
  %o = memref.alloc() : memref<1x2x8x20x16xf32>
  linalg.fill ins(%zero : f32) outs(%o : memref<1x2x8x20x16xf32>)
  linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : memref<1x2x8x22x22xf32>, memref<2x8x8x3x3xf32>) outs(%o : memref<1x2x8x20x16xf32>)
  linalg.generic {indexing_maps = [affine_map<(n, g, f, h, w) -> (n, g, f, w, h)>, affine_map<(n, g, f, h, w) -> (n, g, f, h, w)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%o : memref<1x2x8x20x16xf32>) outs(%y : memref<1x2x8x16x20xf32>) {
  ^bb0(%v: f32, %out: f32):
    linalg.yield %v : f32
  }
  memref.dealloc %o : memref<1x2x8x20x16xf32>
  return
}
