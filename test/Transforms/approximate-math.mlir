// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-approximate-math))' --verify-each | FileCheck %s

// exp, erf and tanh on f32 become arithmetic (which vectorizes); other math
// ops are left for libm.
// CHECK-LABEL: func.func @gelu_softmax
// CHECK-NOT: math.erf
// CHECK-NOT: math.exp
// CHECK-NOT: math.tanh
// CHECK: arith.mulf
// CHECK: math.log
func.func @gelu_softmax(%x: f32) -> (f32, f32, f32, f32) {
  %e = math.erf %x : f32
  %x2 = math.exp %x : f32
  %t = math.tanh %x : f32
  %l = math.log %x : f32
  return %e, %x2, %t, %l : f32, f32, f32, f32
}
