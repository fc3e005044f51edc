#!/usr/bin/env python3
"""Edge cases of op lowerings that the ONNX node tests do not reach, with
expected values computed here by numpy."""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper

mcc = sys.argv[1]
work = tempfile.mkdtemp(prefix="mcc-edge-")


def run(nodes, inputs, outputs, feeds, name, opset=17):
    g = helper.make_graph(nodes, name, inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    path = os.path.join(work, name + ".onnx")
    onnx.save(m, path)
    so, npz, out = path + ".so", path + ".in.npz", path + ".out.npz"
    np.savez(npz, **feeds)
    subprocess.run([mcc, "compile", path, "-o", so], check=True)
    subprocess.run([mcc, "run", so, "--input", npz, "--output", out], check=True)
    return np.load(out)


# uint8 max pooling must compare unsigned (200 > 10, 255 > 0).
x = np.array([[[[10, 200, 3, 4], [5, 6, 130, 8], [255, 0, 1, 2], [3, 4, 5, 128]]]], np.uint8)
y = run([helper.make_node("MaxPool", ["X"], ["Y"], kernel_shape=[2, 2], strides=[2, 2])],
        [helper.make_tensor_value_info("X", TensorProto.UINT8, [1, 1, 4, 4])],
        [helper.make_tensor_value_info("Y", TensorProto.UINT8, None)], {"X": x}, "maxpool_u8")["Y"]
assert np.array_equal(y, np.array([[[[200, 130], [255, 128]]]], np.uint8)), y

# AveragePool, ceil mode with explicit padding and count_include_pad: the
# divisor counts declared padding but not the extra ceil-mode padding.
x = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)
y = run([helper.make_node("AveragePool", ["X"], ["Y"], kernel_shape=[2, 2], strides=[2, 2],
                          pads=[1, 1, 0, 0], ceil_mode=1, count_include_pad=1)],
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 1, 5, 5])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)], {"X": x}, "avgpool_ceil")["Y"]
padded = np.pad(x[0, 0], ((1, 0), (1, 0)))  # declared padding only
exp = np.zeros((3, 3), np.float32)
for i in range(3):
    for j in range(3):
        win = padded[2 * i: 2 * i + 2, 2 * j: 2 * j + 2]  # clipped by the array end
        exp[i, j] = win.sum() / win.size
assert y.shape == (1, 1, 3, 3) and np.allclose(y[0, 0], exp, rtol=1e-6), (y, exp)
# Mod with fmod=0 on floats (opset 28): numpy's np.mod, the result takes the
# divisor's sign, also against infinities.
a = np.array([5.5, -5.5, 5.5, -5.5, 3.0, -1.0, 2.0], np.float32)
b = np.array([2.0, 2.0, -2.0, -2.0, np.inf, np.inf, -np.inf], np.float32)
y = run([helper.make_node("Mod", ["A", "B"], ["Y"], fmod=0)],
        [helper.make_tensor_value_info("A", TensorProto.FLOAT, [7]),
         helper.make_tensor_value_info("B", TensorProto.FLOAT, [7])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)], {"A": a, "B": b},
        "mod_float_python", opset=28)["Y"]
assert np.array_equal(y, np.mod(a, b)), (y, np.mod(a, b))

# BitShift by the bit width or more gives 0 (LLVM would leave it undefined).
x = np.array([1, 200, 7, 255], np.uint8)
s_ = np.array([8, 9, 1, 7], np.uint8)
y = run([helper.make_node("BitShift", ["X", "S"], ["Y"], direction="LEFT")],
        [helper.make_tensor_value_info("X", TensorProto.UINT8, [4]),
         helper.make_tensor_value_info("S", TensorProto.UINT8, [4])],
        [helper.make_tensor_value_info("Y", TensorProto.UINT8, None)], {"X": x, "S": s_},
        "bitshift_wide")["Y"]
assert np.array_equal(y, np.array([0, 0, 14, 128], np.uint8)), y
# --const-input: a Reshape whose target shape is a graph input compiles once
# that input is frozen (inline integers), and the .so no longer takes it.
path = os.path.join(work, "reshape_frozen.onnx")
onnx.save(helper.make_model(helper.make_graph(
    [helper.make_node("Reshape", ["X", "S"], ["Y"])], "reshape_frozen",
    [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3, 4]),
     helper.make_tensor_value_info("S", TensorProto.INT64, [3])],
    [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)]),
    opset_imports=[helper.make_opsetid("", 17)]), path)
