//===- AttentionOps.cpp - Attention, RotaryEmbedding, CausalConvWithState -===//
//
// Attention is emitted as the ordinary pieces it is made of (scaling
// elementwise ops, two MatMuls, a bias generic and a softmax of reductions
// plus elementwise generics) so the fusion passes treat it like the same
// graph written out by hand. float16 and bfloat16 products accumulate in
// float32, as NumPy's (and the reference implementation's) matmul does.
//
//===----------------------------------------------------------------------===//

#include "mcc/Import/NodeLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;

namespace mcc {
namespace {

Value addF(OpBuilder &b, Location l, ValueRange v) {
  return arith::AddFOp::create(b, l, v[0], v[1]);
}
Value maxF(OpBuilder &b, Location l, ValueRange v) {
  return arith::MaximumFOp::create(b, l, v[0], v[1]);
}

/// Converts every element of `x` to `to` (float types only).
Value castTensor(OpBuilder &b, Location loc, Value x, Type to) {
  Type from = cast<RankedTensorType>(x.getType()).getElementType();
  if (from == to)
    return x;
  return emitElementwise(
      b, loc, x, to, shapeOf(x), [&](OpBuilder &nb, Location l, ValueRange v) {
        return emitScalarCast(nb, l, v[0], dtypeOf(from), dtypeOf(to), to);
      });
}

/// a @ b where both are [batch..., m, k] x [batch..., k, n] of element type
/// `et`; low-precision floats are widened to `acc` for the product and the
/// result rounded back to `et` once.
FailureOr<Value> matmulAccumulating(NodeLowering &n, Value a, Value bm, Type et,
                                    Type acc) {
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  auto r = emitOnnxMatMul(n, castTensor(b, loc, a, acc),
                          castTensor(b, loc, bm, acc));
  if (failed(r))
    return failure();
  return castTensor(b, loc, *r, et);
}

/// Index `d` of the enclosing linalg.generic as an i64.
Value indexI64(OpBuilder &b, Location l, int64_t d) {
  Value i = linalg::IndexOp::create(b, l, d);
  return arith::IndexCastOp::create(b, l, b.getI64Type(), i);
}

/// ONNX Attention (opsets 23-25).
LogicalResult lowerAttention(NodeLowering &n) {
  int32_t dt = n.dtype(0);
  if (!isFloatDType(dt))
    return n.fail("Q must be floating point");
  if (n.dtype(1) != dt || n.dtype(2) != dt)
    return n.fail("Q, K and V must share one element type");
  size_t rank = n.rank(0);
  if ((rank != 3 && rank != 4) || n.rank(1) != rank || n.rank(2) != rank)
    return n.fail("Q, K and V must all be 3-D or all be 4-D");
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Type et = n.elementType(dt);
  // float16/bfloat16 products accumulate in float32.
  Type acc = (dt == kFloat16 || dt == kBFloat16) ? b.getF32Type() : et;
  Value q = n.value(0), k = n.value(1), v = n.value(2);

  if (rank == 3) {
    if (!n.hasAttr("q_num_heads") || !n.hasAttr("kv_num_heads"))
      return n.fail("3-D inputs need q_num_heads and kv_num_heads");
    int64_t hq = n.attrInt("q_num_heads", 0),
            hkv = n.attrInt("kv_num_heads", 0);
    if (hq <= 0 || hkv <= 0 || n.shape(0)[2] % hq || n.shape(1)[2] % hkv ||
        n.shape(2)[2] % hkv)
      return n.fail("hidden sizes are not multiples of the head counts");
    // [B, S, heads * size] -> [B, heads, S, size].
    auto toHeads = [&](Value x, int64_t heads) {
      Shape s = shapeOf(x);
      x = emitReshape(b, loc, x, {s[0], s[1], heads, s[2] / heads});
      return emitTranspose(b, loc, x, {0, 2, 1, 3});
    };
    q = toHeads(q, hq);
    k = toHeads(k, hkv);
    v = toHeads(v, hkv);
  }
  Shape qs = shapeOf(q), ks = shapeOf(k), vs = shapeOf(v);
  int64_t batch = qs[0], hq = qs[1], sq = qs[2], headSize = qs[3];
  int64_t hkv = ks[1], vHeadSize = vs[3];
  if (ks[0] != batch || vs[0] != batch || vs[1] != hkv || ks[3] != headSize ||
      vs[2] != ks[2])
    return n.fail("Q " + formatShape(qs) + ", K " + formatShape(ks) +
                  " and V " + formatShape(vs) + " do not fit together");
  if (hq % hkv)
    return n.fail("q heads must be a multiple of kv heads");

  // Internal KV cache: present = Concat(past, new) along the sequence.
  bool hasPast = n.hasInput(4) || n.hasInput(5);
  int64_t pastLen = 0;
  if (hasPast) {
    if (!n.hasInput(4) || !n.hasInput(5))
      return n.fail("past_key and past_value go together");
    if (n.dtype(4) != dt || n.dtype(5) != dt)
      return n.fail("past_key and past_value must have Q's element type");
    const Shape &pk = n.shape(4), &pv = n.shape(5);
    if (pk.size() != 4 || pv.size() != 4 || pk[0] != batch || pk[1] != hkv ||
        pk[3] != headSize || pv[0] != batch || pv[1] != hkv ||
        pv[3] != vHeadSize || pv[2] != pk[2])
      return n.fail("past_key " + formatShape(pk) + " / past_value " +
                    formatShape(pv) + " do not fit K and V");
    pastLen = pk[2];
    auto concat = [&](Value past, Value cur) {
      Shape ps = shapeOf(past), cs = shapeOf(cur), out = ps;
      out[2] += cs[2];
      Value r = createEmpty(b, loc, out, et);
      SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
      auto insert = [&](Value x, int64_t at) {
        Shape s = shapeOf(x);
        if (s[2] == 0)
          return;
        SmallVector<OpFoldResult> offs(4, b.getIndexAttr(0)), sizes;
        offs[2] = b.getIndexAttr(at);
        for (int64_t d : s)
          sizes.push_back(b.getIndexAttr(d));
        r = tensor::InsertSliceOp::create(b, loc, x, r, offs, sizes, strides);
      };
      insert(past, 0);
      insert(cur, ps[2]);
      return r;
    };
    k = concat(n.value(4), k);
    v = concat(n.value(5), v);
  }
  n.setOutput(1, k, dt);
  n.setOutput(2, v, dt);
  int64_t kvLen = shapeOf(k)[2];

  bool hasNonpad = n.opset() >= 24 && n.hasInput(6);
  if (hasNonpad) {
    if (hasPast)
      return n.fail("nonpad_kv_seqlen cannot be combined with past_key");
    if (n.dtype(6) != kInt64 || n.shape(6) != Shape{batch})
      return n.fail("nonpad_kv_seqlen must be int64 of shape [batch]");
  }
  bool causal = n.attrInt("is_causal", 0) != 0;
  int64_t leftWindow = n.opset() >= 25 ? n.attrInt("left_window_size", -1) : -1;
  int64_t rightWindow =
      n.opset() >= 25 ? n.attrInt("right_window_size", -1) : -1;
  if (leftWindow < -1 || rightWindow < -1)
    return n.fail("window sizes must be -1 or nonnegative");
  bool window = leftWindow >= 0 || rightWindow >= 0;
  bool hasMask = n.hasInput(3);
  int32_t maskType = hasMask ? n.dtype(3) : 0;
  if (hasMask && maskType != kBool && maskType != dt)
    return n.fail("attn_mask must be bool or Q's element type");

  // Q*sqrt(scale) and K*sqrt(scale), each rounded to T like the function
  // body (and reference) do.
  double scale = n.hasAttr("scale") ? n.attrFloat("scale", 1.0f)
                                    : 1.0 / std::sqrt((double)headSize);
  double sqrtScale = std::sqrt(scale);
  auto scaled = [&](Value x) {
    return emitElementwise(b, loc, x, et, shapeOf(x),
                           [&](OpBuilder &nb, Location l, ValueRange a) {
                             return (Value)arith::MulFOp::create(
                                 nb, l, a[0],
                                 scalarConstant(nb, l, et, sqrtScale));
                           });
  };
  // Grouped-query attention: q head h reads kv head h / (hq / hkv). The q
  // heads of one kv head are adjacent, so [B, hq, S, D] viewed as
  // [B, hkv, reps * S, D] multiplies each kv head once without repeating it.
  int64_t reps = hq / hkv;
  Value qGrouped =
      emitReshape(b, loc, scaled(q), {batch, hkv, reps * sq, headSize});
  Value kT = emitTranspose(b, loc, scaled(k), {0, 1, 3, 2});
  auto qkGrouped = matmulAccumulating(n, qGrouped, kT, et, acc);
  if (failed(qkGrouped))
    return failure();
  Shape scoreShape = {batch, hq, sq, kvLen};
  Value qkRaw = emitReshape(b, loc, *qkGrouped, scoreShape);

  Value qk = qkRaw;
  double softcap = n.attrFloat("softcap", 0.0f);
  if (softcap > 0)
    qk = emitElementwise(b, loc, qk, et, scoreShape,
                         [&](OpBuilder &nb, Location l, ValueRange a) {
                           Value c = scalarConstant(nb, l, et, softcap);
                           Value t = math::TanhOp::create(
                               nb, l, arith::DivFOp::create(nb, l, a[0], c));
                           return (Value)arith::MulFOp::create(nb, l, t, c);
                         });

  // The additive bias [bb, bh, S, L]: the mask (bool: 0 / -inf; padded with
  // -inf to the total sequence), then the causal, window and padding limits,
  // each added as 0 / -inf. Causal and window limits are bottom-right
  // aligned: offset = past length, or nonpad_kv_seqlen[b] - S per batch.
  Value bias;
  if (hasMask || causal || window || hasNonpad) {
    Shape biasShape = {1, 1, sq, kvLen};
    SmallVector<Value> ins;
    if (hasMask) {
      Shape ms = n.shape(3);
      if (ms.empty() || ms.size() > 4 || ms.back() > kvLen)
        return n.fail("attn_mask " + formatShape(ms) +
                      " does not broadcast to the scores " +
                      formatShape(scoreShape));
      Shape m4(4 - ms.size(), 1);
      m4.insert(m4.end(), ms.begin(), ms.end());
      Shape full = {batch, hq, sq, kvLen};
      for (int d = 0; d < 3; ++d) {
        if (m4[d] != 1 && m4[d] != full[d])
          return n.fail("attn_mask " + formatShape(ms) +
                        " does not broadcast to the scores " +
                        formatShape(scoreShape));
        if (d < 2)
          biasShape[d] = m4[d];
      }
      Value mask = emitReshape(b, loc, n.value(3), m4);
      if (m4[3] < kvLen) {
        Type mt = n.elementType(maskType);
        TypedAttr padValue = maskType == kBool
                                 ? (TypedAttr)b.getBoolAttr(false)
                                 : (TypedAttr)b.getFloatAttr(mt, -INFINITY);
        SmallVector<OpFoldResult> lo(4, b.getIndexAttr(0)), hi = lo;
        hi[3] = b.getIndexAttr(kvLen - m4[3]);
        Shape padded = m4;
        padded[3] = kvLen;
        mask = tensor::PadOp::create(
            b, loc, RankedTensorType::get(padded, mt), mask, lo, hi,
            (Value)arith::ConstantOp::create(b, loc, padValue));
      }
      ins.push_back(mask);
    }
    if (hasNonpad) {
      biasShape[0] = batch;
      ins.push_back(emitReshape(b, loc, n.value(6), {batch, 1, 1, 1}));
    }
    bias = emitElementwise(
        b, loc, ins, et, biasShape,
        [&](OpBuilder &nb, Location l, ValueRange a) {
          Value zero = scalarConstant(nb, l, et, 0.0);
          Value ninf = scalarConstant(nb, l, et, -INFINITY);
          Value r = zero;
          if (hasMask)
            r = maskType == kBool
                    ? (Value)arith::SelectOp::create(nb, l, a[0], zero, ninf)
                    : a[0];
          Value i = indexI64(nb, l, 2), j = indexI64(nb, l, 3);
          Value nonpad = hasNonpad ? a.back() : Value();
          Value offset =
              hasNonpad
                  ? (Value)arith::SubIOp::create(
                        nb, l, nonpad,
                        arith::ConstantIntOp::create(nb, l, sq, 64))
                  : (Value)arith::ConstantIntOp::create(nb, l, pastLen, 64);
          auto limit = [&](Value allowed) {
            r = arith::AddFOp::create(
                nb, l, r, arith::SelectOp::create(nb, l, allowed, zero, ninf));
          };
          auto cmp = [&](arith::CmpIPredicate p, Value x, Value y) {
            return (Value)arith::CmpIOp::create(nb, l, p, x, y);
          };
          auto cst = [&](int64_t c) {
            return (Value)arith::ConstantIntOp::create(nb, l, c, 64);
          };
          // Absolute query position and its distance to key j.
          Value pos = arith::AddIOp::create(nb, l, i, offset);
          if (causal)
            limit(cmp(arith::CmpIPredicate::sle, j, pos));
          if (window) {
            Value diff = arith::SubIOp::create(nb, l, pos, j);
            Value ok = arith::ConstantIntOp::create(nb, l, 1, 1);
            if (leftWindow >= 0)
              ok = arith::AndIOp::create(
                  nb, l, ok,
                  cmp(arith::CmpIPredicate::sle, diff, cst(leftWindow)));
            if (rightWindow >= 0)
              ok = arith::AndIOp::create(
                  nb, l, ok,
                  cmp(arith::CmpIPredicate::sle,
                      arith::SubIOp::create(nb, l, cst(0), diff),
                      cst(rightWindow)));
            limit(ok);
          }
          if (hasNonpad)
            limit(cmp(arith::CmpIPredicate::slt, j, nonpad));
          return r;
        });
  }

  Value qkBiased = qk;
  if (bias)
    qkBiased =
        emitElementwise(b, loc, ValueRange{qk, bias}, et, scoreShape, addF);

  // Softmax over the keys, in softmax_precision when given. A row whose
  // scores are all -inf gives zeros instead of NaN; a row whose bias masks
  // every key is zero whatever its scores (NaN included).
  Type smType = et;
  int32_t smDtype = dt;
  if (n.hasAttr("softmax_precision")) {
    smDtype = n.attrInt("softmax_precision", dt);
    if (!isFloatDType(smDtype))
      return n.fail("softmax_precision must be a floating-point type");
    smType = n.elementType(smDtype);
  }
  Value x = castTensor(b, loc, qkBiased, smType);
  Value mx = emitReduction(b, loc, x, {3}, true,
                           b.getFloatAttr(smType, -INFINITY), maxF);
  Value e = emitElementwise(
      b, loc, ValueRange{x, mx}, smType, scoreShape,
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Value ninf = scalarConstant(nb, l, smType, -INFINITY);
        Value allMasked =
            arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ, a[1], ninf);
        Value m = arith::SelectOp::create(
            nb, l, allMasked, scalarConstant(nb, l, smType, 0.0), a[1]);
        return (Value)math::ExpOp::create(
            nb, l, arith::SubFOp::create(nb, l, a[0], m));
      });
  // The sum of float16 terms accumulates in float32, rounded once; bfloat16
  // accumulates in bfloat16 (both as in the reference's NumPy).
  Type sumType = smDtype == kFloat16 ? (Type)b.getF32Type() : smType;
  Value s = castTensor(
      b, loc,
      emitReduction(b, loc, e, {3}, true, b.getFloatAttr(sumType, 0.0), addF,
                    [&](OpBuilder &nb, Location l, ValueRange a) {
                      return emitScalarCast(nb, l, a[0], smDtype,
                                            dtypeOf(sumType), sumType);
                    }),
      smType);
  SmallVector<Value> probIns = {e, s};
  if (bias)
    probIns.push_back(emitReduction(b, loc, bias, {3}, true,
                                    b.getFloatAttr(et, -INFINITY), maxF));
  Value probs = emitElementwise(
      b, loc, probIns, et, scoreShape,
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Value zero = scalarConstant(nb, l, smType, 0.0);
        Value empty =
            arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ, a[1], zero);
        Value sum = arith::SelectOp::create(
            nb, l, empty, scalarConstant(nb, l, smType, 1.0), a[1]);
        Value p = arith::DivFOp::create(nb, l, a[0], sum);
        if (a.size() > 2) {
          Value masked =
              arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ, a[2],
                                    scalarConstant(nb, l, et, -INFINITY));
          p = arith::SelectOp::create(nb, l, masked, zero, p);
        }
        return emitScalarCast(nb, l, p, smDtype, dt, et);
      });

  switch (n.attrInt("qk_matmul_output_mode", 0)) {
  case 0:
    n.setOutput(3, qkRaw, dt);
    break;
  case 1:
    n.setOutput(3, qk, dt);
    break;
  case 2:
    n.setOutput(3, qkBiased, dt);
    break;
  case 3:
    n.setOutput(3, probs, dt);
    break;
  default:
    return n.fail("qk_matmul_output_mode must be 0 to 3");
  }

  Value probsGrouped =
      emitReshape(b, loc, probs, {batch, hkv, reps * sq, kvLen});
  auto yGrouped = matmulAccumulating(n, probsGrouped, v, et, acc);
  if (failed(yGrouped))
    return failure();
  Value y = emitReshape(b, loc, *yGrouped, {batch, hq, sq, vHeadSize});
  if (rank == 3)
    y = emitReshape(b, loc, emitTranspose(b, loc, y, {0, 2, 1, 3}),
                    {batch, sq, hq * vHeadSize});
  n.setOutput(0, y, dt);
  return success();
}

