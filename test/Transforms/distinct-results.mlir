// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-distinct-results))' | FileCheck %s
// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-distinct-results),cse)' | FileCheck %s

// The second and third uses of %0 become fresh copies that CSE keeps apart;
// the first stays, and %arg0 (seen once) is returned as it is.
// CHECK-LABEL: func.func @repeats
// CHECK: %[[E:.*]] = tensor.empty() : tensor<0xf32>
// CHECK: %[[C1:.*]] = bufferization.alloc_tensor() copy(%[[E]])
// CHECK: %[[C2:.*]] = bufferization.alloc_tensor() copy(%[[E]])
// CHECK: return %[[E]], %[[C1]], %arg0, %[[C2]]
func.func @repeats(%arg0: tensor<4xf32>) -> (tensor<0xf32>, tensor<0xf32>, tensor<4xf32>, tensor<0xf32>) {
  %0 = tensor.empty() : tensor<0xf32>
  return %0, %0, %arg0, %0 : tensor<0xf32>, tensor<0xf32>, tensor<4xf32>, tensor<0xf32>
}
