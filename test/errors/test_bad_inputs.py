#!/usr/bin/env python3
"""Bad input must give a clear message, a non-zero exit, no crash and no
output file. Each case runs the real CLI and checks all four."""
import argparse
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ap = argparse.ArgumentParser()
ap.add_argument("--mcc", required=True)
ap.add_argument("--mcc-run", required=True)
ap.add_argument("--models", required=True)
ap.add_argument("--workdir", required=True)
args = ap.parse_args()

W = args.workdir
shutil.rmtree(W, ignore_errors=True)
os.makedirs(W)
failures = []
results = []


def check(name, cmd, expect, output):
    r = subprocess.run(cmd, capture_output=True, text=True)
    problems = []
    if r.returncode == 0:
        problems.append("exit code 0")
    if r.returncode < 0 or r.returncode >= 128:
        problems.append(f"crashed (status {r.returncode})")
    if expect not in r.stderr:
        problems.append(f"stderr lacks {expect!r}: {r.stderr.strip()!r}")
    if output and os.path.exists(output):
        problems.append(f"left an output file {output}")
    folder = os.path.dirname(output) or "." if output else None
    leftovers = [f for f in os.listdir(folder) if ".tmp." in f] \
        if folder and os.path.isdir(folder) else []
    if leftovers:
        problems.append(f"left temporary files {leftovers}")
    results.append((name, r.returncode, r.stderr.strip().splitlines()[0] if r.stderr.strip() else ""))
    if problems:
        failures.append((name, problems))


def compile_cmd(model, out, *extra):
    return [args.mcc, "compile", model, "-o", out, "--target", "cpu", *extra]


def save(model, name, **kw):
    path = os.path.join(W, name)
    onnx.save(model, path, **kw)
    return path


def simple_model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


out = os.path.join(W, "out.so")
X = helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 4])
Y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 4])

# --- compile-time cases ---------------------------------------------------
rng = np.random.default_rng(0)
p = os.path.join(W, "random.onnx")
open(p, "wb").write(rng.bytes(4096))
check("random bytes", compile_cmd(p, out), "not a valid ONNX model", out)

p = os.path.join(W, "empty.onnx")
open(p, "wb").close()
check("empty file", compile_cmd(p, out), "not a valid ONNX model", out)

