// RUN: mcc-opt %s --mcc-cpu-profile-marks | FileCheck %s

// A Winograd transform (design 0019) is labelled as one, not as the
// reduction its reference loops are.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: mcc.profile_labels = ["winograd_input 4x4x16x1x6x10 [/conv/Conv]"]
#x = affine_map<(c, n, ty, tx, p, q, i, j) -> (n, c, ty * 2 + i, tx * 2 + j)>
#k = affine_map<(c, n, ty, tx, p, q, i, j) -> (p, q, i, j)>
#v = affine_map<(c, n, ty, tx, p, q, i, j) -> (p, q, c, n, ty, tx)>
func.func @forward(%x: memref<1x16x14x22xf32>, %coef: memref<4x4x4x4xf32>,
                   %v: memref<4x4x16x1x6x10xf32>) {
  linalg.generic {indexing_maps = [#x, #k, #v],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel",
                                    "parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %coef : memref<1x16x14x22xf32>, memref<4x4x4x4xf32>)
      outs(%v : memref<4x4x16x1x6x10xf32>) attrs = {mcc.winograd = "input"} {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %p = arith.mulf %a, %c : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } loc("/conv/Conv")
  return
}