/// ONNX RotaryEmbedding (opset 23): rotates the first rotary_embedding_dim
/// features of each head by (cos, sin) of its position; pairs are the two
/// halves, or adjacent features when interleaved.
LogicalResult lowerRotaryEmbedding(NodeLowering &n) {
  int32_t dt = n.dtype(0);
  if (!isFloatDType(dt) || n.dtype(1) != dt || n.dtype(2) != dt)
    return n.fail("input, cos_cache and sin_cache must share a float type");
  Shape in = n.shape(0);
  size_t rank = in.size();
  if (rank != 3 && rank != 4)
    return n.fail("input must be [B, S, hidden] or [B, heads, S, size]");
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Type et = n.elementType(dt);
  Value x = n.value(0);
  // Work on [B, heads, S, size] or, for 3-D input, [B, S, heads, size];
  // seqDim says which of dims 1 and 2 is the sequence.
  int64_t seqDim = 2;
  Shape work = in;
  if (rank == 3) {
    int64_t heads = n.attrInt("num_heads", 0);
    if (heads <= 0 || in[2] % heads)
      return n.fail("3-D input needs num_heads dividing the hidden size");
    work = {in[0], in[1], heads, in[2] / heads};
    x = emitReshape(b, loc, x, work);
    seqDim = 1;
  } else if (n.hasAttr("num_heads") && n.attrInt("num_heads", 0) != in[1]) {
    return n.fail("num_heads does not match the input's head dimension");
  }
  int64_t batch = work[0], seq = work[seqDim], headSize = work[3];
  int64_t rotDim = n.attrInt("rotary_embedding_dim", 0);
  if (rotDim == 0)
    rotDim = headSize;
  if (rotDim < 0 || rotDim > headSize || rotDim % 2)
    return n.fail("rotary_embedding_dim must be even and at most head size");
  int64_t half = rotDim / 2;
  bool interleaved = n.attrInt("interleaved", 0) != 0;
  bool hasPos = n.hasInput(3);
  const Shape &cs = n.shape(1);
  if (n.shape(2) != cs || cs.empty() || cs.back() != half)
    return n.fail("cos_cache/sin_cache must end in rotary_embedding_dim / 2");
  if (hasPos) {
    if (cs.size() != 2 || n.shape(3) != Shape{batch, seq})
      return n.fail("with position_ids, caches are [max_pos, dim / 2] and "
                    "position_ids [B, S]");
  } else if (cs != Shape{batch, seq, half}) {
    return n.fail("without position_ids, caches are [B, S, dim / 2]");
  }
  Value cosV = n.value(1), sinV = n.value(2);
  if (hasPos && n.dtype(3) != kInt64)
    return n.fail("position_ids must be int64");
  Value pos = hasPos ? n.value(3) : Value();
  int64_t maxPos = cs[0];

  Value r = emitElementwise(
      b, loc, ValueRange{}, et, work,
      [&](OpBuilder &nb, Location l, ValueRange) -> Value {
        auto idx = [&](int64_t c) {
          return (Value)arith::ConstantIndexOp::create(nb, l, c);
        };
        SmallVector<Value> at;
        for (int64_t d = 0; d < 4; ++d)
          at.push_back(linalg::IndexOp::create(nb, l, d));
        Value d = at[3];
        Value self = tensor::ExtractOp::create(nb, l, x, at);
        // Feature pair (i1, i2) and its frequency k; `first` selects the
        // real part cos*x1 - sin*x2, else the imaginary sin*x1 + cos*x2.
        Value k, i1, i2, first;
        if (interleaved) {
          k = arith::DivUIOp::create(nb, l, d, idx(2));
          i1 = arith::MulIOp::create(nb, l, k, idx(2));
          i2 = arith::AddIOp::create(nb, l, i1, idx(1));
          first = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, d, i1);
        } else {
          first = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, d,
                                        idx(half));
          k = arith::SelectOp::create(
              nb, l, first, d, arith::SubIOp::create(nb, l, d, idx(half)));
          i1 = k;
          i2 = arith::AddIOp::create(nb, l, k, idx(half));
        }
        Value rotated = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult,
                                              d, idx(rotDim));
        // Indices past rotDim read pair 0; their result is discarded.
        Value zero = idx(0);
        k = arith::SelectOp::create(nb, l, rotated, k, zero);
        i1 = arith::SelectOp::create(nb, l, rotated, i1, zero);
        i2 = arith::SelectOp::create(nb, l, rotated, i2, zero);
        SmallVector<Value> at1 = at, at2 = at;
        at1[3] = i1;
        at2[3] = i2;
        Value x1 = tensor::ExtractOp::create(nb, l, x, at1);
        Value x2 = tensor::ExtractOp::create(nb, l, x, at2);
        SmallVector<Value> cacheAt;
        if (hasPos) {
          Value p = tensor::ExtractOp::create(nb, l, pos,
                                              ValueRange{at[0], at[seqDim]});
          p = arith::IndexCastOp::create(nb, l, nb.getIndexType(), p);
          // Clamp so a bad position id reads a valid row, not memory.
          p = arith::MinSIOp::create(
              nb, l, arith::MaxSIOp::create(nb, l, p, zero), idx(maxPos - 1));
          cacheAt = {p, k};
        } else {
          cacheAt = {at[0], at[seqDim], k};
        }
        Value c = tensor::ExtractOp::create(nb, l, cosV, cacheAt);
        Value s = tensor::ExtractOp::create(nb, l, sinV, cacheAt);
        Value real =
            arith::SubFOp::create(nb, l, arith::MulFOp::create(nb, l, c, x1),
                                  arith::MulFOp::create(nb, l, s, x2));
        Value imag =
            arith::AddFOp::create(nb, l, arith::MulFOp::create(nb, l, s, x1),
                                  arith::MulFOp::create(nb, l, c, x2));
        Value out = arith::SelectOp::create(nb, l, first, real, imag);
        return arith::SelectOp::create(nb, l, rotated, out, self);
      });
  n.setOutput(0, emitReshape(b, loc, r, in), dt);
  return success();
}