src = open(os.path.join(args.models, "resnet-ts", "model.onnx"), "rb").read()
p = os.path.join(W, "truncated.onnx")
open(p, "wb").write(src[: len(src) // 2])
check("truncated file", compile_cmd(p, out, "--shape", "pixel_values=2x3x64x64"),
      "not a valid ONNX model", out)

check("directory", compile_cmd(W, out), "is a directory", out)
check("missing file", compile_cmd(os.path.join(W, "nope.onnx"), out),
      "cannot open", out)

m = simple_model([helper.make_node("FrobnicateOp", ["X"], ["Y"], name="frob_1")], [X], [Y])
check("unknown op", compile_cmd(save(m, "unknown.onnx"), out),
      "node 'frob_1': unsupported op 'FrobnicateOp' (domain 'ai.onnx', opset 17)", out)

m = simple_model([helper.make_node("Gelu", ["X"], ["Y"], name="ms_gelu", domain="com.microsoft")],
                 [X], [Y])
m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
check("unknown domain", compile_cmd(save(m, "domain.onnx"), out),
      "op 'Gelu' of domain 'com.microsoft' is not supported", out)

w = numpy_helper.from_array(np.zeros((4, 4), np.float32), "W")
w.raw_data = w.raw_data[:40]
m = simple_model([helper.make_node("MatMul", ["X", "W"], ["Y"])], [X], [Y], [w])
check("initializer shorter than its shape", compile_cmd(save(m, "short.onnx"), out),
      "tensor 'W' holds 40 bytes of data, its shape [4x4] of float32 needs 64", out)

huge = TensorProto()
huge.name, huge.data_type = "W", TensorProto.FLOAT
huge.dims.extend([1000000, 1000000, 1000000])  # 1e18 elements, no data
m = simple_model([helper.make_node("Add", ["X", "W"], ["Y"])], [X], [Y], [huge])
check("hostile initializer shape", compile_cmd(save(m, "huge.onnx"), out),
      "tensor 'W' has an implausible shape", out)
big = TensorProto()
big.name, big.data_type = "W", TensorProto.FLOAT
big.dims.extend([100000, 100000])  # 40 GB claimed, no data
m = simple_model([helper.make_node("Add", ["X", "W"], ["Y"])], [X], [Y], [big])
check("initializer claiming 40 GB with no data", compile_cmd(save(m, "big.onnx"), out),
      "holds 0 bytes of data, its shape [100000x100000] of float32 needs 40000000000", out)
shape = helper.make_tensor("S", TensorProto.INT64, [3], [100000, 100000, 100000])
m = simple_model([helper.make_node("ConstantOfShape", ["S"], ["C"], name="fill"),
                  helper.make_node("Add", ["X", "C"], ["Y"])], [X], [Y], [shape])
check("hostile ConstantOfShape", compile_cmd(save(m, "cos.onnx"), out),
      "node 'fill' (ConstantOfShape): implausible shape", out)


def external_model(location):
    w = numpy_helper.from_array(np.ones((4, 4), np.float32), "W")
    w.data_location = TensorProto.EXTERNAL
    w.ClearField("raw_data")
    e = w.external_data.add()
    e.key, e.value = "location", location
    return simple_model([helper.make_node("MatMul", ["X", "W"], ["Y"])], [X], [Y], [w])

check("external data missing", compile_cmd(save(external_model("weights.bin"), "ext_missing.onnx"), out),
      "external data file", out)
open(os.path.join(os.path.dirname(W), "secret.bin"), "wb").write(np.ones(16, np.float32).tobytes())
check("external data escaping the folder",
      compile_cmd(save(external_model("../secret.bin"), "ext_escape.onnx"), out),
      "points outside the model's folder", out)
check("external data absolute path",
      compile_cmd(save(external_model("/etc/passwd"), "ext_abs.onnx"), out),
      "is an absolute path", out)

Xs = helper.make_tensor_value_info("X", TensorProto.FLOAT, ["batch", 4])
m = simple_model([helper.make_node("Relu", ["X"], ["Y"])], [Xs], [Y])
# An unpinned symbolic dim stays dynamic (docs/design/0010); what cannot
# take one says so.
check("empty --shape bounds", compile_cmd(save(m, "symbolic1.onnx"), out, "--shape", "X=4..2x4"),
      "must satisfy 1 <= LO <= HI", out)
Xl = helper.make_tensor_value_info("X", TensorProto.FLOAT, ["batch", 4, 2, 2])
Yl = helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)
ml = simple_model([helper.make_node("LRN", ["X"], ["Y"], size=3)], [Xl], [Yl])
check("dynamic dim into an op without support", compile_cmd(save(ml, "symbolic_lrn.onnx"), out),
      "does not support symbolic dims yet: pin them with --shape", out)
check("--shape for a non-input", compile_cmd(save(m, "symbolic2.onnx"), out, "--shape", "X=2x4", "--shape", "Z=2x4"),
      "--shape names 'Z', which is not a graph input", out)
check("--shape with wrong rank", compile_cmd(save(m, "symbolic3.onnx"), out, "--shape", "X=2x4x1"),
      "gives 3 dims, the input has rank 2", out)
m = simple_model([helper.make_node("Relu", ["X"], ["Y"])], [X], [Y])
check("unknown --cpu", compile_cmd(save(m, "cpu.onnx"), out, "--cpu", "bogus"),
      "--cpu 'bogus' is not a CPU LLVM knows", out)
check("unknown --winograd mode",
      compile_cmd(save(m, "wino.onnx"), out, "--winograd", "f6"),
      "--winograd: f6 not in {f4,f2,off}", out)
check("--precision bf16x3 for a CPU without AMX",
      compile_cmd(save(m, "amx.onnx"), out, "--precision", "bf16x3", "--cpu", "x86-64-v3"),
      "--precision bf16x3 needs a CPU with AMX-BF16", out)
check("--precision tf32x3 at --target cpu",
      compile_cmd(save(m, "tf32cpu.onnx"), out, "--precision", "tf32x3"),
      "the cpu target takes fp32 or bf16x3", out)
check("malformed --gpu-arch",
      [args.mcc, "compile", save(m, "arch.onnx"), "-o", out, "--target", "cuda",
       "--gpu-arch", "sm_xx"], "--gpu-arch 'sm_xx' is not an NVIDIA architecture", out)
m = simple_model([helper.make_node("Relu", ["X"], ["Y"])], [X], [Y], opset=5)
check("op older than opset 7's", compile_cmd(save(m, "opset5.onnx"), out),
      "Relu at opset 5 is version 1, older than the one mcc implements (version 6", out)
m = simple_model([helper.make_node("Relu", ["X"], ["Y"])], [X], [Y], opset=29)
check("opset past the newest", compile_cmd(save(m, "opset29.onnx"), out),
      "opset 29 is not supported (supported: 1 to 28", out)
S = helper.make_tensor_value_info("S", TensorProto.INT64, [2])
m = simple_model([helper.make_node("Reshape", ["X", "S"], ["Y"])], [X, S], [Y])
reshape_in = save(m, "reshape_input.onnx")
check("shape input not frozen", compile_cmd(reshape_in, out),
      "the target shape: input 1 ('S') must be known at compile time", out)
check("--const-input for a non-input", compile_cmd(reshape_in, out, "--const-input", "Z=1,2"),
      "--const-input names 'Z', which is not a graph input", out)
check("--const-input of the wrong length", compile_cmd(reshape_in, out, "--const-input", "S=1,2,3"),
      "--const-input S: axis 0 is 3, the input fixes it to 2", out)
np.save(os.path.join(W, "s_f32.npy"), np.array([2, 4], np.float32))
check("--const-input of the wrong dtype",
      compile_cmd(reshape_in, out, "--const-input", "S=" + os.path.join(W, "s_f32.npy")),
      "--const-input S: the value has element type 1, the input 7", out)
check("--const-input file missing",
      compile_cmd(reshape_in, out, "--const-input", "S=" + os.path.join(W, "nope.npy")),
      "--const-input S: " + os.path.join(W, "nope.npy") + ": cannot open", out)
check("--const-input and --shape together",
      compile_cmd(reshape_in, out, "--const-input", "S=2,4", "--shape", "S=2"),
      "the input also has a --shape", out)
m = simple_model([helper.make_node("Cast", ["X"], ["Y"], to=TensorProto.FLOAT8E8M0,
                                   round_mode="sideways")],
                 [X], [helper.make_tensor_value_info("Y", TensorProto.FLOAT8E8M0, [2, 4])],
                 opset=25)
check("unknown Cast round_mode", compile_cmd(save(m, "roundmode.onnx"), out),
      "unknown round_mode 'sideways'", out)
m = simple_model([helper.make_node("Range", ["S", "L", "D"], ["Y"], stash_type=1)],
                 [helper.make_tensor_value_info(n, TensorProto.FLOAT, []) for n in "SLD"],
                 [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None])], opset=25)
