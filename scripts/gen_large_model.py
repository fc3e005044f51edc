#!/usr/bin/env python3
"""Writes a GPT-style decoder whose weights pass 2 GB, with external data.

The graph is what a transformer export looks like at opset 17 (Gather
embeddings, LayerNormalization, MatMul + Add projections, a causal softmax
attention, an Erf GELU MLP, tied output projection); the weights are seeded
normal values written straight to `<out>.data` one initializer at a time, so
this script never holds more than one tensor in memory.

    python3 scripts/gen_large_model.py --out /tmp/large/gpt-2g.onnx
    mcc compile /tmp/large/gpt-2g.onnx -o gpt.so --shape input_ids=1x32

Defaults: hidden 2048, 12 layers, 16 heads, vocabulary 32000: 670 M
parameters, 2.68 GB of float32.
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True, help="the .onnx to write; weights go to <out>.data")
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--max-positions", type=int, default=512)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    h, nh, v = args.hidden, args.heads, args.vocab
    hd = h // nh
    out_dir = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(out_dir, exist_ok=True)
    data_name = os.path.basename(args.out) + ".data"
    data = open(os.path.join(out_dir, data_name), "wb")
    rng = np.random.default_rng(args.seed)
    inits, nodes = [], []

    def weight(name, shape, scale=0.02, fill=None):
        if fill is None:
            arr = (rng.standard_normal(shape, dtype=np.float32) * scale).astype(np.float32)
        else:
            arr = np.full(shape, fill, np.float32)
        t = TensorProto()
        t.name, t.data_type = name, TensorProto.FLOAT
        t.dims.extend(shape)
        offset = data.tell()
        data.write(arr.tobytes())
        t.data_location = TensorProto.EXTERNAL
        for k, val in (("location", data_name), ("offset", str(offset)),
                       ("length", str(arr.nbytes))):
            e = t.external_data.add()
            e.key, e.value = k, val
        inits.append(t)
        return name

    def const(name, values, dtype=np.int64):
        inits.append(helper.make_tensor(name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)),
                                        [len(values)] if isinstance(values, list) else [],
                                        values if isinstance(values, list) else [values]))
        return name

    def node(op, ins, outs=None, **attrs):
        outs = outs or ["%s_%d" % (op.lower(), len(nodes))]
        nodes.append(helper.make_node(op, ins, outs, name=outs[0], **attrs))
        return outs[0] if len(outs) == 1 else outs

    wte = weight("wte", [v, h])
    wpe = weight("wpe", [args.max_positions, h])
    # positions 0..seq-1 from the input's shape, as exporters write it
    shape = node("Shape", ["input_ids"])
    seq = node("Gather", [shape, const("one", 1)], axis=0)
    pos = node("Range", [const("zero", 0), seq, const("one_step", 1)])
    x = node("Add", [node("Gather", [wte, "input_ids"]), node("Gather", [wpe, pos])])
    qkv_shape = const("qkv_shape", [0, 0, nh, hd])
    merge_shape = const("merge_shape", [0, 0, h])
    scale = const("scale", 1.0 / np.sqrt(hd), np.float32)
    # causal mask [seq, seq]: 0 on and below the diagonal, -1e4 above
    seq1 = node("Unsqueeze", [seq, const("axis0", [0])])
    ones = node("ConstantOfShape", [node("Concat", [seq1, seq1], axis=0)],
                value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0]))
    upper = node("Sub", [ones, node("Trilu", [ones], upper=0)])
    mask = node("Mul", [upper, const("neg", -1e4, np.float32)])
    half, sqrt2 = const("half", 0.5, np.float32), const("sqrt2", np.sqrt(2.0), np.float32)
    one_f = const("one_f", 1.0, np.float32)
    for i in range(args.layers):
        p = "h%d." % i
        ln = node("LayerNormalization", [x, weight(p + "ln1.w", [h], fill=1.0),
                                         weight(p + "ln1.b", [h], fill=0.0)], axis=-1,
                  epsilon=1e-5)
        qkv = node("Add", [node("MatMul", [ln, weight(p + "attn.qkv.w", [h, 3 * h])]),
                           weight(p + "attn.qkv.b", [3 * h])])
        q, k, vv = node("Split", [qkv, const(p + "split", [h, h, h])],
                        [p + "q", p + "k", p + "v"], axis=2)
        heads = [node("Transpose", [node("Reshape", [t, qkv_shape])], perm=perm)
                 for t, perm in ((q, [0, 2, 1, 3]), (k, [0, 2, 3, 1]), (vv, [0, 2, 1, 3]))]
        att = node("Add", [node("Mul", [node("MatMul", heads[:2]), scale]), mask])
        ctx = node("MatMul", [node("Softmax", [att], axis=-1), heads[2]])
        ctx = node("Reshape", [node("Transpose", [ctx], perm=[0, 2, 1, 3]), merge_shape])
        proj = node("Add", [node("MatMul", [ctx, weight(p + "attn.proj.w", [h, h])]),
                            weight(p + "attn.proj.b", [h])])
        x = node("Add", [x, proj])
        ln = node("LayerNormalization", [x, weight(p + "ln2.w", [h], fill=1.0),
                                         weight(p + "ln2.b", [h], fill=0.0)], axis=-1,
                  epsilon=1e-5)
        up = node("Add", [node("MatMul", [ln, weight(p + "mlp.up.w", [h, 4 * h])]),
                          weight(p + "mlp.up.b", [4 * h])])
        gelu = node("Mul", [node("Mul", [up, half]),
                            node("Add", [node("Erf", [node("Div", [up, sqrt2])]), one_f])])
        down = node("Add", [node("MatMul", [gelu, weight(p + "mlp.down.w", [4 * h, h])]),
                            weight(p + "mlp.down.b", [h])])
        x = node("Add", [x, down])
    x = node("LayerNormalization", [x, weight("lnf.w", [h], fill=1.0),
                                    weight("lnf.b", [h], fill=0.0)], axis=-1, epsilon=1e-5)
    # tied output projection: logits = x @ wte^T
    node("MatMul", [x, node("Transpose", [wte], perm=[1, 0])], ["logits"])
    data.close()

    graph = helper.make_graph(
        nodes, "gpt_large",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "seq", v])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="mcc gen_large_model.py")
    onnx.save(model, args.out)
    size = os.path.getsize(os.path.join(out_dir, data_name))
    print("wrote %s (%d nodes) and %s: %.2f GB of weights" % (
        args.out, len(nodes), data_name, size / 1e9))


if __name__ == "__main__":
    main()
