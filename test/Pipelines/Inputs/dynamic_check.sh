#!/bin/sh
# dynamic_check.sh LLVM_BIN MCC_SRC TMP INPUT CASE... : compiles INPUT's
# @forward (dynamic dims) and its static twins for each CASE (see
# dynamic_check.py) through mcc's CPU pipeline into a shared library, and
# runs the generated @main against it with mlir-runner.
set -e
bin=$1 src=$2 t=$3 in=$4
shift 4
lib=$bin/../lib
cases=""
for c in "$@"; do cases="$cases --case $c"; done
python3 "$src/test/Pipelines/Inputs/dynamic_check.py" "$in" $cases \
  --forward-out "$t.fwd.mlir" --main-out "$t.main.mlir"
mcc-opt "$t.fwd.mlir" --mcc-cpu-pipeline -o "$t.llvm.mlir"
"$bin/mlir-translate" --mlir-to-llvmir "$t.llvm.mlir" -o "$t.ll"
"$bin/llc" -O2 -filetype=obj -relocation-model=pic "$t.ll" -o "$t.o"
# The allocation hooks of use-generic-functions come from the model support
# library, as in a model .so.
cc -shared -fPIC -O2 "$t.o" "$src/lib/Target/ModelSupport/BufferCache.c" \
  "$src/lib/Target/ModelSupport/HugePages.c" \
  "$src/lib/Target/ModelSupport/Profile.c" \
  -o "$t.so" -L"$lib" -Wl,-rpath,"$lib" -lomp -lm
"$bin/mlir-opt" "$t.main.mlir" --pass-pipeline='builtin.module(expand-strided-metadata,convert-scf-to-cf,convert-vector-to-llvm,finalize-memref-to-llvm,convert-math-to-llvm,convert-math-to-libm,convert-func-to-llvm,convert-arith-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts)' \
  -o "$t.main.llvm.mlir"
"$bin/mlir-runner" "$t.main.llvm.mlir" -e main -entry-point-result=void \
  -shared-libs="$t.so,$lib/libmlir_c_runner_utils.so"
