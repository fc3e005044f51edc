#!/usr/bin/env python3
"""Edge cases of op lowerings that the ONNX node tests do not reach, with
expected values computed here by numpy."""
import os
import subprocess
import sys
import tempfile

import ml_dtypes
import numpy as np
import onnx
import onnx.numpy_helper
from onnx import TensorProto, helper, numpy_helper

mcc = sys.argv[1]
work = tempfile.mkdtemp(prefix="mcc-edge-")


def run(nodes, inputs, outputs, feeds, name, opset=17, inits=(), initializers=(),
        compile_args=()):
    """inits: (name, array) pairs; initializers: TensorProtos."""
    g = helper.make_graph(nodes, name, inputs, outputs,
                          [onnx.numpy_helper.from_array(v, k) for k, v in inits]
                          + list(initializers))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    path = os.path.join(work, name + ".onnx")
    onnx.save(m, path)
    so, npz, out = path + ".so", path + ".in.npz", path + ".out.npz"
    np.savez(npz, **feeds)
    subprocess.run([mcc, "compile", path, "-o", so, *compile_args], check=True)
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

def conv_transpose_ref(x, w, b, group, strides, dils, pads_lo, out_sp):
    """Scatter form of ConvTranspose, straight from its definition."""
    N, C = x.shape[:2]
    Cg, Mg = C // group, w.shape[1]
    y = np.zeros((N, group * Mg) + tuple(out_sp), np.float64)
    for i in np.ndindex(*x.shape[2:]):
        for k in np.ndindex(*w.shape[2:]):
            o = [i[d] * strides[d] + k[d] * dils[d] - pads_lo[d] for d in range(len(i))]
            if any(v < 0 or v >= out_sp[d] for d, v in enumerate(o)):
                continue
            for g in range(group):
                xs = x[(slice(None), slice(g * Cg, (g + 1) * Cg)) + i]  # N x Cg
                ws = w[(slice(g * Cg, (g + 1) * Cg), slice(None)) + k]  # Cg x Mg
                y[(slice(None), slice(g * Mg, (g + 1) * Mg)) + tuple(o)] += xs @ ws
    if b is not None:
        y += b.reshape((1, -1) + (1,) * len(out_sp))
    return y.astype(np.float32)


rng = np.random.default_rng(0)
f32 = TensorProto.FLOAT
# ConvTranspose with initializer weights and bias, group 2 with several
# channels per group, asymmetric pads, output_padding and dilation.
x = rng.standard_normal((2, 4, 3, 4)).astype(np.float32)
w = rng.standard_normal((4, 3, 3, 2)).astype(np.float32)
bias = rng.standard_normal(6).astype(np.float32)
y = run([helper.make_node("ConvTranspose", ["X", "W", "B"], ["Y"], group=2, strides=[2, 1],
                          pads=[1, 0, 0, 1], output_padding=[1, 0], dilations=[1, 2])],
        [helper.make_tensor_value_info("X", f32, list(x.shape))],
        [helper.make_tensor_value_info("Y", f32, None)], {"X": x}, "convtranspose_group_init",
        inits=[("W", w), ("B", bias)])["Y"]
# H: 2*2+1+3-1-0 = 7; W: 1*3+0+2*1+1-0-1 = 5
exp = conv_transpose_ref(x, w, bias, 2, [2, 1], [1, 2], [1, 0], [7, 5])
assert y.shape == exp.shape and np.allclose(y, exp, rtol=1e-4, atol=1e-5), (y, exp)

# Depthwise ConvTranspose (group = channels, one output each), initializer
# weights; and a 3-D grouped one with runtime weights.
x = rng.standard_normal((1, 3, 4, 4)).astype(np.float32)
w = rng.standard_normal((3, 1, 3, 3)).astype(np.float32)
y = run([helper.make_node("ConvTranspose", ["X", "W"], ["Y"], group=3, strides=[2, 2],
                          pads=[1, 1, 1, 1])],
        [helper.make_tensor_value_info("X", f32, list(x.shape))],
        [helper.make_tensor_value_info("Y", f32, None)], {"X": x}, "convtranspose_depthwise",
        inits=[("W", w)])["Y"]
exp = conv_transpose_ref(x, w, None, 3, [2, 2], [1, 1], [1, 1], [7, 7])
assert y.shape == exp.shape and np.allclose(y, exp, rtol=1e-4, atol=1e-5), (y, exp)
x = rng.standard_normal((1, 4, 2, 3, 2)).astype(np.float32)
w = rng.standard_normal((4, 2, 2, 2, 3)).astype(np.float32)
y = run([helper.make_node("ConvTranspose", ["X", "W"], ["Y"], group=2, strides=[2, 1, 2])],
        [helper.make_tensor_value_info("X", f32, list(x.shape)),
         helper.make_tensor_value_info("W", f32, list(w.shape))],
        [helper.make_tensor_value_info("Y", f32, None)], {"X": x, "W": w},
        "convtranspose_3d_group")["Y"]
exp = conv_transpose_ref(x, w, None, 2, [2, 1, 2], [1, 1, 1], [0, 0, 0], [4, 4, 5])
assert y.shape == exp.shape and np.allclose(y, exp, rtol=1e-4, atol=1e-5), (y, exp)

# Conv 3-D, grouped (one convolution per group each).
x = rng.standard_normal((1, 4, 5, 4, 6)).astype(np.float32)
w = rng.standard_normal((6, 2, 3, 2, 3)).astype(np.float32)
y = run([helper.make_node("Conv", ["X", "W"], ["Y"], group=2, strides=[2, 1, 2],
                          pads=[1, 0, 1, 1, 0, 1])],
        [helper.make_tensor_value_info("X", f32, list(x.shape))],
        [helper.make_tensor_value_info("Y", f32, None)], {"X": x}, "conv_3d_group",
        inits=[("W", w)])["Y"]
exp = np.zeros((1, 6, 3, 3, 3), np.float64)
xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (0, 0), (1, 1)))
for g in range(2):
    for o in np.ndindex(3, 3, 3):
        win = xp[0, 2 * g:2 * g + 2, 2 * o[0]:2 * o[0] + 3, o[1]:o[1] + 2, 2 * o[2]:2 * o[2] + 3]
        exp[0, 3 * g:3 * g + 3][(slice(None),) + o] = np.tensordot(w[3 * g:3 * g + 3], win, 4)
assert y.shape == exp.shape and np.allclose(y, exp, rtol=1e-4, atol=1e-4), (y, exp)

# Einsum: "..." broadcast across operands (size 1 against 3, different
# ranks), implicit output, three operands, a diagonal summed away, int64.
def einsum(eq, *xs, dtype=TensorProto.FLOAT):
    names = ["X%d" % i for i in range(len(xs))]
    return run([helper.make_node("Einsum", names, ["Y"], equation=eq)],
               [helper.make_tensor_value_info(k, dtype, list(v.shape)) for k, v in zip(names, xs)],
               [helper.make_tensor_value_info("Y", dtype, None)], dict(zip(names, xs)),
               "einsum_" + eq.replace("...", "E").replace(",", "_").replace("->", "_to_"))["Y"]


