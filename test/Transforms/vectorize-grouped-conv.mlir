// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-vectorize-grouped-conv{rows=4 lanes=8 vectors=2}))' --verify-each | FileCheck %s

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
