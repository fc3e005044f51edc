#!/usr/bin/env python3
"""A model past 2 GB: a generated GPT-style decoder (2.68 GB of float32
weights in external data) compiles for cpu with a peak resident memory
under 1.5x its weight bytes, and its output matches ONNX Runtime's.

    test_large_model.py MCC WORKDIR [--keep]
"""
import argparse
import os
import resource
import shutil
import subprocess
import sys
import time

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("mcc")
ap.add_argument("workdir")
ap.add_argument("--keep", action="store_true")
args = ap.parse_args()

w = args.workdir
shutil.rmtree(w, ignore_errors=True)
os.makedirs(w)
free = shutil.disk_usage(w).free
if free < 8e9:
    print("needs 8 GB of free disk in %s, has %.1f GB" % (w, free / 1e9))
    sys.exit(77)
try:
    import onnxruntime as ort
except ImportError:
    print("needs onnxruntime for the reference output")
    sys.exit(77)

model = os.path.join(w, "gpt-2g.onnx")
subprocess.run([sys.executable, os.path.join(here, "..", "..", "scripts", "gen_large_model.py"),
                "--out", model], check=True)
weight_bytes = os.path.getsize(model + ".data")
assert weight_bytes > 2 ** 31, weight_bytes

ids = np.random.default_rng(1).integers(0, 32000, (1, 32)).astype(np.int64)
np.savez(os.path.join(w, "in.npz"), input_ids=ids)

so = os.path.join(w, "gpt.so")
start = time.time()
subprocess.run([args.mcc, "compile", model, "-o", so, "--shape", "input_ids=1x32"], check=True)
compile_s = time.time() - start
# ru_maxrss of children: the largest mcc process so far (ORT runs later, here).
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
subprocess.run([args.mcc, "run", so, "--input", os.path.join(w, "in.npz"), "--output",
                os.path.join(w, "out.npz")], check=True)
got = np.load(os.path.join(w, "out.npz"))["logits"]

opts = ort.SessionOptions()
opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
ref = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"]).run(
    None, {"input_ids": ids})[0]
rel = float(np.abs(got - ref).max() / np.abs(ref).max())
ratio = peak / weight_bytes
print("weights %.2f GB, compile %.1f s, compile peak RSS %.2f GB (%.2fx the weights), "
      "rel.err %.2e vs ONNX Runtime" % (weight_bytes / 1e9, compile_s, peak / 1e9, ratio, rel))
if not args.keep:
    shutil.rmtree(w, ignore_errors=True)
assert got.shape == ref.shape == (1, 32, 32000), (got.shape, ref.shape)
assert rel <= 1e-4, rel
assert ratio <= 1.5, "compile peak %.2fx the weight bytes (limit 1.5x)" % ratio
print("large model: ok")