cases = [
    ("...ij,...jk->...ik", rng.standard_normal((2, 1, 3, 4)), rng.standard_normal((3, 4, 5))),
    ("...ij,...jk", rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 5))),
    ("ba,ca", rng.standard_normal((3, 4)), rng.standard_normal((5, 4))),
    ("ij,jk,kl->il", rng.standard_normal((2, 3)), rng.standard_normal((3, 4)), rng.standard_normal((4, 2))),
    ("iij->", rng.standard_normal((3, 3, 2))),
    ("bii->bi", rng.standard_normal((2, 3, 3))),
    ("i...,i...->...", rng.standard_normal((4, 2, 3)), rng.standard_normal((4, 1, 3))),
]
for eq, *xs in cases:
    xs = [x.astype(np.float32) for x in xs]
    y, exp = einsum(eq, *xs), np.einsum(eq, *xs)
    assert y.shape == exp.shape and np.allclose(y, exp, rtol=1e-4, atol=1e-5), (eq, y, exp)
a, c = np.arange(6, dtype=np.int64).reshape(2, 3), np.arange(12, dtype=np.int64).reshape(3, 4)
y = einsum("ij,jk->ki", a, c, dtype=TensorProto.INT64)
assert np.array_equal(y, np.einsum("ij,jk->ki", a, c)), y

# DFT (opset 17): zero padding to dft_length with a one-sided output;
# truncation of a complex signal along axis 2; an inverse one-sided (irfft)
# DFT of odd length.
def dft(x, length, name, **attrs):
    return run([helper.make_node("DFT", ["X", "L"], ["Y"], **attrs)],
               [helper.make_tensor_value_info("X", f32, list(x.shape))],
               [helper.make_tensor_value_info("Y", f32, None)], {"X": x}, name,
               inits=[("L", np.array(length, np.int64))])["Y"]


x = rng.standard_normal((2, 5, 1)).astype(np.float32)
y = dft(x, 8, "dft_pad_onesided", axis=1, onesided=1)
exp = np.fft.rfft(x[..., 0], n=8, axis=1)
assert np.allclose(y, np.stack([exp.real, exp.imag], -1), rtol=1e-4, atol=1e-5), y
x = rng.standard_normal((1, 3, 8, 2)).astype(np.float32)
y = dft(x, 6, "dft_complex_truncate", axis=2)
exp = np.fft.fft(x[..., 0] + 1j * x[..., 1], n=6, axis=2)
assert np.allclose(y, np.stack([exp.real, exp.imag], -1), rtol=1e-4, atol=1e-5), y
x = rng.standard_normal((2, 4, 2)).astype(np.float32)
y = dft(x, 7, "dft_irfft_odd", axis=1, inverse=1, onesided=1)
exp = np.fft.irfft(x[..., 0] + 1j * x[..., 1], n=7, axis=1)
assert y.shape == (2, 7, 1) and np.allclose(y[..., 0], exp, rtol=1e-4, atol=1e-5), y

# LRN with an even size: the window is one channel longer above than below.
x = rng.standard_normal((1, 5, 2, 2)).astype(np.float32)
y = run([helper.make_node("LRN", ["X"], ["Y"], size=4, alpha=0.01, beta=0.6, bias=2.0)],
        [helper.make_tensor_value_info("X", f32, list(x.shape))],
        [helper.make_tensor_value_info("Y", f32, None)], {"X": x}, "lrn_even")["Y"]
sq = np.zeros_like(x)
for c in range(5):
    sq[:, c] = (x[:, max(0, c - 1):min(5, c + 3)] ** 2).sum(1)
assert np.allclose(y, x / (2.0 + 0.01 / 4 * sq) ** 0.6, rtol=1e-5), y

# GRU with linear_before_reset, bias and initial state, bidirectional; LSTM
# batch-first bidirectional with clip, peepholes and the Y_c output.
def sigm(v):
    return 1 / (1 + np.exp(-v))


def gru_ref(x, w, r, bias, h0, lbr):
    T, H, ys, hs = x.shape[0], r.shape[-1], [], []
    for d in range(w.shape[0]):
        h, y = h0[d], np.zeros((T,) + h0.shape[1:])
        wb, rb = bias[d, :3 * H], bias[d, 3 * H:]
        for t in (range(T) if d == 0 else reversed(range(T))):
            xw, hr = x[t] @ w[d].T + wb, h @ r[d].T + rb
            z, rr = sigm(xw[:, :H] + hr[:, :H]), sigm(xw[:, H:2 * H] + hr[:, H:2 * H])
            if lbr:
                hc = np.tanh(xw[:, 2 * H:] + rr * hr[:, 2 * H:])
            else:
                hc = np.tanh(xw[:, 2 * H:] + (rr * h) @ r[d, 2 * H:].T + rb[2 * H:])
            h = (1 - z) * hc + z * h
            y[t] = h
        ys.append(y)
        hs.append(h)
    return np.stack(ys, 1), np.stack(hs)


T, N, I, H = 4, 2, 3, 5
x = rng.standard_normal((T, N, I)).astype(np.float32)
w = rng.standard_normal((2, 3 * H, I)).astype(np.float32)
r = rng.standard_normal((2, 3 * H, H)).astype(np.float32)
bias = rng.standard_normal((2, 6 * H)).astype(np.float32)
h0 = rng.standard_normal((2, N, H)).astype(np.float32)
for lbr in (0, 1):
    out = run([helper.make_node("GRU", ["X", "W", "R", "B", "", "H0"], ["Y", "Yh"], hidden_size=H,
                                direction="bidirectional", linear_before_reset=lbr)],
              [helper.make_tensor_value_info("X", f32, list(x.shape))],
              [helper.make_tensor_value_info("Y", f32, None),
               helper.make_tensor_value_info("Yh", f32, None)], {"X": x}, "gru_lbr%d" % lbr,
              inits=[("W", w), ("R", r), ("B", bias), ("H0", h0)])
    ey, eh = gru_ref(x, w, r, bias, h0, lbr)
    assert np.allclose(out["Y"], ey, rtol=1e-4, atol=1e-5), (lbr, out["Y"], ey)
    assert np.allclose(out["Yh"], eh, rtol=1e-4, atol=1e-5), (lbr, out["Yh"], eh)

w = rng.standard_normal((2, 4 * H, I)).astype(np.float32)
r = rng.standard_normal((2, 4 * H, H)).astype(np.float32)
bias = rng.standard_normal((2, 8 * H)).astype(np.float32)
p = rng.standard_normal((2, 3 * H)).astype(np.float32)
xb = np.ascontiguousarray(x.transpose(1, 0, 2))  # batch first
out = run([helper.make_node("LSTM", ["X", "W", "R", "B", "", "", "", "P"], ["Y", "Yh", "Yc"],
                            hidden_size=H, direction="bidirectional", layout=1, clip=1.5)],
          [helper.make_tensor_value_info("X", f32, list(xb.shape))],
          [helper.make_tensor_value_info(k, f32, None) for k in ("Y", "Yh", "Yc")], {"X": xb},
          "lstm_bidir_batchfirst", opset=14, inits=[("W", w), ("R", r), ("B", bias), ("P", p)])
ys, hs, cs = [], [], []
for d in range(2):
    h, c, y = np.zeros((N, H)), np.zeros((N, H)), np.zeros((T, N, H))
    for t in (range(T) if d == 0 else reversed(range(T))):
        g = x[t] @ w[d].T + h @ r[d].T + bias[d, :4 * H] + bias[d, 4 * H:]
        cl = lambda v: np.clip(v, -1.5, 1.5)
        i = sigm(cl(g[:, :H] + p[d, :H] * c))
        f = sigm(cl(g[:, 2 * H:3 * H] + p[d, 2 * H:] * c))
        c = f * c + i * np.tanh(cl(g[:, 3 * H:]))
        o = sigm(cl(g[:, H:2 * H] + p[d, H:2 * H] * c))
        h = o * np.tanh(c)
        y[t] = h
    ys.append(y)
    hs.append(h)
    cs.append(c)
