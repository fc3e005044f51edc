// The whole CPU pipeline on a matmul + bias + GELU: one entry point with
// out-params, the tiles as an OpenMP worksharing loop, everything else LLVM.
// RUN: mcc-opt %s --mcc-cpu-pipeline --verify-each | FileCheck %s
// RUN: mcc-opt %s --mcc-cpu-fuse --mcc-cpu-tile | FileCheck %s --check-prefix=TILE

// The bias + GELU is the product's epilogue: one tile loop runs both.
// TILE-LABEL: func.func @forward
// TILE: scf.forall
// TILE: linalg.matmul
// TILE: linalg.generic
// TILE: math.erf
// TILE-NOT: scf.forall (

// CHECK-LABEL: llvm.func @forward
// CHECK: omp.parallel
// CHECK: omp.wsloop
// The matmul's register block: 8 rows x 2 vectors of multiply-adds.
// CHECK-COUNT-16: llvm.intr.fmuladd({{.*}}) : (vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK-NOT: omp.parallel
// GELU's erf is a polynomial now, not a libm call per element.
// CHECK-NOT: llvm.call @erff
// CHECK-NOT: linalg.
// CHECK-NOT: memref.
// CHECK-NOT: scf.
#map = affine_map<(d0, d1) -> (d0, d1)>
#mapb = affine_map<(d0, d1) -> (d1)>
func.func @forward(%a: tensor<128x32xf32>, %b: tensor<32x64xf32>, %bias: tensor<64xf32>) -> tensor<128x64xf32> {
  %e = tensor.empty() : tensor<128x64xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<128x64xf32>) -> tensor<128x64xf32>
  %m = linalg.matmul ins(%a, %b : tensor<128x32xf32>, tensor<32x64xf32>) outs(%f : tensor<128x64xf32>) -> tensor<128x64xf32>
  %e2 = tensor.empty() : tensor<128x64xf32>
  %r = linalg.generic {indexing_maps = [#map, #mapb, #map], iterator_types = ["parallel", "parallel"]} ins(%m, %bias : tensor<128x64xf32>, tensor<64xf32>) outs(%e2 : tensor<128x64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    %t = math.erf %s : f32
    linalg.yield %t : f32
  } -> tensor<128x64xf32>
  return %r : tensor<128x64xf32>
}