/// CausalConvWithState (opset 27): depthwise causal 1-D convolution of
/// [B, C, T] with [C, 1, k] over the input prefixed by past_state (zeros
/// when absent), optional bias and SiLU; present_state is the last k - 1
/// steps of that prefixed sequence. float16/bfloat16 accumulate in float32.
LogicalResult lowerCausalConvWithState(NodeLowering &n) {
  int32_t dt = n.dtype(0);
  if (!isFloatDType(dt) || n.dtype(1) != dt)
    return n.fail("input and weight must share a float type");
  const Shape &in = n.shape(0), &ws = n.shape(1);
  if (in.size() != 3 || ws.size() != 3 || ws[0] != in[1] || ws[1] != 1)
    return n.fail("input must be [B, C, T] and weight [C, 1, k]");
  std::string act = n.attrString("activation", "none");
  if (act != "none" && act != "silu" && act != "swish")
    return n.fail("activation must be none, silu or swish");
  int64_t batch = in[0], chans = in[1], len = in[2], k = ws[2];
  if (k < 1)
    return n.fail("kernel size must be positive");
  Shape stateShape = {batch, chans, k - 1};
  bool hasBias = n.hasInput(2), hasPast = n.hasInput(3);
  if (hasBias && n.shape(2) != Shape{chans})
    return n.fail("bias must have one value per channel");
  if (hasPast && n.shape(3) != stateShape)
    return n.fail("past_state must be " + formatShape(stateShape));
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Type et = n.elementType(dt);
  Type acc = (dt == kFloat16 || dt == kBFloat16) ? b.getF32Type() : et;
  int32_t accDt = dtypeOf(acc);

  // padded = Concat(past_state or zeros, input) along time.
  Shape paddedShape = {batch, chans, k - 1 + len};
  Value padded;
  if (hasPast && k > 1) {
    padded = createEmpty(b, loc, paddedShape, et);
    SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
    auto insert = [&](Value x, int64_t at) {
      SmallVector<OpFoldResult> offs(3, b.getIndexAttr(0)), sizes;
      offs[2] = b.getIndexAttr(at);
      for (int64_t d : shapeOf(x))
        sizes.push_back(b.getIndexAttr(d));
      padded = tensor::InsertSliceOp::create(b, loc, x, padded, offs, sizes,
                                             strides);
    };
    insert(n.value(3), 0);
    insert(n.value(0), k - 1);
  } else {
    SmallVector<OpFoldResult> lo(3, b.getIndexAttr(0)), hi = lo;
    lo[2] = b.getIndexAttr(k - 1);
    padded = tensor::PadOp::create(
        b, loc, RankedTensorType::get(paddedShape, et), n.value(0), lo, hi,
        scalarConstant(b, loc, et, 0.0));
  }

  // out[b, c, t] = sum_j padded[b, c, t + j] * w[c, j]: loops (b, c, t, j).
  MLIRContext *ctx = b.getContext();
  AffineExpr d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx),
             d2 = getAffineDimExpr(2, ctx), d3 = getAffineDimExpr(3, ctx);
  SmallVector<AffineMap> maps = {AffineMap::get(4, 0, {d0, d1, d2 + d3}, ctx),
                                 AffineMap::get(4, 0, {d1, d3}, ctx),
                                 AffineMap::get(4, 0, {d0, d1, d2}, ctx)};
  SmallVector<utils::IteratorType> iters(3, utils::IteratorType::parallel);
  iters.push_back(utils::IteratorType::reduction);
  Value w = emitReshape(b, loc, n.value(1), {chans, k});
  Value init = emitFilled(b, loc, in, b.getFloatAttr(acc, 0.0));
  Value sum = linalg::GenericOp::create(
                  b, loc, TypeRange{init.getType()}, ValueRange{padded, w},
                  ValueRange{init}, maps, iters,
                  [&](OpBuilder &nb, Location l, ValueRange a) {
                    Value x = emitScalarCast(nb, l, a[0], dt, accDt, acc);
                    Value wv = emitScalarCast(nb, l, a[1], dt, accDt, acc);
                    linalg::YieldOp::create(
                        nb, l,
                        (Value)arith::AddFOp::create(
                            nb, l, a[2], arith::MulFOp::create(nb, l, x, wv)));
                  })
                  .getResult(0);
  SmallVector<Value> ins = {sum};
  if (hasBias)
    ins.push_back(emitReshape(b, loc, n.value(2), {chans, 1}));
  bool silu = act != "none";
  Value y = emitElementwise(
      b, loc, ins, et, in, [&](OpBuilder &nb, Location l, ValueRange a) {
        Value r = a[0];
        if (hasBias)
          r = arith::AddFOp::create(
              nb, l, r, emitScalarCast(nb, l, a[1], dt, accDt, acc));
        r = emitScalarCast(nb, l, r, accDt, dt, et);
        if (!silu)
          return r;
        // SiLU of the rounded result, in float32 for narrower types.
        Type f = acc;
        Value x = emitScalarCast(nb, l, r, dt, accDt, f);
        Value one = scalarConstant(nb, l, f, 1.0);
        Value sig = arith::DivFOp::create(
            nb, l, one,
            arith::AddFOp::create(
                nb, l, one,
                math::ExpOp::create(nb, l, arith::NegFOp::create(nb, l, x))));
        return emitScalarCast(nb, l, arith::MulFOp::create(nb, l, x, sig),
                              accDt, dt, et);
      });
  n.setOutput(0, y, dt);
  if (n.hasOutput(1)) {
    SmallVector<OpFoldResult> offs(3, b.getIndexAttr(0)), sizes,
        strides(3, b.getIndexAttr(1));
    offs[2] = b.getIndexAttr(len);
    for (int64_t d : stateShape)
      sizes.push_back(b.getIndexAttr(d));
    if (k == 1)
      n.setOutput(1, Literal(dt, stateShape));
    else
      n.setOutput(1,
                  tensor::ExtractSliceOp::create(
                      b, loc, RankedTensorType::get(stateShape, et), padded,
                      offs, sizes, strides),
                  dt);
  }
  return success();
}

