// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-gpu-row-reductions))' --verify-each | FileCheck %s

// Layer norm's variance: 4 x 6 rows of 768. One block per row (24 blocks),
// 256 threads striding over the row from the identity 0, an all_reduce add,
// and thread 0 folding the total into the output.
// CHECK-LABEL: func.func @variance
// CHECK-DAG: %[[C24:.*]] = arith.constant 24 : index
// CHECK-DAG: %[[C256:.*]] = arith.constant 256 : index
// CHECK: gpu.launch blocks(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}) in (%{{[^,]*}} = %[[C24]], {{.*}} threads(%[[TX:[^,]*]], %{{[^,]*}}, %{{[^,]*}}) in (%{{[^,]*}} = %[[C256]],
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[PART:.*]] = scf.for %[[J:.*]] = %[[TX]] to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[ZERO]]) -> (f32)
// CHECK:   memref.load %arg0
// CHECK:   memref.load %arg1
// CHECK:   arith.subf
// CHECK:   arith.mulf
// CHECK:   %[[NEXT:.*]] = arith.addf %[[ACC]]
// CHECK:   scf.yield %[[NEXT]]
// CHECK: %[[TOTAL:.*]] = gpu.all_reduce add %[[PART]] uniform
// CHECK: scf.if
// CHECK:   %[[OLD:.*]] = memref.load %arg2
// CHECK:   %[[NEW:.*]] = arith.addf %[[OLD]], %[[TOTAL]]
// CHECK:   memref.store %[[NEW]], %arg2
// CHECK: gpu.terminator
// CHECK-NOT: linalg.generic
#in = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @variance(%x: memref<4x6x768xf32>, %mean: memref<4x6xf32>, %out: memref<4x6xf32>) {
  linalg.generic {indexing_maps = [#in, #row, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %mean : memref<4x6x768xf32>, memref<4x6xf32>) outs(%out : memref<4x6xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %s = arith.mulf %d, %d : f32
    %r = arith.addf %o, %s : f32
    linalg.yield %r : f32
  }
  return
}

