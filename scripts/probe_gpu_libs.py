#!/usr/bin/env python3
"""What cuBLAS and cuDNN give at fp32 (TF32 off) on this GPU, for the GEMM
and convolution shapes of the CUDA issue's rows: which operand layout and
which library path mcc's runtime should use. Not a test, not the benchmark.

    python3 scripts/probe_gpu_libs.py
"""
import statistics
import torch
import torch.nn.functional as F

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = "cuda"


def timeit(fn, runs=30, warm=5):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(runs):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e))
    return statistics.median(ts)


def gemms():
    shapes = {
        "bert-b16": [(2048, 768, 768), (2048, 768, 3072), (2048, 3072, 768), (2048, 768, 2304)],
        "vit-b8": [(1576, 768, 768), (1576, 768, 3072), (1576, 3072, 768), (1576, 768, 2304)],
        "gpt2-b1": [(128, 768, 2304), (128, 768, 768), (128, 768, 3072), (128, 3072, 768),
                    (128, 768, 50257)],
        "resnet-b32-1x1": [(32 * 56 * 56, 64, 256), (32 * 28 * 28, 512, 128), (32 * 7 * 7, 2048, 512)],
    }
    print("GEMM, fp32, ms (M,K,N): NN=mm(A[M,K],B[K,N]) TN=linear(A,W[N,K]) "
          "TNb=linear+bias NT=mm(A^T view,B)")
    for row, lst in shapes.items():
        for m, k, n in lst:
            a = torch.randn(m, k, device=dev)
            b = torch.randn(k, n, device=dev)
            w = b.t().contiguous()
            bias = torch.randn(n, device=dev)
            at = a.t().contiguous()
            flop = 2 * m * n * k
            nn_ = timeit(lambda: torch.mm(a, b))
            tn = timeit(lambda: F.linear(a, w))
            tnb = timeit(lambda: F.linear(a, w, bias))
            nt = timeit(lambda: torch.mm(at.t(), b))
            print(f"{row:15s} {m:6d} {k:5d} {n:6d}  NN {nn_:.3f} ({flop/nn_/1e9:.1f} TF/s)  "
                  f"TN {tn:.3f} ({flop/tn/1e9:.1f})  TNb {tnb:.3f}  NT(A col) {nt:.3f}", flush=True)
    # attention batched products
    for (b_, s, d) in [(16 * 12, 128, 64), (8 * 12, 197, 64)]:
        q = torch.randn(b_, s, d, device=dev)
        kt = torch.randn(b_, d, s, device=dev)
        k_ = kt.transpose(1, 2).contiguous()
        t1 = timeit(lambda: torch.bmm(q, kt))
        t2 = timeit(lambda: torch.bmm(q, k_.transpose(1, 2)))
        print(f"bmm QK^T {b_}x{s}x{d}: K^T contiguous {t1:.3f}  K contiguous(T) {t2:.3f}")


def convs():
    import timm
    from torch.fx.experimental.optimization import fuse
    for arch, batch in [("resnet50", 32), ("resnext101_32x8d", 8)]:
        m = timm.create_model(arch, pretrained=False).eval().to(dev)
        x = torch.randn(batch, 3, 224, 224, device=dev)
        with torch.no_grad():
            eager = timeit(lambda: m(x), runs=20)
            fused = fuse(m)
            tf = timeit(lambda: fused(x), runs=20)
            torch.backends.cudnn.benchmark = True
            tb = timeit(lambda: fused(x), runs=20)
            torch.backends.cudnn.benchmark = False
            mcl = fused.to(memory_format=torch.channels_last)
            xcl = x.to(memory_format=torch.channels_last)
            tcl = timeit(lambda: mcl(xcl), runs=20)
            print(f"{arch} b{batch}: eager {eager:.2f} ms, BN folded {tf:.2f}, folded+cudnn.benchmark "
                  f"{tb:.2f}, folded channels_last {tcl:.2f}", flush=True)
            fused = fuse(m)
            from torch.profiler import profile, ProfilerActivity
            with profile(activities=[ProfilerActivity.CUDA]) as p:
                for _ in range(5):
                    fused(x)
                torch.cuda.synchronize()
            agg = {}
            for ev in p.events():
                if ev.device_type == torch.autograd.DeviceType.CUDA:
                    agg.setdefault(ev.name, [0, 0.0])
                    agg[ev.name][0] += 1
                    agg[ev.name][1] += ev.device_time_total if hasattr(ev, "device_time_total") else ev.cuda_time_total
            tot = sum(v[1] for v in agg.values()) / 5 / 1000
            print(f"  folded, GPU busy per run {tot:.2f} ms; top kernels (ms/run, calls/run):")
            for name, (c, t) in sorted(agg.items(), key=lambda kv: -kv[1][1])[:12]:
                print(f"    {t/5/1000:7.3f} {c//5:4d}  {name[:110]}")


if __name__ == "__main__":
    print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version(), torch.cuda.get_device_name())
    gemms()
    convs()