x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
np.savez(path + ".in.npz", X=x)
subprocess.run([mcc, "compile", path, "-o", path + ".so", "--const-input", "S=0,-1,2"], check=True)
subprocess.run([mcc, "run", path + ".so", "--input", path + ".in.npz", "--output",
                path + ".out.npz"], check=True)
y = np.load(path + ".out.npz")["Y"]
assert y.shape == (2, 6, 2) and np.array_equal(y, x.reshape(2, 6, 2)), y.shape
# ... and from a .npy file: CumSum's scalar axis.
path = os.path.join(work, "cumsum_frozen.onnx")
onnx.save(helper.make_model(helper.make_graph(
    [helper.make_node("CumSum", ["X", "A"], ["Y"], reverse=1)], "cumsum_frozen",
    [helper.make_tensor_value_info("X", TensorProto.FLOAT, [3, 4]),
     helper.make_tensor_value_info("A", TensorProto.INT32, [])],
    [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)]),
    opset_imports=[helper.make_opsetid("", 17)]), path)
np.save(path + ".axis.npy", np.array(1, np.int32))
x = np.arange(12, dtype=np.float32).reshape(3, 4)
np.savez(path + ".in.npz", X=x)
subprocess.run([mcc, "compile", path, "-o", path + ".so", "--const-input",
                "A=" + path + ".axis.npy"], check=True)
subprocess.run([mcc, "run", path + ".so", "--input", path + ".in.npz", "--output",
                path + ".out.npz"], check=True)
y = np.load(path + ".out.npz")["Y"]
assert np.array_equal(y, np.flip(np.cumsum(np.flip(x, 1), 1), 1)), y

# Unsigned integers above the signed range: uint32 from 2^31, uint64 from
# 2^63 must compare, divide, reduce and convert as unsigned.
T = TensorProto
a32 = np.array([3000000000, 5, 4294967295, 7, 2147483648], np.uint32)
b32 = np.array([7, 3000000000, 2, 4294967295, 3], np.uint32)
a64 = np.array([2**63 + 5, 9, 2**64 - 2**11, 2**63], np.uint64)  # exact in f64
b64 = np.array([3, 2**63 + 1, 10, 2**63 - 1], np.uint64)
f = np.array([3.7e9, 1.5, 4.2e9, 0.0, 2.9e9], np.float32)
h16 = np.array([40000, 1, 65535, 32768, 0], np.uint16)
i16 = np.array([-32768, 5, 32767, -1, 0], np.int16)
nodes = [
    helper.make_node("Max", ["A", "B"], ["max32"]),
    helper.make_node("Min", ["A", "B"], ["min32"]),
    helper.make_node("Div", ["A", "B"], ["div32"]),
    helper.make_node("Mod", ["A", "B"], ["mod32"]),
    helper.make_node("Less", ["A", "B"], ["less32"]),
    helper.make_node("Cast", ["A"], ["a32f"], to=T.FLOAT),
    helper.make_node("Cast", ["A"], ["a32i64"], to=T.INT64),
    helper.make_node("Cast", ["F"], ["f_u32"], to=T.UINT32),
    helper.make_node("ReduceMax", ["A"], ["rmax32"], keepdims=0),
    helper.make_node("ArgMin", ["A"], ["amin32"], keepdims=0),
    helper.make_node("Max", ["C", "D"], ["max64"]),
    helper.make_node("Div", ["C", "D"], ["div64"]),
    helper.make_node("GreaterOrEqual", ["C", "D"], ["ge64"]),
    helper.make_node("Cast", ["C"], ["c64d"], to=T.DOUBLE),
    helper.make_node("Cast", ["c64d"], ["c64back"], to=T.UINT64),
    helper.make_node("Cast", ["H"], ["h16i32"], to=T.INT32),
    helper.make_node("Cast", ["H"], ["h16f"], to=T.FLOAT),
    helper.make_node("Cast", ["I"], ["i16f"], to=T.FLOAT),
    helper.make_node("Cast", ["I"], ["i16u64"], to=T.UINT64),
    # a literal in uint64_data, and one folded cast of it
    helper.make_node("Constant", [], ["K"], value=helper.make_tensor("k", T.UINT64, [1], [2**63 + 2048])),
    helper.make_node("Max", ["C", "K"], ["maxk"]),
    helper.make_node("Cast", ["K"], ["kd"], to=T.DOUBLE),
]
outs = {"max32": T.UINT32, "min32": T.UINT32, "div32": T.UINT32, "mod32": T.UINT32,
        "less32": T.BOOL, "a32f": T.FLOAT, "a32i64": T.INT64, "f_u32": T.UINT32,
        "rmax32": T.UINT32, "amin32": T.INT64, "max64": T.UINT64, "div64": T.UINT64,
        "ge64": T.BOOL, "c64d": T.DOUBLE, "c64back": T.UINT64, "h16i32": T.INT32,
        "h16f": T.FLOAT, "i16f": T.FLOAT, "i16u64": T.UINT64, "maxk": T.UINT64, "kd": T.DOUBLE}