// Softmax's max over rows of 100: 128 threads, identity -inf.
// CHECK-LABEL: func.func @row_max
// CHECK-DAG: arith.constant 128 : index
// CHECK-DAG: arith.constant 0xFF800000 : f32
// CHECK: gpu.all_reduce maximumf
#in2 = affine_map<(d0, d1) -> (d0, d1)>
#row2 = affine_map<(d0, d1) -> (d0)>
func.func @row_max(%x: memref<10x100xf32>, %out: memref<10xf32>) {
  linalg.generic {indexing_maps = [#in2, #row2], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<10x100xf32>) outs(%out : memref<10xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %o, %a : f32
    linalg.yield %r : f32
  }
  return
}

// Short rows, reductions that are not the last loop, and bodies that use
// the accumulator for more than the combiner are left alone.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: gpu.launch
// CHECK-COUNT-3: linalg.generic
#col = affine_map<(d0, d1) -> (d1)>
func.func @left_alone(%x: memref<10x8xf32>, %o8: memref<10xf32>, %y: memref<100x10xf32>, %o10: memref<10xf32>,
                      %z: memref<10x100xf32>, %o: memref<10xf32>) {
  linalg.generic {indexing_maps = [#in2, #row2], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<10x8xf32>) outs(%o8 : memref<10xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %acc, %a : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#in2, #col], iterator_types = ["reduction", "parallel"]}
      ins(%y : memref<100x10xf32>) outs(%o10 : memref<10xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %acc, %a : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#in2, #row2], iterator_types = ["parallel", "reduction"]}
      ins(%z : memref<10x100xf32>) outs(%o : memref<10xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.mulf %acc, %a : f32
    %r = arith.addf %acc, %t : f32
    linalg.yield %r : f32
  }
  return
}

// An accumulator filled with a constant right before (through a copy of a
// filled buffer, as bufferization leaves it) is that constant: the copy and
// the fill go, and thread 0 folds the total into -inf instead of a load.
// CHECK-LABEL: func.func @constant_init
// CHECK-NOT: linalg.fill
// CHECK-NOT: memref.copy
// CHECK: gpu.all_reduce maximumf
// CHECK: scf.if
// CHECK-NOT: memref.load
// CHECK:   %[[NEG:.*]] = arith.constant 0xFF800000 : f32
// CHECK:   %[[NEW:.*]] = arith.maximumf %[[NEG]], %{{.*}}
// CHECK:   memref.store %[[NEW]], %arg1
func.func @constant_init(%x: memref<6x100xf32>, %out: memref<6xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %buf = memref.alloc() : memref<6xf32>
  linalg.fill ins(%ninf : f32) outs(%buf : memref<6xf32>)
  memref.copy %buf, %out : memref<6xf32> to memref<6xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<6x100xf32>) outs(%out : memref<6xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %o, %a : f32
    linalg.yield %r : f32
  }
  memref.dealloc %buf : memref<6xf32>
  return
}

// A global average pool's sum over H and W (two reduction loops) is one
// row of 49 per channel: 8 blocks, the row index split back into (h, w).
// CHECK-LABEL: func.func @two_reduced_dims
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : index
// CHECK: gpu.launch blocks(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}) in (%{{[^,]*}} = %[[C8]],
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %c49
// CHECK:   %[[W:.*]] = arith.remui %[[J]], %c7
// CHECK:   %[[H:.*]] = arith.divui %[[J]], %c7
// CHECK:   affine.apply #{{.*}}(%{{.*}}, %{{.*}}, %[[H]], %[[W]])
// CHECK:   memref.load %arg0
// CHECK: gpu.all_reduce add
func.func @two_reduced_dims(%x: memref<1x8x7x7xf32>, %out: memref<1x8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%x : memref<1x8x7x7xf32>) outs(%out : memref<1x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  }
  return
}

// Dynamic rows (a layer norm over batch x sequence): one block per row of
// the run-time row count, decomposed by the run-time sizes.
// CHECK-LABEL: func.func @variance_dynamic_rows
// CHECK-DAG: %[[B:.*]] = memref.dim %arg0, %c0
// CHECK-DAG: %[[S:.*]] = memref.dim %arg0, %c1
// CHECK: %[[ROWS:.*]] = arith.muli %[[B]], %[[S]] : index
// CHECK: %[[C256:.*]] = arith.constant 256 : index
// CHECK: gpu.launch blocks(%[[BX:[^,]*]], %{{[^,]*}}, %{{[^,]*}}) in (%{{[^,]*}} = %[[ROWS]], {{.*}} threads(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}) in (%{{[^,]*}} = %[[C256]],
// CHECK: arith.remui %[[BX]], %[[S]]
// CHECK: gpu.all_reduce add
func.func @variance_dynamic_rows(%x: memref<?x?x768xf32>, %mean: memref<?x?xf32>, %out: memref<?x?xf32>) {
  linalg.generic {indexing_maps = [#in, #row, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %mean : memref<?x?x768xf32>, memref<?x?xf32>) outs(%out : memref<?x?xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %s = arith.mulf %d, %d : f32
    %r = arith.addf %o, %s : f32
    linalg.yield %r : f32
  }
  return
}

// A dynamic row (softmax's max over the sequence): the most threads, the
// strided loop bounded by the run-time length.
// CHECK-LABEL: func.func @row_max_dynamic_length
// CHECK: %[[LEN:.*]] = memref.dim %arg0, %c1
// CHECK: arith.constant 256 : index
// CHECK: gpu.launch
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[LEN]] step
// CHECK: gpu.all_reduce maximumf
func.func @row_max_dynamic_length(%x: memref<12x?xf32>, %out: memref<12xf32>) {
  linalg.generic {indexing_maps = [#in2, #row2], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<12x?xf32>) outs(%out : memref<12xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %o, %a : f32
    linalg.yield %r : f32
  }
  return
}
