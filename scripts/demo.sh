#!/usr/bin/env bash
# The main job on a fresh machine: set up, build, compile the bundled BERT
# export for the CPU, run it on its bundled inputs and compare with the
# outputs PyTorch produced.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
MODEL=${1:-bert-ts}
mkdir -p build/demo
build/tools/mcc/mcc compile models/$MODEL/model.onnx -o build/demo/$MODEL.so \
  --target cpu --shape input_ids=2x16 --shape attention_mask=2x16 \
  --shape token_type_ids=2x16
build/tools/mcc/mcc inspect build/demo/$MODEL.so
build/tools/mcc/mcc run build/demo/$MODEL.so --input models/$MODEL/inputs.npz \
  --output build/demo/$MODEL.out.npz
python3 scripts/compare_npz.py build/demo/$MODEL.out.npz models/$MODEL/reference.npz