assert np.allclose(out["Y"], np.stack(ys, 1).transpose(2, 0, 1, 3), rtol=1e-4, atol=1e-5)
assert np.allclose(out["Yh"], np.stack(hs).transpose(1, 0, 2), rtol=1e-4, atol=1e-5)
assert np.allclose(out["Yc"], np.stack(cs).transpose(1, 0, 2), rtol=1e-4, atol=1e-5)

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

# ScatterElements into an initializer (a weight argument) and into a graph
# input, both read again afterwards: the scatter must write a copy, never
# the caller's or the weight's memory. Duplicates add up; negative indices
# count from the end.
rng = np.random.default_rng(1)
w = rng.standard_normal((4, 8)).astype(np.float32)
x = rng.standard_normal((4, 8)).astype(np.float32)
idx = np.array([[0, -1, 7], [3, 3, 3], [-8, 2, 2], [5, 6, 7]], np.int64)
upd = rng.standard_normal((4, 3)).astype(np.float32)
out = run([helper.make_node("ScatterElements", ["W", "I", "U"], ["Y"], axis=1, reduction="add"),
           helper.make_node("ScatterElements", ["X", "I", "U"], ["Z"], axis=1),
           helper.make_node("Add", ["W", "X"], ["S"])],
          [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4, 8]),
           helper.make_tensor_value_info("I", TensorProto.INT64, [4, 3]),
           helper.make_tensor_value_info("U", TensorProto.FLOAT, [4, 3])],
          [helper.make_tensor_value_info(v, TensorProto.FLOAT, None) for v in "YZS"],
          {"X": x, "I": idx, "U": upd}, "scatter_elements_weight", opset=18,
          initializers=[numpy_helper.from_array(w, "W")])
ey, ez = w.copy(), x.copy()
for r in range(4):
    for c in range(3):
        ey[r, idx[r, c] % 8] += upd[r, c]
        ez[r, idx[r, c] % 8] = upd[r, c]  # duplicates: the last write wins
assert np.allclose(out["Y"], ey, rtol=1e-6) and np.array_equal(out["Z"], ez), (out["Y"], ey)
assert np.array_equal(out["S"], w + x), "scatter clobbered its input"

# ScatterND with duplicate slice indices, no reduction: the last write wins.
data = np.arange(24, dtype=np.int32).reshape(4, 3, 2)
idx = np.array([[[1], [-1]], [[1], [0]]], np.int64)
upd = np.arange(100, 124, dtype=np.int32).reshape(2, 2, 3, 2)
y = run([helper.make_node("ScatterND", ["D", "I", "U"], ["Y"])],
        [helper.make_tensor_value_info("D", TensorProto.INT32, [4, 3, 2]),
         helper.make_tensor_value_info("I", TensorProto.INT64, [2, 2, 1]),
         helper.make_tensor_value_info("U", TensorProto.INT32, [2, 2, 3, 2])],
        [helper.make_tensor_value_info("Y", TensorProto.INT32, None)],
        {"D": data, "I": idx, "U": upd}, "scatternd_duplicates")["Y"]
exp = data.copy()
for a in range(2):
    for b_ in range(2):
        exp[idx[a, b_, 0]] = upd[a, b_]
assert np.array_equal(y, exp), y

# TopK with ties (the lower index comes first), on a middle axis, largest
# and smallest, float and int32.
for dt, tp in ((np.float32, TensorProto.FLOAT), (np.int32, TensorProto.INT32)):
    x = np.random.default_rng(2).integers(0, 4, (2, 7, 3)).astype(dt)
    for largest in (1, 0):
        out = run([helper.make_node("TopK", ["X", "K"], ["V", "I"], axis=1, largest=largest)],
                  [helper.make_tensor_value_info("X", tp, [2, 7, 3])],
                  [helper.make_tensor_value_info("V", tp, None),
                   helper.make_tensor_value_info("I", TensorProto.INT64, None)],
                  {"X": x}, "topk_ties_%d_%d" % (tp, largest),
                  initializers=[numpy_helper.from_array(np.array([4], np.int64), "K")])
        order = np.argsort(-x if largest else x, axis=1, kind="stable")[:, :4]
        assert np.array_equal(out["I"], order), (out["I"], order)
        assert np.array_equal(out["V"], np.take_along_axis(x, order, 1)), out["V"]

# QuantizeLinear to int8 per axis (ties round to even, saturation both
# ways, NaN-free), blocked with a block size that does not divide the axis,
# and DequantizeLinear back with the same blocked parameters.
x = np.array([[0.5, 1.5, 2.5, -0.5, -1.5, 300.0, -300.0],
              [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]], np.float32)
scale = np.array([1.0, 0.5], np.float32)
zp = np.array([0, -3], np.int8)
y = run([helper.make_node("QuantizeLinear", ["X", "S", "Z"], ["Y"], axis=0)],
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 7]),
         helper.make_tensor_value_info("S", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("Z", TensorProto.INT8, [2])],
        [helper.make_tensor_value_info("Y", TensorProto.INT8, None)],
        {"X": x, "S": scale, "Z": zp}, "quantize_per_axis_int8")["Y"]
exp = np.clip(np.rint(x / scale[:, None]) + zp[:, None], -128, 127).astype(np.int8)
assert np.array_equal(y, exp), (y, exp)
bscale = np.array([[0.5, 2.0, 0.25], [1.0, 4.0, 0.1]], np.float32)  # blocks of 3 over 7
bzp = np.array([[0, 10, 250], [128, 3, 7]], np.uint8)
out = run([helper.make_node("QuantizeLinear", ["X", "S", "Z"], ["Q"], axis=1, block_size=3),
           helper.make_node("DequantizeLinear", ["Q", "S", "Z"], ["D"], axis=1, block_size=3)],
          [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 7]),
           helper.make_tensor_value_info("S", TensorProto.FLOAT, [2, 3]),
           helper.make_tensor_value_info("Z", TensorProto.UINT8, [2, 3])],
          [helper.make_tensor_value_info("Q", TensorProto.UINT8, None),
           helper.make_tensor_value_info("D", TensorProto.FLOAT, None)],
          {"X": x, "S": bscale, "Z": bzp}, "quantize_blocked_uint8", opset=21)
fs = np.repeat(bscale, 3, axis=1)[:, :7]
fz = np.repeat(bzp, 3, axis=1)[:, :7].astype(np.int32)
eq = np.clip(np.rint(x / fs) + fz, 0, 255).astype(np.uint8)
assert np.array_equal(out["Q"], eq), (out["Q"], eq)
assert np.allclose(out["D"], (eq.astype(np.float32) - fz) * fs, rtol=1e-6), out["D"]

# MatMulInteger large enough for the tiled matmul kernels, int8 x uint8 with
# a per-row A zero point and a per-column B zero point.
rng = np.random.default_rng(3)
a = rng.integers(-128, 128, (2, 40, 72)).astype(np.int8)
b = rng.integers(0, 256, (72, 56)).astype(np.uint8)
az = rng.integers(-5, 5, (40,)).astype(np.int8)
bz = rng.integers(100, 150, (56,)).astype(np.uint8)
y = run([helper.make_node("MatMulInteger", ["A", "B", "AZ", "BZ"], ["Y"])],
        [helper.make_tensor_value_info("A", TensorProto.INT8, [2, 40, 72]),
         helper.make_tensor_value_info("B", TensorProto.UINT8, [72, 56]),
         helper.make_tensor_value_info("AZ", TensorProto.INT8, [40]),
         helper.make_tensor_value_info("BZ", TensorProto.UINT8, [56])],
        [helper.make_tensor_value_info("Y", TensorProto.INT32, None)],
        {"A": a, "B": b, "AZ": az, "BZ": bz}, "matmulinteger_per_row_col")["Y"]
