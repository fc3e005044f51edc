#!/usr/bin/env python3
"""Tests of the Python loader (python/mcc): compile two models, load them
through libmccrt, compare with reference.npz, and check the errors.

    python3 test/python/test_loader.py --mcc build/tools/mcc/mcc \\
        --runtime build/lib/Runtime/libmccrt.so --models models

Plain unittest; the torch tests are skipped when torch is not importable.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
import mcc  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

ARGS = None
MODELS = {
    "resnet-ts": ["pixel_values=2x3x64x64"],
    "bert-ts": ["input_ids=2x16", "attention_mask=2x16", "token_type_ids=2x16"],
}
TMP = None
SO = {}


def rel_err(got, ref):
    got, ref = np.asarray(got), np.asarray(ref)
    if got.shape != ref.shape:
        return float("inf")
    scale = float(np.max(np.abs(ref))) or 1.0
    return float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64)))) / scale


def setUpModule():
    global TMP
    TMP = tempfile.mkdtemp(prefix="mcc-pytest-")
    for name, shapes in MODELS.items():
        so = os.path.join(TMP, name + ".so")
        cmd = [ARGS.mcc, "compile", os.path.join(ARGS.models, name, "model.onnx"), "-o", so, "--target", "cpu"]
        for s in shapes:
            cmd += ["--shape", s]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stdout}{r.stderr}")
        SO[name] = so


def tearDownModule():
    if TMP:
        shutil.rmtree(TMP, ignore_errors=True)


def data(name):
    folder = os.path.join(ARGS.models, name)
    return dict(np.load(os.path.join(folder, "inputs.npz"))), dict(np.load(os.path.join(folder, "reference.npz")))


class LoaderTest(unittest.TestCase):
    def load(self, name):
        m = mcc.load(SO[name], runtime=ARGS.runtime)
        self.addCleanup(m.close)
        return m

    def check_outputs(self, out, ref):
        self.assertIsInstance(out, dict)
        self.assertEqual(sorted(out), sorted(ref))
        for k in ref:
            err = rel_err(out[k], ref[k])
            self.assertLessEqual(err, 1e-4, f"{k}: rel.err {err}")

    def test_signature(self):
        m = self.load("bert-ts")
        self.assertEqual(m.target, "cpu")
        self.assertTrue(m.arch)
        self.assertEqual([t.name for t in m.inputs], ["input_ids", "attention_mask", "token_type_ids"])
        for t in m.inputs:
            self.assertEqual(t.dtype, np.dtype(np.int64))
            self.assertEqual(t.shape, (2, 16))
        self.assertEqual({t.name: t.shape for t in m.outputs},
                         {"last_hidden_state": (2, 16, 64), "pooler_output": (2, 64)})
        self.assertEqual(m.outputs[0].dtype, np.dtype(np.float32))

    def test_resnet(self):
        feeds, ref = data("resnet-ts")
        m = self.load("resnet-ts")
        self.check_outputs(m(feeds["pixel_values"]), ref)  # positional
        self.check_outputs(m.run(feeds), ref)
        x = np.asfortranarray(feeds["pixel_values"])  # non-contiguous: copied, same dtype
        self.check_outputs(m(pixel_values=x), ref)

    def test_bert(self):
        feeds, ref = data("bert-ts")
        with mcc.load(SO["bert-ts"], runtime=ARGS.runtime) as m:
            self.check_outputs(m(**feeds), ref)
            self.check_outputs(m.run(feeds), ref)
            mcc.set_num_threads(1)
            self.check_outputs(m.run(feeds), ref)
            mcc.set_num_threads(0)
        with self.assertRaises(mcc.MccError):
            m.run(feeds)  # closed

    def test_prepare(self):
        feeds, ref = data("resnet-ts")
        m = self.load("resnet-ts")
        call, outs = m.prepare(feeds)
        call()
        call()
        self.check_outputs(outs, ref)

    def test_gpu_timing_refused_for_cpu(self):
        feeds, _ = data("resnet-ts")
        m = self.load("resnet-ts")
        m.run(feeds)
        with self.assertRaises(mcc.MccError) as cm:
            m.last_run_device_ms()
        self.assertIn("need a model compiled with --target cuda", str(cm.exception))
        self.assertIn("target is cpu", str(cm.exception))

    def test_cpu_op_profile(self):
        feeds, ref = data("resnet-ts")
        m = self.load("resnet-ts")
        prof = m.kernel_profile(feeds, runs=4)
        self.assertGreater(len(prof), 10)
        # Every op of forward runs once per run; names say what and where.
        for k in prof:
            self.assertEqual(k.launches_per_run, 1.0, k)
            self.assertRegex(k.name, r"^#\d+ \S+")
            self.assertGreaterEqual(k.ms_per_run, 0.0)
        self.assertEqual([k.ms_per_run for k in prof], sorted((k.ms_per_run for k in prof), reverse=True))
        self.assertTrue(any("matmul" in k.name.split()[1] and "/Conv" in k.name for k in prof), prof[:5])
        # Profiling is off again, and the outputs are still right.
        self.check_outputs(m.run(feeds), ref)

    def test_wrong_shape(self):
        feeds, _ = data("resnet-ts")
        m = self.load("resnet-ts")
        with self.assertRaises(mcc.MccError) as cm:
            m(pixel_values=feeds["pixel_values"][:1])
        self.assertIn("shape", str(cm.exception))
        self.assertIn("pixel_values", str(cm.exception))

    def test_wrong_dtype(self):
        feeds, _ = data("resnet-ts")
        m = self.load("resnet-ts")
        with self.assertRaises(mcc.MccError) as cm:
            m(pixel_values=feeds["pixel_values"].astype(np.float64))  # never cast silently
        self.assertIn("dtype", str(cm.exception))
        self.assertIn("float64", str(cm.exception))
        feeds, _ = data("bert-ts")
        m = self.load("bert-ts")
        feeds["attention_mask"] = feeds["attention_mask"].astype(np.int32)
        with self.assertRaises(mcc.MccError) as cm:
            m.run(feeds)
        self.assertIn("dtype", str(cm.exception))
        self.assertIn("attention_mask", str(cm.exception))

    def test_missing_and_unknown_input(self):
        feeds, _ = data("bert-ts")
        m = self.load("bert-ts")
        del feeds["token_type_ids"]
        with self.assertRaises(mcc.MccError) as cm:
            m.run(feeds)
        self.assertIn("token_type_ids", str(cm.exception))
        feeds["token_type_ids"] = feeds["input_ids"]
        feeds["bogus"] = feeds["input_ids"]
        with self.assertRaises(mcc.MccError) as cm:
            m.run(feeds)
        self.assertIn("bogus", str(cm.exception))

    def test_load_errors(self):
        bad = os.path.join(TMP, "not-a-model.so")
        with open(bad, "w") as f:
            f.write("this is not a shared library\n")
        with self.assertRaises(mcc.MccError) as cm:
            mcc.load(bad, runtime=ARGS.runtime)
        self.assertIn("not-a-model.so", str(cm.exception))
        with self.assertRaises(mcc.MccError):
            mcc.load(os.path.join(ARGS.models, "resnet-ts", "model.onnx"), runtime=ARGS.runtime)
        with self.assertRaises(mcc.MccError) as cm:
            mcc.load(os.path.join(TMP, "missing.so"), runtime=ARGS.runtime)
        self.assertIn("no such file", str(cm.exception))
        self.assertTrue(issubclass(mcc.MccError, RuntimeError))
        with self.assertRaises(mcc.MccError):
            mcc.load(SO["resnet-ts"], runtime=os.path.join(TMP, "no-libmccrt.so"))

    def test_wider_integers_and_bfloat16(self):
        import onnx
        from onnx import TensorProto as T, helper
        ml_dtypes = mcc.ml_dtypes
        path = os.path.join(TMP, "dtypes.onnx")
        onnx.save(helper.make_model(helper.make_graph(
            [helper.make_node("Max", ["A", "B"], ["M"]),
             helper.make_node("Cast", ["X"], ["XB"], to=T.BFLOAT16),
             helper.make_node("Cast", ["XB"], ["Y"], to=T.FLOAT)], "dtypes",
            [helper.make_tensor_value_info("A", T.UINT32, [3]),
             helper.make_tensor_value_info("B", T.UINT32, [3]),
             helper.make_tensor_value_info("X", T.FLOAT, [2])],
            [helper.make_tensor_value_info("M", T.UINT32, [3]),
             helper.make_tensor_value_info("XB", T.BFLOAT16, [2]),
             helper.make_tensor_value_info("Y", T.FLOAT, [2])]),
            opset_imports=[helper.make_opsetid("", 17)]), path)
        so = path + ".so"
        subprocess.run([ARGS.mcc, "compile", path, "-o", so], check=True)
        m = mcc.load(so, runtime=ARGS.runtime)
        self.assertEqual([i.dtype for i in m.inputs], [np.dtype(np.uint32)] * 2 + [np.dtype(np.float32)])
        a = np.array([3000000000, 1, 7], np.uint32)
        b = np.array([5, 4000000000, 6], np.uint32)
        x = np.array([1.00390625, 3.14159], np.float32)  # a tie, rounded to even
        if ml_dtypes is None:
            with self.assertRaises(mcc.MccError) as cm:
                m(A=a, B=b, X=x)
            self.assertIn("ml_dtypes", str(cm.exception))
            return
        out = m(A=a, B=b, X=x)
        self.assertEqual(out["M"].dtype, np.uint32)
        np.testing.assert_array_equal(out["M"], np.maximum(a, b))
        self.assertEqual(out["XB"].dtype, np.dtype(ml_dtypes.bfloat16))
        np.testing.assert_array_equal(out["XB"].view(np.uint16), [0x3F80, 0x4049])
        np.testing.assert_array_equal(out["Y"], out["XB"].astype(np.float32))

    def test_scalar_input(self):
        # A 0-d input stays 0-d (np.ascontiguousarray would make it [1]).
        import onnx
        from onnx import TensorProto as T, helper
        path = os.path.join(TMP, "scalar.onnx")
        onnx.save(helper.make_model(helper.make_graph(
            [helper.make_node("Mul", ["X", "S"], ["Y"])], "scalar",
            [helper.make_tensor_value_info("X", T.FLOAT, [3]),
             helper.make_tensor_value_info("S", T.FLOAT, [])],
            [helper.make_tensor_value_info("Y", T.FLOAT, [3])]),
            opset_imports=[helper.make_opsetid("", 17)]), path)
        so = path + ".so"
        subprocess.run([ARGS.mcc, "compile", path, "-o", so], check=True)
        m = mcc.load(so, runtime=ARGS.runtime)
        self.addCleanup(m.close)
        self.assertEqual(m.inputs[1].shape, ())
        x = np.array([1, 2, 3], np.float32)
        out = m(X=x, S=np.array(2.5, np.float32))
        np.testing.assert_array_equal(out["Y"], x * 2.5)
        out = m(X=x, S=np.float32(-1))  # a numpy scalar is 0-d too
        np.testing.assert_array_equal(out["Y"], -x)

    @unittest.skipIf(mcc.ml_dtypes is None, "ml_dtypes is not importable")
    def test_small_types(self):
        # float8 and int4 in and out as ml_dtypes arrays, one element per
        # byte (docs/design/0009); Where passes a float8 operand through.
        import onnx
        from onnx import TensorProto as T, helper
        ml_dtypes = mcc.ml_dtypes
        path = os.path.join(TMP, "small.onnx")
        onnx.save(helper.make_model(helper.make_graph(
            [helper.make_node("Cast", ["X"], ["F8"], to=T.FLOAT8E4M3FN),
             helper.make_node("Where", ["C", "F8", "G"], ["W"]),
             helper.make_node("Cast", ["I"], ["IF"], to=T.FLOAT),
             helper.make_node("Cast", ["X"], ["I4"], to=T.INT4)], "small",
            [helper.make_tensor_value_info("X", T.FLOAT, [4]),
             helper.make_tensor_value_info("C", T.BOOL, [4]),
             helper.make_tensor_value_info("G", T.FLOAT8E4M3FN, [4]),
             helper.make_tensor_value_info("I", T.INT4, [4])],
            [helper.make_tensor_value_info("W", T.FLOAT8E4M3FN, [4]),
             helper.make_tensor_value_info("IF", T.FLOAT, [4]),
             helper.make_tensor_value_info("I4", T.INT4, [4])]),
            opset_imports=[helper.make_opsetid("", 21)]), path)
        so = path + ".so"
        subprocess.run([ARGS.mcc, "compile", path, "-o", so], check=True)
        m = mcc.load(so, runtime=ARGS.runtime)
        self.assertEqual(m.outputs[0].dtype, np.dtype(ml_dtypes.float8_e4m3fn))
        x = np.array([0.3, -500, 7.9, -8.5], np.float32)
        c = np.array([True, True, False, False])
        g = np.array([1, 2, 3, 4], ml_dtypes.float8_e4m3fn)
        i = np.array([-8, -1, 0, 7], ml_dtypes.int4)
        out = m(X=x, C=c, G=g, I=i)
        np.testing.assert_array_equal(out["W"].view(np.uint8),
                                      np.where(c, np.clip(x, -448, 448).astype(ml_dtypes.float8_e4m3fn), g).view(np.uint8))
        np.testing.assert_array_equal(out["IF"], [-8, -1, 0, 7])
        self.assertEqual(out["I4"].dtype, np.dtype(ml_dtypes.int4))
        with np.errstate(invalid="ignore"):  # -500 is out of int4's range: 0
            exp = x.astype(ml_dtypes.int4)
        np.testing.assert_array_equal(out["I4"].view(np.uint8), exp.view(np.uint8))

    @unittest.skipIf(torch is None, "torch is not importable")
    def test_torch(self):
        feeds, ref = data("bert-ts")
        m = self.load("bert-ts")
        t = {k: torch.from_numpy(v) for k, v in feeds.items()}
        out = m(**t)
        for v in out.values():
            self.assertIsInstance(v, torch.Tensor)
        self.check_outputs({k: v.numpy() for k, v in out.items()}, ref)
        t["input_ids"] = t["input_ids"].t().contiguous().t()  # non-contiguous view
        self.check_outputs({k: v.numpy() for k, v in m.run(t).items()}, ref)
        t["attention_mask"] = t["attention_mask"].to(torch.int32)
        with self.assertRaises(mcc.MccError) as cm:
            m.run(t)
        self.assertIn("dtype", str(cm.exception))
        if torch.cuda.is_available():
            feeds, ref = data("resnet-ts")
            mr = self.load("resnet-ts")
            out = mr(torch.from_numpy(feeds["pixel_values"]).cuda())
            self.check_outputs({k: v.numpy() for k, v in out.items()}, ref)


class DynamicLoaderTest(unittest.TestCase):
    """A hand-written ABI v2 library with dynamic dims (test/unit/fake/
    dynamic_model.c): a [batch, 4], b [batch, seq] -> cat = concat(b, a)
    [batch, seq + 4] and half = arange [(seq + 1) floordiv 2]; batch 1..16."""

    def setUp(self):
        if not ARGS.fake_dynamic:
            self.skipTest("no --fake-dynamic model given")
        self.m = mcc.load(ARGS.fake_dynamic, runtime=ARGS.runtime)
        self.addCleanup(self.m.close)

    @staticmethod
    def feeds(batch, seq):
        rng = np.random.default_rng(batch * 100 + seq)
        return {"a": rng.standard_normal((batch, 4), dtype=np.float32),
                "b": rng.standard_normal((batch, seq), dtype=np.float32)}

    def test_signature_names_dynamic_dims(self):
        m = self.m
        self.assertEqual([t.shape for t in m.inputs], [("batch", 4), ("batch", "seq")])
        self.assertEqual([t.shape for t in m.outputs], [("batch", "seq + 4"), ("(seq + 1) floordiv 2",)])
        self.assertEqual(m.symbols, [mcc.Symbol("batch", 1, 16), mcc.Symbol("seq", 1, None)])
        self.assertIn("a: float32[batch, 4]", repr(m))

    def test_runs_at_several_sizes(self):
        for batch in (1, 3, 16):
            for seq in (1, 8, 17):
                f = self.feeds(batch, seq)
                self.assertEqual(self.m.output_shapes(f), {"cat": (batch, seq + 4), "half": ((seq + 1) // 2,)})
                out = self.m(**f)
                np.testing.assert_array_equal(out["cat"], np.concatenate([f["b"], f["a"]], axis=1))
                np.testing.assert_array_equal(out["half"], np.arange((seq + 1) // 2))
        call, outs = self.m.prepare(self.feeds(2, 5))
        call()
        self.assertEqual(outs["cat"].shape, (2, 9))

    def test_inconsistent_and_out_of_bounds_dims(self):
        f = self.feeds(2, 5)
        f["b"] = f["b"][:1]
        with self.assertRaises(mcc.MccError) as cm:
            self.m(**f)
        self.assertEqual(str(cm.exception), "input 'b' axis 0 ('batch') is 1, but input 'a' set 'batch' to 2")
        with self.assertRaises(mcc.MccError) as cm:
            self.m(**self.feeds(17, 3))
        self.assertEqual(str(cm.exception), "input 'a' axis 0 ('batch') is 17, above its bound 16")
        with self.assertRaises(mcc.MccError) as cm:
            self.m.output_shapes(self.feeds(0, 3))
        self.assertIn("below its bound 1", str(cm.exception))
        with self.assertRaises(mcc.MccError) as cm:
            self.m(a=np.zeros((2, 4), np.float32), b=np.zeros((2, 3, 1), np.float32))
        self.assertIn("the model expects [batch,seq]", str(cm.exception))


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mcc", default=os.path.join(ROOT, "build/tools/mcc/mcc"))
    ap.add_argument("--runtime", default=os.path.join(ROOT, "build/lib/Runtime/libmccrt.so"))
    ap.add_argument("--models", default=os.path.join(ROOT, "models"))
    ap.add_argument("--fake-dynamic", default=os.path.join(ROOT, "build/test/unit/libmcc_fake_dynamic_model.so"),
                    help="the hand-written dynamic-shape model library (test/unit/fake)")
    ARGS, rest = ap.parse_known_args()
    ARGS.mcc, ARGS.runtime, ARGS.models = (os.path.abspath(p) for p in (ARGS.mcc, ARGS.runtime, ARGS.models))
    if not os.path.exists(ARGS.fake_dynamic):
        ARGS.fake_dynamic = None
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
