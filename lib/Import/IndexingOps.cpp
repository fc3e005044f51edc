//===- IndexingOps.cpp - scatter, top-k, compress and other index-driven ops
//---===//
//
// Scatters and TopK are loop nests (scf.for) over tensors carried as
// iter_args: each step extracts and inserts single elements, which one-shot
// bufferization turns into in-place stores into one copy of the data.
// Compress and NonZero have value-dependent output shapes, so their
// selecting input must be known at compile time.
//
//===----------------------------------------------------------------------===//

#include "mcc/Import/NodeLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace mcc {
namespace {

/// An ONNX index (any integer type) as an `index` in [0, dim): negative
/// values count from the end, and anything still out of range is clamped so
/// that a bad index can never touch memory outside the tensor.
Value normalizedIndex(OpBuilder &b, Location l, Value v, int64_t dim) {
  Value iv = arith::IndexCastOp::create(b, l, b.getIndexType(), v);
  Value zero = arith::ConstantIndexOp::create(b, l, 0);
  Value dimV = dimValue(b, l, dim);
  Value neg = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, iv, zero);
  iv = arith::SelectOp::create(b, l, neg, arith::AddIOp::create(b, l, iv, dimV),
                               iv);
  iv = arith::MaxSIOp::create(b, l, iv, zero);
  return arith::MinSIOp::create(
      b, l, iv,
      arith::SubIOp::create(b, l, dimV, arith::ConstantIndexOp::create(b, l, 1)));
}

/// Loop bounds [0, shape[d]) with step 1 for scf::buildLoopNest.
struct LoopBounds {
  SmallVector<Value> lbs, ubs, steps;
};
LoopBounds loopBounds(OpBuilder &b, Location l, const Shape &shape) {
  LoopBounds r;
  Value zero = arith::ConstantIndexOp::create(b, l, 0);
  Value one = arith::ConstantIndexOp::create(b, l, 1);
  for (int64_t d : shape) {
    r.lbs.push_back(zero);
    r.ubs.push_back(dimValue(b, l, d));
    r.steps.push_back(one);
  }
  return r;
}

using Combine = std::function<Value(OpBuilder &, Location, Value, Value)>;

/// The scatter `reduction` attribute as combine(old, update); null for
/// "none" (plain overwrite).
FailureOr<Combine> scatterCombine(NodeLowering &n, int32_t dtype) {
  std::string red = n.attrString("reduction", "none");
  bool isF = isFloatDType(dtype), isU = dtype == kUInt8 || dtype == kBool;
  if (red == "none")
    return Combine();
  if (red == "add")
    return Combine([isF](OpBuilder &b, Location l, Value a, Value c) -> Value {
      if (isF)
        return arith::AddFOp::create(b, l, a, c);
      return arith::AddIOp::create(b, l, a, c);
    });
  if (red == "mul")
    return Combine([isF](OpBuilder &b, Location l, Value a, Value c) -> Value {
      if (isF)
        return arith::MulFOp::create(b, l, a, c);
      return arith::MulIOp::create(b, l, a, c);
    });
  if (red == "max")
    return Combine(
        [isF, isU](OpBuilder &b, Location l, Value a, Value c) -> Value {
          if (isF)
            return arith::MaximumFOp::create(b, l, a, c);
          if (isU)
            return arith::MaxUIOp::create(b, l, a, c);
          return arith::MaxSIOp::create(b, l, a, c);
        });
  if (red == "min")
    return Combine(
        [isF, isU](OpBuilder &b, Location l, Value a, Value c) -> Value {
          if (isF)
            return arith::MinimumFOp::create(b, l, a, c);
          if (isU)
            return arith::MinUIOp::create(b, l, a, c);
          return arith::MinSIOp::create(b, l, a, c);
        });
  return n.fail("unsupported reduction '" + red + "'");
}

