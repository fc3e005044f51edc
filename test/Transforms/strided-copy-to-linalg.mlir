// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-strided-copy-to-linalg))' --verify-each | FileCheck %s

// A copy out of a strided view becomes linalg.copy (plain loops later), so
// the .so never calls memrefCopy from MLIR's runner library.
// CHECK-LABEL: func.func @strided
// CHECK-NOT: memref.copy
// CHECK: linalg.copy ins(%{{.*}} : memref<4x2xf32, strided<[8, 1], offset: 2>>) outs(%{{.*}} : memref<4x2xf32>)
func.func @strided(%a: memref<4x8xf32>, %b: memref<4x2xf32>) {
  %v = memref.subview %a[0, 2] [4, 2] [1, 1] : memref<4x8xf32> to memref<4x2xf32, strided<[8, 1], offset: 2>>
  memref.copy %v, %b : memref<4x2xf32, strided<[8, 1], offset: 2>> to memref<4x2xf32>
  return
}

// Contiguous copies stay memref.copy: they lower to llvm.memcpy.
// CHECK-LABEL: func.func @contiguous
// CHECK: memref.copy
func.func @contiguous(%a: memref<4x8xf32>, %b: memref<4x8xf32>) {
  memref.copy %a, %b : memref<4x8xf32> to memref<4x8xf32>
  return
}

// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-strided-copy-to-linalg{all-copies}))' | FileCheck %s --check-prefix=ALL
// ALL-LABEL: func.func @contiguous
// ALL-NOT: memref.copy
// ALL: linalg.copy
