#!/usr/bin/env python3
"""3x3 stride-1 convolutions as Winograd products on the CPU, against numpy.

Each case builds Conv 3x3 (+ bias) -> Relu, compiles it with a --winograd
mode, checks from the imported IR which form the convolution took (the
transformed weights are [36, F, C] for F(4x4, 3x3), [16, F, C] for F(2x2,
3x3)), runs it and compares the output with a float64 numpy reference.
Cases cover output sizes that 4 does not divide, rows of tiles narrower
and wider than a vector, a batch of two, the AVX2 target (8 lanes) and
the fallbacks: too few 4x4 tiles for F(4x4) (F(2x2) instead), too few
2x2 tiles (direct).

    test_winograd_conv.py path/to/mcc
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

mcc = sys.argv[1]
work = tempfile.mkdtemp(prefix="mcc-winograd-")
rng = np.random.default_rng(11)

# max|error| / max|reference| of one layer: F(2x2)'s transforms are exact
# but for rounding, F(4x4)'s scale by up to 8 (measured 0.6-1e-5 at 64-128
# channels; the direct form and ONNX Runtime 4-6e-7).
BOUND = {"f4": 2e-5, "f2": 2e-6, "off": 2e-6}


def conv_ref(x, w, b):
    n, c, h, wd = x.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    y = np.zeros((n, w.shape[0], h, wd))
    for i in range(3):
        for j in range(3):
            y += np.einsum("nchw,fc->nfhw", xp[:, :, i:i + h, j:j + wd], w[:, :, i, j])
    return y + b.reshape(1, -1, 1, 1)


def case(name, n, c, f, hw, mode, expect, cpu=None):
    h, wd = hw
    x = rng.standard_normal((n, c, h, wd)).astype(np.float32)
    w = (rng.standard_normal((f, c, 3, 3)) / (9 * c) ** 0.5).astype(np.float32)
    b = (rng.standard_normal(f) * 0.1).astype(np.float32)
    nodes = [helper.make_node("Conv", ["X", "W", "B"], ["T"], kernel_shape=[3, 3],
                              pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["T"], ["Y"])]
    g = helper.make_graph(nodes, name,
                          [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(x.shape))],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "B")])
    path = os.path.join(work, name + ".onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    so, npz, out, ir = path + ".so", path + ".in.npz", path + ".out.npz", path + ".ir"
    np.savez(npz, X=x)
    args = [mcc, "compile", path, "-o", so, "--dump-ir", ir, "--winograd", mode]
    subprocess.run(args + (["--cpu", cpu] if cpu else []), check=True)
    imported = open(os.path.join(ir, "00-import.mlir")).read()
    form = ("f4" if f"tensor<36x{f}x{c}xf32>" in imported else
            "f2" if f"tensor<16x{f}x{c}xf32>" in imported else "direct")
    assert form == expect, (name, "took", form, "expected", expect)
    subprocess.run([mcc, "run", so, "--input", npz, "--output", out, "--threads", "2"],
                   check=True)
    y = np.load(out)["Y"]
    ref = np.maximum(conv_ref(x, w, b), 0)
    err = np.abs(y - ref).max() / np.abs(ref).max()
    assert y.shape == ref.shape and err < BOUND[mode], (name, y.shape, err)
    print(f"{name}: {form}, rel.err {err:.2e}")


# 7 x 7 tiles of 4 x 4 (a row of tiles narrower than a vector).
case("f4_28", 1, 32, 48, (28, 28), "f4", "f4")
# 22 x 23: one and two columns of extra padding; 6 x 6 tiles.
case("f4_odd", 1, 16, 24, (22, 23), "f4", "f4")
# 18 tiles a row: a whole vector and a masked one.
case("f4_wide", 1, 16, 16, (12, 72), "f4", "f4")
# A batch of two (tiles of both images in one product).
case("f4_batch", 2, 24, 16, (16, 16), "f4", "f4")
# AVX2: 8 tiles a vector.
case("f4_avx2", 1, 32, 32, (28, 30), "f4", "f4", cpu="x86-64-v3")
# 14 x 14 has 16 tiles of 4 x 4 (too few) but 49 of 2 x 2.
case("f4_to_f2", 1, 32, 32, (14, 14), "f4", "f2")
case("f2_28", 1, 32, 48, (28, 28), "f2", "f2")
case("f2_avx2", 1, 32, 32, (28, 30), "f2", "f2", cpu="x86-64-v3")
# 7 x 7: 16 tiles of 2 x 2, direct.
case("direct_7", 1, 32, 32, (7, 7), "f4", "direct")
case("off_28", 1, 32, 32, (28, 28), "off", "direct")
print("all Winograd cases match numpy")