/// Writes `upd` into `acc` at `at` (combined with the old value when a
/// reduction is given); returns the new tensor.
Value scatterOne(OpBuilder &b, Location l, Value acc, ValueRange at, Value upd,
                 const Combine &combine) {
  if (combine)
    upd = combine(b, l, tensor::ExtractOp::create(b, l, acc, at), upd);
  return tensor::InsertOp::create(b, l, upd, acc, at);
}

/// ScatterElements (and the deprecated Scatter): for every element i of
/// `indices`, out[i with i[axis] = indices[i]] = updates[i]. Updates apply
/// in row-major order, so duplicates resolve as in the ONNX reference.
LogicalResult lowerScatterElements(NodeLowering &n) {
  const Shape &data = n.shape(0), &idx = n.shape(1);
  int64_t rank = data.size();
  if ((int64_t)idx.size() != rank || n.shape(2) != idx)
    return n.fail("indices and updates must have the same shape and the rank "
                  "of data");
  int64_t axis = normalizeAxis(n.attrInt("axis", 0), rank);
  if (axis < 0 || axis >= rank)
    return n.fail("axis out of range");
  for (int64_t d = 0; d < rank; ++d)
    if (idx[d] > data[d] && d != axis)
      return n.fail("indices larger than data along axis " + Twine(d));
  auto combine = scatterCombine(n, n.dtype(0));
  if (failed(combine))
    return failure();
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Value indices = n.value(1), updates = n.value(2);
  LoopBounds lb = loopBounds(b, loc, idx);
  scf::LoopNest nest = scf::buildLoopNest(
      b, loc, lb.lbs, lb.ubs, lb.steps, ValueRange{n.value(0)},
      [&](OpBuilder &nb, Location l, ValueRange ivs, ValueRange acc) {
        SmallVector<Value> at(ivs.begin(), ivs.end());
        at[axis] = normalizedIndex(
            nb, l, tensor::ExtractOp::create(nb, l, indices, ivs), data[axis]);
        Value upd = tensor::ExtractOp::create(nb, l, updates, ivs);
        return scf::ValueVector{scatterOne(nb, l, acc[0], at, upd, *combine)};
      });
  n.setOutput(0, nest.results[0], n.dtype(0));
  return success();
}

/// ScatterND: indices [..., k] address slices data[i_0..i_{k-1}, :, ...];
/// updates has shape indices.shape[:-1] + data.shape[k:].
LogicalResult lowerScatterND(NodeLowering &n) {
  const Shape &data = n.shape(0), &idx = n.shape(1), &updShape = n.shape(2);
  if (idx.empty())
    return n.fail("indices must have rank >= 1");
  int64_t q = idx.size(), k = idx.back();
  if (k < 1 || k > (int64_t)data.size())
    return n.fail("indices.shape[-1] must be in [1, rank(data)]");
  Shape expect(idx.begin(), idx.end() - 1);
  expect.insert(expect.end(), data.begin() + k, data.end());
  if (updShape != expect)
    return n.fail("updates must have shape " + formatShape(expect));
  auto combine = scatterCombine(n, n.dtype(0));
  if (failed(combine))
    return failure();
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Value indices = n.value(1), updates = n.value(2);
  LoopBounds lb = loopBounds(b, loc, updShape);
  scf::LoopNest nest = scf::buildLoopNest(
      b, loc, lb.lbs, lb.ubs, lb.steps, ValueRange{n.value(0)},
      [&](OpBuilder &nb, Location l, ValueRange ivs, ValueRange acc) {
        SmallVector<Value> iat(ivs.begin(), ivs.begin() + (q - 1));
        iat.push_back(Value());
        SmallVector<Value> at;
        for (int64_t j = 0; j < k; ++j) {
          iat.back() = arith::ConstantIndexOp::create(nb, l, j);
          at.push_back(normalizedIndex(
              nb, l, tensor::ExtractOp::create(nb, l, indices, iat), data[j]));
        }
        at.append(ivs.begin() + (q - 1), ivs.end());
        Value upd = tensor::ExtractOp::create(nb, l, updates, ivs);
        return scf::ValueVector{scatterOne(nb, l, acc[0], at, upd, *combine)};
      });
  n.setOutput(0, nest.results[0], n.dtype(0));
  return success();
}

