// RUN: mcc-opt %s --mcc-gpu-gather-kernels --verify-each | FileCheck %s

// All kernels move into one module, numbered in launch order and named after
// their bodies; a kernel launched twice keeps one name, every launch
// follows. The two identical copies of @table become one; the different
// @scale of the second module is renamed.
// CHECK: gpu.module @mcc_kernels
// CHECK-DAG: memref.global "private" constant @table : memref<4xf32> = dense<1.0
// CHECK-DAG: memref.global "private" constant @scale : memref<1xf32> = dense<2.0
// CHECK-DAG: memref.global "private" constant @[[SCALE2:scale_[0-9]+]] : memref<1xf32> = dense<3.0
// CHECK-DAG: gpu.func @mcc_1_map_exp
// CHECK-DAG: gpu.func @mcc_0_rowreduce
// CHECK-DAG: memref.get_global @[[SCALE2]]
// CHECK-NOT: gpu.module
// CHECK: func.func @forward
// CHECK:   gpu.launch_func @mcc_kernels::@mcc_0_rowreduce
// CHECK:   gpu.launch_func @mcc_kernels::@mcc_1_map_exp
// CHECK:   gpu.launch_func @mcc_kernels::@mcc_0_rowreduce
module attributes {gpu.container_module} {
  gpu.module @forward_kernel {
    memref.global "private" constant @table : memref<4xf32> = dense<1.0>
    memref.global "private" constant @scale : memref<1xf32> = dense<2.0>
    gpu.func @forward_kernel(%x: memref<4xf32>) kernel {
      %t = memref.get_global @table : memref<4xf32>
      %s = memref.get_global @scale : memref<1xf32>
      %i = gpu.thread_id x
      %v = memref.load %x[%i] : memref<4xf32>
      %e = math.exp %v : f32
      memref.store %e, %x[%i] : memref<4xf32>
      gpu.return
    }
  }
  gpu.module @forward_kernel_0 {
    memref.global "private" constant @table : memref<4xf32> = dense<1.0>
    memref.global "private" constant @scale : memref<1xf32> = dense<3.0>
    gpu.func @forward_kernel(%x: memref<4xf32>) kernel {
      %t = memref.get_global @table : memref<4xf32>
      %s = memref.get_global @scale : memref<1xf32>
      %i = gpu.thread_id x
      %v = memref.load %x[%i] : memref<4xf32>
      %r = gpu.all_reduce add %v uniform {} : (f32) -> f32
      memref.store %r, %x[%i] : memref<4xf32>
      gpu.return
    }
  }
  func.func @forward(%x: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    gpu.launch_func @forward_kernel_0::@forward_kernel blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1) args(%x : memref<4xf32>)
    gpu.launch_func @forward_kernel::@forward_kernel blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1) args(%x : memref<4xf32>)
    gpu.launch_func @forward_kernel_0::@forward_kernel blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1) args(%x : memref<4xf32>)
    return
  }
}
