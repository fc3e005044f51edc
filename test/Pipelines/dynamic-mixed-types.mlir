// bf16 and f16 over a dynamic row count (erf and tanh approximated, bf16
// conversions as integer ops), an f16 product with dynamic M (interchanged
// loops, not the f32 kernel), a slice with a dynamic size (0 rows when
// M = 1), and a result returned twice, against the static twins.
// RUN: %dynamic_check %t %s '1x64;1x48,1x48,0x32,1x64' '7x64;7x48,7x48,6x32,7x64' '130x64;130x48,130x48,129x32,130x64' | FileCheck %s --check-prefix=EXEC
// RUN: mcc-opt %s --mcc-cpu-pipeline --verify-each | FileCheck %s

// EXEC-COUNT-12: ok
// EXEC-NOT: MISMATCH

// CHECK-LABEL: llvm.func @forward
// CHECK-NOT: llvm.call @erf
// CHECK-NOT: llvm.call @tanh
// CHECK-NOT: __truncsfbf2
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @forward(%x: tensor<?x64xf32>, %w: tensor<64x48xf32>) -> (tensor<?x48xf32>, tensor<?x48xf32>, tensor<?x32xf32>, tensor<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %x, %c0 : tensor<?x64xf32>
  // bf16 GELU (erf) and f16 tanh, each rounding its result
  %e0 = tensor.empty(%m) : tensor<?x64xbf16>
  %xb = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x64xf32>) outs(%e0 : tensor<?x64xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %t = arith.truncf %a : f32 to bf16
    %h = arith.constant 0.5 : bf16
    %s = arith.constant 0.70710678 : bf16
    %one = arith.constant 1.0 : bf16
    %u = arith.mulf %t, %s : bf16
    %e = math.erf %u : bf16
    %v = arith.addf %e, %one : bf16
    %y = arith.mulf %t, %v : bf16
    %z = arith.mulf %y, %h : bf16
    linalg.yield %z : bf16
  } -> tensor<?x64xbf16>
  // f16 product with a dynamic M: generalized and interchanged, not the f32 kernel
  %e1 = tensor.empty(%m) : tensor<?x64xf16>
  %xh = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%xb : tensor<?x64xbf16>) outs(%e1 : tensor<?x64xf16>) {
  ^bb0(%a: bf16, %o: f16):
    %f = arith.extf %a : bf16 to f32
    %t = math.tanh %f : f32
    %h = arith.truncf %t : f32 to f16
    linalg.yield %h : f16
  } -> tensor<?x64xf16>
  %e2 = tensor.empty() : tensor<64x48xf16>
  %wh = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<64x48xf32>) outs(%e2 : tensor<64x48xf16>) {
  ^bb0(%a: f32, %o: f16):
    %h = arith.truncf %a : f32 to f16
    linalg.yield %h : f16
  } -> tensor<64x48xf16>
  %zh = arith.constant 0.0 : f16
  %e3 = tensor.empty(%m) : tensor<?x48xf16>
  %f3 = linalg.fill ins(%zh : f16) outs(%e3 : tensor<?x48xf16>) -> tensor<?x48xf16>
  %p = linalg.matmul ins(%xh, %wh : tensor<?x64xf16>, tensor<64x48xf16>) outs(%f3 : tensor<?x48xf16>) -> tensor<?x48xf16>
  %e4 = tensor.empty(%m) : tensor<?x48xf32>
  %pf = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<?x48xf16>) outs(%e4 : tensor<?x48xf32>) {
  ^bb0(%a: f16, %o: f32):
    %f = arith.extf %a : f16 to f32
    linalg.yield %f : f32
  } -> tensor<?x48xf32>
  // a dynamic slice: rows 1 .. m-1, columns 16 .. 47
  %c1 = arith.constant 1 : index
  %rows = arith.subi %m, %c1 : index
  %sl = tensor.extract_slice %x[1, 16] [%rows, 32] [1, 1] : tensor<?x64xf32> to tensor<?x32xf32>
  // an output listed twice, and a bf16 result widened back
  %e5 = tensor.empty(%m) : tensor<?x64xf32>
  %gf = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%xb : tensor<?x64xbf16>) outs(%e5 : tensor<?x64xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %f = arith.extf %a : bf16 to f32
    linalg.yield %f : f32
  } -> tensor<?x64xf32>
  return %pf, %pf, %sl, %gf : tensor<?x48xf32>, tensor<?x48xf32>, tensor<?x32xf32>, tensor<?x64xf32>
}
