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

// The emulation's `contract` conversions would let extf(truncf(x)) fold to
// x; the flag is dropped, so the bf16 result of the subtraction is rounded
// before exp reads it (as two bf16 ops compute).
// CHECK-LABEL: func.func @rounds_between_ops
// CHECK: %[[D:.*]] = arith.subf %arg0, %arg1 : f32
// CHECK: arith.bitcast %[[D]] : f32 to i32
// CHECK: arith.bitcast %{{.*}} : i16 to bf16
// CHECK: %[[R:.*]] = arith.bitcast %{{.*}} : i32 to f32
// CHECK: math.exp %[[R]] : f32
func.func @rounds_between_ops(%x: f32, %y: f32) -> f32 {
  %d = arith.subf %x, %y : f32
  %t = arith.truncf %d fastmath<contract> : f32 to bf16
  %e = arith.extf %t fastmath<contract> : bf16 to f32
  %r = math.exp %e : f32
  return %r : f32
}
