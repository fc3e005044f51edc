// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-gpu-fold-pad-reads),canonicalize)' --verify-each | FileCheck %s

// A 4x4 source zero-padded by 1 to 6x6 and read with a 3-wide window per
// output (im2col-like): the fill, the copy and the buffer go; each read
// loads the source at the shifted, clamped index and selects 0 outside.
// CHECK-LABEL: func.func @padded
// CHECK-NOT: memref.alloc() {{.*}}6x6
// CHECK: scf.parallel (%[[I:.*]], %[[J:.*]], %[[K:.*]]) =
// CHECK:   %[[ROW:.*]] = arith.addi %[[I]], %[[K]]
// CHECK:   %[[R:.*]] = arith.subi %[[ROW]], %c1
// CHECK:   arith.cmpi sge, %[[R]], %c0
// CHECK:   arith.cmpi slt, %[[R]], %c4
// CHECK:   %[[RMIN:.*]] = arith.minsi %[[R]], %c3
// CHECK:   %[[RC:.*]] = arith.maxsi %[[RMIN]], %c0
// CHECK:   %[[C:.*]] = arith.subi %[[J]], %c1
// CHECK:   %[[CMIN:.*]] = arith.minsi %[[C]], %c3
// CHECK:   %[[CC:.*]] = arith.maxsi %[[CMIN]], %c0
// CHECK:   %[[V:.*]] = memref.load %arg0[%[[RC]], %[[CC]]] : memref<4x4xf32>
// CHECK:   %[[S:.*]] = arith.select %{{.*}}, %[[V]], %cst
// CHECK:   memref.store %[[S]], %arg1
// CHECK-NOT: scf.parallel
// CHECK: return
func.func @padded(%src: memref<4x4xf32>, %out: memref<4x6x3xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c6 = arith.constant 6 : index
  %zero = arith.constant 0.0 : f32
  %pad = memref.alloc() : memref<6x6xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c6, %c6) step (%c1, %c1) {
    memref.store %zero, %pad[%i, %j] : memref<6x6xf32>
    scf.reduce
  }
  %window = memref.subview %pad[1, 1] [4, 4] [1, 1] : memref<6x6xf32> to memref<4x4xf32, strided<[6, 1], offset: 7>>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c4) step (%c1, %c1) {
    %v = memref.load %src[%i, %j] : memref<4x4xf32>
    memref.store %v, %window[%i, %j] : memref<4x4xf32, strided<[6, 1], offset: 7>>
    scf.reduce
  }
  scf.parallel (%i, %j, %k) = (%c0, %c0, %c0) to (%c4, %c6, %c3) step (%c1, %c1, %c1) {
    %row = arith.addi %i, %k : index
    %v = memref.load %pad[%row, %j] : memref<6x6xf32>
    memref.store %v, %out[%i, %j, %k] : memref<4x6x3xf32>
    scf.reduce
  }
  memref.dealloc %pad : memref<6x6xf32>
  return
}

// Padding only the last dimension of a 2x3 source: the first index is used
// as it is, only the second is guarded.
// CHECK-LABEL: func.func @last_dim
// CHECK: scf.parallel (%[[I:.*]], %[[J:.*]]) =
// CHECK:   %[[C:.*]] = arith.subi %[[J]], %c2
// CHECK:   memref.load %arg0[%[[I]], %{{.*}}] : memref<2x3xf32>
// CHECK:   arith.select %{{.*}}, %{{.*}}, %cst
func.func @last_dim(%src: memref<2x3xf32>, %out: memref<2x7xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c7 = arith.constant 7 : index
  %ninf = arith.constant 0xFF800000 : f32
  %pad = memref.alloc() : memref<2x7xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c2, %c7) step (%c1, %c1) {
    memref.store %ninf, %pad[%i, %j] : memref<2x7xf32>
    scf.reduce
  }
  %window = memref.subview %pad[0, 2] [2, 3] [1, 1] : memref<2x7xf32> to memref<2x3xf32, strided<[7, 1], offset: 2>>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c2, %c3) step (%c1, %c1) {
    %v = memref.load %src[%i, %j] : memref<2x3xf32>
    memref.store %v, %window[%i, %j] : memref<2x3xf32, strided<[7, 1], offset: 2>>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c2, %c7) step (%c1, %c1) {
    %v = memref.load %pad[%i, %j] : memref<2x7xf32>
    memref.store %v, %out[%i, %j] : memref<2x7xf32>
    scf.reduce
  }
  return
}

// The source is written again before the padded buffer is read: the
// buffer holds the old values, so it stays.
// CHECK-LABEL: func.func @source_clobbered
// CHECK: memref.alloc() : memref<6x6xf32>
// CHECK: memref.subview
// CHECK: memref.load %{{.*}}[%{{.*}}, %{{.*}}] : memref<6x6xf32>
func.func @source_clobbered(%src: memref<4x4xf32>, %out: memref<6x6xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c6 = arith.constant 6 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %pad = memref.alloc() : memref<6x6xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c6, %c6) step (%c1, %c1) {
    memref.store %zero, %pad[%i, %j] : memref<6x6xf32>
    scf.reduce
  }
  %window = memref.subview %pad[1, 1] [4, 4] [1, 1] : memref<6x6xf32> to memref<4x4xf32, strided<[6, 1], offset: 7>>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c4) step (%c1, %c1) {
    %v = memref.load %src[%i, %j] : memref<4x4xf32>
    memref.store %v, %window[%i, %j] : memref<4x4xf32, strided<[6, 1], offset: 7>>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c4) step (%c1, %c1) {
    memref.store %one, %src[%i, %j] : memref<4x4xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c6, %c6) step (%c1, %c1) {
    %v = memref.load %pad[%i, %j] : memref<6x6xf32>
    memref.store %v, %out[%i, %j] : memref<6x6xf32>
    scf.reduce
  }
  return
}

// A pad value that is not a constant (the Pad op's input) is left alone.
// CHECK-LABEL: func.func @pad_value_not_constant
// CHECK: memref.alloc() : memref<6x6xf32>
func.func @pad_value_not_constant(%src: memref<4x4xf32>, %out: memref<6x6xf32>, %value: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c6 = arith.constant 6 : index
  %pad = memref.alloc() : memref<6x6xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c6, %c6) step (%c1, %c1) {
    memref.store %value, %pad[%i, %j] : memref<6x6xf32>
    scf.reduce
  }
  %window = memref.subview %pad[1, 1] [4, 4] [1, 1] : memref<6x6xf32> to memref<4x4xf32, strided<[6, 1], offset: 7>>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c4) step (%c1, %c1) {
    %v = memref.load %src[%i, %j] : memref<4x4xf32>
    memref.store %v, %window[%i, %j] : memref<4x4xf32, strided<[6, 1], offset: 7>>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c6, %c6) step (%c1, %c1) {
    %v = memref.load %pad[%i, %j] : memref<6x6xf32>
    memref.store %v, %out[%i, %j] : memref<6x6xf32>
    scf.reduce
  }
  return
}
