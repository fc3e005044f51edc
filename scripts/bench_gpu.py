#!/usr/bin/env python3
"""Full-size models on the GPU: mcc --target cuda against PyTorch, one call.

For each row: regenerate the architecture with its fixed seed
(scripts/export_full.py), rebuild the .so's external weights from that
export (scripts/pack_weights.py; the .so, its .weights.json and .derived
travel, the weights do not), check mcc against PyTorch on the GPU, then
time, fp32 with TF32 off everywhere: torch eager, torch.compile default,
torch.compile mode="reduce-overhead", and mcc. Torch: CUDA-event medians,
inputs on the GPU. mcc: CUDA-event medians with CUDA tensors in and out
(the loader's device path), and, as "mcc host", host-side medians with
numpy arrays in and out (host copies included). Ratio = mcc / best torch.

    python3 scripts/bench_gpu.py --so-root .full --work /tmp/full
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROWS = [  # (arch, batch, seq, so name): the table
    ("bert-base", 1, 128, "bert"),
    ("bert-base", 16, 128, "bert-b16"),
    ("gpt2", 1, 128, "gpt2"),
    ("resnet50", 1, 0, "resnet50-b1"),
    ("resnet50", 32, 0, "resnet50-b32"),
    ("resnext101_32x8d", 8, 0, "resnext101-b8"),
    ("vit_base_patch16_224", 8, 0, "vit-b8"),
    ("mobilenetv3_large_100", 1, 0, "mobilenetv3-b1"),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--so-root", required=True, help="holds <arch>/cuda/<name>.so (+ .weights.json/.derived)")
    ap.add_argument("--work", default="/tmp/full")
    ap.add_argument("--runtime", default=None)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--only", default=None, help="comma-separated .so names (bert,gpt2,...)")
    ap.add_argument("--variants", default="",
                    help="also time mcc alone (same .so) under these environment settings, "
                         "comma-separated NAME=VALUE: MCC_CUDA_GEMM=cublas,MCC_CUDA_PRECISION=tf32x3")
    ap.add_argument("--mcc-only", action="store_true",
                    help="skip torch's timings and mcc's fp32 run: time only the --variants "
                         "(each still checked against torch)")
    ap.add_argument("--gemm-variants", default="",
                    help="shorthand for --variants MCC_CUDA_GEMM=<each>")
    args = ap.parse_args()
    only = set(args.only.split(",")) if args.only else None
    results = []
    for arch, batch, seq, name in ROWS:
        if only and name not in only:
            continue
        so = os.path.join(args.so_root, arch, "cuda", name + ".so")
        if not os.path.exists(so):
            print(f"{arch}: no {so}, skipped", flush=True)
            continue
        out = os.path.join(args.work, f"{arch}-b{batch}")
        subprocess.run([sys.executable, os.path.join(HERE, "export_full.py"), "--arch", arch,
                        "--batch", str(batch), "--seq", str(seq), "--out", out], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        packed = subprocess.run([sys.executable, os.path.join(HERE, "pack_weights.py"),
                                 os.path.join(out, "model.onnx"), so + ".weights.json", "-o",
                                 so + ".weights"], capture_output=True, text=True)
        if packed.returncode:
            results.append(f"{arch:10} b{batch}: weights not rebuilt: {packed.stderr.strip()[-200:]}")
            print(results[-1], flush=True)
            continue
        cmd = [sys.executable, os.path.join(HERE, "bench_gpu.py"), "--one", arch, so, str(batch),
               str(seq), str(args.runs)] + (["--runtime", args.runtime] if args.runtime else [])
        env = dict(os.environ, MCC_CUDA_GEMM_VERBOSE="1")
        if args.mcc_only:  # no torch timings and no fp32 run; the variants still check against torch
            r = subprocess.CompletedProcess(cmd, 0, "", "")
        else:
            r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        line = [l for l in r.stdout.splitlines() if l.startswith("ROW ")]
        print("\n".join(l for l in r.stdout.splitlines() if l.startswith(("PROFILE ", "FIRST "))), flush=True)
        print("\n".join("GEMM " + l for l in r.stderr.splitlines() if l.startswith("mcc: GEMM")), flush=True)
        variants = [v for v in args.variants.split(",") if v] + \
            [f"MCC_CUDA_GEMM={p}" for p in args.gemm_variants.split(",") if p]
        for variant in variants:
            key, _, value = variant.partition("=")
            v = subprocess.run([sys.executable, os.path.join(HERE, "bench_gpu.py"), "--one-mcc", arch,
                                so, str(batch), str(seq), str(args.runs)] +
                               (["--runtime", args.runtime] if args.runtime else []),
                               capture_output=True, text=True,
                               env=dict(os.environ, MCC_CUDA_GEMM_VERBOSE="1", **{key: value}))
            got = [l for l in v.stdout.splitlines() if l.startswith("MCC ")]
            print("\n".join("VARIANT " + l for l in v.stdout.splitlines() if l.startswith("PROFILE ")))
            print(f"VARIANT {arch} b{batch} {variant}: "
                  f"{got[0][4:] if got else 'FAILED ' + v.stderr.strip()[-300:]}", flush=True)
            gemms = [l for l in v.stderr.splitlines() if l.startswith("mcc: GEMM")]
            kinds = {}
            for l in gemms:
                k = l.split("chose ")[-1].split(" (")[0]
                kinds[k] = kinds.get(k, 0) + 1
            if kinds:
                print(f"VARIANT {arch} b{batch} {variant}: GEMM shapes by choice {kinds}", flush=True)
                print("\n".join("VARIANT GEMM " + l for l in gemms), flush=True)
        if args.mcc_only:
            continue  # the VARIANT lines above are this row's result
        results.append(line[0][4:] if line else f"{arch:10} b{batch} s{seq}: FAILED {r.stderr.strip()[-300:]}")
        print(results[-1], flush=True)
    print(f"\n{'model':10} {'shape':10} {'rel.err':>9} {'eager':>8} {'compile':>8} {'reduce-oh':>9} "
          f"{'mcc host':>9} {'mcc':>8} {'mcc/best':>8}")
    print("\n".join(results))


def profile_mcc(model, feeds, arch, batch, runs=5):
    """Where mcc's time goes: CUPTI (through torch.profiler) sees every
    kernel the .so launches, also inside CUDA graphs. Prints the kernel count
    per run, GPU-busy time against wall time (the difference is launch gaps
    and host copies), and the kernels that take most of the time."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
        t = time.perf_counter()
        for _ in range(runs):
            model.run(feeds)
        torch.cuda.synchronize()
        wall = (time.perf_counter() - t) * 1e3 / runs
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    busy = sum(e.device_time for e in kernels) / 1e3 / runs
    by_name = {}
    for e in kernels:
        n, tot = by_name.get(e.name, (0, 0.0))
        by_name[e.name] = (n + 1, tot + e.device_time / 1e3 / runs)
    print(f"PROFILE {arch} b{batch}: {len(kernels) / runs:.0f} kernels/run, GPU busy "
          f"{busy:.3f} ms of {wall:.3f} ms wall ({100 * busy / wall:.0f}%)")
    # mcc's own kernels are mcc_<n>_<what>: group them by <what>; library
    # kernels (cuBLAS) and copies by name.
    import re
    by_kind = {}
    for name, (n, tot) in by_name.items():
        m = re.match(r"mcc_\d+_(.*)", name)
        kind = "mcc " + m.group(1) if m else name
        c, t = by_kind.get(kind, (0, 0.0))
        by_kind[kind] = (c + n, t + tot)
    for name, (n, tot) in sorted(by_kind.items(), key=lambda kv: -kv[1][1])[:10]:
        print(f"PROFILE   {tot:8.3f} ms  {n // runs:4d}x  {name[:90]}")
    top = int(os.environ.get("MCC_BENCH_TOP_KERNELS", "5"))
    mine = [kv for kv in sorted(by_name.items(), key=lambda kv: -kv[1][1]) if kv[0].startswith("mcc_")]
    for name, (n, tot) in mine[:top]:
        print(f"PROFILE   top kernel {name}: {tot:.3f} ms ({n // runs}x)")


