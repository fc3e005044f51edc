// RUN: mcc-opt %s --mcc-gpu-libdevice-calls | FileCheck %s

// f32 calls __nv_fmodf, f64 __nv_fmod, f16 widens to f32 and back; host
// code keeps arith.remf (the CPU lowers it to fmod itself).
// CHECK-LABEL: gpu.module @kernels
// CHECK-DAG: func.func private @__nv_fmodf(f32, f32) -> f32
// CHECK-DAG: func.func private @__nv_fmod(f64, f64) -> f64
// CHECK-LABEL: gpu.func @rem
// CHECK: func.call @__nv_fmodf(%{{.*}}, %{{.*}}) : (f32, f32) -> f32
// CHECK: func.call @__nv_fmod(%{{.*}}, %{{.*}}) : (f64, f64) -> f64
// CHECK: %[[A:.*]] = arith.extf %{{.*}} : f16 to f32
// CHECK: %[[B:.*]] = arith.extf %{{.*}} : f16 to f32
// CHECK: %[[R:.*]] = func.call @__nv_fmodf(%[[A]], %[[B]])
// CHECK: arith.truncf %[[R]] : f32 to f16
// CHECK-NOT: arith.remf
// CHECK-LABEL: func.func @host
// CHECK: arith.remf
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @rem(%a: f32, %b: f32, %c: f64, %d: f64, %e: f16, %f: f16) kernel {
      %0 = arith.remf %a, %b : f32
      %1 = arith.remf %c, %d : f64
      %2 = arith.remf %e, %f : f16
      gpu.return
    }
  }
  func.func @host(%a: f32, %b: f32) -> f32 {
    %0 = arith.remf %a, %b : f32
    return %0 : f32
  }
}