exp = (a.astype(np.int32) - az[:, None]) @ (b.astype(np.int32) - bz)
assert np.array_equal(y, exp), np.abs(y - exp).max()


def conv2d_ref(x, w, pad, group):
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n_, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    out = np.zeros((n_, m, h - kh + 1, wd - kw + 1), np.int64)
    mg = m // group
    for o in range(m):
        g = o // mg
        for i in range(out.shape[2]):
            for j in range(out.shape[3]):
                out[:, o, i, j] = (x[:, g * cg:(g + 1) * cg, i:i + kh, j:j + kw]
                                   * w[o]).sum(axis=(1, 2, 3))
    return out


# ConvInteger with groups, padding (by the zero point) and a per-channel
# weight zero point; QLinearConv with a per-channel weight scale and bias.
x = rng.integers(0, 256, (1, 4, 6, 6)).astype(np.uint8)
w = rng.integers(-128, 128, (6, 2, 3, 3)).astype(np.int8)
wz = rng.integers(-3, 3, (6,)).astype(np.int8)
xz = np.array(128, np.uint8)
y = run([helper.make_node("ConvInteger", ["X", "W", "XZ", "WZ"], ["Y"], group=2, pads=[1, 1, 1, 1])],
        [helper.make_tensor_value_info("X", TensorProto.UINT8, [1, 4, 6, 6]),
         helper.make_tensor_value_info("W", TensorProto.INT8, [6, 2, 3, 3]),
         helper.make_tensor_value_info("XZ", TensorProto.UINT8, []),
         helper.make_tensor_value_info("WZ", TensorProto.INT8, [6])],
        [helper.make_tensor_value_info("Y", TensorProto.INT32, None)],
        {"X": x, "W": w, "XZ": xz, "WZ": wz}, "convinteger_group_perchannel")["Y"]
acc = conv2d_ref(x.astype(np.int64) - 128, w.astype(np.int64) - wz[:, None, None, None], 1, 2)
assert np.array_equal(y, acc), np.abs(y - acc).max()
ws = np.array([0.01, 0.02, 0.005, 0.03, 0.01, 0.002], np.float32)
bias = rng.integers(-1000, 1000, (6,)).astype(np.int32)
y = run([helper.make_node("QLinearConv", ["X", "XS", "XZ", "W", "WS", "WZ", "YS", "YZ", "B"], ["Y"],
                          group=2, pads=[1, 1, 1, 1])],
        [helper.make_tensor_value_info("X", TensorProto.UINT8, [1, 4, 6, 6]),
         helper.make_tensor_value_info("W", TensorProto.INT8, [6, 2, 3, 3]),
         helper.make_tensor_value_info("WZ", TensorProto.INT8, [6])],
        [helper.make_tensor_value_info("Y", TensorProto.UINT8, None)],
        {"X": x, "W": w, "WZ": wz}, "qlinearconv_perchannel",
        initializers=[numpy_helper.from_array(np.array(0.05, np.float32), "XS"),
                      numpy_helper.from_array(xz, "XZ"),
                      numpy_helper.from_array(ws, "WS"),
                      numpy_helper.from_array(np.array(0.5, np.float32), "YS"),
                      numpy_helper.from_array(np.array(100, np.uint8), "YZ"),
                      numpy_helper.from_array(bias, "B")])["Y"]
r = (acc + bias[None, :, None, None]) * (np.float32(0.05) * ws / np.float32(0.5))[None, :, None, None]
exp = np.clip(np.rint(r) + 100, 0, 255).astype(np.uint8)
assert np.array_equal(y, exp), (np.abs(y.astype(int) - exp).max())

# ReverseSequence on a 3-D tensor, batch-major, with lengths 0 (untouched),
# full and partial.
x = np.arange(4 * 5 * 2, dtype=np.float32).reshape(4, 5, 2)
lens = np.array([0, 5, 3, 1], np.int64)
y = run([helper.make_node("ReverseSequence", ["X", "L"], ["Y"], batch_axis=0, time_axis=1)],
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4, 5, 2]),
         helper.make_tensor_value_info("L", TensorProto.INT64, [4])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
        {"X": x, "L": lens}, "reversesequence_3d")["Y"]
exp = x.copy()
for i, l_ in enumerate(lens):
    exp[i, :l_] = x[i, :l_][::-1]
assert np.array_equal(y, exp), y

# GroupNormalization-18 takes scale and bias per group (21: per channel).
x = rng.standard_normal((2, 6, 3)).astype(np.float32)
sc = np.array([0.5, -2.0, 1.5], np.float32)
bi = np.array([0.1, 0.2, -0.3], np.float32)
y = run([helper.make_node("GroupNormalization", ["X", "S", "B"], ["Y"], num_groups=3,
                          epsilon=1e-3)],
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 6, 3]),
         helper.make_tensor_value_info("S", TensorProto.FLOAT, [3]),
         helper.make_tensor_value_info("B", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
        {"X": x, "S": sc, "B": bi}, "groupnorm18", opset=18)["Y"]
g = x.reshape(2, 3, 6)
exp = (g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-3)
exp = (exp * sc[:, None] + bi[:, None]).reshape(x.shape)
assert np.allclose(y, exp, rtol=1e-4, atol=1e-5), (y, exp)

# LpNormalization p=1 sums magnitudes; an all-zero row stays zero.
x = np.array([[3.0, -4.0, 1.0], [0.0, 0.0, 0.0]], np.float32)
y = run([helper.make_node("LpNormalization", ["X"], ["Y"], p=1, axis=1)],
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
        {"X": x}, "l1norm_negative")["Y"]
assert np.allclose(y, [[3 / 8, -4 / 8, 1 / 8], [0, 0, 0]]), y

# Attention: 3-D grouped-query inputs with a cache, is_causal, a float mask
# shorter than the total length and softcap; reference from onnx.reference.
from onnx.reference import ReferenceEvaluator
feeds = {"Q": rng.standard_normal((2, 3, 16)).astype(np.float32),
         "K": rng.standard_normal((2, 3, 8)).astype(np.float32),
         "V": rng.standard_normal((2, 3, 12)).astype(np.float32),
         "M": rng.standard_normal((3, 4)).astype(np.float32),
         "PK": rng.standard_normal((2, 2, 2, 4)).astype(np.float32),
         "PV": rng.standard_normal((2, 2, 2, 6)).astype(np.float32)}
node = helper.make_node("Attention", ["Q", "K", "V", "M", "PK", "PV"],
                        ["Y", "PresK", "PresV", "QK"], q_num_heads=4, kv_num_heads=2,
                        is_causal=1, softcap=1.5, qk_matmul_output_mode=2)
ins = [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape) for k, v in feeds.items()]
outs = [helper.make_tensor_value_info(k, TensorProto.FLOAT, None)
        for k in ("Y", "PresK", "PresV", "QK")]
got = run([node], ins, outs, feeds, "attention_gqa_cache_causal", opset=23)
model = helper.make_model(helper.make_graph([node], "g", ins, outs),
                          opset_imports=[helper.make_opsetid("", 23)])
for k, e in zip(("Y", "PresK", "PresV", "QK"), ReferenceEvaluator(model).run(None, feeds)):
    assert np.allclose(got[k], e, rtol=1e-4, atol=1e-5), (k, got[k], e)

# Small element types (docs/design/0009): outputs come back as ml_dtypes'
# bytes (uint8 in the .npz), inputs go in as ml_dtypes arrays.
from onnx.reference import ReferenceEvaluator


