// A transformer block's pieces over dynamic batch and sequence: layer norm
// (row reductions over ?x?x64), a [B*S, 64] projection, heads split by
// expand_shape and transposes, batch_matmul of scores and softmax over
// ?x4x?x?, two dynamic results. Each size runs against the same function
// made static, both through the whole CPU pipeline.
// RUN: %dynamic_check %t %s '2x7x64;2x7x64,2x4x7x7' '1x1x64;1x1x64,1x4x1x1' '3x130x64;3x130x64,3x4x130x130' | FileCheck %s --check-prefix=EXEC
// RUN: mcc-opt %s --mcc-cpu-fuse --mcc-cpu-tile | FileCheck %s --check-prefix=TILE
// RUN: mcc-opt %s --mcc-cpu-fuse --mcc-cpu-tile --mcc-cpu-bufferize --mcc-cpu-loops | FileCheck %s --check-prefix=LOOPS
// RUN: mcc-opt %s --mcc-cpu-pipeline --verify-each | FileCheck %s

// EXEC-COUNT-6: ok
// EXEC-NOT: MISMATCH

// Dynamic ops are tiled for threads too, with run-time tile sizes; the
// [B*S, 64] projection in 16-row, 32-column tiles.
// TILE-LABEL: func.func @forward
// TILE: scf.forall
// TILE: scf.forall {{.*}} step (16, 32)
// TILE:   linalg.matmul {{.*}} -> tensor<?x32xf32>
// TILE: linalg.batch_matmul

// Results are written straight into the caller's buffers (no copy) and the
// projection is the register-blocked kernel, with its row remainders.
// LOOPS-LABEL: func.func @forward
// LOOPS-SAME: %[[OUT0:[a-z0-9]*]]: memref<?x?x64xf32>, %[[OUT1:[a-z0-9]*]]: memref<?x4x?x?xf32>)
// LOOPS-NOT: memref.copy {{.*}} %[[OUT0]]
// LOOPS: scf.for {{.*}} step %c8
// LOOPS: vector.fma
// LOOPS: scf.for {{.*}} step %c4
// LOOPS: scf.for {{.*}} step %c2
// LOOPS-NOT: memref.copy {{.*}} %[[OUT1]]