def one(arch, so, batch, seq, runs, runtime, mcc_only=False):
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.join(HERE, "..", "python"))
    import export_full  # hides the GPU for exporting: undo that below
    import mcc
    os.environ.pop("CUDA_VISIBLE_DEVICES", None)
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    module, inputs, outputs = export_full.build(arch, batch, seq)
    module = module.cuda()
    gpu_in = [v.cuda() for v in inputs.values()]

    def cuda_ms(fn, warmup=10):
        for _ in range(warmup):
            fn()
        torch.cuda.synchronize()
        ts = []
        for _ in range(runs):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            e.synchronize()
            ts.append(s.elapsed_time(e))
        return float(np.median(ts))

    t0 = time.perf_counter()
    model = mcc.load(so, runtime=runtime)
    feeds = {k: v.numpy() for k, v in inputs.items()}
    got = model.run(feeds)
    first = (time.perf_counter() - t0) * 1e3
    if mcc_only:
        dev_call, dev_outs = model.prepare({k: v for k, v in zip(inputs.keys(), gpu_in)})
        dev_call()
        with torch.no_grad():
            ref = module(*gpu_in)
        err = max(float((dev_outs[o] - r).abs().max()) / float(r.abs().max())
                  for o, r in zip(outputs, ref))
        print(f"MCC {cuda_ms(dev_call):.3f} ms (rel.err {err:.1e}, load + first run {first:.0f} ms)")
        if os.environ.get("MCC_BENCH_PROFILE", "1") != "0":
            profile_mcc(model, feeds, arch, batch)
        return
    print(f"FIRST {arch} b{batch}: load + first run {first:.0f} ms (weights upload, GEMM tuning)")
    with torch.no_grad():
        ref = module(*gpu_in)
        err = max(float(np.max(np.abs(got[o] - r.cpu().numpy())) / float(r.abs().max()))
                  for o, r in zip(outputs, ref))
        eager = cuda_ms(lambda: module(*gpu_in))
        comp = torch.compile(module)
        default = cuda_ms(lambda: comp(*gpu_in), warmup=5)
        torch._dynamo.reset()
        ro_mod = torch.compile(module, mode="reduce-overhead")
        ro = cuda_ms(lambda: ro_mod(*gpu_in), warmup=10)
    for _ in range(10):
        model.run(feeds)
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        model.run(feeds)
        ts.append((time.perf_counter() - t) * 1e3)
    m_host = float(np.median(ts))
    # Inputs and outputs as CUDA tensors, as torch gets them: the run copies
    # device to device; timed with CUDA events like the torch columns.
    dev_call, dev_outs = model.prepare({k: v for k, v in zip(inputs.keys(), gpu_in)})
    dev_call()
    err_dev = max(float((dev_outs[o] - r).abs().max()) / float(r.abs().max())
                  for o, r in zip(outputs, ref))
    m = cuda_ms(dev_call)
    err = max(err, err_dev)
    best = min(eager, default, ro)
    if os.environ.get("MCC_BENCH_PROFILE", "1") != "0":
        profile_mcc(model, feeds, arch, batch)
    print(f"ROW {arch:10} b{batch} s{seq:<5} {err:9.2e} {eager:8.3f} {default:8.3f} {ro:9.3f} "
          f"{m_host:9.3f} {m:8.3f} {m / best:8.2f}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] in ("--one", "--one-mcc"):
        a = sys.argv[2:]
        rt = a[a.index("--runtime") + 1] if "--runtime" in a else None
        one(a[0], a[1], int(a[2]), int(a[3]), int(a[4]), rt, sys.argv[1] == "--one-mcc")
    else:
        main()
