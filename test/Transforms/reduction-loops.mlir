// RUN: mcc-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(mcc-reduction-loops))' | FileCheck %s

// A row sum (softmax's exp-sum): the accumulator is an iter_arg loaded and
// stored once per row, the float add may be reassociated (vectorized).
// CHECK-LABEL: func.func @row_sum
// CHECK: scf.for %[[I:.*]] = %c0 to %{{.*}} step %c1 {
// CHECK:   %[[INIT:.*]] = memref.load %arg1[%[[I]]]
// CHECK:   %[[SUM:.*]] = scf.for %[[K:.*]] = %c0 to %{{.*}} step %c1 iter_args(%[[ACC:.*]] = %[[INIT]]) -> (f32) {
// CHECK:     %[[X:.*]] = memref.load %arg0[%[[I]], %[[K]]]
// CHECK:     %[[E:.*]] = math.exp %[[X]]
// CHECK:     %[[N:.*]] = arith.addf %[[ACC]], %[[E]] fastmath<reassoc> : f32
// CHECK:     scf.yield %[[N]]
// CHECK:   memref.store %[[SUM]], %arg1[%[[I]]]
// CHECK-NOT: linalg.generic
#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>
func.func @row_sum(%x: memref<?x?xf32>, %y: memref<?xf32>) {
  linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x?xf32>) outs(%y : memref<?xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %e = math.exp %a : f32
    %s = arith.addf %acc, %e : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A max over a broadcast operand keeps its combiner as it is (no reassoc
// on maximumf); linalg.index becomes the loop's induction variable.
// CHECK-LABEL: func.func @row_max_index
// CHECK: scf.for %[[I:.*]] = %c0 to %c4 step %c1 {
// CHECK:   scf.for %[[K:.*]] = %c0 to %c8 step %c1 iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// CHECK:     memref.load %arg1[%[[K]]]
// CHECK:     arith.index_cast %[[K]]
// CHECK:     arith.maximumf %[[ACC]], %{{.*}} : f32
#a = affine_map<(d0, d1) -> (d0, d1)>
#b = affine_map<(d0, d1) -> (d1)>
#o = affine_map<(d0, d1) -> (d0)>
func.func @row_max_index(%x: memref<4x8xf32>, %w: memref<8xf32>, %y: memref<4xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #o], iterator_types = ["parallel", "reduction"]}
      ins(%x, %w : memref<4x8xf32>, memref<8xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %k = linalg.index 1 : index
    %ki = arith.index_cast %k : index to i32
    %kf = arith.sitofp %ki : i32 to f32
    %m = arith.mulf %p, %q : f32
    %t = arith.addf %m, %kf : f32
    %r = arith.maximumf %acc, %t : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A reduction that is not innermost (or tensors) is left alone.
// CHECK-LABEL: func.func @column_sum
// CHECK: linalg.generic
#c_in = affine_map<(d0, d1) -> (d1, d0)>
#c_out = affine_map<(d0, d1) -> (d0)>
func.func @column_sum(%x: memref<8x4xf32>, %y: memref<4xf32>) {
  linalg.generic {indexing_maps = [#c_in, #c_out], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<8x4xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A global average pool's sum reduces the two trailing loops: the sum is
// carried through both as iter_args, loaded and stored once per channel.
// CHECK-LABEL: func.func @spatial_sum
// CHECK: scf.for %[[C:.*]] = %c0 to %c6 step %c1 {
// CHECK:   %[[INIT:.*]] = memref.load %arg1[%[[C]]]
// CHECK:   %[[OUTER:.*]] = scf.for %[[H:.*]] = %c0 to %c7 step %c1 iter_args(%[[A:.*]] = %[[INIT]]) -> (f32) {
// CHECK:     %[[INNER:.*]] = scf.for %[[W:.*]] = %c0 to %c5 step %c1 iter_args(%[[B:.*]] = %[[A]]) -> (f32) {
// CHECK:       %[[X:.*]] = memref.load %arg0[%[[C]], %[[H]], %[[W]]]
// CHECK:       %[[N:.*]] = arith.addf %[[B]], %[[X]] fastmath<reassoc> : f32
// CHECK:       scf.yield %[[N]]
// CHECK:     scf.yield %[[INNER]]
// CHECK:   memref.store %[[OUTER]], %arg1[%[[C]]]
// CHECK-NOT: linalg.generic
#s_in = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#s_out = affine_map<(d0, d1, d2) -> (d0)>
func.func @spatial_sum(%x: memref<6x7x5xf32>, %y: memref<6xf32>) {
  linalg.generic {indexing_maps = [#s_in, #s_out], iterator_types = ["parallel", "reduction", "reduction"]}
      ins(%x : memref<6x7x5xf32>) outs(%y : memref<6xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  }
  return
}