/// LinearAttention (opset 27): the recurrent state S [B, kv_heads, dk, dv]
/// is, per step t, decayed by exp(decay) (gated rules), corrected by
/// beta * (v - S^T k) (delta rules), grown by k v^T, and read by q (grouped
/// heads through a view); all in float32. Unrolled over the static
/// sequence, as RNN/GRU/LSTM are.
LogicalResult lowerLinearAttention(NodeLowering &n) {
  int32_t dt = n.dtype(0);
  if (!isFloatDType(dt) || n.dtype(1) != dt || n.dtype(2) != dt)
    return n.fail("query, key and value must share a float type");
  std::string rule = n.attrString("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" &&
      rule != "gated_delta")
    return n.fail("unknown update_rule '" + rule + "'");
  bool gating = rule == "gated" || rule == "gated_delta";
  bool delta = rule == "delta" || rule == "gated_delta";
  if (gating != n.hasInput(4))
    return n.fail("decay must be given exactly for the gated rules");
  if (delta != n.hasInput(5))
    return n.fail("beta must be given exactly for the delta rules");
  int64_t hq = n.attrInt("q_num_heads", 0), hkv = n.attrInt("kv_num_heads", 0);
  if (hq <= 0 || hkv <= 0 || hq % hkv)
    return n.fail("q_num_heads must be a positive multiple of kv_num_heads");
  const Shape &qs = n.shape(0), &ks = n.shape(1), &vs = n.shape(2);
  if (qs.size() != 3 || ks.size() != 3 || vs.size() != 3)
    return n.fail("query, key and value must be [B, T, heads * size]");
  int64_t batch = qs[0], len = qs[1];
  if (qs[2] % hq || vs[2] % hkv)
    return n.fail("hidden sizes are not multiples of the head counts");
  int64_t dk = qs[2] / hq, dv = vs[2] / hkv, group = hq / hkv;
  if (ks != Shape{batch, len, hkv * dk} || vs[0] != batch || vs[1] != len)
    return n.fail("key and value do not fit query");
  Shape stateShape = {batch, hkv, dk, dv};
  int32_t stateDt = dt;
  if (n.hasInput(3)) {
    if (n.shape(3) != stateShape)
      return n.fail("past_state must be " + formatShape(stateShape));
    stateDt = n.dtype(3);
  }
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Type f32 = b.getF32Type();
  double scale = n.attrFloat("scale", 0.0f);
  if (scale == 0.0)
    scale = 1.0 / std::sqrt((double)dk);

  // [B, T, heads * size] -> [B, heads, T, size], in float32.
  auto toHeads = [&](Value x, int64_t heads) {
    Shape s = shapeOf(x);
    x = emitReshape(b, loc, x, {s[0], s[1], heads, s[2] / heads});
    return castTensor(b, loc, emitTranspose(b, loc, x, {0, 2, 1, 3}), f32);
  };
  Value q4 = toHeads(n.value(0), hq), k4 = toHeads(n.value(1), hkv),
        v4 = toHeads(n.value(2), hkv);
  Value decay4, beta4;
  if (gating) {
    const Shape &ds = n.shape(4);
    if (ds.size() != 3 || ds[0] != batch || ds[1] != len ||
        (ds[2] != hkv && ds[2] != hkv * dk))
      return n.fail("decay must be [B, T, kv_heads] or [B, T, kv_heads * dk]");
    decay4 = toHeads(n.value(4), hkv);
  }
  if (delta) {
    const Shape &bs = n.shape(5);
    if (bs.size() != 3 || bs[0] != batch || bs[1] != len ||
        (bs[2] != hkv && bs[2] != 1))
      return n.fail("beta must be [B, T, kv_heads] or [B, T, 1]");
    beta4 = toHeads(n.value(5), bs[2]);
  }
  Value state = n.hasInput(3)
                    ? castTensor(b, loc, n.value(3), f32)
                    : emitFilled(b, loc, stateShape, b.getFloatAttr(f32, 0.0));

  // Step t of a [B, H, T, X] tensor as [B, H, X, 1] or [B, H, 1, X].
  auto step = [&](Value x, int64_t t, bool column) {
    Shape s = shapeOf(x);
    SmallVector<OpFoldResult> offs(4, b.getIndexAttr(0)), sizes,
        strides(4, b.getIndexAttr(1));
    offs[2] = b.getIndexAttr(t);
    Shape one = {s[0], s[1], 1, s[3]};
    for (int64_t d : one)
      sizes.push_back(b.getIndexAttr(d));
    Value r = tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get(one, f32), x, offs, sizes, strides);
    return emitReshape(b, loc, r,
                       column ? Shape{s[0], s[1], s[3], 1}
                              : Shape{s[0], s[1], 1, s[3]});
  };
  auto mul = [](OpBuilder &nb, Location l, ValueRange a) {
    return (Value)arith::MulFOp::create(nb, l, a[0], a[1]);
  };
  Shape outShape = {batch, len, hq, dv};
  Value out = createEmpty(b, loc, outShape, f32);
  for (int64_t t = 0; t < len; ++t) {
    Value kCol = step(k4, t, true), vRow = step(v4, t, false);
    if (gating)
      state = emitElementwise(
          b, loc, ValueRange{state, step(decay4, t, true)}, f32, stateShape,
          [](OpBuilder &nb, Location l, ValueRange a) {
            return (Value)arith::MulFOp::create(
                nb, l, a[0], math::ExpOp::create(nb, l, a[1]));
          });
    if (delta) {
      // v <- beta * (v - sum_d S[d, :] k[d]).
      Value sk = emitElementwise(b, loc, ValueRange{state, kCol}, f32,
                                 stateShape, mul);
      Value retrieved =
          emitReduction(b, loc, sk, {2}, true, b.getFloatAttr(f32, 0.0), addF);
      vRow = emitElementwise(
          b, loc, ValueRange{vRow, retrieved, step(beta4, t, true)}, f32,
          {batch, hkv, 1, dv}, [](OpBuilder &nb, Location l, ValueRange a) {
            return (Value)arith::MulFOp::create(
                nb, l, a[2], arith::SubFOp::create(nb, l, a[0], a[1]));
          });
    }
    state = emitElementwise(
        b, loc, ValueRange{state, kCol, vRow}, f32, stateShape,
        [](OpBuilder &nb, Location l, ValueRange a) {
          return (Value)arith::AddFOp::create(
              nb, l, a[0], arith::MulFOp::create(nb, l, a[1], a[2]));
        });
    // o[b, h] = scale * q[b, h] S[b, h / group]: q heads of one kv head
    // are adjacent, so [B, hq, 1, dk] is viewed as [B, hkv, group, dk].
    Value qg = emitReshape(b, loc, step(q4, t, false), {batch, hkv, group, dk});
    auto o = emitOnnxMatMul(n, qg, state);
    if (failed(o))
      return failure();
    Value oScaled =
        emitElementwise(b, loc, *o, f32, shapeOf(*o),
                        [&](OpBuilder &nb, Location l, ValueRange a) {
                          return (Value)arith::MulFOp::create(
                              nb, l, a[0], scalarConstant(nb, l, f32, scale));
                        });
    SmallVector<OpFoldResult> offs(4, b.getIndexAttr(0)), sizes,
        strides(4, b.getIndexAttr(1));
    offs[1] = b.getIndexAttr(t);
    for (int64_t d : Shape{batch, 1, hq, dv})
      sizes.push_back(b.getIndexAttr(d));
    out = tensor::InsertSliceOp::create(
        b, loc, emitReshape(b, loc, oScaled, {batch, 1, hq, dv}), out, offs,
        sizes, strides);
  }
  Type et = n.elementType(dt);
  n.setOutput(
      0,
      castTensor(b, loc, emitReshape(b, loc, out, {batch, len, hq * dv}), et),
      dt);
  n.setOutput(1, castTensor(b, loc, state, n.elementType(stateDt)), stateDt);
  return success();
}

} // namespace

void registerAttentionLowerings() {
  auto &t = opLowerings();
  t["Attention"] = lowerAttention;
  t["RotaryEmbedding"] = lowerRotaryEmbedding;
  t["CausalConvWithState"] = lowerCausalConvWithState;
  t["LinearAttention"] = lowerLinearAttention;
}

} // namespace mcc
