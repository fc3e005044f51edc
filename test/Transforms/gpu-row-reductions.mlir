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

// Layer norm over 4 rows of 768: the mean's sum (over a view with a unit
// dim, as a reshape leaves it), the variance reading it, and the
// normalization join one kernel, barriers between them; the variance's
// constant start goes with it.
// CHECK-LABEL: func.func @layer_norm
// CHECK: gpu.launch
// CHECK:   gpu.all_reduce add
// CHECK:   memref.store %{{.*}}, %arg1
// CHECK:   gpu.barrier
// CHECK:   memref.load %{{.*}} : memref<4xf32>
// CHECK:   gpu.all_reduce add
// CHECK:   memref.store
// CHECK:   gpu.barrier
// CHECK:   scf.for
// CHECK:     math.rsqrt
// CHECK:     memref.store %{{.*}}, %arg3
// CHECK:   gpu.terminator
// CHECK-NOT: gpu.launch
// CHECK-NOT: linalg.generic
#x3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#r3 = affine_map<(d0, d1, d2) -> (d0, d1)>
#x2 = affine_map<(d0, d1) -> (d0, d1)>
#r2 = affine_map<(d0, d1) -> (d0)>
#c2 = affine_map<(d0, d1) -> (d1)>
func.func @layer_norm(%x: memref<4x768xf32>, %sum: memref<4x1xf32>, %gamma: memref<768xf32>, %y: memref<4x768xf32>) {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 768.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  %xv = memref.expand_shape %x [[0, 1], [2]] output_shape [4, 1, 768] : memref<4x768xf32> into memref<4x1x768xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<4x1xf32>)
  linalg.generic {indexing_maps = [#x3, #r3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%xv : memref<4x1x768xf32>) outs(%sum : memref<4x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  }
  %mean = memref.collapse_shape %sum [[0, 1]] : memref<4x1xf32> into memref<4xf32>
  %var = memref.alloc() : memref<4xf32>
  linalg.fill ins(%zero : f32) outs(%var : memref<4xf32>)
  linalg.generic {indexing_maps = [#x2, #r2, #r2], iterator_types = ["parallel", "reduction"]}
      ins(%x, %mean : memref<4x768xf32>, memref<4xf32>) outs(%var : memref<4xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %m = arith.divf %s, %n : f32
    %d = arith.subf %a, %m : f32
    %q = arith.mulf %d, %d : f32
    %r = arith.addf %o, %q : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#x2, #r2, #r2, #c2, #x2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %mean, %var, %gamma : memref<4x768xf32>, memref<4xf32>, memref<4xf32>, memref<768xf32>) outs(%y : memref<4x768xf32>) {
  ^bb0(%a: f32, %s: f32, %v: f32, %g: f32, %o: f32):
    %m = arith.divf %s, %n : f32
    %vm = arith.divf %v, %n : f32
    %ve = arith.addf %vm, %eps : f32
    %rs = math.rsqrt %ve : f32
    %d = arith.subf %a, %m : f32
    %t = arith.mulf %d, %rs : f32
    %r = arith.mulf %t, %g : f32
    linalg.yield %r : f32
  }
  return
}

// A map that reads another row's sum (row 3 - i) cannot run in the
// reduction's blocks: it stays a generic after its own kernel.
// CHECK-LABEL: func.func @other_row
// CHECK: gpu.launch
// CHECK-NOT: gpu.barrier
// CHECK: gpu.terminator
// CHECK: linalg.generic
#rev = affine_map<(d0, d1) -> (3 - d0)>
func.func @other_row(%x: memref<4x768xf32>, %sum: memref<4xf32>, %y: memref<4x768xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%sum : memref<4xf32>)
  linalg.generic {indexing_maps = [#x2, #r2], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x768xf32>) outs(%sum : memref<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#x2, #rev, #x2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : memref<4x768xf32>, memref<4xf32>) outs(%y : memref<4x768xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %r = arith.divf %a, %s : f32
    linalg.yield %r : f32
  }
  return
}
