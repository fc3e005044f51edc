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

// powf by a whole constant up to 4 is multiplications (GPT-2's GELU cubes
// its input); other exponents stay powf.
// CHECK-LABEL: func.func @pow_whole
// CHECK-SAME: (%[[X:.*]]: f32, %[[V:.*]]: vector<8xf32>)
// CHECK: %[[X2:.*]] = arith.mulf %[[X]], %[[X]] : f32
// CHECK: %[[X3:.*]] = arith.mulf %[[X2]], %[[X]] : f32
// CHECK: %[[V2:.*]] = arith.mulf %[[V]], %[[V]] : vector<8xf32>
// CHECK: %[[V4:.*]] = arith.mulf %[[V2]], %[[V2]] : vector<8xf32>
// CHECK: %[[H:.*]] = math.powf %[[X]], %{{.*}} : f32
// CHECK: return %[[X3]], %[[V4]], %[[H]]
func.func @pow_whole(%x: f32, %v: vector<8xf32>) -> (f32, vector<8xf32>, f32) {
  %three = arith.constant 3.0 : f32
  %four = arith.constant dense<4.0> : vector<8xf32>
  %half = arith.constant 0.5 : f32
  %c = math.powf %x, %three : f32
  %q = math.powf %v, %four : vector<8xf32>
  %h = math.powf %x, %half : f32
  return %c, %q, %h : f32, vector<8xf32>, f32
}
