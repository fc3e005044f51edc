#!/usr/bin/env python3
"""Export full-size architectures with fixed seeds, for the benchmarks.

Weights are random (seeded, built on the CPU), so the same command gives
byte-identical initializers on any machine with the same torch and
transformers: compile where MLIR is, regenerate where the GPU is, and
rebuild the .so's weights file there with scripts/pack_weights.py.

    python3 scripts/export_full.py --arch bert-base --batch 1 --seq 128 --out /tmp/full
"""
import argparse
import os

os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402
import torch  # noqa: E402


# timm architectures at their default 224 x 224 input (seq is ignored).
TIMM_ARCHS = ("resnet50", "resnext101_32x8d", "vit_base_patch16_224",
              "mobilenetv3_large_100")


def portable_init(model):
    """Re-draws every parameter from torch.rand, which gives the same bits on
    any CPU. timm's ViT init goes through trunc_normal_ (erfinv), whose
    vectorized kernels differ in the last bit between AVX2 and AVX-512
    machines, so the GPU machine's re-export would not match the weights a
    .so was compiled from. Matrices get U(-1, 1) / sqrt(fan_in); vectors keep
    their init when it is all zeros or all ones (biases, norm scales) and are
    re-drawn at scale 0.02 otherwise (position and class tokens)."""
    g = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2:
                fan_in = p[0].numel()
                p.copy_((torch.rand(p.shape, generator=g) * 2 - 1) / fan_in ** 0.5)
            elif not (torch.all(p == 0) or torch.all(p == 1)):
                p.copy_((torch.rand(p.shape, generator=g) * 2 - 1) * 0.02)


def wake_residual_branches(model):
    """timm zero-initializes the last norm scale of each residual block
    (zero_init_last), so an untrained ResNet or ResNeXt is its shortcut
    path: every block's 3 x 3 convolution is multiplied by zero and the
    reference could not tell a wrong convolution from a right one. Such
    scales get U(0.25, 0.75) from a seeded generator (torch.rand gives the
    same bits on any CPU)."""
    g = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d) and torch.all(m.weight == 0):
                m.weight.copy_(torch.rand(m.weight.shape, generator=g) * 0.5 + 0.25)


def build(arch, batch, seq):
    import transformers as T
    torch.manual_seed(0)
    if arch == "bert-base":
        model = T.BertModel(T.BertConfig()).eval()  # bert-base-uncased shape
        g = torch.Generator().manual_seed(1)
        inputs = {
            "input_ids": torch.randint(0, 30522, (batch, seq), generator=g),
            "attention_mask": torch.ones(batch, seq, dtype=torch.long),
            "token_type_ids": torch.zeros(batch, seq, dtype=torch.long),
        }
        outputs = ["last_hidden_state", "pooler_output"]
    elif arch == "gpt2":
        model = T.GPT2Model(T.GPT2Config(use_cache=False)).eval()
        g = torch.Generator().manual_seed(1)
        inputs = {"input_ids": torch.randint(0, 50257, (batch, seq), generator=g),
                  "attention_mask": torch.ones(batch, seq, dtype=torch.long)}
        outputs = ["last_hidden_state"]
    elif arch in TIMM_ARCHS:
        import timm
        model = timm.create_model(arch, pretrained=False).eval()
        if arch.startswith("vit"):
            portable_init(model)
        wake_residual_branches(model)
        g = torch.Generator().manual_seed(1)
        inputs = {"pixel_values": torch.randn(batch, 3, 224, 224, generator=g)}
        outputs = ["logits"]

        class Vision(torch.nn.Module):
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, pixel_values):
                return (self.m(pixel_values),)

        return Vision(model).eval(), inputs, outputs
    else:
        raise SystemExit(f"unknown arch {arch}")

    class Wrapper(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, *args):
            out = self.m(**dict(zip(inputs.keys(), args)), return_dict=True)
            return tuple(getattr(out, o) for o in outputs)

    return Wrapper(model).eval(), inputs, outputs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", default="bert-base")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    module, inputs, outputs = build(args.arch, args.batch, args.seq)
    path = os.path.join(args.out, "model.onnx")
    with torch.no_grad():
        torch.onnx.export(module, tuple(inputs.values()), path, dynamo=False, opset_version=17,
                          input_names=list(inputs.keys()), output_names=outputs)
        ref = module(*inputs.values())
    import onnx
    m = onnx.load(path)
    onnx.save_model(m, path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location="model.onnx.data", size_threshold=1024)
    np.savez(os.path.join(args.out, "inputs.npz"), **{k: v.numpy() for k, v in inputs.items()})
    np.savez(os.path.join(args.out, "reference.npz"), **{o: r.numpy() for o, r in zip(outputs, ref)})
    print(f"exported {args.arch} to {path}")


if __name__ == "__main__":
    main()
