#!/usr/bin/env python3
"""Grouped convolutions that read their zero padding in place (CPU).

A 1x1 convolution's product cannot write into a row-strided interior, so a
padded input of the grouped convolution after it is built as border fills
plus a copy; mcc-vectorize-grouped-conv reads the copy's source instead.
Each case compiles Conv 1x1 -> Relu -> grouped Conv, checks that the padded
buffer is gone from the loop-level IR, and compares the output with a
float64 numpy reference. Cases cover the left-edge vector, masked row ends,
top and bottom rows, stride 2, dilation, asymmetric padding, a looped 7x7
window, rows narrower than a vector, and the AVX2 target (8 lanes).

    test_grouped_conv_in_place.py path/to/mcc
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

mcc = sys.argv[1]
work = tempfile.mkdtemp(prefix="mcc-grouped-")
rng = np.random.default_rng(7)


def conv_ref(x, w, b, group, strides, dils, pads):
    """pads: top, left, bottom, right."""
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (xp.shape[2] - dils[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (xp.shape[3] - dils[1] * (kw - 1) - 1) // strides[1] + 1
    y = np.zeros((n, m, oh, ow))
    mg = m // group
    for g in range(group):
        xs = xp[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                win = xs[:, :, i * dils[0]: i * dils[0] + strides[0] * (oh - 1) + 1: strides[0],
                         j * dils[1]: j * dils[1] + strides[1] * (ow - 1) + 1: strides[1]]
                y[:, g * mg:(g + 1) * mg] += np.einsum("nchw,mc->nmhw", win,
                                                       w[g * mg:(g + 1) * mg, :, i, j])
    return y + b.reshape(1, -1, 1, 1)


def case(name, cin, ch, group, hw, k, strides=(1, 1), dils=(1, 1), pads=(1, 1, 1, 1),
         cpu=None):
    h, wd = hw
    x = rng.standard_normal((1, cin, h, wd)).astype(np.float32)
    w1 = (rng.standard_normal((ch, cin, 1, 1)) / cin ** 0.5).astype(np.float32)
    b1 = rng.standard_normal(ch).astype(np.float32) * 0.1
    w2 = (rng.standard_normal((ch, ch // group, k, k)) / (ch // group * k * k) ** 0.5).astype(np.float32)
    b2 = rng.standard_normal(ch).astype(np.float32) * 0.1
    nodes = [helper.make_node("Conv", ["X", "W1", "B1"], ["T"]),
             helper.make_node("Relu", ["T"], ["R"]),
             helper.make_node("Conv", ["R", "W2", "B2"], ["Y"], group=group, kernel_shape=[k, k],
                              strides=list(strides), dilations=list(dils), pads=list(pads))]
    g = helper.make_graph(nodes, name,
                          [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(x.shape))],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(v, n) for n, v in
                           (("W1", w1), ("B1", b1), ("W2", w2), ("B2", b2))])
    path = os.path.join(work, name + ".onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    so, npz, out, ir = path + ".so", path + ".in.npz", path + ".out.npz", path + ".ir"
    np.savez(npz, X=x)
    args = [mcc, "compile", path, "-o", so, "--dump-ir", ir] + (["--cpu", cpu] if cpu else [])
    subprocess.run(args, check=True)
    subprocess.run([mcc, "run", so, "--input", npz, "--output", out, "--threads", "2"], check=True)
    y = np.load(out)["Y"]
    ref = conv_ref(np.maximum(conv_ref(x, w1, b1, 1, (1, 1), (1, 1), (0, 0, 0, 0)), 0), w2, b2,
                   group, strides, dils, pads)
    err = np.abs(y - ref).max() / np.abs(ref).max()
    assert y.shape == ref.shape and err < 1e-5, (name, y.shape, ref.shape, err)
    # The padded buffer (1 x G x C/G x Hp x Wp) is gone from the loops.
    padded = f"1x{group}x{ch // group}x{h + pads[0] + pads[2]}x{wd + pads[1] + pads[3]}xf32"
    loops = open(os.path.join(ir, "04-mcc-cpu-loops.mlir")).read()
    assert padded not in loops, (name, "padded buffer still built", padded)
    print(f"{name}: rel.err {err:.1e}, read in place")


case("s1_20x20", 24, 64, 8, (20, 20), 3)                       # edge vector + masked tail
case("s1_56x56", 16, 64, 8, (56, 56), 3)                       # edge, a block, masked tail
case("s2_29x29", 16, 64, 4, (29, 29), 3, strides=(2, 2))       # stride 2, odd size
case("s1_14x14", 16, 64, 8, (14, 14), 3)                       # one vector, masked both sides
case("dil2_24x24", 16, 64, 8, (24, 24), 3, dils=(2, 2), pads=(2, 2, 2, 2))
case("asym_30x33", 16, 64, 8, (30, 33), 3, pads=(2, 1, 0, 2))  # top 2, left 1, bottom 0, right 2
case("k7_s2_40x40", 8, 32, 4, (40, 40), 7, strides=(2, 2), pads=(3, 3, 3, 3))  # looped rows
case("avx2_s1_20x20", 24, 64, 8, (20, 20), 3, cpu="x86-64-v3")
case("avx2_s2_28x28", 16, 64, 8, (28, 28), 3, strides=(2, 2), cpu="x86-64-v3")
print("grouped convolutions in place: all cases match")
