// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-gpu-distribute{block-size=64}))' --verify-each | FileCheck %s
// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-gpu-distribute{block-size=64}),convert-parallel-loops-to-gpu,canonicalize)' | FileCheck %s --check-prefix=LAUNCH

// A 2-D nest (8x20 = 160 iterations) becomes one dimension tiled by 64:
// 3 blocks of 64 threads, the tail guarded.
// CHECK-LABEL: func.func @nest
// CHECK: %[[BS:.*]] = arith.muli %{{.*}}, %c64
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}}) step (%[[BS]])
// CHECK:   scf.parallel
// CHECK:     scf.if
// CHECK: {mapping = [#gpu.loop_dim_map<processor = thread_x
// CHECK: {mapping = [#gpu.loop_dim_map<processor = block_x
// LAUNCH-LABEL: func.func @nest
// LAUNCH: gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c3{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c64
func.func @nest(%a: memref<8x20xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c20 = arith.constant 20 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c20) step (%c1, %c1) {
    memref.store %f, %a[%i, %j] : memref<8x20xf32>
    scf.reduce
  }
  return
}

// A sequential reduction to a scalar runs as one GPU thread.
// CHECK-LABEL: func.func @scalar
// CHECK: scf.parallel
// CHECK:   scf.parallel
// CHECK:     scf.for
// LAUNCH-LABEL: func.func @scalar
// LAUNCH: gpu.launch
// LAUNCH:   scf.for
func.func @scalar(%a: memref<16xf32>, %r: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  scf.for %i = %c0 to %c16 step %c1 {
    %x = memref.load %a[%i] : memref<16xf32>
    %s = memref.load %r[] : memref<f32>
    %t = arith.addf %s, %x : f32
    memref.store %t, %r[] : memref<f32>
  }
  return
}

// A loop that yields its sum runs in one kernel with the ops that use the
// sum; the allocation and constant between them stay on the host.
// CHECK-LABEL: func.func @yielded
// CHECK-DAG: memref.alloc() : memref<f32>
// CHECK-DAG: arith.constant 2.0
// CHECK: scf.parallel
// CHECK:   scf.parallel
// CHECK:     %[[SUM:.*]] = scf.for {{.*}} iter_args
// CHECK:     %[[TWICE:.*]] = arith.mulf %[[SUM]]
// CHECK:     memref.store %[[TWICE]]
// LAUNCH-LABEL: func.func @yielded
// LAUNCH: memref.alloc
// LAUNCH: gpu.launch
// LAUNCH:   scf.for
// LAUNCH:   arith.mulf
func.func @yielded(%a: memref<16xf32>) -> memref<f32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %i = %c0 to %c16 step %c1 iter_args(%acc = %zero) -> f32 {
    %x = memref.load %a[%i] : memref<16xf32>
    %t = arith.addf %acc, %x : f32
    scf.yield %t : f32
  }
  %r = memref.alloc() : memref<f32>
  %two = arith.constant 2.0 : f32
  %twice = arith.mulf %sum, %two : f32
  memref.store %twice, %r[] : memref<f32>
  return %r : memref<f32>
}

// A middle-axis reduction: the parallel loop under the scf.for becomes
// scf.for too (convert-parallel-loops-to-gpu would leave the whole nest on
// the host otherwise).
// CHECK-LABEL: func.func @middle_axis
// CHECK: scf.for
// CHECK-NEXT: scf.for
// CHECK-NOT: scf.parallel
// CHECK: return
// LAUNCH-LABEL: func.func @middle_axis
// LAUNCH-NOT: memref.load
// LAUNCH: gpu.launch
// LAUNCH: memref.load
// LAUNCH: gpu.terminator
// LAUNCH-NOT: memref.load
// LAUNCH: return
func.func @middle_axis(%a: memref<3x4x5xf32>, %r: memref<3x5xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  scf.parallel (%i) = (%c0) to (%c3) step (%c1) {
    scf.for %k = %c0 to %c4 step %c1 {
      scf.parallel (%j) = (%c0) to (%c5) step (%c1) {
        %x = memref.load %a[%i, %k, %j] : memref<3x4x5xf32>
        %s = memref.load %r[%i, %j] : memref<3x5xf32>
        %t = arith.addf %s, %x : f32
        memref.store %t, %r[%i, %j] : memref<3x5xf32>
        scf.reduce
      }
    }
    scf.reduce
  }
  return
}

// Loop dims are reordered to the layout of the store before collapsing:
// (h, w, c) storing to [c, h, w] runs with w fastest (consecutive threads,
// consecutive addresses).
// CHECK-LABEL: func.func @coalesce
// CHECK: %[[W:.*]] = arith.remsi %{{.*}}, %{{.*}}6{{.*}} : index
// CHECK: %[[HC:.*]] = arith.divsi
// CHECK: %[[H:.*]] = arith.remsi %[[HC]], %{{.*}}8{{.*}} : index
// CHECK: %[[C:.*]] = arith.divsi %[[HC]]
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[C]], %[[H]], %[[W]]]
func.func @coalesce(%a: memref<4x8x6xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c6 = arith.constant 6 : index
  %c8 = arith.constant 8 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%h, %w, %c) = (%c0, %c0, %c0) to (%c8, %c6, %c4) step (%c1, %c1, %c1) {
    memref.store %f, %a[%c, %h, %w] : memref<4x8x6xf32>
    scf.reduce
  }
  return
}

// A dynamic nest (batch x sequence from the inputs): the collapsed count is
// the run-time product, and the grid its ceildiv by the block size, both
// computed on the host per call; threads past the count are guarded.
// CHECK-LABEL: func.func @dynamic_nest
// CHECK: %[[M:.*]] = arith.muli %{{.*}}, %dim
// CHECK: %[[N:.*]] = arith.muli %[[M]], %dim_0
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[N]]) step
// LAUNCH-LABEL: func.func @dynamic_nest
// LAUNCH: %[[M:.*]] = memref.dim %arg0, %c0
// LAUNCH: %[[K:.*]] = memref.dim %arg0, %c1
// LAUNCH: %[[N:.*]] = arith.muli %[[M]], %[[K]]
// LAUNCH: %[[GRID:.*]] = affine.apply #{{.*}}()[%[[N]]]
// LAUNCH: gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %[[GRID]], %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c64
// LAUNCH: arith.cmpi ult, %{{.*}}, %[[N]]
// LAUNCH: arith.remsi %{{.*}}, %[[K]]
func.func @dynamic_nest(%x: memref<?x?xf32>, %y: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = memref.dim %x, %c0 : memref<?x?xf32>
  %n = memref.dim %x, %c1 : memref<?x?xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%m, %n) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<?x?xf32>
    %e = math.exp %v : f32
    memref.store %e, %y[%i, %j] : memref<?x?xf32>
    scf.reduce
  }
  return
}
