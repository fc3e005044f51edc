// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-gpu-distribute{coarsen-factor=4 coarsen-min-iterations=1024}))' \
// RUN: | mlir-opt --pass-pipeline='builtin.module(convert-scf-to-cf,convert-vector-to-llvm,expand-strided-metadata,lower-affine,finalize-memref-to-llvm,convert-func-to-llvm,convert-arith-to-llvm,convert-index-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts)' \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_lib/libmlir_c_runner_utils.so | FileCheck %s
// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-gpu-distribute{coarsen-factor=4 coarsen-min-iterations=1024}))' | FileCheck %s --check-prefix=IR

// Runs coarsened nests on the CPU (the GPU mapping attributes are ignored
// there): 1050 elements, 263 threads of four, the last threads' fourth
// element past the end. The fill and the transposing copy are both
// coarsened; every element must come out right.
// CHECK: 0
// CHECK-NEXT: 2469
// IR-LABEL: func.func @transpose
// IR-COUNT-4: memref.load
// IR-COUNT-3: memref.store
// IR: scf.if
// IR-NEXT: memref.store
// IR-LABEL: func.func @fill
// IR-COUNT-4: memref.store
func.func @transpose(%a: memref<3x5x70xf32>, %b: memref<70x5x3xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c70 = arith.constant 70 : index
  scf.parallel (%k, %j, %i) = (%c0, %c0, %c0) to (%c70, %c5, %c3) step (%c1, %c1, %c1) {
    %v = memref.load %a[%i, %j, %k] : memref<3x5x70xf32>
    memref.store %v, %b[%k, %j, %i] : memref<70x5x3xf32>
    scf.reduce
  }
  return
}

func.func @fill(%a: memref<3x5x70xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c70 = arith.constant 70 : index
  scf.parallel (%i, %j, %k) = (%c0, %c0, %c0) to (%c3, %c5, %c70) step (%c1, %c1, %c1) {
    %c100 = arith.constant 100 : index
    %c1000 = arith.constant 1000 : index
    %x = arith.muli %i, %c1000 : index
    %y = arith.muli %j, %c100 : index
    %s = arith.addi %x, %y : index
    %t = arith.addi %s, %k : index
    %n = arith.index_cast %t : index to i64
    %v = arith.sitofp %n : i64 to f32
    memref.store %v, %a[%i, %j, %k] : memref<3x5x70xf32>
    scf.reduce
  }
  return
}

func.func @expected(%i: index, %j: index, %k: index) -> f32 {
  %c100 = arith.constant 100 : index
  %c1000 = arith.constant 1000 : index
  %a = arith.muli %i, %c1000 : index
  %b = arith.muli %j, %c100 : index
  %s = arith.addi %a, %b : index
  %t = arith.addi %s, %k : index
  %n = arith.index_cast %t : index to i64
  %f = arith.sitofp %n : i64 to f32
  return %f : f32
}

func.func @count_wrong(%b: memref<70x5x3xf32>, %out: memref<1xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c70 = arith.constant 70 : index
  %zero = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %n = scf.for %i = %c0 to %c3 step %c1 iter_args(%ni = %zero) -> (i64) {
    %nj = scf.for %j = %c0 to %c5 step %c1 iter_args(%aj = %ni) -> (i64) {
      %nk = scf.for %k = %c0 to %c70 step %c1 iter_args(%ak = %aj) -> (i64) {
        %v = memref.load %b[%k, %j, %i] : memref<70x5x3xf32>
        %e = func.call @expected(%i, %j, %k) : (index, index, index) -> f32
        %ne = arith.cmpf une, %v, %e : f32
        %inc = arith.select %ne, %one, %zero : i64
        %r = arith.addi %ak, %inc : i64
        scf.yield %r : i64
      }
      scf.yield %nk : i64
    }
    scf.yield %nj : i64
  }
  memref.store %n, %out[%c0] : memref<1xi64>
  return
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c69 = arith.constant 69 : index
  %a = memref.alloc() : memref<3x5x70xf32>
  %b = memref.alloc() : memref<70x5x3xf32>
  %wrong = memref.alloc() : memref<1xi64>
  func.call @fill(%a) : (memref<3x5x70xf32>) -> ()
  func.call @transpose(%a, %b) : (memref<3x5x70xf32>, memref<70x5x3xf32>) -> ()
  func.call @count_wrong(%b, %wrong) : (memref<70x5x3xf32>, memref<1xi64>) -> ()
  %n = memref.load %wrong[%c0] : memref<1xi64>
  vector.print %n : i64
  %last = memref.load %b[%c69, %c4, %c2] : memref<70x5x3xf32>
  vector.print %last : f32
  memref.dealloc %a : memref<3x5x70xf32>
  memref.dealloc %b : memref<70x5x3xf32>
  memref.dealloc %wrong : memref<1xi64>
  return
}
