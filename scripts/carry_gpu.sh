#!/usr/bin/env bash
# Builds, on this machine (no GPU), what a device call for the CUDA issue
# needs under .carry/ (git-ignored; the device tool's `carry` list):
#   .carry/libmccrt.so              the loader runtime
#   .carry/small/<entry>.so         every models/ entry, for check_models_cuda.py
#   .carry/full/<arch>/cuda/<row>.so (+ .weights.json/.derived) for bench_gpu.py
# The full-size exports come from scripts/export_full.py into $FULL
# (default /tmp/full/<arch>-b<batch>); their weights do not travel.
#
#   [ONLY=bert,vit-b8] [SMALL=0] bash scripts/carry_gpu.sh   (rows: bench_gpu.py's .so names)
set -euo pipefail
cd "$(dirname "$0")/.."
MCC=${MCC:-build/tools/mcc/mcc}
FULL=${FULL:-/tmp/full}
mkdir -p .carry/small .carry/full
cp build/lib/Runtime/libmccrt.so .carry/libmccrt.so
if [ "${SMALL:-1}" != 0 ]; then # SMALL=0: full-size rows only
  python3 scripts/check_cuda_build.py --mcc "$MCC" --models models --workdir .carry/small
fi
rows=("bert-base 1 128 bert" "bert-base 16 128 bert-b16" "gpt2 1 128 gpt2"
      "resnet50 1 0 resnet50-b1" "resnet50 32 0 resnet50-b32"
      "resnext101_32x8d 8 0 resnext101-b8" "vit_base_patch16_224 8 0 vit-b8"
      "mobilenetv3_large_100 1 0 mobilenetv3-b1")
for spec in "${rows[@]}"; do
  set -- $spec
  if [ -n "${ONLY:-}" ] && [[ ",$ONLY," != *",$4,"* ]]; then
    continue
  fi
  src="$FULL/$1-b$2/model.onnx"
  [ -f "$src" ] || python3 scripts/export_full.py --arch "$1" --batch "$2" --seq "$3" --out "$FULL/$1-b$2"
  mkdir -p ".carry/full/$1/cuda"
  "$MCC" compile "$src" -o ".carry/full/$1/cuda/$4.so" --target cuda --weights external
  rm -f ".carry/full/$1/cuda/$4.so.weights" # rebuilt there by pack_weights.py
  echo "compiled $4"
done
du -sh .carry