check("attribute of a newer opset mcc lacks", compile_cmd(save(m, "range_stash.onnx"), out),
      "stash_type", out)

# --- run-time cases -------------------------------------------------------
good = os.path.join(W, "relu.so")
m = simple_model([helper.make_node("Relu", ["X"], ["Y"])], [X], [Y])
r = subprocess.run(compile_cmd(save(m, "relu.onnx"), good), capture_output=True, text=True)
if r.returncode != 0:
    failures.append(("compile a good model", [r.stderr]))
else:
    npz_out = os.path.join(W, "out.npz")
    np.savez(os.path.join(W, "wrong_shape.npz"), X=np.ones((3, 4), np.float32))
    np.savez(os.path.join(W, "wrong_dtype.npz"), X=np.ones((2, 4), np.float64))
    np.savez(os.path.join(W, "wrong_name.npz"), input=np.ones((2, 4), np.float32))
    np.savez(os.path.join(W, "good.npz"), X=np.ones((2, 4), np.float32))
    for runner in (args.mcc, args.mcc_run):
        tag = os.path.basename(runner)
        base = [runner, "run"] if runner == args.mcc else [runner]
        check(f"{tag}: wrong input shape",
              base + [good, "--input", os.path.join(W, "wrong_shape.npz"), "--output", npz_out],
              "input 0 ('X'): shape [3,4] given, the model expects [2,4]", npz_out)
        check(f"{tag}: wrong input dtype",
              base + [good, "--input", os.path.join(W, "wrong_dtype.npz"), "--output", npz_out],
              "dtype float64 given, the model expects float32", npz_out)
        check(f"{tag}: missing input name",
              base + [good, "--input", os.path.join(W, "wrong_name.npz"), "--output", npz_out],
              "no array named 'X'", npz_out)
        check(f"{tag}: model is not an mcc .so",
              base + ["/lib/x86_64-linux-gnu/libm.so.6", "--input", os.path.join(W, "wrong_name.npz"), "--output", npz_out],
              "not an mcc model", npz_out)
        check(f"{tag}: output folder missing",
              base + [good, "--input", os.path.join(W, "good.npz"),
                      "--output", os.path.join(W, "no", "dir", "o.npz")],
              "cannot write", os.path.join(W, "no", "dir", "o.npz"))

