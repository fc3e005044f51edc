#!/usr/bin/env python3
"""mcc --target cuda against PyTorch on the H200, on the small models/ configs.

Rebuilds each architecture exactly as scripts/export_models.py does (same
seeds, so the same weights the .so files were compiled from), checks mcc's
outputs against PyTorch's on the GPU, then times, fp32 with TF32 off
everywhere: torch eager, torch.compile(mode="reduce-overhead") and mcc.
Torch times are CUDA-event medians with inputs already on the GPU; mcc is
timed from the host around a whole run (its C API takes host buffers, so
the numbers include the input and output copies). Prints a table of
medians and the ratio mcc / best torch.

    python3 scripts/bench_gpu_small.py --so-dir .cuda_so --runtime build/lib/Runtime/libmccrt.so
"""
import argparse
import os
import sys
import time

import numpy as np

# export_models.py hides the GPU for exporting; this script needs it.
_visible = os.environ.get("CUDA_VISIBLE_DEVICES")
import torch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import export_models as em  # noqa: E402

if _visible is None:
    os.environ.pop("CUDA_VISIBLE_DEVICES", None)
else:
    os.environ["CUDA_VISIBLE_DEVICES"] = _visible
import mcc  # noqa: E402


def cuda_median_ms(fn, warmup=10, runs=50):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return float(np.median(times))


def host_median_ms(fn, warmup=10, runs=50):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return float(np.median(times))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--so-dir", required=True)
    ap.add_argument("--runtime", default=None)
    ap.add_argument("--only", default="bert,gpt2,llama,resnet,mobilenetv3,timm_vit")
    ap.add_argument("--exporter", default="ts")
    ap.add_argument("--no-compile", action="store_true")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    only = args.only.split(",")
    rows = []
    for arch, builder, seed in em.ARCHS:
        if arch not in only:
            continue
        b = builder(arch, seed, None)
        module = b["module"].cuda().eval()
        feeds = {k: np.asarray(v) for k, v in b["inputs"].items()}
        gpu_feeds = {k: torch.from_numpy(v).cuda() for k, v in feeds.items()}
        model = mcc.load(os.path.join(args.so_dir, f"{arch}-{args.exporter}.so"), runtime=args.runtime)
        np_feeds = {i.name: feeds[i.name].astype(i.dtype) for i in model.inputs}
        with torch.no_grad():
            ref = module(**gpu_feeds)
            ref = ref if isinstance(ref, (tuple, list)) else (ref,)
            out = model.run(np_feeds)
            got = [out[o.name] for o in model.outputs]
            err = max(float(np.max(np.abs(g - r.float().cpu().numpy())) /
                            max(float(r.abs().max()), 1e-30)) for g, r in zip(got, ref))
            eager = cuda_median_ms(lambda: module(**gpu_feeds))
            ro = float("nan")
            if not args.no_compile:
                compiled = torch.compile(module, mode="reduce-overhead")
                ro = cuda_median_ms(lambda: compiled(**gpu_feeds), warmup=20)
            m = host_median_ms(lambda: model.run(np_feeds))
        best = min(x for x in (eager, ro) if x == x)
        rows.append((arch, err, eager, ro, m, m / best))
        print(f"{arch}: done", flush=True)
    print(f"\n{'model':14} {'rel.err vs torch':>16} {'eager ms':>9} {'compile-ro ms':>14} {'mcc ms':>8} {'mcc/best':>9}")
    for r in rows:
        print(f"{r[0]:14} {r[1]:16.2e} {r[2]:9.3f} {r[3]:14.3f} {r[4]:8.3f} {r[5]:9.2f}")


if __name__ == "__main__":
    main()
