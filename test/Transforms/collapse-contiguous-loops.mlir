// RUN: mcc-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(mcc-collapse-contiguous-loops,mcc-reduction-loops))' --verify-each | FileCheck %s

// A global average pool's sum reduces two trailing loops over contiguous
// memory: they are collapsed into one (7 x 5 = 35), which LLVM vectorizes
// whole, and mcc-reduction-loops then carries the sum as an iter_arg,
// loaded and stored once per channel.
// CHECK-LABEL: func.func @spatial_sum
// CHECK: %[[FLAT:.*]] = memref.collapse_shape %arg0 {{\[}}[0], [1, 2]] : memref<6x7x5xf32> into memref<6x35xf32>
// CHECK: scf.for %[[C:.*]] = %c0 to %c6 step %c1 {
// CHECK:   %[[INIT:.*]] = memref.load %arg1[%[[C]]]
// CHECK:   %[[SUM:.*]] = scf.for %[[K:.*]] = %c0 to %c35 step %c1 iter_args(%[[A:.*]] = %[[INIT]]) -> (f32) {
// CHECK:     %[[X:.*]] = memref.load %[[FLAT]][%[[C]], %[[K]]]
// CHECK:     %[[N:.*]] = arith.addf %[[A]], %[[X]] fastmath<reassoc> : f32
// CHECK:     scf.yield %[[N]]
// CHECK:   memref.store %[[SUM]], %arg1[%[[C]]]
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

// -----

// Rows that are not contiguous (a view of 5 of 8 columns) are not
// collapsed: the sum is carried through both loops.
// CHECK-LABEL: func.func @strided_spatial_sum
// CHECK-NOT: memref.collapse_shape
// CHECK: scf.for %[[C:.*]] = %c0 to %c6 step %c1 {
// CHECK:   scf.for %{{.*}} = %c0 to %c7 step %c1 iter_args
// CHECK:     scf.for %{{.*}} = %c0 to %c5 step %c1 iter_args
#t_in = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#t_out = affine_map<(d0, d1, d2) -> (d0)>
func.func @strided_spatial_sum(%x: memref<6x7x5xf32, strided<[56, 8, 1]>>, %y: memref<6xf32>) {
  linalg.generic {indexing_maps = [#t_in, #t_out], iterator_types = ["parallel", "reduction", "reduction"]}
      ins(%x : memref<6x7x5xf32, strided<[56, 8, 1]>>) outs(%y : memref<6xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Squeeze-excite's scale: an elementwise product of a 4 x 7 x 7 plane and
// a per-channel gate read at (n, c, 0, 0). The gate is read through a view
// without its unit dims (a map of loop dims only), and the plane's two
// trailing loops become one of 49; the channel loop stays.
// CHECK-DAG: #[[GATE:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @channel_scale
// CHECK-DAG: %[[G:.*]] = memref.subview %arg1[0, 0, 0, 0] [1, 4, 1, 1] [1, 1, 1, 1] : memref<1x4x1x1xf32> to memref<1x4xf32
// CHECK-DAG: %[[X:.*]] = memref.collapse_shape %arg0 {{\[}}[0], [1], [2, 3]] : memref<1x4x7x7xf32> into memref<1x4x49xf32>
// CHECK-DAG: %[[Y:.*]] = memref.collapse_shape %arg2 {{\[}}[0], [1], [2, 3]] : memref<1x4x7x7xf32> into memref<1x4x49xf32>
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[GATE]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[X]], %[[G]] :
// CHECK-SAME: outs(%[[Y]] :
#m_x = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#m_s = affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, 0)>
func.func @channel_scale(%x: memref<1x4x7x7xf32>, %s: memref<1x4x1x1xf32>, %y: memref<1x4x7x7xf32>) {
  linalg.generic {indexing_maps = [#m_x, #m_s, #m_x], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %s : memref<1x4x7x7xf32>, memref<1x4x1x1xf32>) outs(%y : memref<1x4x7x7xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  }
  return
}