/// TopK: per row along `axis`, k selection passes; pass p takes the best
/// element ranked after the one pass p-1 took, in the order (value, then
/// lower index first) of the ONNX reference. O(n*k) per row, no scratch.
LogicalResult lowerTopK(NodeLowering &n) {
  int64_t k;
  if (n.opset() < 10) {
    k = n.attrInt("k", -1);
  } else {
    if (failed(n.requireLiterals({1}, "TopK k")))
      return failure();
    if (n.literal(1).size() != 1)
      return n.fail("k must hold one value");
    k = n.literal(1).getI(0);
  }
  const Shape &in = n.shape(0);
  int64_t rank = in.size();
  int64_t axis = normalizeAxis(n.attrInt("axis", -1), rank);
  if (axis < 0 || axis >= rank)
    return n.fail("axis out of range");
  int64_t len = in[axis];
  if (k < 0 || k > len)
    return n.fail("k = " + Twine(k) + " out of range for an axis of size " +
                  Twine(len));
  bool largest = n.attrInt("largest", 1) != 0;
  int32_t dt = n.dtype(0);
  if (dt == kBool)
    return n.fail("TopK of bool is not supported");
  bool isF = isFloatDType(dt), isU = dt == kUInt8;
  Shape out = in;
  out[axis] = k;
  Shape rows = in;
  rows.erase(rows.begin() + axis);

  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Type et = n.elementType(dt);
  Value x = n.value(0);
  Value outV = createEmpty(b, loc, out, et);
  Value outI = createEmpty(b, loc, out, b.getI64Type());
  if (k == 0) {
    n.setOutput(0, outV, dt);
    n.setOutput(1, outI, kInt64);
    return success();
  }
  // a "before" b in the output order, for values only (strict).
  auto before = [&](OpBuilder &nb, Location l, Value a, Value c) -> Value {
    if (isF)
      return arith::CmpFOp::create(nb, l,
                                   largest ? arith::CmpFPredicate::OGT
                                           : arith::CmpFPredicate::OLT,
                                   a, c);
    arith::CmpIPredicate p =
        largest ? (isU ? arith::CmpIPredicate::ugt : arith::CmpIPredicate::sgt)
                : (isU ? arith::CmpIPredicate::ult : arith::CmpIPredicate::slt);
    return arith::CmpIOp::create(nb, l, p, a, c);
  };
  auto eq = [&](OpBuilder &nb, Location l, Value a, Value c) -> Value {
    if (isF)
      return arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ, a, c);
    return arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, a, c);
  };

  LoopBounds rb = loopBounds(b, loc, rows);
  scf::LoopNest nest = scf::buildLoopNest(
      b, loc, rb.lbs, rb.ubs, rb.steps, ValueRange{outV, outI},
      [&](OpBuilder &nb, Location l, ValueRange rowIvs, ValueRange acc) {
        auto at = [&](Value j) {
          SmallVector<Value> r(rowIvs.begin(), rowIvs.end());
          r.insert(r.begin() + axis, j);
          return r;
        };
        Value zero = arith::ConstantIndexOp::create(nb, l, 0);
        Value one = arith::ConstantIndexOp::create(nb, l, 1);
        Value none = arith::ConstantIndexOp::create(nb, l, -1);
        Value kV = arith::ConstantIndexOp::create(nb, l, k);
        Value lenV = arith::ConstantIndexOp::create(nb, l, len);
        Value x0 = tensor::ExtractOp::create(nb, l, x, at(zero));
        // iter_args: values, indices, previous pick (value, index).
        auto pass = scf::ForOp::create(
            nb, l, zero, kV, one, ValueRange{acc[0], acc[1], x0, none},
            [&](OpBuilder &pb, Location pl, Value p, ValueRange pa) {
              Value prevV = pa[2], prevI = pa[3];
              Value first = arith::CmpIOp::create(
                  pb, pl, arith::CmpIPredicate::eq, prevI, none);
              auto scan = scf::ForOp::create(
                  pb, pl, zero, lenV, one, ValueRange{x0, none},
                  [&](OpBuilder &sb, Location sl, Value j, ValueRange sa) {
                    Value v = tensor::ExtractOp::create(sb, sl, x, at(j));
                    // Eligible: ranked strictly after the previous pick.
                    Value after = arith::OrIOp::create(
                        sb, sl, before(sb, sl, prevV, v),
                        arith::AndIOp::create(
                            sb, sl, eq(sb, sl, v, prevV),
                            arith::CmpIOp::create(
                                sb, sl, arith::CmpIPredicate::sgt, j, prevI)));
                    Value ok = arith::OrIOp::create(sb, sl, first, after);
                    // Better than the best so far (which has a lower index).
                    Value noBest = arith::CmpIOp::create(
                        sb, sl, arith::CmpIPredicate::eq, sa[1], none);
                    Value better = arith::OrIOp::create(
                        sb, sl, noBest, before(sb, sl, v, sa[0]));
                    Value take = arith::AndIOp::create(sb, sl, ok, better);
                    scf::YieldOp::create(
                        sb, sl,
                        ValueRange{
                            arith::SelectOp::create(sb, sl, take, v, sa[0]),
                            arith::SelectOp::create(sb, sl, take, j, sa[1])});
                  });
              Value bv = scan.getResult(0), bi = scan.getResult(1);
              // Unordered values (NaN) are never eligible; fall back to
              // index 0 rather than store -1.
              Value safeI = arith::MaxSIOp::create(pb, pl, bi, zero);
              Value vals = tensor::InsertOp::create(pb, pl, bv, pa[0], at(p));
              Value idxs = tensor::InsertOp::create(
                  pb, pl,
                  arith::IndexCastOp::create(pb, pl, pb.getI64Type(), safeI),
                  pa[1], at(p));
              scf::YieldOp::create(pb, pl, ValueRange{vals, idxs, bv, bi});
            });
        return scf::ValueVector{pass.getResult(0), pass.getResult(1)};
      });
  n.setOutput(0, nest.results[0], dt);
  n.setOutput(1, nest.results[1], kInt64);
  return success();
}

