// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-dealloc-after-last-use))' --verify-each | FileCheck %s

// Each buffer is freed right after the last op that reads it or a view of
// it (a loop nest counts as one op), not at the end of the function.
// CHECK-LABEL: func.func @early
// CHECK: %[[A:.*]] = memref.alloc() : memref<4x8xf32>
// CHECK: linalg.fill {{.*}} outs(%[[A]]
// CHECK: %[[B:.*]] = memref.alloc() : memref<4x8xf32>
// CHECK: scf.forall
// CHECK: linalg.copy
// CHECK: }
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: %[[FLAT:.*]] = memref.collapse_shape %[[B]]
// CHECK-NEXT: linalg.copy ins(%[[FLAT]]
// CHECK-NEXT: memref.dealloc %[[B]]
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: return
func.func @early(%out: memref<32xf32>, %other: memref<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<4x8xf32>
  linalg.fill ins(%zero : f32) outs(%a : memref<4x8xf32>)
  %b = memref.alloc() : memref<4x8xf32>
  scf.forall (%i) in (4) {
    %row = memref.subview %a[%i, 0] [1, 8] [1, 1] : memref<4x8xf32> to memref<8xf32, strided<[1], offset: ?>>
    %dst = memref.subview %b[%i, 0] [1, 8] [1, 1] : memref<4x8xf32> to memref<8xf32, strided<[1], offset: ?>>
    linalg.copy ins(%row : memref<8xf32, strided<[1], offset: ?>>) outs(%dst : memref<8xf32, strided<[1], offset: ?>>)
  }
  %flat = memref.collapse_shape %b [[0, 1]] : memref<4x8xf32> into memref<32xf32>
  linalg.copy ins(%flat : memref<32xf32>) outs(%out : memref<32xf32>)
  linalg.fill ins(%zero : f32) outs(%other : memref<4x8xf32>)
  memref.dealloc %a : memref<4x8xf32>
  memref.dealloc %b : memref<4x8xf32>
  return
}

// A buffer that escapes through an op yielding a memref that is not a view
// of it keeps its dealloc where it was.
// CHECK-LABEL: func.func @escapes
// CHECK: arith.select
// CHECK: linalg.fill
// CHECK-NEXT: memref.dealloc
func.func @escapes(%other: memref<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<4xf32>
  %true_ = arith.constant true
  %s = arith.select %true_, %a, %other : memref<4xf32>
  linalg.fill ins(%zero : f32) outs(%other : memref<4xf32>)
  memref.dealloc %a : memref<4xf32>
  return
}
