#!/usr/bin/env python3
"""Export small, randomly initialised real-architecture models to ONNX test fixtures.

For every architecture (HF transformers and timm) and every exporter
(TorchScript exporter "ts", opset 17; dynamo exporter "dynamo", its default
opset) this writes a folder ``<out>/<arch>-<exporter>/`` holding

  model.onnx        the exported graph (weights inline, except bert-ts which
                    uses external data in model.onnx.data)
  inputs.npz        inputs keyed by ONNX graph input name
  reference.npz     PyTorch's own outputs (CPU, float32) keyed by ONNX graph
                    output name

and ``<out>/manifest.json`` (a list of entries).  Nothing is downloaded: every
model is built from a small config with fixed seeds.  Runs on CPU only.

Usage:  python3 scripts/export_models.py --out models [--only bert,gpt2] [--exporters ts,dynamo]
"""

import argparse
import json
import os
import platform
import shutil
import sys
import time
import traceback
import warnings
from functools import partial

os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")  # CPU only
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np
import torch
import torch.nn as nn

warnings.filterwarnings("ignore")

TS_OPSET = 17

BATCH = 2
SEQ = 16


# ----------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------

def perturb_(model, seed):
    """Make constant-initialised tensors non-trivial so folding bugs show.

    * BatchNorm running_mean/var and affine params get small random noise.
    * Any floating parameter whose elements are all equal (LayerNorm/RMSNorm
      weights of ones, zero biases, layer-scale gammas of 1e-6, ...) gets
      noise: c + 0.1*N(0,1) if |c| > 0.01 else 0.1*N(0,1).
    Deterministic given ``seed``.
    """
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for mod in model.modules():
            if isinstance(mod, nn.modules.batchnorm._BatchNorm):
                if mod.running_mean is not None:
                    mod.running_mean.copy_(0.1 * torch.randn(mod.running_mean.shape, generator=g))
                if mod.running_var is not None:
                    mod.running_var.copy_(0.5 + torch.rand(mod.running_var.shape, generator=g))
        for name, p in model.named_parameters():
            if not p.is_floating_point():
                continue
            flat = p.detach().reshape(-1)
            if flat.numel() == 0:
                continue
            c = float(flat[0])
            if flat.numel() == 1 or bool(torch.all(flat == flat[0])):
                noise = 0.1 * torch.randn(p.shape, generator=g)
                p.copy_((c + noise) if abs(c) > 0.01 else noise)