// CHECK-LABEL: llvm.func @forward
// CHECK: omp.wsloop
// CHECK: llvm.intr.fmuladd
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0, d1)>
#bc3 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#vec3 = affine_map<(d0, d1, d2) -> (d2)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#red4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#bc4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
func.func @forward(%x: tensor<?x?x64xf32>, %g: tensor<64xf32>, %bt: tensor<64xf32>, %wq: tensor<64x64xf32>, %bq: tensor<64xf32>) -> (tensor<?x?x64xf32>, tensor<?x4x?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %x, %c0 : tensor<?x?x64xf32>
  %s = tensor.dim %x, %c1 : tensor<?x?x64xf32>
  %bs = affine.apply affine_map<()[s0, s1] -> (s0 * s1)>()[%b, %s]
  %b4 = affine.apply affine_map<()[s0] -> (s0 * 4)>()[%b]
  %zero = arith.constant 0.0 : f32
  // layer norm: mean, centered square, variance, normalize
  %e0 = tensor.empty(%b, %s) : tensor<?x?xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<?x?xf32>) -> tensor<?x?xf32>
  %sum = linalg.generic {indexing_maps = [#id3, #row3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<?x?x64xf32>) outs(%f0 : tensor<?x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %out, %in : f32
    linalg.yield %a : f32
  } -> tensor<?x?xf32>
  %cs = tensor.collapse_shape %sum [[0, 1]] : tensor<?x?xf32> into tensor<?xf32>
  %es = tensor.expand_shape %cs [[0, 1, 2]] output_shape [%b, %s, 1] : tensor<?xf32> into tensor<?x?x1xf32>
  %e1 = tensor.empty(%b, %s) : tensor<?x?x1xf32>
  %mean = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%es : tensor<?x?x1xf32>) outs(%e1 : tensor<?x?x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %c64 = arith.constant 64.0 : f32
    %d = arith.divf %in, %c64 : f32
    linalg.yield %d : f32
  } -> tensor<?x?x1xf32>
  %e2 = tensor.empty(%b, %s) : tensor<?x?x64xf32>
  %sq = linalg.generic {indexing_maps = [#id3, #bc3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %mean : tensor<?x?x64xf32>, tensor<?x?x1xf32>) outs(%e2 : tensor<?x?x64xf32>) {
  ^bb0(%in: f32, %m: f32, %out: f32):
    %d = arith.subf %in, %m : f32
    %q = arith.mulf %d, %d : f32
    linalg.yield %q : f32
  } -> tensor<?x?x64xf32>
  %e3 = tensor.empty(%b, %s) : tensor<?x?xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<?x?xf32>) -> tensor<?x?xf32>
  %vs = linalg.generic {indexing_maps = [#id3, #row3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%sq : tensor<?x?x64xf32>) outs(%f3 : tensor<?x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %out, %in : f32
    linalg.yield %a : f32
  } -> tensor<?x?xf32>
  %cv = tensor.collapse_shape %vs [[0, 1]] : tensor<?x?xf32> into tensor<?xf32>
  %ev = tensor.expand_shape %cv [[0, 1, 2]] output_shape [%b, %s, 1] : tensor<?xf32> into tensor<?x?x1xf32>
  %e4 = tensor.empty(%b, %s) : tensor<?x?x1xf32>
  %rstd = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ev : tensor<?x?x1xf32>) outs(%e4 : tensor<?x?x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %c64 = arith.constant 64.0 : f32
    %d = arith.divf %in, %c64 : f32
    %eps = arith.constant 1.0e-5 : f32
    %a = arith.addf %d, %eps : f32
    %r = math.rsqrt %a : f32
    linalg.yield %r : f32
  } -> tensor<?x?x1xf32>
  %e5 = tensor.empty(%b, %s) : tensor<?x?x64xf32>
  %ln = linalg.generic {indexing_maps = [#id3, #bc3, #bc3, #vec3, #vec3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %mean, %rstd, %g, %bt : tensor<?x?x64xf32>, tensor<?x?x1xf32>, tensor<?x?x1xf32>, tensor<64xf32>, tensor<64xf32>) outs(%e5 : tensor<?x?x64xf32>) {
  ^bb0(%in: f32, %m: f32, %r: f32, %gg: f32, %bb: f32, %out: f32):
    %d = arith.subf %in, %m : f32
    %n = arith.mulf %d, %r : f32
    %y = arith.mulf %n, %gg : f32
    %z = arith.addf %y, %bb : f32
    linalg.yield %z : f32
  } -> tensor<?x?x64xf32>
  // projection: [B*S, 64] x [64, 64] + bias
  %cl = tensor.collapse_shape %ln [[0, 1, 2]] : tensor<?x?x64xf32> into tensor<?xf32>
  %xl = tensor.expand_shape %cl [[0, 1]] output_shape [%bs, 64] : tensor<?xf32> into tensor<?x64xf32>
  %e6 = tensor.empty(%bs) : tensor<?x64xf32>
  %f6 = linalg.fill ins(%zero : f32) outs(%e6 : tensor<?x64xf32>) -> tensor<?x64xf32>
  %mm = linalg.matmul ins(%xl, %wq : tensor<?x64xf32>, tensor<64x64xf32>) outs(%f6 : tensor<?x64xf32>) -> tensor<?x64xf32>
  %cm = tensor.collapse_shape %mm [[0, 1]] : tensor<?x64xf32> into tensor<?xf32>
  %em = tensor.expand_shape %cm [[0, 1, 2]] output_shape [%b, %s, 64] : tensor<?xf32> into tensor<?x?x64xf32>
  %e7 = tensor.empty(%b, %s) : tensor<?x?x64xf32>
  %q = linalg.generic {indexing_maps = [#vec3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%bq, %em : tensor<64xf32>, tensor<?x?x64xf32>) outs(%e7 : tensor<?x?x64xf32>) {
  ^bb0(%bb: f32, %in: f32, %out: f32):
    %a = arith.addf %bb, %in : f32
    linalg.yield %a : f32
  } -> tensor<?x?x64xf32>
  // heads: [B, S, 4, 16] -> [B, 4, S, 16]; scores = q k^T with k = q
  %cq = tensor.collapse_shape %q [[0, 1, 2]] : tensor<?x?x64xf32> into tensor<?xf32>
  %hq = tensor.expand_shape %cq [[0, 1, 2, 3]] output_shape [%b, %s, 4, 16] : tensor<?xf32> into tensor<?x?x4x16xf32>
  %e8 = tensor.empty(%b, %s) : tensor<?x4x?x16xf32>
  %tq = linalg.transpose ins(%hq : tensor<?x?x4x16xf32>) outs(%e8 : tensor<?x4x?x16xf32>) permutation = [0, 2, 1, 3]
  %e9 = tensor.empty(%b, %s) : tensor<?x4x16x?xf32>
  %tk = linalg.transpose ins(%hq : tensor<?x?x4x16xf32>) outs(%e9 : tensor<?x4x16x?xf32>) permutation = [0, 2, 3, 1]
  %bq3 = tensor.collapse_shape %tq [[0, 1], [2], [3]] : tensor<?x4x?x16xf32> into tensor<?x?x16xf32>
  %bk3 = tensor.collapse_shape %tk [[0, 1], [2], [3]] : tensor<?x4x16x?xf32> into tensor<?x16x?xf32>
  %e10 = tensor.empty(%b4, %s, %s) : tensor<?x?x?xf32>
  %f10 = linalg.fill ins(%zero : f32) outs(%e10 : tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %sc = linalg.batch_matmul ins(%bq3, %bk3 : tensor<?x?x16xf32>, tensor<?x16x?xf32>) outs(%f10 : tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %sc4 = tensor.expand_shape %sc [[0, 1], [2], [3]] output_shape [%b, 4, %s, %s] : tensor<?x?x?xf32> into tensor<?x4x?x?xf32>
  // softmax over the last dim
  %ninf = arith.constant 0xFF800000 : f32
  %e11 = tensor.empty(%b, %s) : tensor<?x4x?xf32>
  %f11 = linalg.fill ins(%ninf : f32) outs(%e11 : tensor<?x4x?xf32>) -> tensor<?x4x?xf32>
  %mx = linalg.generic {indexing_maps = [#id4, #red4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%sc4 : tensor<?x4x?x?xf32>) outs(%f11 : tensor<?x4x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %out : f32
    linalg.yield %m : f32
  } -> tensor<?x4x?xf32>
  %emx = tensor.expand_shape %mx [[0], [1], [2, 3]] output_shape [%b, 4, %s, 1] : tensor<?x4x?xf32> into tensor<?x4x?x1xf32>
  %e12 = tensor.empty(%b, %s, %s) : tensor<?x4x?x?xf32>
  %ex = linalg.generic {indexing_maps = [#id4, #bc4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sc4, %emx : tensor<?x4x?x?xf32>, tensor<?x4x?x1xf32>) outs(%e12 : tensor<?x4x?x?xf32>) {
  ^bb0(%in: f32, %m: f32, %out: f32):
    %d = arith.subf %in, %m : f32
    %e = math.exp %d : f32
    linalg.yield %e : f32
  } -> tensor<?x4x?x?xf32>
  %e13 = tensor.empty(%b, %s) : tensor<?x4x?xf32>
  %f13 = linalg.fill ins(%zero : f32) outs(%e13 : tensor<?x4x?xf32>) -> tensor<?x4x?xf32>
  %sm = linalg.generic {indexing_maps = [#id4, #red4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<?x4x?x?xf32>) outs(%f13 : tensor<?x4x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<?x4x?xf32>
  %esm = tensor.expand_shape %sm [[0], [1], [2, 3]] output_shape [%b, 4, %s, 1] : tensor<?x4x?xf32> into tensor<?x4x?x1xf32>
  %e14 = tensor.empty(%b, %s, %s) : tensor<?x4x?x?xf32>
  %p = linalg.generic {indexing_maps = [#id4, #bc4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %esm : tensor<?x4x?x?xf32>, tensor<?x4x?x1xf32>) outs(%e14 : tensor<?x4x?x?xf32>) {
  ^bb0(%in: f32, %d: f32, %out: f32):
    %r = arith.divf %in, %d : f32
    linalg.yield %r : f32
  } -> tensor<?x4x?x?xf32>
  return %q, %p : tensor<?x?x64xf32>, tensor<?x4x?x?xf32>
}
