#!/usr/bin/env bash
# Set up, build, and run the whole test suite (lit, GoogleTest, end-to-end
# models, bad-input checks, ONNX node tests).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
ctest --test-dir build --output-on-failure -j 2
