// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-expand-bf16))' --verify-each | FileCheck %s

// bf16 <-> f32 conversions become integer bit operations (no library call);
// round to nearest even on truncation.
// CHECK-LABEL: func.func @convert
// CHECK-NOT: arith.extf
// CHECK-NOT: arith.truncf
// CHECK: %[[H:.*]] = arith.bitcast %arg0 : bf16 to i16
// CHECK: %[[W:.*]] = arith.extui %[[H]] : i16 to i32
// CHECK: arith.shli %[[W]]
// CHECK: %[[NAN:.*]] = arith.cmpf une, %arg1, %arg1
// CHECK: %[[BITS:.*]] = arith.bitcast %arg1 : f32 to i32
// CHECK: arith.andi
// CHECK: arith.addi %{{.*}}, %c32767_i32
// CHECK: arith.addi %[[BITS]]
// CHECK: arith.trunci %{{.*}} : i32 to i16
// CHECK: arith.select %[[NAN]], %c32704_i16
// CHECK: arith.bitcast %{{.*}} : i16 to bf16
func.func @convert(%x: bf16, %y: f32) -> (f32, bf16) {
  %a = arith.extf %x : bf16 to f32
  %b = arith.truncf %y : f32 to bf16
  return %a, %b : f32, bf16
}

// Other float ops stay as they are (arith-expand would rewrite maximumf).
// CHECK-LABEL: func.func @untouched
// CHECK: arith.maximumf
func.func @untouched(%x: f32, %y: f32) -> f32 {
  %m = arith.maximumf %x, %y : f32
  return %m : f32
}