def text_inputs(seed, vocab, with_mask=False, with_token_type=False):
    rng = np.random.RandomState(seed)
    d = {"input_ids": rng.randint(0, vocab, size=(BATCH, SEQ)).astype(np.int64)}
    if with_mask:
        m = np.ones((BATCH, SEQ), dtype=np.int64)
        m[1, SEQ - 5:] = 0  # padding at the end of the second row
        d["attention_mask"] = m
    if with_token_type:
        t = np.zeros((BATCH, SEQ), dtype=np.int64)
        t[:, SEQ // 2:] = 1
        d["token_type_ids"] = t
    return d


def image_inputs(seed, size):
    rng = np.random.RandomState(seed)
    return {"pixel_values": rng.randn(BATCH, 3, size, size).astype(np.float32)}


def make_hf_wrapper(model, input_names, output_attrs, extra_kwargs):
    # Build a wrapper whose forward has named positional params (nice for
    # dynamo's dynamic_shapes, which is keyed by argument name).
    names = list(input_names)
    src = "def forward(self, {a}):\n    out = self.model({kw}, **self.extra_kwargs)\n    return tuple(getattr(out, a) for a in self.output_attrs)\n".format(
        a=", ".join(names), kw=", ".join(f"{n}={n}" for n in names))
    ns = {}
    exec(src, ns)
    cls = type("HFWrap_" + type(model).__name__, (nn.Module,), {"forward": ns["forward"]})
    w = cls()
    w.model = model
    w.output_attrs = list(output_attrs)
    w.extra_kwargs = dict(extra_kwargs)
    return w


class TimmWrapper(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, pixel_values):
        return (self.model(pixel_values),)


# ----------------------------------------------------------------------------
# model builders: each returns dict(module, inputs, output_names, config,
#                                    dynamic, source, extra)
# ----------------------------------------------------------------------------

HF_INIT = 0.15  # larger than HF's 0.02 so attention probabilities are non-uniform


MAX_POSITIONS = 0


def build_hf(arch, seed, attn_impl):
    import transformers as T
    if arch == "bert":
        cfg = dict(vocab_size=512, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                   intermediate_size=128, max_position_embeddings=64, type_vocab_size=2,
                   initializer_range=HF_INIT)
        conf = T.BertConfig(**cfg)
        ctor = T.BertModel
        inputs = text_inputs(seed + 2, cfg["vocab_size"], with_mask=True, with_token_type=True)
        outs = ["last_hidden_state", "pooler_output"]
        extra = {}
        kind = "text"
    elif arch == "distilbert":
        cfg = dict(vocab_size=512, dim=64, n_layers=2, n_heads=4, hidden_dim=128,
                   max_position_embeddings=64, initializer_range=HF_INIT)
        conf = T.DistilBertConfig(**cfg)
        ctor = T.DistilBertModel
        inputs = text_inputs(seed + 2, cfg["vocab_size"], with_mask=True)
        outs = ["last_hidden_state"]
        extra = {}
        kind = "text"
    elif arch == "gpt2":
        cfg = dict(vocab_size=512, n_embd=64, n_layer=2, n_head=4, n_positions=64,
                   n_inner=128, use_cache=False, initializer_range=HF_INIT)
        conf = T.GPT2Config(**cfg)
        ctor = T.GPT2Model
        # attention_mask is given (transformers 5 otherwise runs packed-sequence
        # detection via aten::diff, which the TorchScript exporter can't export)
        inputs = text_inputs(seed + 2, cfg["vocab_size"], with_mask=True)
        outs = ["last_hidden_state"]
        extra = {"use_cache": False}
        kind = "text"
    elif arch == "llama":
        cfg = dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                   use_cache=False, initializer_range=HF_INIT, tie_word_embeddings=False)
        conf = T.LlamaConfig(**cfg)
        ctor = T.LlamaModel
        # attention_mask is given (transformers 5 otherwise runs packed-sequence
        # detection via aten::diff, which the TorchScript exporter can't export)
        inputs = text_inputs(seed + 2, cfg["vocab_size"], with_mask=True)
        outs = ["last_hidden_state"]
        extra = {"use_cache": False}
        kind = "text"
    elif arch == "vit":
        cfg = dict(image_size=32, patch_size=8, num_channels=3, hidden_size=64, num_hidden_layers=2,
                   num_attention_heads=4, intermediate_size=128, initializer_range=HF_INIT)
        conf = T.ViTConfig(**cfg)
        ctor = T.ViTModel
        inputs = image_inputs(seed + 2, 32)
        outs = ["last_hidden_state", "pooler_output"]
        extra = {}
        kind = "vision"
    else:
        raise KeyError(arch)
    if MAX_POSITIONS and kind == "text":
        # Long-context variants for the dynamic-shape matrix (sequence up
        # to MAX_POSITIONS).
        key = "n_positions" if arch == "gpt2" else "max_position_embeddings"
        cfg[key] = MAX_POSITIONS
        setattr(conf, key, MAX_POSITIONS)
    if attn_impl is not None:
        conf._attn_implementation = attn_impl
        cfg_rec = dict(cfg, attn_implementation=attn_impl)
    else:
        cfg_rec = dict(cfg)
    torch.manual_seed(seed)
    model = ctor(conf)
    model.eval()
    perturb_(model, seed + 1)
    wrapper = make_hf_wrapper(model, list(inputs.keys()), outs, extra).eval()
    return dict(module=wrapper, inputs=inputs, output_names=outs, config=cfg_rec, kind=kind,
                source="hf", model_class=ctor.__name__)


