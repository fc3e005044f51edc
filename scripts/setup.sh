#!/usr/bin/env bash
# Installs what mcc needs on Debian 12 (as root or with sudo), then
# configures and builds it in ./build. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS="cmake ninja-build g++ pkg-config libmlir-22-dev mlir-22-tools llvm-22-dev
llvm-22-tools libomp-22-dev libonnx-dev libonnx-testdata libprotobuf-dev
protobuf-compiler libcli11-dev libspdlog-dev libgtest-dev libzip-dev
nlohmann-json3-dev zlib1g-dev libzstd-dev python3-pip"
missing=""
for p in $PKGS; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "== installing:$missing"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q $missing
fi
# Debian's own python3 refuses pip installs outside a venv (PEP 668).
python3 -c "import numpy, onnx" 2>/dev/null ||
  python3 -m pip install -q numpy onnx 2>/dev/null ||
  python3 -m pip install -q --break-system-packages numpy onnx
# ONNX Runtime gives the reference output of the generated >2 GB model
# (ctest large-model skips without it).
python3 -c "import onnxruntime" 2>/dev/null ||
  python3 -m pip install -q onnxruntime 2>/dev/null ||
  python3 -m pip install -q --break-system-packages onnxruntime ||
  echo "== onnxruntime not installed: ctest large-model will be skipped"

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
  -DLLVM_DIR=/usr/lib/llvm-22/lib/cmake/llvm \
  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit
cmake --build build -j "$(nproc)"