def small_case(nodes, inputs, outputs, feeds, name, opset=25, initializers=()):
    got = run(nodes, inputs, outputs, feeds, name, opset=opset, initializers=initializers)
    g = helper.make_graph(nodes, name, inputs, outputs, list(initializers))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    ref = ReferenceEvaluator(m).run(None, feeds)
    for o, exp in zip(outputs, ref):
        y = got[o.name]
        if exp.dtype.itemsize == 1 and y.dtype == np.uint8 and exp.dtype != np.uint8:
            assert np.array_equal(y, exp.view(np.uint8)), (name, o.name, y, exp.view(np.uint8))
        else:
            assert y.dtype == exp.dtype and np.array_equal(y, exp, equal_nan=True), (name, y, exp)


# Cast to each float8 type, saturating and not, at the edges: overflow just
# past the largest finite value (rounding to it or beyond), ties to even,
# subnormals, the smallest values rounding to zero, Inf, NaN, -0.
x = np.array([448, 464, 465, 480, 500, 240, 247, 248, 57344, 59392, 61440, 1e9,
              -464, -1e9, np.inf, -np.inf, np.nan, -0.0, 0.0, 2.0 ** -9, 3 * 2.0 ** -10,
              2.0 ** -10, 2.0 ** -11, 1.5 * 2.0 ** -16, 2.0 ** -17, 1.0625, 1.1875, 1.3,
              -3.7, 2.0 ** -6, 7 * 2.0 ** -10], np.float32)
for to in (TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E4M3FNUZ,
           TensorProto.FLOAT8E5M2, TensorProto.FLOAT8E5M2FNUZ, TensorProto.FLOAT4E2M1):
    for sat in (0, 1):
        small_case([helper.make_node("Cast", ["X"], ["Y"], to=to, saturate=sat)],
                   [helper.make_tensor_value_info("X", TensorProto.FLOAT, [x.size])],
                   [helper.make_tensor_value_info("Y", to, [x.size])], {"X": x},
                   "cast_f8_%d_%d" % (to, sat))
# float64 rounds once, not through float32 (1.0625 + 2^-40 is above
# e4m3fn's 1.0625 tie, which float32 would land on exactly).
x = np.array([1.0625 + 2.0 ** -40, 1.0625 - 2.0 ** -40, 1.25 + 2.0 ** -40, 1e300, -1e-300],
             np.float64)
for to in (TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E5M2, TensorProto.FLOAT4E2M1):
    small_case([helper.make_node("Cast", ["X"], ["Y"], to=to)],
               [helper.make_tensor_value_info("X", TensorProto.DOUBLE, [x.size])],
               [helper.make_tensor_value_info("Y", to, [x.size])], {"X": x},
               "cast_f64_f8_%d" % to)
# float8e8m0's three round modes, with and without saturation at the top
# exponent; the sign is dropped, 0 and float32 subnormals give 2^-127.
x = np.array([0, 1e-40, 0.124, 0.125, 0.1875, 0.19, 1.5, 1.75, 3, -3, 2.0 ** 127 * 1.5,
              np.inf, np.nan, 1.0], np.float32)
for mode in ("up", "down", "nearest"):
    for sat in (0, 1):
        small_case([helper.make_node("Cast", ["X"], ["Y"], to=TensorProto.FLOAT8E8M0,
                                     saturate=sat, round_mode=mode)],
                   [helper.make_tensor_value_info("X", TensorProto.FLOAT, [x.size])],
                   [helper.make_tensor_value_info("Y", TensorProto.FLOAT8E8M0, [x.size])],
                   {"X": x}, "cast_e8m0_%s_%d" % (mode, sat))
# Packed int4 and uint2 initializers (odd counts, raw_data and int32_data)
# dequantized per axis with zero points; an int4 graph input passed through
# (the ABI's low bits), one bit-cast to uint4; float8 bit-cast to uint8.
w4 = np.array([[-8, -1, 0, 7, 3], [1, 2, -3, -4, 5], [6, -7, 0, 0, 1]], ml_dtypes.int4)
z4 = np.array([1, -2, 0], ml_dtypes.int4)
w2 = np.array([0, 1, 2, 3, 3, 2, 1], ml_dtypes.uint2)
inits = [helper.make_tensor("W4", TensorProto.INT4, [3, 5], w4.astype(np.int8).ravel().tolist()),
         helper.make_tensor("Z4", TensorProto.INT4, [3], z4.astype(np.int8).tolist()),
         numpy_helper.from_array(w2, "W2"),
         numpy_helper.from_array(np.array([0.5, 2, 0.25], np.float32), "S"),
         numpy_helper.from_array(np.array(3.0, np.float32), "S2")]
i4 = np.array([[-8, 7, -1], [0, 3, -5]], ml_dtypes.int4)
f8 = np.array([1.5, -448, np.nan, 0.0], ml_dtypes.float8_e4m3fn)
small_case([helper.make_node("DequantizeLinear", ["W4", "S", "Z4"], ["D4"], axis=0),
            helper.make_node("DequantizeLinear", ["W2", "S2"], ["D2"]),
            helper.make_node("Identity", ["I4"], ["O4"]),
            helper.make_node("BitCast", ["J4"], ["U4"], to=TensorProto.UINT4),
            helper.make_node("BitCast", ["F8"], ["B8"], to=TensorProto.UINT8)],
           [helper.make_tensor_value_info("I4", TensorProto.INT4, [2, 3]),
            helper.make_tensor_value_info("J4", TensorProto.INT4, [2, 3]),
            helper.make_tensor_value_info("F8", TensorProto.FLOAT8E4M3FN, [4])],
           [helper.make_tensor_value_info("D4", TensorProto.FLOAT, [3, 5]),
            helper.make_tensor_value_info("D2", TensorProto.FLOAT, [7]),
            helper.make_tensor_value_info("O4", TensorProto.INT4, [2, 3]),
            helper.make_tensor_value_info("U4", TensorProto.UINT4, [2, 3]),
            helper.make_tensor_value_info("B8", TensorProto.UINT8, [4])],
           {"I4": i4, "J4": i4[::-1].copy(), "F8": f8}, "small_literals_abi", opset=26, initializers=inits)
# Blocked QuantizeLinear to int4 with per-block zero points (rounding half
# to even, saturating), and to float8e4m3fn without saturation.
x = np.array([[0.5, 1.5, 2.5, -9, 30, -30], [3.3, -2.5, 0.49, 7.5, 8, -100]], np.float32)
s = np.array([[1, 0.5, 2], [0.25, 1, 4]], np.float32)
z = np.array([[0, 1, -1], [2, -8, 7]], ml_dtypes.int4)
small_case([helper.make_node("QuantizeLinear", ["X", "S", "Z"], ["Y"], axis=1, block_size=2),
            helper.make_node("QuantizeLinear", ["X", "S1"], ["F"], saturate=0,
                             output_dtype=TensorProto.FLOAT8E4M3FN)],
           [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 6]),
            helper.make_tensor_value_info("S", TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info("Z", TensorProto.INT4, [2, 3])],
           [helper.make_tensor_value_info("Y", TensorProto.INT4, [2, 6]),
            helper.make_tensor_value_info("F", TensorProto.FLOAT8E4M3FN, [2, 6])],
           {"X": x, "S": s, "Z": z}, "quantize_int4_blocked",
           initializers=[numpy_helper.from_array(np.array(0.0625, np.float32), "S1")])

# --- GridSample/DeformConv/RoiAlign/pooling/Det/Unique edges, checked against
# onnx.reference (the ONNX reference implementation).
from onnx.reference import ReferenceEvaluator  # noqa: E402