def build_timm(arch, seed, attn_impl=None):
    import timm
    size = 64
    if arch == "resnet":
        name, kw = "test_resnet", dict(channels=(16, 32, 32, 64))
    elif arch == "efficientnet":
        name, kw = "test_efficientnet", {}
    elif arch == "convnext":
        name, kw = "test_convnext", {}
    elif arch == "timm_vit":
        name, kw = "test_vit", dict(img_size=32, patch_size=8, depth=2, dynamic_img_size=False)
        size = 32
    elif arch == "mobilenetv3":
        name, kw = None, {}
    else:
        raise KeyError(arch)
    torch.manual_seed(seed)
    if name is not None:
        if name not in timm.list_models(name):
            raise RuntimeError(f"timm model {name} not available in timm {timm.__version__}")
        model = timm.create_model(name, pretrained=False, num_classes=10, **kw)
        cfg = dict(timm_model=name, num_classes=10, **kw)
        model_class = type(model).__name__
    else:
        # MobileNetV3-Small (timm's mobilenetv3_small arch def) at width 0.35
        # with a 256-wide head, so the weights stay small.
        from timm.models.mobilenetv3 import MobileNetV3
        from timm.models._efficientnet_builder import decode_arch_def, round_channels
        from timm.models._efficientnet_blocks import SqueezeExcite
        from timm.layers import get_act_layer
        arch_def = [
            ['ds_r1_k3_s2_e1_c16_se0.25_nre'],
            ['ir_r1_k3_s2_e4.5_c24_nre', 'ir_r1_k3_s1_e3.67_c24_nre'],
            ['ir_r1_k5_s2_e4_c40_se0.25', 'ir_r2_k5_s1_e6_c40_se0.25'],
            ['ir_r2_k5_s1_e3_c48_se0.25'],
            ['ir_r3_k5_s2_e6_c96_se0.25'],
            ['cn_r1_k1_s1_c576'],
        ]
        mult = 0.35
        se_layer = partial(SqueezeExcite, gate_layer='hard_sigmoid', force_act_layer=nn.ReLU,
                           rd_round_fn=round_channels)
        model = MobileNetV3(
            block_args=decode_arch_def(arch_def), num_classes=10, num_features=256, stem_size=16,
            fix_stem=True, round_chs_fn=partial(round_channels, multiplier=mult),
            norm_layer=nn.BatchNorm2d, act_layer=get_act_layer('hard_swish'), se_layer=se_layer)
        cfg = dict(timm_class="MobileNetV3", arch_def="mobilenetv3_small (timm)", channel_multiplier=mult,
                   num_features=256, stem_size=16, fix_stem=True, act_layer="hard_swish", num_classes=10)
        model_class = "MobileNetV3"
    model.eval()
    perturb_(model, seed + 1)
    cfg["input_size"] = [3, size, size]
    return dict(module=TimmWrapper(model).eval(), inputs=image_inputs(seed + 2, size), output_names=["logits"],
                config=cfg, kind="vision", source="timm", model_class=model_class)


ARCHS = [
    # (arch, builder, seed)
    ("bert", build_hf, 1001),
    ("gpt2", build_hf, 1002),
    ("distilbert", build_hf, 1003),
    ("llama", build_hf, 1004),
    ("vit", build_hf, 1005),
    ("resnet", build_timm, 2001),
    ("efficientnet", build_timm, 2002),
    ("mobilenetv3", build_timm, 2003),
    ("convnext", build_timm, 2004),
    ("timm_vit", build_timm, 2005),
]


# ----------------------------------------------------------------------------
# export
# ----------------------------------------------------------------------------

def dyn_axes_for(kind, input_names):
    if kind == "text":
        return {n: {0: "batch", 1: "sequence"} for n in input_names}
    return {n: {0: "batch"} for n in input_names}


def export_ts(b, path, dynamic):
    names = list(b["inputs"].keys())
    args = tuple(torch.from_numpy(b["inputs"][n]) for n in names)
    kw = dict(input_names=names, output_names=b["output_names"], opset_version=TS_OPSET,
              do_constant_folding=True, dynamo=False)
    if dynamic:
        da = dyn_axes_for(b["kind"], names)
        for o in b["output_names"]:
            if b["kind"] == "text":
                da[o] = {0: "batch", 1: "sequence"} if o == "last_hidden_state" else {0: "batch"}
            else:
                da[o] = {0: "batch"}
        kw["dynamic_axes"] = da
    with torch.no_grad():
        torch.onnx.export(b["module"], args, path, **kw)


def export_dynamo(b, path, dynamic):
    from torch.export import Dim
    names = list(b["inputs"].keys())
    args = tuple(torch.from_numpy(b["inputs"][n]) for n in names)
    kw = dict(input_names=names, output_names=b["output_names"], dynamo=True)
    if dynamic:
        batch = Dim("batch", min=1, max=1024)
        if b["kind"] == "text":
            seq = Dim("sequence", min=2, max=64)
            kw["dynamic_shapes"] = {n: {0: batch, 1: seq} for n in names}
        else:
            kw["dynamic_shapes"] = {n: {0: batch} for n in names}
    with torch.no_grad():
        prog = torch.onnx.export(b["module"], args, **kw)
    prog.save(path)