/// out = data gathered along `axis` at the compile-time positions `pos`.
Value gatherConstant(OpBuilder &b, Location loc, Value data, int64_t axis,
                     ArrayRef<int64_t> pos) {
  MLIRContext *ctx = b.getContext();
  Shape in = shapeOf(data), out = in;
  out[axis] = pos.size();
  int64_t rank = in.size();
  auto posType = RankedTensorType::get({(int64_t)pos.size()}, b.getI64Type());
  Value posV = arith::ConstantOp::create(
      b, loc, DenseIntElementsAttr::get(posType, pos));
  SmallVector<AffineMap> maps = {
      AffineMap::get(rank, 0, {getAffineDimExpr(axis, ctx)}, ctx),
      AffineMap::getMultiDimIdentityMap(rank, ctx)};
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  Value empty = createEmpty(
      b, loc, out, cast<RankedTensorType>(data.getType()).getElementType());
  return linalg::GenericOp::create(
             b, loc, empty.getType(), ValueRange{posV}, ValueRange{empty}, maps,
             iters,
             [&](OpBuilder &nb, Location l, ValueRange a) {
               SmallVector<Value> at;
               for (int64_t d = 0; d < rank; ++d)
                 at.push_back(
                     d == axis ? arith::IndexCastOp::create(
                                     nb, l, nb.getIndexType(), a[0])
                                     .getResult()
                               : linalg::IndexOp::create(nb, l, d).getResult());
               linalg::YieldOp::create(
                   nb, l,
                   tensor::ExtractOp::create(nb, l, data, at).getResult());
             })
      .getResult(0);
}