def ref_check(node, feeds, name, opset=22, inits=(), rtol=1e-4, atol=1e-5):
    """Compiles and runs one node, compares every output with the reference."""
    ins = [helper.make_tensor_value_info(k, numpy_helper.from_array(v).data_type, v.shape)
           for k, v in feeds.items()]
    outs = [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in node.output]
    got = run([node], ins, outs, feeds, name, opset=opset, inits=inits)
    g = helper.make_graph([node], name, ins, outs,
                          [onnx.numpy_helper.from_array(v, k) for k, v in inits])
    ref = ReferenceEvaluator(helper.make_model(
        g, opset_imports=[helper.make_opsetid("", opset)])).run(None, feeds)
    for o, e in zip(node.output, ref):
        assert got[o].shape == e.shape, (name, o, got[o].shape, e.shape)
        assert np.allclose(got[o], e, rtol=rtol, atol=atol), (name, o, got[o], e)


rng2 = np.random.default_rng(7)
# GridSample 5-D, bilinear with reflection padding (the suite's volumetric
# cases only pad with zeros), coordinates well outside [-1, 1].
ref_check(helper.make_node("GridSample", ["X", "G"], ["Y"], mode="linear",
                           padding_mode="reflection", align_corners=0),
          {"X": rng2.standard_normal((1, 2, 3, 4, 5)).astype(np.float32),
           "G": (rng2.uniform(-3, 3, (1, 2, 3, 4, 3))).astype(np.float32)},
          "gridsample_3d_reflection")
# GridSample 2-D bicubic with border padding.
ref_check(helper.make_node("GridSample", ["X", "G"], ["Y"], mode="cubic",
                           padding_mode="border", align_corners=1),
          {"X": rng2.standard_normal((2, 3, 4, 5)).astype(np.float32),
           "G": (rng2.uniform(-1.5, 1.5, (2, 3, 2, 2))).astype(np.float32)},
          "gridsample_cubic_border")
# DeformConv with groups, offset groups, strides, dilations, padding, mask
# and bias together.
ref_check(helper.make_node("DeformConv", ["X", "W", "O", "B", "M"], ["Y"],
                           kernel_shape=[2, 2], strides=[2, 1], dilations=[1, 2],
                           pads=[1, 0, 0, 1], group=2, offset_group=2),
          {"X": rng2.standard_normal((1, 4, 5, 6)).astype(np.float32),
           "W": rng2.standard_normal((4, 2, 2, 2)).astype(np.float32),
           "O": rng2.uniform(-1.5, 1.5, (1, 16, 3, 5)).astype(np.float32),
           "B": rng2.standard_normal(4).astype(np.float32),
           "M": rng2.uniform(0, 1, (1, 8, 3, 5)).astype(np.float32)},
          "deformconv_groups")
# RoiAlign with sampling_ratio=0: the per-roi grid is ceil(roi size / bins),
# so the rois must be known (an initializer here); max mode.
rois = np.array([[0, 0, 9, 9], [1.5, 2.5, 4, 7], [5, 5, 5.5, 5.5]], np.float32)
ref_check(helper.make_node("RoiAlign", ["X", "R", "I"], ["Y"], output_height=3,
                           output_width=2, sampling_ratio=0, mode="max",
                           spatial_scale=0.5),
          {"X": rng2.standard_normal((2, 2, 8, 8)).astype(np.float32)},
          "roialign_adaptive", inits=[("R", rois), ("I", np.array([1, 0, 1], np.int64))])
# MaxPool Indices with padding and column-major storage order.
ref_check(helper.make_node("MaxPool", ["X"], ["Y", "I"], kernel_shape=[3, 2],
                           strides=[2, 2], pads=[1, 1, 1, 0], storage_order=1),
          {"X": rng2.standard_normal((2, 2, 5, 6)).astype(np.float32)},
          "maxpool_indices_colmajor")
# LpPool with p=3 and padding.
ref_check(helper.make_node("LpPool", ["X"], ["Y"], kernel_shape=[2, 3], p=3,
                           pads=[1, 0, 0, 1], strides=[1, 2]),
          {"X": rng2.standard_normal((1, 2, 4, 5)).astype(np.float32)},
          "lppool_p3_pads", rtol=1e-3)
# Det: a leading zero forces a row swap; a singular matrix gives 0.
dets = np.stack([rng2.standard_normal((4, 4)),
                 [[0, 1, 2, 3], [1, 0, 1, 0], [2, 1, 0, 1], [0, 0, 1, 1]],
                 [[1, 2, 3, 4], [2, 4, 6, 8], [0, 1, 0, 1], [1, 0, 1, 0]]]).astype(np.float32)
ref_check(helper.make_node("Det", ["X"], ["Y"]), {"X": dets}, "det_pivot", atol=1e-4)
# Unique along axis 0, unsorted: rows in order of first occurrence.
ref_check(helper.make_node("Unique", ["X"], ["Y", "I", "V", "C"], axis=0, sorted=0),
          {}, "unique_axis_unsorted",
          inits=[("X", np.array([[3, 0], [1, 5], [3, 0], [2, 1], [1, 5]], np.int64))])

# Scan over axis 1, output stacked on axis 1 in reverse (the suite's scans use
# axis 0 forward only).
fv = lambda name, shape=None: helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)  # noqa: E731
scan_body = helper.make_graph(
    [helper.make_node("Add", ["s", "x"], ["so"]), helper.make_node("Mul", ["so", "x"], ["o"])],
    "scan_body", [fv("s", [2]), fv("x", [2])], [fv("so", [2]), fv("o", [2])])
s0 = rng2.standard_normal(2).astype(np.float32)
xs = rng2.standard_normal((2, 4)).astype(np.float32)
got = run([helper.make_node("Scan", ["S", "X"], ["SF", "Z"], num_scan_inputs=1,
                            scan_input_axes=[1], scan_output_axes=[1],
                            scan_output_directions=[1], body=scan_body)],
          [fv("S", [2]), fv("X", [2, 4])], [fv("SF"), fv("Z")], {"S": s0, "X": xs},
          "scan_axis1_reverse")
state, steps = s0.copy(), []
for t in range(4):  # the onnx reference scans axis 0 only: numpy here
    state = state + xs[:, t]
    steps.append(state * xs[:, t])
assert np.allclose(got["SF"], state, rtol=1e-5), (got["SF"], state)
assert np.allclose(got["Z"], np.stack(steps[::-1], axis=1), rtol=1e-5), got["Z"]
# Loop whose condition (computed from the iteration number) ends it after 3
# of at most 10 iterations, carrying a run-time tensor.
iv = helper.make_tensor_value_info
loop_body = helper.make_graph(
    [helper.make_node("Constant", [], ["two"], value=helper.make_tensor("t", TensorProto.INT64, [], [2])),
     helper.make_node("Less", ["i", "two"], ["c_out"]),
     helper.make_node("Cast", ["i"], ["fi"], to=TensorProto.FLOAT),
     helper.make_node("Add", ["v", "fi"], ["v_out"]),
     helper.make_node("Identity", ["v_out"], ["scan"])],
    "loop_body", [iv("i", TensorProto.INT64, []), iv("c", TensorProto.BOOL, []), fv("v", [3])],
    [iv("c_out", TensorProto.BOOL, []), fv("v_out", [3]), fv("scan", [3])])
ref_check(helper.make_node("Loop", ["M", "C", "V"], ["VF", "SC"], body=loop_body),
          {"V": rng2.standard_normal(3).astype(np.float32)}, "loop_early_exit", opset=17,
          inits=[("M", np.array(10, np.int64)), ("C", np.array(True))])