def graph_ops(model):
    import onnx
    ops = set()

    def walk(g):
        for n in g.node:
            ops.add(n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}::{n.op_type}")
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g)
                elif a.type == onnx.AttributeProto.GRAPHS:
                    for sg in a.graphs:
                        walk(sg)
    walk(model.graph)
    for f in model.functions:
        for n in f.node:
            ops.add(n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}::{n.op_type}")
    return sorted(ops)


def onnx_dtype_name(elem_type):
    import onnx
    return onnx.helper.tensor_dtype_to_np_dtype(elem_type).name


def folder_bytes(d):
    return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))


def run_entry(arch, builder, seed, exporter, out_dir):
    import onnx
    import onnxruntime as ort
    name = f"{arch}-{exporter}"
    entry = {"name": name, "arch": arch, "exporter": exporter, "seed": seed}
    notes = []
    folder = os.path.join(out_dir, name)
    b = None
    last_err = None
    attn_choices = [None, "eager"] if builder is build_hf else [None]
    done = False
    for attn in attn_choices:
        for dynamic in (True, False):
            shutil.rmtree(folder, ignore_errors=True)
            os.makedirs(folder)
            path = os.path.join(folder, "model.onnx")
            try:
                b = builder(arch, seed, attn)
                if exporter == "ts":
                    export_ts(b, path, dynamic)
                else:
                    export_dynamo(b, path, dynamic)
                onnx.load(path)  # must be loadable
                entry["dynamic"] = dynamic
                done = True
                break
            except Exception as e:  # noqa
                msg = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"[:400]
                notes.append(f"attn={attn or 'default'} dynamic={dynamic}: {msg}")
                last_err = msg
                traceback.print_exc(limit=3)
        if done:
            break
    if not done:
        shutil.rmtree(folder, ignore_errors=True)
        entry.update({"source": "hf" if builder is build_hf else "timm", "error": last_err,
                      "attempts": notes})
        return entry
    if notes:
        entry["fallback_notes"] = notes

    path = os.path.join(folder, "model.onnx")
    m = onnx.load(path)
    # reference outputs from PyTorch (CPU, float32)
    names = list(b["inputs"].keys())
    with torch.no_grad():
        ref = b["module"](*[torch.from_numpy(b["inputs"][n]) for n in names])
    ref = [r.detach().float().numpy() for r in ref]
    init_names = {i.name for i in m.graph.initializer}
    g_inputs = [i for i in m.graph.input if i.name not in init_names]
    g_outputs = [o.name for o in m.graph.output]
    if len(g_outputs) != len(ref):
        raise RuntimeError(f"{name}: graph has {len(g_outputs)} outputs, torch returned {len(ref)}")
    in_arrays = {}
    for gi in g_inputs:
        if gi.name not in b["inputs"]:
            raise RuntimeError(f"{name}: unexpected graph input {gi.name}")
        in_arrays[gi.name] = b["inputs"][gi.name]
    pruned = [n for n in names if n not in in_arrays]
    if pruned:
        entry["pruned_inputs"] = pruned
    np.savez(os.path.join(folder, "inputs.npz"), **in_arrays)
    np.savez(os.path.join(folder, "reference.npz"), **{n: r for n, r in zip(g_outputs, ref)})

    sym = {}
    for gi in g_inputs:
        dims = gi.type.tensor_type.shape.dim
        sym[gi.name] = [d.dim_param if d.HasField("dim_param") and d.dim_param else None for d in dims]
    out_sym = {}
    for go in m.graph.output:
        dims = go.type.tensor_type.shape.dim
        out_sym[go.name] = [d.dim_param if d.HasField("dim_param") and d.dim_param else
                            (d.dim_value if d.HasField("dim_value") else None) for d in dims]

    opset = None
    for oi in m.opset_import:
        if oi.domain in ("", "ai.onnx"):
            opset = oi.version
    entry.update({
        "source": b["source"],
        "model_class": b["model_class"],
        "opset": opset,
        "config": b["config"],
        "inputs": {n: {"shape": list(a.shape), "dtype": a.dtype.name} for n, a in in_arrays.items()},
        "outputs": g_outputs,
        "output_shapes": {n: list(r.shape) for n, r in zip(g_outputs, ref)},
        "output_dims": out_sym,
        "symbolic_dims": sym,
        "ops": graph_ops(m),
        "num_nodes": len(m.graph.node),
        "num_params": int(sum(p.numel() for p in b["module"].parameters())),
        "external_data": False,
    })

    # bert-ts: external data
    if name == "bert-ts":
        onnx.save_model(m, path, save_as_external_data=True, all_tensors_to_one_file=True,
                        location="model.onnx.data", size_threshold=1024)
        entry["external_data"] = True
        entry["external_data_file"] = "model.onnx.data"

    # ORT sanity check
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    res = sess.run(g_outputs, in_arrays)
    errs = {}
    for n, r, o in zip(g_outputs, ref, res):
        denom = float(np.max(np.abs(r))) or 1.0
        errs[n] = float(np.max(np.abs(o.astype(np.float64) - r.astype(np.float64)))) / denom
    entry["ort_rel_err_per_output"] = errs
    entry["ort_max_rel_err"] = max(errs.values())
    entry["bytes"] = folder_bytes(folder)
    return entry


