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