# --- external weights ----------------------------------------------------
ext_dir = os.path.join(W, "external")
os.makedirs(ext_dir)
ext_so = os.path.join(ext_dir, "m.so")
Y8 = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 8])
m = simple_model([helper.make_node("MatMul", ["X", "W"], ["Y"])], [X], [Y8],
                 [numpy_helper.from_array(np.arange(32, dtype=np.float32).reshape(4, 8) / 7, "W")])
r = subprocess.run(compile_cmd(save(m, "ext.onnx"), ext_so, "--weights", "external"),
                   capture_output=True, text=True)
weights = ext_so + ".weights"
if r.returncode != 0 or not os.path.exists(weights):
    failures.append(("compile with --weights external", [r.stderr]))
else:
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    np.savez(os.path.join(ext_dir, "x.npz"), X=x)
    good_out = os.path.join(ext_dir, "y.npz")
    r = subprocess.run([args.mcc, "run", ext_so, "--input", os.path.join(ext_dir, "x.npz"),
                        "--output", good_out], capture_output=True, text=True)
    expect = x @ (np.arange(32, dtype=np.float32).reshape(4, 8) / 7)
    if r.returncode != 0 or not np.allclose(np.load(good_out)["Y"], expect, rtol=1e-6):
        failures.append(("run with external weights", [r.stderr]))
    data = open(weights, "rb").read()
    run_ext = [args.mcc, "run", ext_so, "--input", os.path.join(ext_dir, "x.npz"),
               "--output", os.path.join(ext_dir, "bad.npz")]
    os.rename(weights, weights + ".bak")
    check("external weights file missing", run_ext, "weights file", os.path.join(ext_dir, "bad.npz"))
    open(weights, "wb").write(data[:10])
    check("external weights file truncated", run_ext, "has 10 bytes, the model expects",
          os.path.join(ext_dir, "bad.npz"))
    open(weights, "wb").write(bytes([data[0] ^ 0xFF]) + data[1:])
    check("external weights file from another model", run_ext, "checksum mismatch",
          os.path.join(ext_dir, "bad.npz"))
    os.replace(weights + ".bak", weights)

print(f"{'case':45} {'exit':>4}  message")
for name, rc, msg in results:
    print(f"{name:45} {rc:>4}  {msg[:110]}")
for name, problems in failures:
    print(f"FAIL {name}: {'; '.join(problems)}")
print(f"{len(results) - len(failures)}/{len(results)} bad-input cases handled")
sys.exit(1 if failures else 0)