def versions():
    import onnx
    v = {"python": platform.python_version(), "torch": torch.__version__, "onnx": onnx.__version__,
         "numpy": np.__version__}
    for mod in ("transformers", "timm", "onnxscript", "onnxruntime", "onnx_ir"):
        try:
            v[mod] = __import__(mod).__version__
        except Exception as e:  # noqa
            v[mod] = f"unavailable ({type(e).__name__})"
    return v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="models")
    ap.add_argument("--only", default="", help="comma separated arch names")
    ap.add_argument("--exporters", default="ts,dynamo")
    ap.add_argument("--max-positions", type=int, default=0,
                    help="text models: position table size (default: the small config's 64)")
    args = ap.parse_args()
    global MAX_POSITIONS
    MAX_POSITIONS = args.max_positions

    torch.set_num_threads(max(1, min(8, os.cpu_count() or 1)))
    out_dir = args.out
    os.makedirs(out_dir, exist_ok=True)
    vers = versions()
    print("versions:", json.dumps(vers), flush=True)

    only = [a for a in args.only.split(",") if a]
    exporters = [e for e in args.exporters.split(",") if e]
    manifest = []
    t_all = time.time()
    for arch, builder, seed in ARCHS:
        if only and arch not in only:
            continue
        for exp in exporters:
            t0 = time.time()
            print(f"=== {arch}-{exp}", flush=True)
            try:
                entry = run_entry(arch, builder, seed, exp, out_dir)
            except Exception as e:  # noqa
                traceback.print_exc()
                shutil.rmtree(os.path.join(out_dir, f"{arch}-{exp}"), ignore_errors=True)
                entry = {"name": f"{arch}-{exp}", "arch": arch, "exporter": exp, "seed": seed,
                         "source": "hf" if builder is build_hf else "timm",
                         "error": f"{type(e).__name__}: {e}"[:400]}
            entry["export_seconds"] = round(time.time() - t0, 2)
            entry["versions"] = vers
            manifest.append(entry)
            if "error" in entry:
                print(f"    FAILED: {entry['error']}", flush=True)
            else:
                print(f"    ok opset={entry['opset']} dynamic={entry['dynamic']} "
                      f"err={entry['ort_max_rel_err']:.2e} bytes={entry['bytes']} "
                      f"({entry['export_seconds']}s)", flush=True)

    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)

    # summary
    print("\nSUMMARY (%.1fs)" % (time.time() - t_all))
    print(f"{'entry':22} {'opset':>5} {'dyn':>3} {'ort_rel_err':>11} {'bytes':>9}  ops")
    total = 0
    for e in manifest:
        if "error" in e:
            print(f"{e['name']:22} FAILED: {e['error']}")
            continue
        total += e["bytes"]
        print(f"{e['name']:22} {e['opset']:>5} {'y' if e['dynamic'] else 'n':>3} "
              f"{e['ort_max_rel_err']:>11.2e} {e['bytes']:>9}  {','.join(e['ops'])}")
    for exp in exporters:
        u = sorted({o for e in manifest if e.get('exporter') == exp and 'ops' in e for o in e['ops']})
        print(f"union ops [{exp}] ({len(u)}): {','.join(u)}")
    print(f"total bytes: {total}")
    n_fail = sum(1 for e in manifest if "error" in e)
    print(f"{len(manifest) - n_fail} ok, {n_fail} failed")


if __name__ == "__main__":
    main()
