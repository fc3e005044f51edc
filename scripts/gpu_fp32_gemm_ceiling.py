#!/usr/bin/env python3
"""How fast cuBLAS runs fp32 products (TF32 off) on this GPU, per shape.

The CUDA issue's bert-base b16 and vit b8 rows spend ~88% of their time in
fp32 GEMMs that mcc hands to cuBLAS(Lt). This measures, with torch's cuBLAS
and TF32 off, the rate of each product shape of those two models and of
large square products (cuBLAS's best case), against the card's fp32 FMA
peak (SMs x 128 lanes x 2 flops x clock), and prints the rate each row's
GEMMs would need for mcc to reach 0.8 of torch's best time.

    python3 scripts/gpu_fp32_gemm_ceiling.py [--runs 50]
"""
import argparse
import subprocess

import torch

# (label, batch, m, k, n, count per run): the products of one forward pass.
MODELS = {
    # bert-base, batch 16, sequence 128: 2048 tokens, 12 heads, 12 layers.
    "bert-b16": [("qkv", 1, 2048, 768, 2304, 12), ("attn-out", 1, 2048, 768, 768, 12),
                 ("ffn-up", 1, 2048, 768, 3072, 12), ("ffn-down", 1, 2048, 3072, 768, 12),
                 ("q.k^T", 192, 128, 64, 128, 12), ("p.v", 192, 128, 128, 64, 12)],
    # vit-base/16 at 224, batch 8: 8 x 197 tokens, 12 heads, 12 layers.
    "vit-b8": [("qkv", 1, 1576, 768, 2304, 12), ("attn-out", 1, 1576, 768, 768, 12),
               ("ffn-up", 1, 1576, 768, 3072, 12), ("ffn-down", 1, 1576, 3072, 768, 12),
               ("q.k^T", 96, 197, 64, 197, 12), ("p.v", 96, 197, 197, 64, 12)],
}
SQUARE = [4096, 8192]


def median_ms(fn, runs):
    for _ in range(5):
        fn()
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def product_ms(batch, m, k, n, runs):
    a = torch.randn(batch, m, k, device="cuda")
    w = torch.randn(batch, n, k, device="cuda")  # nn.Linear's layout: x @ w^T
    out = torch.empty(batch, m, n, device="cuda")
    if batch == 1:
        return median_ms(lambda: torch.mm(a[0], w[0].t(), out=out[0]), runs)
    return median_ms(lambda: torch.bmm(a, w.transpose(1, 2), out=out), runs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--target-ms", default="bert-b16=8.17,vit-b8=6.76",
                    help="0.8 of torch's best whole-model time per row (docs/benchmarks.md)")
    ap.add_argument("--other-ms", default="bert-b16=1.18,vit-b8=1.19",
                    help="the row's non-GEMM time in mcc's own profile")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    props = torch.cuda.get_device_properties(0)
    clock_mhz = int(subprocess.run(
        ["nvidia-smi", "--query-gpu=clocks.max.sm", "--format=csv,noheader,nounits"],
        capture_output=True, text=True).stdout.split()[0])
    peak = props.multi_processor_count * 128 * 2 * clock_mhz * 1e6 / 1e12
    print(f"{props.name}: {props.multi_processor_count} SMs, max SM clock {clock_mhz} MHz, "
          f"fp32 FMA peak {peak:.1f} TFLOPS; torch {torch.__version__}, TF32 off")
    print("| shape | batch x m x k x n | ms | TFLOPS | % of peak |")
    print("|---|---|--:|--:|--:|")
    for size in SQUARE:
        ms = product_ms(1, size, size, size, args.runs)
        tf = 2 * size**3 / ms / 1e9
        print(f"| square | 1 x {size}^3 | {ms:.3f} | {tf:.1f} | {100 * tf / peak:.0f} |")
    targets = dict(kv.split("=") for kv in args.target_ms.split(","))
    others = dict(kv.split("=") for kv in args.other_ms.split(","))
    for model, shapes in MODELS.items():
        total_ms = total_flop = 0.0
        for label, batch, m, k, n, count in shapes:
            ms = product_ms(batch, m, k, n, args.runs)
            tf = 2 * batch * m * k * n / ms / 1e9
            total_ms += ms * count
            total_flop += 2.0 * batch * m * k * n * count
            print(f"| {model} {label} | {batch} x {m} x {k} x {n} | {ms:.3f} | {tf:.1f} | {100 * tf / peak:.0f} |")
        rate = total_flop / total_ms / 1e9
        need_ms = float(targets[model]) - float(others[model])
        need = total_flop / need_ms / 1e9
        print(f"{model}: these products {total_ms:.2f} ms a run at {rate:.1f} TFLOPS "
              f"({100 * rate / peak:.0f}% of peak); 0.8 of torch with the rest at "
              f"{others[model]} ms needs them in {need_ms:.2f} ms: {need:.1f} TFLOPS "
              f"({100 * need / peak:.0f}% of peak)")


if __name__ == "__main__":
    main()
