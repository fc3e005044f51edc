#!/usr/bin/env python3
"""Stream-ordered runs on the GPU (mcc_run_on_stream through the Python
loader with CUDA tensors), on one compiled models/ entry:

1. ordering: inputs written on a side stream behind a long GPU sleep, the
   model called under that stream, outputs compared with the entry's
   reference (wrong if the run did not wait for the sleep and the write);
2. no host wait: the call returns before the sleep ahead of it ends;
3. host buffers are refused by mcc_run_on_stream with a message.

    python3 scripts/check_stream_order.py --so .carry/small/bert-ts.so \\
        --entry models/bert-ts --runtime .carry/libmccrt.so
"""
import argparse
import ctypes
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import mcc  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--so", required=True)
    ap.add_argument("--entry", required=True)
    ap.add_argument("--runtime", default=None)
    args = ap.parse_args()
    import torch

    model = mcc.load(args.so, runtime=args.runtime)
    feeds = dict(np.load(os.path.join(args.entry, "inputs.npz")))
    ref = dict(np.load(os.path.join(args.entry, "reference.npz")))
    failures = []

    side = torch.cuda.Stream()
    dev = {k: torch.zeros(v.shape, dtype=torch.from_numpy(v).dtype, device="cuda")
           for k, v in feeds.items()}
    # Warm up (the first run tunes the products and the second captures
    # the CUDA graph, both waiting on the host).
    with torch.cuda.stream(side):
        for _ in range(3):
            model(**dev)
    torch.cuda.synchronize()
    staged = {k: torch.from_numpy(v).cuda() for k, v in feeds.items()}
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU time on this stream
        for k in feeds:
            dev[k].copy_(staged[k])  # queued behind the sleep
        t = time.perf_counter()
        out = model(**dev)
        call_ms = (time.perf_counter() - t) * 1e3
        t = time.perf_counter()
        side.synchronize()
        wait_ms = (time.perf_counter() - t) * 1e3
    for name, r in ref.items():
        got = out[name].cpu().numpy()
        err = float(np.max(np.abs(got - r)) / max(float(np.max(np.abs(r))), 1e-30))
        print(f"ordering: output {name} rel.err {err:.2e}")
        if not err <= 1e-4:
            failures.append(f"output {name} off by {err:.2e}: the run did not wait for its inputs")
    print(f"no host wait: call {call_ms:.2f} ms, then {wait_ms:.2f} ms until the stream drained")
    if not (call_ms < 50 and wait_ms > 20):
        failures.append("the call waited for the GPU")

    rt = model.runtime
    ins, keep, _ = model._input_structs(model._feeds((), dict(feeds)), None)
    outs, _ = model._output_structs(None, None)
    s = rt.run_on_stream(model._live(), ins, len(feeds), outs, len(ref), None)
    msg = rt.lib.mcc_last_error().decode()
    print(f"host buffers: status {s}: {msg}")
    if s == 0 or "not in device memory" not in msg:
        failures.append("host buffers were not refused")
    print("FAIL: " + "; ".join(failures) if failures else "stream order: ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
