// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-gpu-device-memory))' --verify-each | FileCheck %s

memref.global "private" constant @table : memref<3xf32> = dense<[1.0, 2.0, 3.0]>

// Host allocations, frees and copies move to the device; the constant
// table is re-read inside the loop that uses it, so kernel outlining will
// take the global into the GPU module rather than pass a host pointer.
// CHECK-LABEL: func.func @host
// CHECK: %[[A:.*]] = gpu.alloc () : memref<4xf32>
// CHECK: gpu.memcpy %[[A]], %arg0 : memref<4xf32>, memref<4xf32>
// CHECK: scf.parallel
// CHECK:   memref.get_global @table
// CHECK: gpu.dealloc %[[A]]
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
func.func @host(%in: memref<4xf32>, %out: memref<4xf32>) {
  %t = memref.get_global @table : memref<3xf32>
  %a = memref.alloc() : memref<4xf32>
  memref.copy %in, %a : memref<4xf32> to memref<4xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    %j = arith.remui %i, %c3 : index
    %x = memref.load %a[%i] : memref<4xf32>
    %y = memref.load %t[%j] : memref<3xf32>
    %s = arith.addf %x, %y : f32
    memref.store %s, %out[%i] : memref<4xf32>
    scf.reduce
  }
  memref.dealloc %a : memref<4xf32>
  return
}

// A dynamic allocation (a buffer over the run-time batch x sequence) keeps
// its sizes: gpu.alloc takes them like memref.alloc, from the stream-ordered
// allocator at run time.
// CHECK-LABEL: func.func @dynamic
// CHECK: %[[M:.*]] = memref.dim %arg0, %c0
// CHECK: %[[N:.*]] = memref.dim %arg0, %c1
// CHECK: %[[A:.*]] = gpu.alloc (%[[M]], %[[N]]) : memref<?x?xf32>
// CHECK: gpu.memcpy %[[A]], %arg0 : memref<?x?xf32>, memref<?x?xf32>
// CHECK: gpu.dealloc %[[A]]
func.func @dynamic(%in: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = memref.dim %in, %c0 : memref<?x?xf32>
  %n = memref.dim %in, %c1 : memref<?x?xf32>
  %a = memref.alloc(%m, %n) : memref<?x?xf32>
  memref.copy %in, %a : memref<?x?xf32> to memref<?x?xf32>
  memref.dealloc %a : memref<?x?xf32>
  return
}