/// Compress: the condition fixes the output shape, so it must be known at
/// compile time; the op is then a gather at constant positions.
LogicalResult lowerCompress(NodeLowering &n) {
  if (failed(n.requireLiterals({1}, "Compress condition")))
    return failure();
  const Literal &cond = n.literal(1);
  if (cond.shape().size() != 1)
    return n.fail("condition must be 1-D");
  Shape data = n.shape(0);
  bool flat = !n.hasAttr("axis");
  int64_t axis = 0;
  if (flat) {
    data = {numElements(data)};
  } else {
    axis = normalizeAxis(n.attrInt("axis", 0), data.size());
    if (axis < 0 || axis >= (int64_t)data.size())
      return n.fail("axis out of range");
  }
  if (cond.size() > data[axis])
    return n.fail("condition longer than the compressed axis");
  std::vector<int64_t> pos;
  for (int64_t i = 0; i < cond.size(); ++i)
    if (cond.getAsDouble(i) != 0)
      pos.push_back(i);
  Shape out = data;
  out[axis] = pos.size();
  if (n.isLiteral(0)) {
    std::vector<int64_t> s = stridesOf(data);
    Literal src = n.literal(0).reshaped(data);
    n.setOutput(0, src.gather(out, [&](const int64_t *i) {
      int64_t f = 0;
      for (size_t d = 0; d < out.size(); ++d)
        f += ((int64_t)d == axis ? pos[i[d]] : i[d]) * s[d];
      return f;
    }));
    return success();
  }
  OpBuilder &b = n.builder();
  Value x = n.value(0);
  if (flat)
    x = emitReshape(b, n.loc(), x, data);
  n.setOutput(0, gatherConstant(b, n.loc(), x, axis, pos), n.dtype(0));
  return success();
}

/// NonZero: the count of nonzeros is the output shape, so the input must be
/// known at compile time and the result folds to a literal.
LogicalResult lowerNonZero(NodeLowering &n) {
  if (failed(n.requireLiterals({0}, "NonZero input")))
    return failure();
  const Literal &x = n.literal(0);
  Shape s = x.shape();
  int64_t rank = s.size();
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < x.size(); ++i)
    if (x.getAsDouble(i) != 0)
      hits.push_back(i);
  int64_t nnz = hits.size();
  std::vector<int64_t> st = stridesOf(s);
  Literal out(kInt64, {rank, nnz});
  for (int64_t j = 0; j < nnz; ++j)
    for (int64_t d = 0; d < rank; ++d)
      out.setI(d * nnz + j, hits[j] / st[d] % s[d]);
  n.setOutput(0, out);
  return success();
}

/// ReverseSequence: out[b, t] = in[b, len[b] - 1 - t] for t < len[b], else
/// in[b, t]. Lengths are clamped to [0, T] so a bad one stays in bounds.
LogicalResult lowerReverseSequence(NodeLowering &n) {
  const Shape &in = n.shape(0);
  int64_t rank = in.size();
  int64_t bAxis = n.attrInt("batch_axis", 1), tAxis = n.attrInt("time_axis", 0);
  if (rank < 2 || bAxis < 0 || tAxis < 0 || bAxis > 1 || tAxis > 1 ||
      bAxis == tAxis)
    return n.fail("batch_axis and time_axis must be 0 and 1 in some order");
  if (n.shape(1) != Shape{in[bAxis]})
    return n.fail("sequence_lens must be 1-D of the batch size");
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  MLIRContext *ctx = b.getContext();
  Value x = n.value(0);
  int64_t T = in[tAxis];
  SmallVector<AffineMap> maps = {
      AffineMap::get(rank, 0, {getAffineDimExpr(bAxis, ctx)}, ctx),
      AffineMap::getMultiDimIdentityMap(rank, ctx)};
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  Value empty = createEmpty(b, loc, in, n.elementType(n.dtype(0)));
  auto op = linalg::GenericOp::create(
      b, loc, empty.getType(), ValueRange{n.value(1)}, ValueRange{empty}, maps,
      iters, [&](OpBuilder &nb, Location l, ValueRange a) {
        Value len = arith::IndexCastOp::create(nb, l, nb.getIndexType(), a[0]);
        len = arith::MinSIOp::create(
            nb, l,
            arith::MaxSIOp::create(nb, l, len,
                                   arith::ConstantIndexOp::create(nb, l, 0)),
            arith::ConstantIndexOp::create(nb, l, T));
        SmallVector<Value> at;
        for (int64_t d = 0; d < rank; ++d)
          at.push_back(linalg::IndexOp::create(nb, l, d));
        Value t = at[tAxis];
        Value inSeq =
            arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt, t, len);
        Value rev =
            arith::SubIOp::create(nb, l, arith::SubIOp::create(nb, l, len, t),
                                  arith::ConstantIndexOp::create(nb, l, 1));
        at[tAxis] = arith::SelectOp::create(nb, l, inSeq, rev, t);
        linalg::YieldOp::create(
            nb, l, tensor::ExtractOp::create(nb, l, x, at).getResult());
      });
  n.setOutput(0, op.getResult(0), n.dtype(0));
  return success();
}

