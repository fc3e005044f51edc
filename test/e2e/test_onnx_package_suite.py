#!/usr/bin/env python3
"""The node-test suite of the installed onnx package (see
scripts/gen_onnx_node_suite.py), run like Debian's: fails if fewer tests
pass than recorded in onnx-package-min-pass.txt. The count belongs to one
onnx release (its suite changes with each), so other releases skip
(exit 77)."""
import os
import subprocess
import sys

import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RELEASE = "1.23."

mcc, work = sys.argv[1], sys.argv[2]
if not onnx.__version__.startswith(RELEASE):
    print(f"onnx {onnx.__version__} is installed; the recorded count is for {RELEASE}x: skipped")
    sys.exit(77)
with open(os.path.join(HERE, "onnx-package-min-pass.txt")) as f:
    min_pass = int(f.read().strip())
suite = os.path.join(work, "suite")
subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gen_onnx_node_suite.py"),
                "-o", suite], check=True)
r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "onnx_node_tests.py"),
                    "--suite", os.path.join(suite, "node"), "--mcc", mcc, "--jobs", "2",
                    "--min-pass", str(min_pass), "--workdir", os.path.join(work, "run"),
                    "--markdown", os.path.join(work, "supported-ops-onnx-package.md"), "-q"])
sys.exit(r.returncode)