r = run(nodes,
        [helper.make_tensor_value_info("A", T.UINT32, [5]), helper.make_tensor_value_info("B", T.UINT32, [5]),
         helper.make_tensor_value_info("C", T.UINT64, [4]), helper.make_tensor_value_info("D", T.UINT64, [4]),
         helper.make_tensor_value_info("F", T.FLOAT, [5]), helper.make_tensor_value_info("H", T.UINT16, [5]),
         helper.make_tensor_value_info("I", T.INT16, [5])],
        [helper.make_tensor_value_info(k, v, None) for k, v in outs.items()],
        {"A": a32, "B": b32, "C": a64, "D": b64, "F": f, "H": h16, "I": i16}, "unsigned_wide")
expect = {"max32": np.maximum(a32, b32), "min32": np.minimum(a32, b32), "div32": a32 // b32,
          "mod32": a32 % b32, "less32": a32 < b32, "a32f": a32.astype(np.float32),
          "a32i64": a32.astype(np.int64), "f_u32": f.astype(np.uint32),
          "rmax32": np.array(a32.max(), np.uint32), "amin32": np.array(a32.argmin(), np.int64),
          "max64": np.maximum(a64, b64), "div64": a64 // b64, "ge64": a64 >= b64,
          "c64d": a64.astype(np.float64), "c64back": a64.astype(np.float64).astype(np.uint64),
          "h16i32": h16.astype(np.int32), "h16f": h16.astype(np.float32),
          "i16f": i16.astype(np.float32), "i16u64": i16.astype(np.uint64),
          "maxk": np.maximum(a64, np.uint64(2**63 + 2048)), "kd": np.array([2.0**63 + 2048])}
for k, e in expect.items():
    assert r[k].dtype == e.dtype and np.array_equal(r[k], e), (k, r[k], e)

# bfloat16: float32 -> bfloat16 rounds to nearest even (ties 0x3f808000 ->
# 0x3f80, 0x3f818000 -> 0x3f82), NaN stays NaN; arithmetic happens in
# float32 and rounds once per op. .npz carries bf16 as uint16 bit patterns.
bits = np.array([0x3F808000, 0x3F818000, 0x3F808001, 0x7FC00000, 0xFF800000,
                 0x80000000, 0x7F7FFFFF, 0xC0490FDB], np.uint32)
x = bits.view(np.float32)


def bf16_rne(v):
    u = v.astype(np.float32).view(np.uint32).astype(np.uint64)
    r_ = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(v), np.uint16(0x7FC0), r_)


def bf16_f32(b):
    return (b.astype(np.uint32) << 16).view(np.float32)


r = run([helper.make_node("Cast", ["X"], ["xb"], to=T.BFLOAT16),
         helper.make_node("Add", ["xb", "xb"], ["sum"]),
         helper.make_node("Cast", ["xb"], ["back"], to=T.DOUBLE),
         helper.make_node("Cast", ["I"], ["ib"], to=T.BFLOAT16),
         helper.make_node("Cast", ["Bf"], ["bi"], to=T.INT32)],
        [helper.make_tensor_value_info("X", T.FLOAT, [8]), helper.make_tensor_value_info("I", T.INT16, [5]),
         helper.make_tensor_value_info("Bf", T.BFLOAT16, [3])],
        [helper.make_tensor_value_info(k, v, None) for k, v in
         {"xb": T.BFLOAT16, "sum": T.BFLOAT16, "back": T.DOUBLE, "ib": T.BFLOAT16,
          "bi": T.INT32}.items()],
        {"X": x, "I": i16, "Bf": bf16_rne(np.array([-2.75, 300.5, 7.9], np.float32))}, "bf16")
xb = bf16_rne(x)
assert r["xb"].dtype == np.uint16 and np.array_equal(r["xb"], xb), [hex(v) for v in r["xb"]]
assert np.array_equal(r["sum"], bf16_rne(bf16_f32(xb) * 2)), r["sum"]
assert np.array_equal(r["back"], bf16_f32(xb).astype(np.float64), equal_nan=True), r["back"]
assert np.array_equal(r["ib"], bf16_rne(i16.astype(np.float32))), r["ib"]
assert np.array_equal(r["bi"], np.array([-2, 300, 7], np.int32)), r["bi"]

print("op edge cases: ok")