/// MaxUnpool, as the ONNX reference: X scattered to the flat positions
/// `indices` of a zero tensor of the pooling-inferred shape, which is then
/// zero-padded at the end of each dim up to output_shape when given.
LogicalResult lowerMaxUnpool(NodeLowering &n) {
  const Shape &xs = n.shape(0);
  if (n.shape(1) != xs)
    return n.fail("indices must have the shape of X");
  int64_t r = xs.size() - 2;
  std::vector<int64_t> kernel = n.attrInts("kernel_shape");
  if (r < 1 || (int64_t)kernel.size() != r)
    return n.fail("kernel_shape must give every spatial dim");
  std::vector<int64_t> strides =
      n.attrInts("strides", std::vector<int64_t>(r, 1));
  std::vector<int64_t> pads =
      n.attrInts("pads", std::vector<int64_t>(2 * r, 0));
  if ((int64_t)strides.size() != r || (int64_t)pads.size() != 2 * r)
    return n.fail("strides/pads do not match the spatial dims");
  Shape inferred = {xs[0], xs[1]};
  for (int64_t d = 0; d < r; ++d)
    inferred.push_back((xs[2 + d] - 1) * strides[d] - pads[d] - pads[r + d] +
                       kernel[d]);
  Shape out = inferred;
  if (n.hasInput(2)) {
    if (failed(n.requireLiterals({2}, "MaxUnpool output_shape")))
      return failure();
    out = n.literal(2).toInts();
    if (out.size() != inferred.size())
      return n.fail("output_shape must have rank " + Twine(inferred.size()));
    for (size_t d = 0; d < out.size(); ++d)
      if (out[d] < inferred[d])
        return n.fail("output_shape " + formatShape(out) +
                      " is smaller than the inferred " + formatShape(inferred));
  }
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Type et = n.elementType(n.dtype(0));
  int64_t total = numElements(inferred), count = numElements(xs);
  Value flatX = emitReshape(b, loc, n.value(0), {count});
  Value flatI = emitReshape(b, loc, n.value(1), {count});
  Value y = emitFilled(b, loc, {total}, cast<TypedAttr>(b.getZeroAttr(et)));
  LoopBounds lb = loopBounds(b, loc, {count});
  scf::LoopNest nest = scf::buildLoopNest(
      b, loc, lb.lbs, lb.ubs, lb.steps, ValueRange{y},
      [&](OpBuilder &nb, Location l, ValueRange ivs, ValueRange acc) {
        Value at = normalizedIndex(
            nb, l, tensor::ExtractOp::create(nb, l, flatI, ivs), total);
        Value v = tensor::ExtractOp::create(nb, l, flatX, ivs);
        return scf::ValueVector{
            tensor::InsertOp::create(nb, l, v, acc[0], ValueRange{at})};
      });
  Value res = emitReshape(b, loc, nest.results[0], inferred);
  if (out != inferred) {
    SmallVector<OpFoldResult> lo, hi;
    for (size_t d = 0; d < out.size(); ++d) {
      lo.push_back(b.getIndexAttr(0));
      hi.push_back(b.getIndexAttr(out[d] - inferred[d]));
    }
    Value pv =
        arith::ConstantOp::create(b, loc, cast<TypedAttr>(b.getZeroAttr(et)));
    res = tensor::PadOp::create(b, loc, RankedTensorType::get(out, et), res, lo,
                                hi, pv);
  }
  n.setOutput(0, res, n.dtype(0));
  return success();
}