# Scan 8: batch axis 0, the second scan input read backwards (numpy here:
# the onnx reference has no scan directions).
body8 = helper.make_graph(
    [helper.make_node("Add", ["s", "a"], ["t"]), helper.make_node("Mul", ["t", "b"], ["so"]),
     helper.make_node("Identity", ["t"], ["y"])],
    "scan8_body", [fv("s", [3]), fv("a", [3]), fv("b", [3])], [fv("so", [3]), fv("y", [3])])
feeds = {"S": rng2.standard_normal((2, 3)).astype(np.float32),
         "A": rng2.standard_normal((2, 4, 3)).astype(np.float32),
         "B": rng2.standard_normal((2, 4, 3)).astype(np.float32)}
got = run([helper.make_node("Scan", ["", "S", "A", "B"], ["SF", "Y"], num_scan_inputs=2,
                            directions=[0, 1], body=body8)],
          [fv("S", [2, 3]), fv("A", [2, 4, 3]), fv("B", [2, 4, 3])], [fv("SF"), fv("Y")],
          feeds, "scan8_batch_reverse", opset=8)
state, steps = feeds["S"], []
for t in range(4):
    y = state + feeds["A"][:, t]
    state = y * feeds["B"][:, 3 - t]
    steps.append(y)
assert np.allclose(got["SF"], state, rtol=1e-5), (got["SF"], state)
assert np.allclose(got["Y"], np.stack(steps, axis=1), rtol=1e-5), got["Y"]
# If on a run-time condition: both branches are computed and selected.
then_g = helper.make_graph([helper.make_node("Mul", ["X", "X"], ["t"])], "then", [], [fv("t", [3])])
else_g = helper.make_graph([helper.make_node("Neg", ["X"], ["e"])], "else", [], [fv("e", [3])])
x3 = np.array([1, -2, 3], np.float32)
for c in (True, False):
    got = run([helper.make_node("If", ["C"], ["Y"], then_branch=then_g, else_branch=else_g)],
              [iv("C", TensorProto.BOOL, []), fv("X", [3])], [fv("Y")],
              {"C": np.array(c), "X": x3}, "if_runtime_%d" % c)
    assert np.array_equal(got["Y"], x3 * x3 if c else -x3), (c, got["Y"])

# Grouped convolutions with output rows of 12 or more run in place on the
# CPU (mcc-vectorize-grouped-conv): rows of 21 (a vector and a masked
# rest), 6 output channels per group (a 4-row block and single rows under
# AVX2's 6 or AVX-512's 8), stride 2, dilation 2 and a batch of 2.
for name, (n, g, cg, fg, hw, k, s, d, p) in {
        "group_conv_s1": (1, 4, 8, 6, 21, 3, 1, 1, 1),
        "group_conv_s2": (1, 2, 4, 8, 27, 3, 2, 1, 1),
        "group_conv_d2_batch": (2, 3, 5, 9, 18, 3, 1, 2, 2),
        "group_conv_5x5": (1, 2, 3, 16, 16, 5, 1, 1, 2)}.items():
    wts = rng2.standard_normal((g * fg, cg, k, k)).astype(np.float32)
    bias = rng2.standard_normal((g * fg,)).astype(np.float32)
    ref_check(helper.make_node("Conv", ["X", "W", "B"], ["Y"], group=g, kernel_shape=[k, k],
                               strides=[s, s], dilations=[d, d], pads=[p] * 4),
              {"X": rng2.standard_normal((n, g * cg, hw, hw)).astype(np.float32)}, name,
              inits=[("W", wts), ("B", bias)])



def graph_check(nodes, feeds, outputs, name, opset=22, inits=(), rtol=1e-4, atol=1e-5,
                compile_args=()):
    """ref_check for a graph of several nodes."""
    ins = [helper.make_tensor_value_info(k, numpy_helper.from_array(v).data_type, v.shape)
           for k, v in feeds.items()]
    outs = [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outputs]
    got = run(nodes, ins, outs, feeds, name, opset=opset, inits=inits,
              compile_args=compile_args)
    g = helper.make_graph(nodes, name, ins, outs,
                          [onnx.numpy_helper.from_array(v, k) for k, v in inits])
    ref = ReferenceEvaluator(helper.make_model(
        g, opset_imports=[helper.make_opsetid("", opset)])).run(None, feeds)
    for o, e in zip(outputs, ref):
        assert got[o].shape == e.shape, (name, o, got[o].shape, e.shape)
        assert np.allclose(got[o], e, rtol=rtol, atol=atol), (name, o, got[o], e)


# Products with epilogues (bias, residual, activation applied to the
# register block in the last K block): a 1x1 convolution over 13 x 13
# (169 columns: masked ones) with a residual and ReLU; one over 7 x 7 (49 =
# 48 + a dot-product column) with K = 300 (two K blocks) and HardSwish; a
# linear layer with its bias along the columns and tanh.
for name, (cin, cout, hw) in {"conv1x1_bias_residual_relu": (48, 40, 13),
                              "conv1x1_hardswish_dot_tail": (300, 24, 7)}.items():
    wts = (rng2.standard_normal((cout, cin, 1, 1)) / cin ** 0.5).astype(np.float32)
    bias = rng2.standard_normal((cout,)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["X", "W", "B"], ["C"], kernel_shape=[1, 1])]
    feeds = {"X": rng2.standard_normal((1, cin, hw, hw)).astype(np.float32)}
    if name.startswith("conv1x1_bias"):
        feeds["R"] = rng2.standard_normal((1, cout, hw, hw)).astype(np.float32)
        nodes += [helper.make_node("Add", ["C", "R"], ["S"]),
                  helper.make_node("Relu", ["S"], ["Y"])]
    else:
        nodes += [helper.make_node("HardSwish", ["C"], ["Y"])]
    graph_check(nodes, feeds, ["Y"], name, inits=[("W", wts), ("B", bias)])
lw = (rng2.standard_normal((300, 37)) / 300 ** 0.5).astype(np.float32)
lb = rng2.standard_normal((37,)).astype(np.float32)
graph_check([helper.make_node("MatMul", ["X", "W"], ["P"]),
             helper.make_node("Add", ["P", "B"], ["S"]),
             helper.make_node("Tanh", ["S"], ["Y"])],
            {"X": rng2.standard_normal((1, 10, 300)).astype(np.float32)}, ["Y"],
            "linear_bias_tanh", inits=[("W", lw), ("B", lb)])

# Depthwise convolutions read their zero padding in place on the CPU
# (mcc-vectorize-depthwise-conv): an expansion product with bias and ReLU
# (its epilogue writes the unpadded result) feeding a depthwise
# convolution, over rows narrower than a vector (7, 14), a vector and a
# masked rest (21), and several vectors (40); 3x3 and 5x5 windows, strides
# 1 and 2, dilation 2, asymmetric pads (TF's SAME: more on the bottom and
# right, or on the top and left), a batch of 2. And one whose source has
# another reader (a residual add after it).
for name, (n, cin, c, hw, k, s, d, pads) in {
        "dw_pad_7_5x5": (1, 8, 24, 7, 5, 1, 1, [2, 2, 2, 2]),
        "dw_pad_14_s2": (1, 8, 20, 14, 3, 2, 1, [1, 1, 1, 1]),
        "dw_pad_21_d2": (1, 6, 12, 21, 3, 1, 2, [2, 2, 2, 2]),
        "dw_pad_40_same": (2, 4, 10, 40, 3, 2, 1, [0, 0, 1, 1]),
        "dw_pad_17_topleft": (1, 4, 9, 17, 5, 1, 1, [3, 4, 1, 0]),
        "dw_pad_5x5_s2": (1, 8, 16, 23, 5, 2, 1, [2, 2, 2, 2])}.items():
    pw = (rng2.standard_normal((c, cin, 1, 1)) / cin ** 0.5).astype(np.float32)
    pb = rng2.standard_normal((c,)).astype(np.float32)
    dwt = rng2.standard_normal((c, 1, k, k)).astype(np.float32)
    graph_check([helper.make_node("Conv", ["X", "W", "B"], ["C"], kernel_shape=[1, 1]),
                 helper.make_node("Relu", ["C"], ["R"]),
                 helper.make_node("Conv", ["R", "D"], ["Y"], group=c, kernel_shape=[k, k],
                                  strides=[s, s], dilations=[d, d], pads=pads)],
                {"X": rng2.standard_normal((n, cin, hw, hw)).astype(np.float32)}, ["Y"],
                name, inits=[("W", pw), ("B", pb), ("D", dwt)])
