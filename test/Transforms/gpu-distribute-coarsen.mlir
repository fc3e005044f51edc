// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-gpu-distribute{coarsen-factor=4 coarsen-min-iterations=1024}),canonicalize,cse)' --verify-each | FileCheck %s

// A transposing copy of 131072 elements whose innermost dimension (64)
// four divides: 32768 threads, each with four elements of one row, 16
// apart, so that the div/rem chain from the thread id to the row runs once
// per thread; all four loads before the four stores.
// CHECK-LABEL: func.func @copy
// CHECK-DAG: %[[T:.*]] = arith.constant 32768 : index
// CHECK-DAG: %[[Q:.*]] = arith.constant 16 : index
// CHECK: scf.parallel (%[[B:.*]], %[[TX:.*]]) = (%c0, %c0) to (%[[T]], %c256)
// CHECK:   %[[J:.*]] = arith.remsi %{{.*}}, %[[Q]]
// CHECK:   memref.load %arg0[%{{.*}}, %[[J]], %{{.*}}]
// CHECK-NOT: arith.remsi
// CHECK-NOT: arith.divsi
// CHECK:   %[[J1:.*]] = arith.addi %[[J]], %[[Q]]
// CHECK:   memref.load %arg0[%{{.*}}, %[[J1]], %{{.*}}]
// CHECK:   memref.load %arg0
// CHECK:   memref.load %arg0
// CHECK-NOT: memref.load
// CHECK:   memref.store
// CHECK:   memref.store
// CHECK:   memref.store
// CHECK:   memref.store
func.func @copy(%a: memref<64x64x32xf32>, %b: memref<64x32x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%i, %j, %k) = (%c0, %c0, %c0) to (%c64, %c32, %c64) step (%c1, %c1, %c1) {
    %v = memref.load %a[%i, %k, %j] : memref<64x64x32xf32>
    memref.store %v, %b[%i, %j, %k] : memref<64x32x64xf32>
    scf.reduce
  }
  return
}

// Rows of 49 (7 x 7 images), which four does not divide: the collapsed
// nest of 3136 elements gets 784 threads, each with four elements 784
// apart.
// CHECK-LABEL: func.func @odd_rows
// CHECK-DAG: %[[T:.*]] = arith.constant 784 : index
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%c0, %c0) to (%[[T]], %c256)
// CHECK:   memref.load
// CHECK:   arith.addi %{{.*}}, %[[T]]
// CHECK-COUNT-3: memref.load
// CHECK-COUNT-4: memref.store
func.func @odd_rows(%a: memref<64x49xf32>, %b: memref<64x49xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c49 = arith.constant 49 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c49) step (%c1, %c1) {
    %v = memref.load %a[%i, %j] : memref<64x49xf32>
    memref.store %v, %b[%i, %j] : memref<64x49xf32>
    scf.reduce
  }
  return
}

// 1030 elements in place (x = max(x, 0)): 258 threads; the last element of
// the last threads lies past the end: its index is clamped for the load
// and its store is skipped.
// CHECK-LABEL: func.func @tail
// CHECK-DAG: %[[LAST:.*]] = arith.constant 1029 : index
// CHECK-DAG: %[[N:.*]] = arith.constant 1030 : index
// CHECK: arith.minui %{{.*}}, %[[LAST]]
// CHECK: %[[IN:.*]] = arith.cmpi ult, %{{.*}}, %[[N]]
// CHECK: scf.if %[[IN]] {
// CHECK-NEXT: memref.store
func.func @tail(%x: memref<1030xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 1030 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %v = memref.load %x[%i] : memref<1030xf32>
    %r = arith.maximumf %v, %zero : f32
    memref.store %r, %x[%i] : memref<1030xf32>
    scf.reduce
  }
  return
}

// A load of the stored buffer at another element (a shift in place) must
// not move above the store of a neighbour: one element per thread.
// CHECK-LABEL: func.func @shift_in_place
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%c0, %c0) to (%c2048, %c256)
// CHECK-COUNT-1: memref.load
// CHECK-NOT: memref.load
func.func @shift_in_place(%x: memref<2049xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 2048 : index
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %j = arith.addi %i, %c1 : index
    %v = memref.load %x[%j] : memref<2049xf32>
    memref.store %v, %x[%i] : memref<2049xf32>
    scf.reduce
  }
  return
}