/// TensorScatter (KV-cache update): update's slices along `axis` are written
/// to the cache starting at write_indices[batch] (0 without that input),
/// wrapping in "circular" mode; in "linear" mode a position past the end is
/// clamped to the last one rather than written out of bounds.
LogicalResult lowerTensorScatter(NodeLowering &n) {
  const Shape &cache = n.shape(0), &upd = n.shape(1);
  int64_t rank = cache.size();
  int64_t axis = normalizeAxis(n.attrInt("axis", -2), rank);
  if (axis < 1 || axis >= rank)
    return n.fail("axis must be a non-batch dimension");
  if ((int64_t)upd.size() != rank)
    return n.fail("update must have the rank of past_cache");
  for (int64_t d = 0; d < rank; ++d)
    if (d == axis ? upd[d] > cache[d] : upd[d] != cache[d])
      return n.fail("update " + formatShape(upd) + " does not fit past_cache " +
                    formatShape(cache));
  std::string mode = n.attrString("mode", "linear");
  if (mode != "linear" && mode != "circular")
    return n.fail("unknown mode '" + mode + "'");
  bool circular = mode == "circular";
  if (n.hasInput(2) && n.shape(2) != Shape{cache[0]})
    return n.fail("write_indices must be 1-D of the batch size");
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Value updates = n.value(1);
  Value widx = n.hasInput(2) ? n.value(2) : Value();
  int64_t len = cache[axis];
  LoopBounds lb = loopBounds(b, loc, upd);
  scf::LoopNest nest = scf::buildLoopNest(
      b, loc, lb.lbs, lb.ubs, lb.steps, ValueRange{n.value(0)},
      [&](OpBuilder &nb, Location l, ValueRange ivs, ValueRange acc) {
        SmallVector<Value> at(ivs.begin(), ivs.end());
        Value pos = ivs[axis];
        if (widx) {
          Value w = arith::IndexCastOp::create(
              nb, l, nb.getIndexType(),
              tensor::ExtractOp::create(nb, l, widx, ValueRange{ivs[0]}));
          pos = arith::AddIOp::create(nb, l, pos, w);
        }
        Value lenV = arith::ConstantIndexOp::create(nb, l, len);
        Value zero = arith::ConstantIndexOp::create(nb, l, 0);
        if (circular) {
          pos = arith::RemSIOp::create(nb, l, pos, lenV);
          Value neg = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt,
                                            pos, zero);
          pos = arith::SelectOp::create(
              nb, l, neg, arith::AddIOp::create(nb, l, pos, lenV), pos);
        } else {
          pos = arith::MinSIOp::create(
              nb, l, arith::MaxSIOp::create(nb, l, pos, zero),
              arith::ConstantIndexOp::create(nb, l, len - 1));
        }
        at[axis] = pos;
        Value v = tensor::ExtractOp::create(nb, l, updates, ivs);
        return scf::ValueVector{
            tensor::InsertOp::create(nb, l, v, acc[0], at).getResult()};
      });
  n.setOutput(0, nest.results[0], n.dtype(0));
  return success();
}

} // namespace

void registerIndexingLowerings() {
  auto &t = opLowerings();
  t["ScatterElements"] = lowerScatterElements;
  t["Scatter"] = lowerScatterElements;
  t["ScatterND"] = lowerScatterND;
  t["TopK"] = lowerTopK;
  t["Compress"] = lowerCompress;
  t["NonZero"] = lowerNonZero;
  t["ReverseSequence"] = lowerReverseSequence;
  t["MaxUnpool"] = lowerMaxUnpool;
  t["TensorScatter"] = lowerTensorScatter;
}

} // namespace mcc