dwt = rng2.standard_normal((12, 1, 3, 3)).astype(np.float32)
graph_check([helper.make_node("Relu", ["X"], ["R"]),
             helper.make_node("Conv", ["R", "D"], ["C"], group=12, kernel_shape=[3, 3],
                              pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["C", "R"], ["Y"])],
            {"X": rng2.standard_normal((1, 12, 19, 19)).astype(np.float32)}, ["Y"],
            "dw_pad_residual", inits=[("D", dwt)])

# Depthwise convolutions with epilogues applied to their output vectors on
# the CPU: bias and HardSwish over 15 x 15 (a vector and a masked rest);
# bias, a squeeze-excite style scale per (n, c) and a residual add over a
# batch of 2; and a biased one whose raw output is also an output (so the
# kernel stores it as well).
for name, (n, c, hw, k, s) in {"dw_bias_hardswish": (1, 24, 15, 3, 1),
                               "dw_bias_scale_residual": (2, 16, 20, 5, 1)}.items():
    dwt = rng2.standard_normal((c, 1, k, k)).astype(np.float32)
    db = rng2.standard_normal((c,)).astype(np.float32)
    feeds = {"X": rng2.standard_normal((n, c, hw, hw)).astype(np.float32)}
    nodes = [helper.make_node("Relu", ["X"], ["R"]),
             helper.make_node("Conv", ["R", "D", "DB"], ["C"], group=c, kernel_shape=[k, k],
                              strides=[s, s], pads=[k // 2] * 4)]
    if name == "dw_bias_hardswish":
        nodes.append(helper.make_node("HardSwish", ["C"], ["Y"]))
    else:
        feeds["S"] = rng2.standard_normal((n, c, 1, 1)).astype(np.float32)
        nodes += [helper.make_node("Mul", ["C", "S"], ["M"]),
                  helper.make_node("Add", ["M", "X"], ["Y"])]
    graph_check(nodes, feeds, ["Y"], name, inits=[("D", dwt), ("DB", db)])
dwt = rng2.standard_normal((8, 1, 3, 3)).astype(np.float32)
db = rng2.standard_normal((8,)).astype(np.float32)
graph_check([helper.make_node("Conv", ["X", "D"], ["C"], group=8, kernel_shape=[3, 3],
                              pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["C", "DB"], ["B"]),
             helper.make_node("Relu", ["B"], ["Y"])],
            {"X": rng2.standard_normal((1, 8, 18, 18)).astype(np.float32)}, ["Y", "C"],
            "dw_epilogue_keeps_output", inits=[("D", dwt), ("DB", db.reshape(8, 1, 1))])

# Squeeze-excite at batch 1 (CPU: the depthwise convolution's bias and ReLU
# written once and read by the mean and the product; the gate scales the
# projection's weights instead of the activation).
c, mid, out = 24, 8, 12
se_inits = [("D", rng2.standard_normal((c, 1, 3, 3)).astype(np.float32)),
            ("DB", rng2.standard_normal((c,)).astype(np.float32)),
            ("R", (rng2.standard_normal((mid, c, 1, 1)) / c ** 0.5).astype(np.float32)),
            ("RB", rng2.standard_normal((mid,)).astype(np.float32)),
            ("E", (rng2.standard_normal((c, mid, 1, 1)) / mid ** 0.5).astype(np.float32)),
            ("EB", rng2.standard_normal((c,)).astype(np.float32)),
            ("P", (rng2.standard_normal((out, c, 1, 1)) / c ** 0.5).astype(np.float32))]
graph_check([helper.make_node("Conv", ["X", "D", "DB"], ["C"], group=c, kernel_shape=[3, 3],
                              pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["C"], ["A"]),
             helper.make_node("GlobalAveragePool", ["A"], ["M"]),
             helper.make_node("Conv", ["M", "R", "RB"], ["Q"], kernel_shape=[1, 1]),
             helper.make_node("Relu", ["Q"], ["QR"]),
             helper.make_node("Conv", ["QR", "E", "EB"], ["G"], kernel_shape=[1, 1]),
             helper.make_node("HardSigmoid", ["G"], ["S"], alpha=1.0 / 6, beta=0.5),
             helper.make_node("Mul", ["A", "S"], ["AS"]),
             helper.make_node("Conv", ["AS", "P"], ["Y"], kernel_shape=[1, 1])],
            {"X": rng2.standard_normal((1, c, 20, 20)).astype(np.float32)}, ["Y"],
            "squeeze_excite_b1", inits=se_inits)

# A one-row Gemm with a transposed weight runs as W . x (a matrix-vector
# product): alpha, beta and a bias that broadcasts from [1, N].
gw = (rng2.standard_normal((37, 300)) / 300 ** 0.5).astype(np.float32)
gb = rng2.standard_normal((1, 37)).astype(np.float32)
graph_check([helper.make_node("Gemm", ["X", "W", "B"], ["Y"], transB=1, alpha=0.5, beta=2.0)],
            {"X": rng2.standard_normal((1, 300)).astype(np.float32)}, ["Y"],
            "gemm_one_row_transb", inits=[("W", gw), ("B", gb)])

# 3x3 stride-1 convolutions run as Winograd F(2x2, 3x3) on the CPU (design
# 0019): an odd output size (a last row and column of tiles cut off) over a
# batch of two, asymmetric padding, and rows of more than one vector of
# tiles (19 = 16 + 3 masked; on AVX2, 8 tiles a vector); bias and ReLU
# after each.
for name, (n, cin, cout, h, w, pads, args) in {
        "winograd_odd_batch2": (2, 24, 20, 13, 11, [1, 1, 1, 1], ()),
        "winograd_asymmetric_pads": (1, 16, 32, 12, 17, [0, 1, 1, 0], ()),
        "winograd_long_rows": (1, 16, 16, 40, 38, [1, 1, 1, 1], ()),
        "winograd_avx2": (1, 16, 24, 21, 40, [1, 1, 1, 1], ("--cpu", "x86-64-v3"))}.items():
    wts = (rng2.standard_normal((cout, cin, 3, 3)) / (9 * cin) ** 0.5).astype(np.float32)
    bias = rng2.standard_normal((cout,)).astype(np.float32)
    graph_check([helper.make_node("Conv", ["X", "W", "B"], ["C"], kernel_shape=[3, 3],
                                  pads=pads),
                 helper.make_node("Relu", ["C"], ["Y"])],
                {"X": rng2.standard_normal((n, cin, h, w)).astype(np.float32)}, ["Y"],
                name, inits=[("W", wts), ("B", bias)], compile_args=args)

print("op edge cases: ok")
