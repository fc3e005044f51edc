#!/usr/bin/env python3
"""CI check for --target cuda on a machine without a GPU.

Compiles every models/ entry with `mcc compile --target cuda`, then checks
each .so: `mcc inspect` reports target cuda and the requested arch, and
every fatbin embedded in it holds a CUDA ELF (e_machine 190) for that SM
(so ptxas ran, and the code will load on that GPU without JIT), and the
model's precision string is exported for the runtime but read by its own
shim without a dynamic relocation (so no other library can interpose it).

    python3 scripts/check_cuda_build.py --mcc build/tools/mcc/mcc --models models
"""
import argparse
import json
import re
import os
import struct
import subprocess
import sys
import tempfile

FATBIN_MAGIC = struct.pack("<I", 0xBA55ED50)


def fatbin_elf_archs(blob):
    """SM numbers of the ELF entries of every fatbin found in `blob`."""
    found = []
    i = blob.find(FATBIN_MAGIC)
    while i != -1:
        header = struct.unpack_from("<H", blob, i + 6)[0]
        total = struct.unpack_from("<Q", blob, i + 8)[0]
        archs = []
        off = i + header
        while off < i + header + total:
            kind, _, entry_header = struct.unpack_from("<HHI", blob, off)
            size = struct.unpack_from("<Q", blob, off + 8)[0]
            arch = struct.unpack_from("<I", blob, off + 28)[0]
            payload = blob[off + entry_header: off + entry_header + size]
            if kind == 2 and payload[:4] == b"\x7fELF" and \
                    struct.unpack_from("<H", payload, 18)[0] == 190:
                archs.append(arch)
            off += entry_header + size
        found.append(archs)
        i = blob.find(FATBIN_MAGIC, i + header + total)
    return found


def precision_binding(so):
    """Problems with how `so` exports and reads mcc_precision (readelf)."""
    syms = subprocess.run(["readelf", "--dyn-syms", "-W", so], capture_output=True,
                          text=True, check=True).stdout
    relocs = subprocess.run(["readelf", "-r", "-W", so], capture_output=True,
                            text=True, check=True).stdout
    problems = []
    if not re.search(r"GLOBAL\s+DEFAULT\s+\d+\s+mcc_precision$", syms, re.M):
        problems.append("mcc_precision is not exported")
    if re.search(r"\bmcc_precision", relocs):
        problems.append("mcc_precision is read through a dynamic relocation")
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mcc", required=True)
    ap.add_argument("--models", default="models")
    ap.add_argument("--gpu-arch", default="sm_90")
    ap.add_argument("--workdir", default=None)
    args = ap.parse_args()
    want = int(args.gpu_arch.split("_")[1])
    entries = json.load(open(os.path.join(args.models, "manifest.json")))
    entries = entries["entries"] if isinstance(entries, dict) else entries
    work = args.workdir or tempfile.mkdtemp(prefix="mcc-cuda-")
    os.makedirs(work, exist_ok=True)
    failed = 0
    print(f"{'model':22} {'result':8} detail")
    for e in entries:
        name = e["name"]
        so = os.path.join(work, name + ".so")
        cmd = [args.mcc, "compile", os.path.join(args.models, name, "model.onnx"), "-o", so,
               "--target", "cuda", "--gpu-arch", args.gpu_arch]
        for inp, spec in e["inputs"].items():
            cmd += ["--shape", inp + "=" + "x".join(str(d) for d in spec["shape"])]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            failed += 1
            print(f"{name:22} {'FAIL':8} compile: {r.stderr.strip().splitlines()[-1:]}")
            continue
        info = json.loads(subprocess.run([args.mcc, "inspect", so], capture_output=True,
                                         text=True, check=True).stdout)
        blob = open(so, "rb").read()
        fatbins = fatbin_elf_archs(blob)
        # mcc-gpu-gather-kernels names every kernel mcc_<n>_...; each has a
        # .text section in the ELF.
        kernels = len(set(re.findall(rb"\.text\.(mcc_[0-9]+_[a-z_0-9]*)", blob)))
        problems = []
        if info["target"] != "cuda" or info["arch"] != args.gpu_arch:
            problems.append(f"descriptor says {info['target']}/{info['arch']}")
        if not fatbins:
            problems.append("no fatbin embedded")
        if not kernels:
            problems.append("no mcc_<n> kernel in the ELF")
        problems += precision_binding(so)
        bad = [a for a in fatbins if want not in a]
        if bad:
            problems.append(f"{len(bad)} of {len(fatbins)} fatbins lack sm_{want} code")
        failed += 1 if problems else 0
        print(f"{name:22} {'FAIL' if problems else 'ok':8} "
              f"{'; '.join(problems) or f'{kernels} kernels in {len(fatbins)} fatbin, sm_{want} ELF'}")
    print(f"{len(entries) - failed}/{len(entries)} entries build for {args.gpu_arch}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
