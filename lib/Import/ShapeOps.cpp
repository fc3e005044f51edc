//===- ShapeOps.cpp - ONNX data-movement and shape ops
//---------------------===//
//
// With every input shape pinned, Shape/Size and everything computed from
// them fold to literals here; this is what removes the exporters' shape
// subgraphs (Shape -> Gather -> Unsqueeze -> Concat -> Reshape ...).
//
//===----------------------------------------------------------------------===//

#include "mcc/Import/NodeLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <algorithm>
#include <numeric>

using namespace mlir;

namespace mcc {
namespace {

void forward(NodeLowering &n, size_t in, size_t out) {
  if (n.isLiteral(in))
    n.setOutput(out, n.literal(in));
  else
    n.setOutput(out, n.value(in), n.dtype(in));
}

/// Reshape to `shape` (element count already checked).
void setReshaped(NodeLowering &n, const Shape &shape) {
  if (n.isLiteral(0) && !hasSymbolicDims(shape)) {
    n.setOutput(0, n.literal(0).reshaped(shape));
    return;
  }
  n.setOutput(0, emitReshape(n.builder(), n.loc(), n.value(0), shape),
              n.dtype(0));
}

LogicalResult lowerReshape(NodeLowering &n) {
  if (failed(n.requireLiterals({1}, "the target shape")))
    return failure();
  std::vector<int64_t> target = n.literal(1).toInts();
  const Shape &in = n.shape(0);
  bool allowZero = n.attrInt("allowzero", 0) != 0;
  int64_t inferAt = -1, known = 1;
  Shape knownDims;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0 && !allowZero) {
      if (i >= in.size())
        return n.fail("shape has 0 at axis " + Twine(i) +
                      " beyond the input's rank");
      target[i] = in[i];
    }
    if (target[i] == -1) {
      if (inferAt >= 0)
        return n.fail("shape has more than one -1");
      inferAt = i;
    } else if (target[i] < 0 && !isSymbolicDim(target[i])) {
      return n.fail("shape has invalid dim " + Twine(target[i]));
    } else {
      knownDims.push_back(target[i]);
      if (!isSymbolicDim(target[i]))
        known *= target[i];
    }
  }
  if (hasSymbolicDims(in) || hasSymbolicDims(target)) {
    // Symbolic sizes: the -1 is what is left after cancelling factors.
    SymbolicDims &sd = symbolicDims();
    if (inferAt >= 0) {
      std::optional<int64_t> q = sd.quotient(in, knownDims);
      if (!q)
        return n.fail("cannot infer -1 reshaping " + sd.describe(in) +
                      " to " + sd.describe(target));
      target[inferAt] = *q;
    }
    if (sd.quotient(in, target) != 1)
      return n.fail("cannot reshape " + sd.describe(in) + " to " +
                    sd.describe(target) + ": the sizes do not provably agree");
    setReshaped(n, target);
    return success();
  }
  int64_t total = numElements(in);
  if (inferAt >= 0) {
    if (known == 0 || total % known != 0)
      return n.fail("cannot infer -1 reshaping " + formatShape(in) + " to " +
                    formatShape(n.literal(1).toInts()));
    target[inferAt] = total / known;
  }
  if (numElements(target) != total)
    return n.fail("cannot reshape " + formatShape(in) + " (" + Twine(total) +
                  " elements) to " + formatShape(target));
  setReshaped(n, target);
  return success();
}

LogicalResult lowerFlatten(NodeLowering &n) {
  const Shape &in = n.shape(0);
  int64_t axis = normalizeAxis(n.attrInt("axis", 1), in.size());
  if (axis < 0 || axis > static_cast<int64_t>(in.size()))
    return n.fail("axis out of range");
  if (hasSymbolicDims(in)) {
    SymbolicDims &sd = symbolicDims();
    setReshaped(n, {sd.product(Shape(in.begin(), in.begin() + axis)),
                    sd.product(Shape(in.begin() + axis, in.end()))});
    return success();
  }
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < static_cast<int64_t>(in.size()); ++i)
    (i < axis ? outer : inner) *= in[i];
  setReshaped(n, {outer, inner});
  return success();
}

LogicalResult lowerSqueeze(NodeLowering &n) {
  auto axes = n.intsFromInputOrAttr(1, "axes");
  if (failed(axes))
    return failure();
  const Shape &in = n.shape(0);
  std::vector<bool> drop(in.size(), false);
  if (*axes) {
    for (int64_t a : **axes) {
      a = normalizeAxis(a, in.size());
      if (a < 0 || a >= static_cast<int64_t>(in.size()) || in[a] != 1)
        return n.fail("cannot squeeze axis " + Twine(a) + " of shape " +
                      formatShape(in));
      drop[a] = true;
    }
  } else {
    for (size_t i = 0; i < in.size(); ++i)
      drop[i] = in[i] == 1;
  }
  Shape out;
  for (size_t i = 0; i < in.size(); ++i)
    if (!drop[i])
      out.push_back(in[i]);
  setReshaped(n, out);
  return success();
}

LogicalResult lowerUnsqueeze(NodeLowering &n) {
  auto axes = n.intsFromInputOrAttr(1, "axes");
  if (failed(axes))
    return failure();
  if (!*axes)
    return n.fail("axes are required");
  const Shape &in = n.shape(0);
  int64_t outRank = in.size() + (*axes)->size();
  std::vector<bool> inserted(outRank, false);
  for (int64_t a : **axes) {
    a = normalizeAxis(a, outRank);
    if (a < 0 || a >= outRank || inserted[a])
      return n.fail("invalid or repeated axis " + Twine(a));
    inserted[a] = true;
  }
  Shape out;
  size_t k = 0;
  for (int64_t i = 0; i < outRank; ++i)
    out.push_back(inserted[i] ? 1 : in[k++]);
  setReshaped(n, out);
  return success();
}

LogicalResult lowerTranspose(NodeLowering &n) {
  const Shape &in = n.shape(0);
  std::vector<int64_t> perm = n.attrInts("perm");
  if (perm.empty())
    for (int64_t i = in.size() - 1; i >= 0; --i)
      perm.push_back(i);
  if (perm.size() != in.size())
    return n.fail("perm has " + Twine(perm.size()) + " entries for rank " +
                  Twine(in.size()));
  Shape out;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(in.size()))
      return n.fail("perm entry " + Twine(p) + " out of range");
    out.push_back(in[p]);
  }
  if (n.isLiteral(0)) {
    std::vector<int64_t> st = stridesOf(in);
    n.setOutput(0, n.literal(0).gather(out, [&](const int64_t *idx) {
      int64_t f = 0;
      for (size_t i = 0; i < perm.size(); ++i)
        f += idx[i] * st[perm[i]];
      return f;
    }));
    return success();
  }
  n.setOutput(0, emitTranspose(n.builder(), n.loc(), n.value(0), perm),
              n.dtype(0));
  return success();
}

LogicalResult lowerConcat(NodeLowering &n) {
  std::vector<size_t> ins;
  for (size_t i = 0; i < n.numInputs(); ++i)
    if (n.hasInput(i))
      ins.push_back(i);
  if (ins.empty())
    return n.fail("needs inputs");
  int64_t rank = n.rank(ins[0]);
  int64_t axis = normalizeAxis(n.attrInt("axis", 0), rank);
  if (axis < 0 || axis >= rank)
    return n.fail("axis out of range");
  Shape out = n.shape(ins[0]);
  out[axis] = 0;
  std::vector<int64_t> offsets;
  SymbolicDims *sd = activeSymbolicDims();
  for (size_t i : ins) {
    const Shape &s = n.shape(i);
    if (static_cast<int64_t>(s.size()) != rank)
      return n.fail("inputs have different ranks");
    for (int64_t d = 0; d < rank; ++d) {
      if (d == axis || s[d] == out[d])
        continue;
      // A symbolic dim meeting a static one is taken to equal it.
      if (isSymbolicDim(s[d]) != isSymbolicDim(out[d])) {
        out[d] = isSymbolicDim(out[d]) ? s[d] : out[d];
        continue;
      }
      return n.fail("input shapes " + formatShape(n.shape(ins[0])) + " and " +
                    formatShape(s) + " differ off the axis");
    }
    offsets.push_back(out[axis]);
    out[axis] = isSymbolicDim(out[axis]) || isSymbolicDim(s[axis])
                    ? sd->add(out[axis], s[axis])
                    : out[axis] + s[axis];
  }
  if (n.allInputsLiteral() && !hasSymbolicDims(out)) {
    Literal r(n.dtype(ins[0]), out);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d)
      outer *= out[d];
    for (int64_t d = axis + 1; d < rank; ++d)
      inner *= out[d];
    size_t es = dtypeSize(r.dtype());
    for (size_t k = 0; k < ins.size(); ++k) {
      const Literal &l = n.literal(ins[k]);
      int64_t len = l.shape()[axis] * inner;
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(r.mutableData() +
                        (o * out[axis] * inner + offsets[k] * inner) * es,
                    l.data() + o * len * es, len * es);
    }
    n.setOutput(0, std::move(r));
    return success();
  }
  OpBuilder &b = n.builder();
  Type et = n.elementType(n.dtype(ins[0]));
  Value acc = createEmpty(b, n.loc(), out, et);
  for (size_t k = 0; k < ins.size(); ++k) {
    const Shape &s = n.shape(ins[k]);
    if (s[axis] == 0)
      continue;
    SmallVector<OpFoldResult> offs(rank, b.getIndexAttr(0)), sizes,
        strides(rank, b.getIndexAttr(1));
    offs[axis] = dimFoldResult(b, n.loc(), offsets[k]);
    for (int64_t d = 0; d < rank; ++d)
      sizes.push_back(dimFoldResult(b, n.loc(), d == axis ? s[d] : out[d]));
    acc = tensor::InsertSliceOp::create(b, n.loc(), n.value(ins[k]), acc, offs,
                                        sizes, strides);
  }
  n.setOutput(0, acc, n.dtype(ins[0]));
  return success();
}

/// Emits out[i] = in[start + i*step] per axis, for any step sign.
Value emitStridedGather(OpBuilder &b, Location loc, Value input,
                        const Shape &out, const std::vector<int64_t> &starts,
                        const std::vector<int64_t> &steps) {
  Type et = cast<RankedTensorType>(input.getType()).getElementType();
  Value empty = createEmpty(b, loc, out, et);
  SmallVector<AffineMap> maps = {
      AffineMap::getMultiDimIdentityMap(out.size(), b.getContext())};
  SmallVector<utils::IteratorType> iters(out.size(),
                                         utils::IteratorType::parallel);
  auto op = linalg::GenericOp::create(
      b, loc, empty.getType(), ValueRange{}, ValueRange{empty}, maps, iters,
      [&](OpBuilder &nb, Location nloc, ValueRange) {
        SmallVector<Value> idx;
        for (size_t d = 0; d < out.size(); ++d) {
          Value i = linalg::IndexOp::create(nb, nloc, d);
          Value step = arith::ConstantIndexOp::create(nb, nloc, steps[d]);
          Value start = arith::ConstantIndexOp::create(nb, nloc, starts[d]);
          idx.push_back(arith::AddIOp::create(
              nb, nloc, start, arith::MulIOp::create(nb, nloc, i, step)));
        }
        Value v = tensor::ExtractOp::create(nb, nloc, input, idx);
        linalg::YieldOp::create(nb, nloc, v);
      });
  return op.getResult(0);
}

/// Normalizes and clamps a slice's start and end on an axis where the dim,
/// start or end is symbolic; only positive steps. Where the bounds cannot
/// tell whether a symbolic end exceeds a static dim, the end is taken to
/// fit and the symbol bounded by the dim (a position table sliced by the
/// sequence length bounds the sequence length).
LogicalResult symbolicSliceBounds(NodeLowering &n, int64_t dim, int64_t &s,
                                  int64_t &e, int64_t st) {
  SymbolicDims &sd = symbolicDims();
  if (st < 0)
    return n.fail("a negative step on an axis of symbolic size " +
                  sd.describe(dim) + " is not supported");
  constexpr int64_t kToTheEnd = int64_t(1) << 31;
  if (!isSymbolicDim(s) && s < 0)
    s = sd.add(s, dim);
  if (!isSymbolicDim(e)) {
    if (e >= kToTheEnd)
      e = dim;
    else if (e < 0)
      e = e < -kToTheEnd ? 0 : sd.add(e, dim);
  }
  auto clampToDim = [&](int64_t &x, const char *what) -> LogicalResult {
    std::optional<bool> le = sd.knownLE(x, dim);
    if (le && *le)
      return success();
    if (le && !*le) {
      x = dim;
      return success();
    }
    if (isSymbolicDim(x) && !isSymbolicDim(dim)) {
      sd.assumeAtMost(x, dim);
      return success();
    }
    return n.fail(Twine("cannot tell whether the slice ") + what + " " +
                  sd.describe(x) + " lies within the axis of size " +
                  sd.describe(dim) + "; pin the dims with --shape");
  };
  if (failed(clampToDim(s, "start")) || failed(clampToDim(e, "end")))
    return failure();
  if (sd.lowerBound(s) < 0 || sd.lowerBound(e) < 0)
    return n.fail("cannot tell whether the slice bounds " + sd.describe(s) +
                  ".." + sd.describe(e) + " are nonnegative");
  if (!sd.knownLE(s, e).value_or(false))
    return n.fail("cannot tell whether the slice start " + sd.describe(s) +
                  " precedes its end " + sd.describe(e));
  return success();
}

LogicalResult lowerSlice(NodeLowering &n) {
  const Shape &in = n.shape(0);
  int64_t rank = in.size();
  std::vector<int64_t> starts, ends, axes, steps;
  if (n.opset() < 10) {
    // Slice-1: starts/ends/axes are attributes, steps are 1.
    starts = n.attrInts("starts");
    ends = n.attrInts("ends");
    axes = n.attrInts("axes");
    if (axes.empty())
      for (size_t i = 0; i < starts.size(); ++i)
        axes.push_back(i);
    steps.assign(starts.size(), 1);
  } else {
    if (failed(n.requireLiterals({1, 2, 3, 4}, "starts/ends/axes/steps")))
      return failure();
    starts = n.literal(1).toInts();
    ends = n.literal(2).toInts();
    if (n.hasInput(3))
      axes = n.literal(3).toInts();
    else
      for (size_t i = 0; i < starts.size(); ++i)
        axes.push_back(i);
    if (n.hasInput(4))
      steps = n.literal(4).toInts();
    else
      steps.assign(starts.size(), 1);
  }
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    return n.fail("starts, ends, axes and steps differ in length");
  std::vector<int64_t> fs(rank, 0), fstep(rank, 1);
  Shape out = in;
  for (size_t k = 0; k < starts.size(); ++k) {
    int64_t a = normalizeAxis(axes[k], rank);
    if (a < 0 || a >= rank)
      return n.fail("axis " + Twine(axes[k]) + " out of range");
    int64_t dim = in[a], st = steps[k];
    if (st == 0)
      return n.fail("step is 0");
    int64_t s = starts[k], e = ends[k];
    if (isSymbolicDim(dim) || isSymbolicDim(s) || isSymbolicDim(e)) {
      if (failed(symbolicSliceBounds(n, dim, s, e, st)))
        return failure();
      out[a] = *symbolicDims().ceilDiv(symbolicDims().sub(e, s), st);
      fs[a] = s;
      fstep[a] = st;
      continue;
    }
    if (s < 0)
      s += dim;
    if (e < 0 && e > INT64_MIN / 2)
      e += dim;
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      out[a] = e > s ? (e - s + st - 1) / st : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      out[a] = s > e ? (s - e + (-st) - 1) / (-st) : 0;
    }
    fs[a] = s;
    fstep[a] = st;
  }
  bool symbolic = hasSymbolicDims(out) || hasSymbolicDims(fs);
  if (n.isLiteral(0) && !symbolic) {
    std::vector<int64_t> str = stridesOf(in);
    n.setOutput(0, n.literal(0).gather(out, [&](const int64_t *idx) {
      int64_t f = 0;
      for (int64_t d = 0; d < rank; ++d)
        f += (fs[d] + idx[d] * fstep[d]) * str[d];
      return f;
    }));
    return success();
  }
  OpBuilder &b = n.builder();
  // An empty slice holds no data: a literal, which Concat and the like skip.
  if (!symbolic && numElements(out) == 0) {
    n.setOutput(0, Literal(n.dtype(0), out));
    return success();
  }
  bool positive =
      std::all_of(fstep.begin(), fstep.end(), [](int64_t s) { return s > 0; });
  if (positive) {
    SmallVector<OpFoldResult> o, sz, st;
    for (int64_t d = 0; d < rank; ++d) {
      o.push_back(dimFoldResult(b, n.loc(), fs[d]));
      sz.push_back(dimFoldResult(b, n.loc(), out[d]));
      st.push_back(b.getIndexAttr(fstep[d]));
    }
    auto type = n.tensorType(out, n.dtype(0));
    n.setOutput(
        0,
        tensor::ExtractSliceOp::create(b, n.loc(), type, n.value(0), o, sz, st),
        n.dtype(0));
    return success();
  }
  n.setOutput(0, emitStridedGather(b, n.loc(), n.value(0), out, fs, fstep),
              n.dtype(0));
  return success();
}

LogicalResult lowerGather(NodeLowering &n) {
  const Shape &data = n.shape(0), &indices = n.shape(1);
  int64_t rank = data.size();
  int64_t axis = normalizeAxis(n.attrInt("axis", 0), rank);
  if (axis < 0 || axis >= rank)
    return n.fail("axis out of range");
  Shape out(data.begin(), data.begin() + axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  int64_t dim = data[axis], ir = indices.size();
  if (n.isLiteral(1) && !isSymbolicDim(dim)) {
    const Literal &il = n.literal(1);
    for (int64_t i = 0; i < il.size(); ++i) {
      int64_t v = il.getI(i);
      if (v < -dim || v >= dim)
        return n.fail("index " + Twine(v) + " out of range for axis of size " +
                      Twine(dim));
    }
    if (n.isLiteral(0)) {
      std::vector<int64_t> ds = stridesOf(data), is = stridesOf(indices);
      n.setOutput(0, n.literal(0).gather(out, [&](const int64_t *idx) {
        int64_t flat = 0;
        for (int64_t d = 0; d < axis; ++d)
          flat += idx[d] * ds[d];
        int64_t ii = 0;
        for (int64_t d = 0; d < ir; ++d)
          ii += idx[axis + d] * is[d];
        int64_t v = il.getI(ii);
        if (v < 0)
          v += dim;
        flat += v * ds[axis];
        for (int64_t d = axis + 1; d < rank; ++d)
          flat += idx[d + ir - 1] * ds[d];
        return flat;
      }));
      return success();
    }
  }
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  MLIRContext *ctx = b.getContext();
  Value dataV = n.value(0), idxV = n.value(1);
  int64_t outRank = out.size();
  SmallVector<AffineExpr> idxExprs;
  for (int64_t d = 0; d < ir; ++d)
    idxExprs.push_back(getAffineDimExpr(axis + d, ctx));
  SmallVector<AffineMap> maps = {
      AffineMap::get(outRank, 0, idxExprs, ctx),
      AffineMap::getMultiDimIdentityMap(outRank, ctx)};
  SmallVector<utils::IteratorType> iters(outRank,
                                         utils::IteratorType::parallel);
  Value empty = createEmpty(b, loc, out, n.elementType(n.dtype(0)));
  auto op = linalg::GenericOp::create(
      b, loc, empty.getType(), ValueRange{idxV}, ValueRange{empty}, maps, iters,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        SmallVector<Value> at;
        for (int64_t d = 0; d < axis; ++d)
          at.push_back(linalg::IndexOp::create(nb, nloc, d));
        Value iv =
            arith::IndexCastOp::create(nb, nloc, nb.getIndexType(), args[0]);
        // Negative indices count from the end; clamp so a bad index can't
        // read outside the tensor.
        Value zero = arith::ConstantIndexOp::create(nb, nloc, 0);
        Value dimV = isSymbolicDim(dim)
                         ? symbolicDims().materialize(nb, nloc, dim)
                         : arith::ConstantIndexOp::create(nb, nloc, dim);
        Value neg = arith::CmpIOp::create(nb, nloc, arith::CmpIPredicate::slt,
                                          iv, zero);
        iv = arith::SelectOp::create(
            nb, nloc, neg, arith::AddIOp::create(nb, nloc, iv, dimV), iv);
        Value maxI = arith::SubIOp::create(
            nb, nloc, dimV, arith::ConstantIndexOp::create(nb, nloc, 1));
        iv = arith::MaxSIOp::create(nb, nloc, iv, zero);
        iv = arith::MinSIOp::create(nb, nloc, iv, maxI);
        at.push_back(iv);
        for (int64_t d = axis + 1; d < rank; ++d)
          at.push_back(linalg::IndexOp::create(nb, nloc, d + ir - 1));
        Value v = tensor::ExtractOp::create(nb, nloc, dataV, at);
        linalg::YieldOp::create(nb, nloc, v);
      });
  n.setOutput(0, op.getResult(0), n.dtype(0));
  return success();
}

LogicalResult lowerSplit(NodeLowering &n) {
  const Shape &in = n.shape(0);
  int64_t rank = in.size();
  int64_t axis = normalizeAxis(n.attrInt("axis", 0), rank);
  if (axis < 0 || axis >= rank)
    return n.fail("axis out of range");
  if (isSymbolicDim(in[axis]))
    return n.fail("cannot split an axis of symbolic size " +
                  symbolicDims().describe(in[axis]));
  std::vector<int64_t> sizes;
  auto split = n.intsFromInputOrAttr(1, "split");
  if (failed(split))
    return failure();
  size_t outs = n.numOutputs();
  if (*split) {
    sizes = **split;
  } else {
    int64_t parts = n.attrInt("num_outputs", outs);
    int64_t chunk = (in[axis] + parts - 1) / parts;
    for (int64_t i = 0, left = in[axis]; i < parts; ++i, left -= chunk)
      sizes.push_back(std::min(chunk, left));
  }
  if (sizes.size() != outs)
    return n.fail("split gives " + Twine(sizes.size()) + " parts for " +
                  Twine(outs) + " outputs");
  if (std::accumulate(sizes.begin(), sizes.end(), int64_t(0)) != in[axis])
    return n.fail("split sizes do not add up to " + Twine(in[axis]));
  int64_t offset = 0;
  OpBuilder &b = n.builder();
  for (size_t k = 0; k < outs; ++k) {
    Shape out = in;
    out[axis] = sizes[k];
    if (!hasSymbolicDims(out) && numElements(out) == 0) {
      // Empty pieces (split lengths of 0) hold no data.
      n.setOutput(k, Literal(n.dtype(0), out));
    } else if (n.isLiteral(0)) {
      std::vector<int64_t> st = stridesOf(in);
      n.setOutput(k, n.literal(0).gather(out, [&](const int64_t *idx) {
        int64_t f = 0;
        for (int64_t d = 0; d < rank; ++d)
          f += (idx[d] + (d == axis ? offset : 0)) * st[d];
        return f;
      }));
    } else {
      SmallVector<OpFoldResult> o(rank, b.getIndexAttr(0)), sz,
          str(rank, b.getIndexAttr(1));
      o[axis] = b.getIndexAttr(offset);
      for (int64_t d : out)
        sz.push_back(dimFoldResult(b, n.loc(), d));
      n.setOutput(k,
                  tensor::ExtractSliceOp::create(b, n.loc(),
                                                 n.tensorType(out, n.dtype(0)),
                                                 n.value(0), o, sz, str),
                  n.dtype(0));
    }
    offset += sizes[k];
  }
  return success();
}

LogicalResult lowerExpand(NodeLowering &n) {
  if (failed(n.requireLiterals({1}, "the target shape")))
    return failure();
  Shape out;
  if (!broadcastShapes({n.shape(0), n.literal(1).toInts()}, out))
    return n.fail("cannot expand " + formatShape(n.shape(0)) + " to " +
                  formatShape(n.literal(1).toInts()));
  if (n.isLiteral(0) && !hasSymbolicDims(out)) {
    const Shape &in = n.shape(0);
    std::vector<int64_t> st = stridesOf(in);
    size_t off = out.size() - in.size();
    n.setOutput(0, n.literal(0).gather(out, [&](const int64_t *idx) {
      int64_t f = 0;
      for (size_t d = 0; d < in.size(); ++d)
        f += (in[d] == 1 ? 0 : idx[off + d]) * st[d];
      return f;
    }));
    return success();
  }
  n.setOutput(0, emitBroadcastTo(n.builder(), n.loc(), n.value(0), out),
              n.dtype(0));
  return success();
}

LogicalResult lowerTile(NodeLowering &n) {
  if (failed(n.requireLiterals({1}, "repeats")))
    return failure();
  std::vector<int64_t> reps = n.literal(1).toInts();
  const Shape &in = n.shape(0);
  if (reps.size() != in.size())
    return n.fail("repeats has the wrong length");
  Shape out;
  for (size_t d = 0; d < in.size(); ++d)
    out.push_back(in[d] * reps[d]);
  if (n.isLiteral(0)) {
    std::vector<int64_t> st = stridesOf(in);
    n.setOutput(0, n.literal(0).gather(out, [&](const int64_t *idx) {
      int64_t f = 0;
      for (size_t d = 0; d < in.size(); ++d)
        f += (idx[d] % in[d]) * st[d];
      return f;
    }));
    return success();
  }
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Value input = n.value(0);
  Value empty = createEmpty(b, loc, out, n.elementType(n.dtype(0)));
  SmallVector<AffineMap> maps = {
      AffineMap::getMultiDimIdentityMap(out.size(), b.getContext())};
  SmallVector<utils::IteratorType> iters(out.size(),
                                         utils::IteratorType::parallel);
  auto op = linalg::GenericOp::create(
      b, loc, empty.getType(), ValueRange{}, ValueRange{empty}, maps, iters,
      [&](OpBuilder &nb, Location nloc, ValueRange) {
        SmallVector<Value> idx;
        for (size_t d = 0; d < out.size(); ++d) {
          Value i = linalg::IndexOp::create(nb, nloc, d);
          Value m = arith::ConstantIndexOp::create(nb, nloc, in[d]);
          idx.push_back(arith::RemUIOp::create(nb, nloc, i, m));
        }
        linalg::YieldOp::create(
            nb, nloc,
            tensor::ExtractOp::create(nb, nloc, input, idx).getResult());
      });
  n.setOutput(0, op.getResult(0), n.dtype(0));
  return success();
}

LogicalResult lowerShape(NodeLowering &n) {
  const Shape &in = n.shape(0);
  int64_t rank = in.size();
  int64_t start = n.attrInt("start", 0), end = n.attrInt("end", rank);
  if (start < 0)
    start += rank;
  if (end < 0)
    end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  std::vector<int64_t> dims;
  for (int64_t i = start; i < end; ++i)
    dims.push_back(in[i]);
  n.setOutput(0, Literal::fromInts(dims));
  return success();
}

LogicalResult lowerConstantOfShape(NodeLowering &n) {
  if (failed(n.requireLiterals({0}, "the shape")))
    return failure();
  Shape shape = n.literal(0).toInts();
  Literal value(kFloat, {1});
  value.setF(0, 0.0);
  if (const auto *a = n.attr("value")) {
    auto lit = n.literalFromProto(a->t());
    if (failed(lit))
      return failure();
    value = *lit;
  }
  if (hasSymbolicDims(shape)) {
    // Sized at run time: a fill of the value.
    GraphValue scalar;
    scalar.dtype = value.dtype();
    scalar.literal = value.reshaped({});
    OpBuilder &b = n.builder();
    Value c = n.materialize(scalar);
    Value elem = tensor::ExtractOp::create(b, n.loc(), c, ValueRange{});
    Value empty = createEmpty(b, n.loc(), shape, elem.getType());
    n.setOutput(0, linalg::FillOp::create(b, n.loc(), elem, empty).getResult(0),
                value.dtype());
    return success();
  }
  int64_t count = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(count, d, &count) ||
        count > (int64_t(1) << 34))
      return n.fail("implausible shape " + formatShape(shape));
  Literal r(value.dtype(), shape);
  size_t es = dtypeSize(value.dtype());
  for (int64_t i = 0; i < r.size(); ++i)
    std::memcpy(r.mutableData() + i * es, value.data(), es);
  n.setOutput(0, std::move(r));
  return success();
}

LogicalResult lowerConstant(NodeLowering &n) {
  if (const auto *a = n.attr("value")) {
    auto lit = n.literalFromProto(a->t());
    if (failed(lit))
      return failure();
    n.setOutput(0, std::move(*lit));
    return success();
  }
  if (const auto *a = n.attr("value_float")) {
    Literal l(kFloat, {});
    l.setF(0, a->f());
    n.setOutput(0, l);
    return success();
  }
  if (const auto *a = n.attr("value_floats")) {
    Literal l(kFloat, {a->floats_size()});
    for (int i = 0; i < a->floats_size(); ++i)
      l.setF(i, a->floats(i));
    n.setOutput(0, l);
    return success();
  }
  if (const auto *a = n.attr("value_int")) {
    n.setOutput(0, Literal::scalarInt(a->i()));
    return success();
  }
  if (const auto *a = n.attr("value_ints")) {
    n.setOutput(0, Literal::fromInts({a->ints().begin(), a->ints().end()}));
    return success();
  }
  return n.fail("unsupported Constant form (sparse or string values)");
}

/// Range whose bounds are symbolic dims: integer start and delta known,
/// the length ceil((limit - start) / delta) a symbolic dim, the values an
/// iota computed at run time.
LogicalResult lowerSymbolicRange(NodeLowering &n) {
  SymbolicDims &sd = symbolicDims();
  if (isFloatDType(n.dtype(0)))
    return n.fail("a Range over symbolic dims needs an integer type");
  int64_t start = n.literal(0).getI(0), limit = n.literal(1).getI(0),
          delta = n.literal(2).getI(0);
  if (isSymbolicDim(delta) || delta <= 0)
    return n.fail("a Range over symbolic dims needs a positive static delta");
  std::optional<int64_t> count = sd.ceilDiv(sd.sub(limit, start), delta);
  if (!count)
    return n.fail("cannot size the Range");
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Type et = n.elementType(n.dtype(0));
  Value startV = sd.materialize(b, loc, start);
  Value empty = createEmpty(b, loc, {*count}, et);
  SmallVector<AffineMap> maps = {
      AffineMap::getMultiDimIdentityMap(1, b.getContext())};
  auto op = linalg::GenericOp::create(
      b, loc, empty.getType(), ValueRange{}, ValueRange{empty}, maps,
      {utils::IteratorType::parallel},
      [&](OpBuilder &nb, Location l, ValueRange) {
        Value i = linalg::IndexOp::create(nb, l, 0);
        Value step = arith::ConstantIndexOp::create(nb, l, delta);
        Value v = arith::AddIOp::create(
            nb, l, startV, arith::MulIOp::create(nb, l, i, step));
        linalg::YieldOp::create(nb, l,
                                arith::IndexCastOp::create(nb, l, et, v)
                                    .getResult());
      });
  n.setOutput(0, op.getResult(0), n.dtype(0));
  return success();
}

LogicalResult lowerRange(NodeLowering &n) {
  if (failed(n.requireLiterals({0, 1, 2}, "start, limit and delta")))
    return failure();
  if (isSymbolicLiteral(n.literal(0)) || isSymbolicLiteral(n.literal(1)) ||
      isSymbolicLiteral(n.literal(2)))
    return lowerSymbolicRange(n);
  double start = n.literal(0).getAsDouble(0),
         limit = n.literal(1).getAsDouble(0),
         delta = n.literal(2).getAsDouble(0);
  if (delta == 0)
    return n.fail("delta is 0");
  double steps = std::ceil((limit - start) / delta);
  if (!(steps < double(int64_t(1) << 34)))
    return n.fail("implausible length " + std::to_string(steps));
  int64_t count = std::max<int64_t>(0, static_cast<int64_t>(steps));
  Literal r(n.dtype(0), {count});
  for (int64_t i = 0; i < count; ++i)
    r.setFromDouble(i, start + i * delta);
  n.setOutput(0, std::move(r));
  return success();
}

LogicalResult lowerPad(NodeLowering &n) {
  std::string mode = n.attrString("mode", "constant");
  auto padsOr = n.intsFromInputOrAttr(1, "pads");
  if (failed(padsOr))
    return failure();
  if (!*padsOr)
    return n.fail("pads are required");
  std::vector<int64_t> padsIn = **padsOr;
  const Shape &in = n.shape(0);
  int64_t rank = in.size();
  std::vector<int64_t> axes;
  if (n.hasInput(3)) {
    if (failed(n.requireLiterals({3}, "axes")))
      return failure();
    for (int64_t a : n.literal(3).toInts())
      axes.push_back(normalizeAxis(a, rank));
  } else {
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  }
  if (padsIn.size() != 2 * axes.size())
    return n.fail("pads has " + Twine(padsIn.size()) + " entries for " +
                  Twine(axes.size()) + " axes");
  std::vector<int64_t> lo(rank, 0), hi(rank, 0);
  for (size_t k = 0; k < axes.size(); ++k) {
    lo[axes[k]] = padsIn[k];
    hi[axes[k]] = padsIn[k + axes.size()];
  }
  double padValue = n.attrFloat("value", 0.0f); // Pad-2's attribute form
  if (n.hasInput(2)) {
    if (failed(n.requireLiterals({2}, "constant_value")))
      return failure();
    padValue = n.literal(2).getAsDouble(0);
  }
  Shape out;
  for (int64_t d = 0; d < rank; ++d)
    out.push_back(in[d] + lo[d] + hi[d]);
  // Negative pads crop; express them as source indices.
  auto srcIndex = [&](int64_t d, int64_t o) -> int64_t {
    int64_t i = o - lo[d];
    if (i >= 0 && i < in[d])
      return i;
    if (mode == "edge")
      return std::clamp<int64_t>(i, 0, in[d] - 1);
    if (mode == "reflect") {
      int64_t period = 2 * (in[d] - 1);
      if (period == 0)
        return 0;
      i = ((i % period) + period) % period;
      return i < in[d] ? i : period - i;
    }
    if (mode == "wrap")
      return ((i % in[d]) + in[d]) % in[d];
    return -1;
  };
  if (mode != "constant" && mode != "edge" && mode != "reflect" &&
      mode != "wrap")
    return n.fail("unsupported mode '" + mode + "'");
  bool negative =
      std::any_of(lo.begin(), lo.end(), [](int64_t v) { return v < 0; }) ||
      std::any_of(hi.begin(), hi.end(), [](int64_t v) { return v < 0; });
  if (n.isLiteral(0) || mode != "constant" || negative) {
    // Index tables are static: build the result as a gather over a padded
    // source (literal), or as a generic with computed indices (IR).
    if (n.isLiteral(0)) {
      const Literal &src = n.literal(0);
      std::vector<int64_t> st = stridesOf(in);
      Literal r(src.dtype(), out);
      std::vector<int64_t> idx(rank, 0);
      for (int64_t e = 0; e < r.size(); ++e) {
        int64_t f = 0;
        bool inside = true;
        for (int64_t d = 0; d < rank; ++d) {
          int64_t s = srcIndex(d, idx[d]);
          if (s < 0)
            inside = false;
          else
            f += s * st[d];
        }
        if (inside)
          r.setFromDouble(e, src.getAsDouble(f));
        else
          r.setFromDouble(e, padValue);
        for (int64_t d = rank - 1; d >= 0; --d) {
          if (++idx[d] < out[d])
            break;
          idx[d] = 0;
        }
      }
      n.setOutput(0, std::move(r));
      return success();
    }
    if (mode == "constant") {
      // Crop first, then pad the positive part.
      return n.fail("negative pads are not supported for non-constant input");
    }
    OpBuilder &b = n.builder();
    Location loc = n.loc();
    Value input = n.value(0);
    Value empty =
        createEmpty(b, loc, out, n.elementType(n.dtype(0)));
    SmallVector<AffineMap> maps = {
        AffineMap::getMultiDimIdentityMap(rank, b.getContext())};
    SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
    auto op = linalg::GenericOp::create(
        b, loc, empty.getType(), ValueRange{}, ValueRange{empty}, maps, iters,
        [&](OpBuilder &nb, Location nloc, ValueRange) {
          SmallVector<Value> idx;
          for (int64_t d = 0; d < rank; ++d) {
            // Mode index maps are piecewise; tabulate them per axis.
            SmallVector<int64_t> table;
            for (int64_t o = 0; o < out[d]; ++o)
              table.push_back(srcIndex(d, o));
            auto tt = RankedTensorType::get({out[d]}, nb.getIndexType());
            Value tab = arith::ConstantOp::create(
                nb, nloc, DenseElementsAttr::get(tt, ArrayRef<int64_t>(table)));
            Value i = linalg::IndexOp::create(nb, nloc, d);
            idx.push_back(tensor::ExtractOp::create(nb, nloc, tab, i));
          }
          linalg::YieldOp::create(
              nb, nloc,
              tensor::ExtractOp::create(nb, nloc, input, idx).getResult());
        });
    n.setOutput(0, op.getResult(0), n.dtype(0));
    return success();
  }
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Type et = n.elementType(n.dtype(0));
  SmallVector<OpFoldResult> l, h;
  for (int64_t d = 0; d < rank; ++d) {
    l.push_back(b.getIndexAttr(lo[d]));
    h.push_back(b.getIndexAttr(hi[d]));
  }
  Value pv = scalarConstant(b, loc, et, padValue);
  auto type = RankedTensorType::get(out, et);
  Value r = tensor::PadOp::create(b, loc, type, n.value(0), l, h, pv);
  n.setOutput(0, r, n.dtype(0));
  return success();
}

LogicalResult lowerTrilu(NodeLowering &n) {
  const Shape &in = n.shape(0);
  int64_t rank = in.size();
  if (rank < 2)
    return n.fail("input must have rank >= 2");
  bool upper = n.attrInt("upper", 1) != 0;
  if (n.isLiteral(0) && (!n.hasInput(1) || n.isLiteral(1))) {
    int64_t k = n.hasInput(1) ? n.literal(1).getI(0) : 0;
    Literal r = n.literal(0).reshaped(in).castTo(n.dtype(0));
    Literal out(r.dtype(), in);
    std::memcpy(out.mutableData(), r.data(), r.byteSize());
    int64_t rows = in[rank - 2], cols = in[rank - 1];
    for (int64_t e = 0; e < out.size(); ++e) {
      int64_t c = e % cols, row = (e / cols) % rows;
      if (!(upper ? (c - row >= k) : (c - row <= k)))
        out.setFromDouble(e, 0);
    }
    n.setOutput(0, std::move(out));
    return success();
  }
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Type et = n.elementType(n.dtype(0));
  Value input = n.value(0);
  // k may be a run-time scalar: it changes values, not the shape.
  Value kTensor = n.hasInput(1) ? n.value(1) : Value();
  Value empty = createEmpty(b, loc, in, et);
  SmallVector<AffineMap> maps(
      2, AffineMap::getMultiDimIdentityMap(rank, b.getContext()));
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  auto op = linalg::GenericOp::create(
      b, loc, empty.getType(), ValueRange{input}, ValueRange{empty}, maps,
      iters, [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value r = linalg::IndexOp::create(nb, nloc, rank - 2);
        Value c = linalg::IndexOp::create(nb, nloc, rank - 1);
        Value diff = arith::SubIOp::create(nb, nloc, c, r);
        Value kv = arith::ConstantIndexOp::create(nb, nloc, 0);
        if (kTensor) {
          SmallVector<Value> zeros(shapeOf(kTensor).size(),
                                   arith::ConstantIndexOp::create(nb, nloc, 0));
          Value k = tensor::ExtractOp::create(nb, nloc, kTensor, zeros);
          kv = arith::IndexCastOp::create(nb, nloc, nb.getIndexType(), k);
        }
        Value ok = arith::CmpIOp::create(nb, nloc,
                                         upper ? arith::CmpIPredicate::sge
                                               : arith::CmpIPredicate::sle,
                                         diff, kv);
        Value zero = scalarConstant(nb, nloc, et, 0);
        linalg::YieldOp::create(
            nb, nloc,
            arith::SelectOp::create(nb, nloc, ok, args[0], zero).getResult());
      });
  n.setOutput(0, op.getResult(0), n.dtype(0));
  return success();
}

LogicalResult lowerGatherElements(NodeLowering &n) {
  const Shape &data = n.shape(0), &idx = n.shape(1);
  int64_t rank = data.size();
  if (static_cast<int64_t>(idx.size()) != rank)
    return n.fail("indices must have the rank of data");
  int64_t axis = normalizeAxis(n.attrInt("axis", 0), rank);
  if (axis < 0 || axis >= rank)
    return n.fail("axis out of range");
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Value dataV = n.value(0);
  int64_t dim = data[axis];
  Value empty = createEmpty(b, loc, idx, n.elementType(n.dtype(0)));
  SmallVector<AffineMap> maps(
      2, AffineMap::getMultiDimIdentityMap(rank, b.getContext()));
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  auto op = linalg::GenericOp::create(
      b, loc, empty.getType(), ValueRange{n.value(1)}, ValueRange{empty}, maps,
      iters, [&](OpBuilder &nb, Location l, ValueRange a) {
        SmallVector<Value> at;
        for (int64_t d = 0; d < rank; ++d) {
          if (d != axis) {
            at.push_back(linalg::IndexOp::create(nb, l, d));
            continue;
          }
          Value iv = arith::IndexCastOp::create(nb, l, nb.getIndexType(), a[0]);
          Value zero = arith::ConstantIndexOp::create(nb, l, 0);
          Value dimV = arith::ConstantIndexOp::create(nb, l, dim);
          Value neg =
              arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt, iv, zero);
          iv = arith::SelectOp::create(
              nb, l, neg, arith::AddIOp::create(nb, l, iv, dimV), iv);
          iv = arith::MinSIOp::create(
              nb, l, arith::MaxSIOp::create(nb, l, iv, zero),
              arith::ConstantIndexOp::create(nb, l, dim - 1));
          at.push_back(iv);
        }
        linalg::YieldOp::create(
            nb, l, tensor::ExtractOp::create(nb, l, dataV, at).getResult());
      });
  n.setOutput(0, op.getResult(0), n.dtype(0));
  return success();
}

/// DepthToSpace and SpaceToDepth are a reshape, a transpose and a reshape.
LogicalResult lowerDepthSpace(NodeLowering &n, bool toSpace) {
  const Shape &in = n.shape(0);
  if (in.size() != 4)
    return n.fail("input must be 4-D");
  int64_t bs = n.attrInt("blocksize", 0);
  if (bs <= 0)
    return n.fail("blocksize must be positive");
  int64_t N = in[0], C = in[1], H = in[2], W = in[3];
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Value x = n.value(0);
  Value r;
  if (toSpace) {
    if (C % (bs * bs))
      return n.fail("channels not divisible by blocksize^2");
    bool crd = n.attrString("mode", "DCR") == "CRD";
    int64_t c = C / (bs * bs);
    if (crd) {
      x = emitReshape(b, loc, x, {N, c, bs, bs, H, W});
      x = emitTranspose(b, loc, x, {0, 1, 4, 2, 5, 3});
    } else {
      x = emitReshape(b, loc, x, {N, bs, bs, c, H, W});
      x = emitTranspose(b, loc, x, {0, 3, 4, 1, 5, 2});
    }
    r = emitReshape(b, loc, x, {N, c, H * bs, W * bs});
  } else {
    if (H % bs || W % bs)
      return n.fail("spatial dims not divisible by blocksize");
    // Opset 28's mode: the block offsets go before (DCR) or after (CRD)
    // the input channel in the output channel.
    std::string mode = n.attrString("mode", "DCR");
    if (mode != "DCR" && mode != "CRD")
      return n.fail("unsupported mode '" + mode + "'");
    x = emitReshape(b, loc, x, {N, C, H / bs, bs, W / bs, bs});
    x = emitTranspose(b, loc, x,
                      mode == "CRD" ? std::vector<int64_t>{0, 1, 3, 5, 2, 4}
                                    : std::vector<int64_t>{0, 3, 5, 1, 2, 4});
    r = emitReshape(b, loc, x, {N, C * bs * bs, H / bs, W / bs});
  }
  n.setOutput(0, r, n.dtype(0));
  return success();
}

LogicalResult lowerOneHot(NodeLowering &n) {
  if (failed(n.requireLiterals({1, 2}, "depth and values")))
    return failure();
  int64_t depth = static_cast<int64_t>(n.literal(1).getAsDouble(0));
  if (depth <= 0)
    return n.fail("depth must be positive");
  const Literal &vals = n.literal(2);
  if (vals.size() != 2)
    return n.fail("values must hold [off, on]");
  const Shape &in = n.shape(0);
  int64_t outRank = in.size() + 1;
  int64_t axis = normalizeAxis(n.attrInt("axis", -1), outRank);
  if (axis < 0 || axis >= outRank)
    return n.fail("axis out of range");
  Shape out = in;
  out.insert(out.begin() + axis, depth);
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  MLIRContext *ctx = b.getContext();
  Type et = n.elementType(vals.dtype());
  double off = vals.getAsDouble(0), on = vals.getAsDouble(1);
  SmallVector<AffineExpr> inExprs;
  for (int64_t d = 0; d < outRank; ++d)
    if (d != axis)
      inExprs.push_back(getAffineDimExpr(d, ctx));
  Value empty = createEmpty(b, loc, out, et);
  SmallVector<AffineMap> maps = {
      AffineMap::get(outRank, 0, inExprs, ctx),
      AffineMap::getMultiDimIdentityMap(outRank, ctx)};
  SmallVector<utils::IteratorType> iters(outRank,
                                         utils::IteratorType::parallel);
  int32_t idt = n.dtype(0);
  auto op = linalg::GenericOp::create(
      b, loc, empty.getType(), ValueRange{n.value(0)}, ValueRange{empty}, maps,
      iters, [&](OpBuilder &nb, Location l, ValueRange a) {
        Value idx = a[0];
        Type i64 = nb.getI64Type();
        if (isFloatDType(idt))
          idx = arith::FPToSIOp::create(nb, l, i64, idx);
        else
          idx = emitScalarCast(nb, l, idx, idt, kInt64, i64);
        Value dv = arith::ConstantIntOp::create(nb, l, i64, depth);
        Value zero = arith::ConstantIntOp::create(nb, l, i64, 0);
        Value neg =
            arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt, idx, zero);
        idx = arith::SelectOp::create(
            nb, l, neg, arith::AddIOp::create(nb, l, idx, dv), idx);
        Value j = arith::IndexCastOp::create(
            nb, l, i64, linalg::IndexOp::create(nb, l, axis));
        Value eq =
            arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, idx, j);
        linalg::YieldOp::create(
            nb, l,
            arith::SelectOp::create(nb, l, eq, scalarConstant(nb, l, et, on),
                                    scalarConstant(nb, l, et, off))
                .getResult());
      });
  n.setOutput(0, op.getResult(0), vals.dtype());
  return success();
}

LogicalResult lowerEyeLike(NodeLowering &n) {
  const Shape &in = n.shape(0);
  if (in.size() != 2)
    return n.fail("input must be 2-D");
  int32_t dt = n.hasAttr("dtype")
                   ? static_cast<int32_t>(n.attrInt("dtype", kFloat))
                   : n.dtype(0);
  if (!isSupportedDType(dt))
    return n.fail("unsupported dtype " + Twine(dt));
  int64_t k = n.attrInt("k", 0);
  Literal r(dt, in);
  for (int64_t i = 0; i < in[0]; ++i)
    for (int64_t j = 0; j < in[1]; ++j)
      r.setFromDouble(i * in[1] + j, j - i == k ? 1.0 : 0.0);
  n.setOutput(0, std::move(r));
  return success();
}

} // namespace

void registerShapeLowerings() {
  opLowerings()["OneHot"] = lowerOneHot;
  opLowerings()["EyeLike"] = lowerEyeLike;
  opLowerings()["GatherElements"] = lowerGatherElements;
  opLowerings()["DepthToSpace"] = [](NodeLowering &n) {
    return lowerDepthSpace(n, true);
  };
  opLowerings()["SpaceToDepth"] = [](NodeLowering &n) {
    return lowerDepthSpace(n, false);
  };
  auto &t = opLowerings();
  t["Identity"] = [](NodeLowering &n) {
    forward(n, 0, 0);
    return success();
  };
  t["Dropout"] = [](NodeLowering &n) -> LogicalResult {
    // Inference: identity; the optional mask is all true.
    if (n.hasInput(2) && n.isLiteral(2) && n.literal(2).getI(0) != 0)
      return n.fail("training_mode=true is not supported");
    forward(n, 0, 0);
    if (n.hasOutput(1)) {
      Literal mask(kBool, n.shape(0));
      for (int64_t i = 0; i < mask.size(); ++i)
        mask.setI(i, 1);
      n.setOutput(1, std::move(mask));
    }
    return success();
  };
  t["Reshape"] = lowerReshape;
  t["Flatten"] = lowerFlatten;
  t["Squeeze"] = lowerSqueeze;
  t["Unsqueeze"] = lowerUnsqueeze;
  t["Transpose"] = lowerTranspose;
  t["Concat"] = lowerConcat;
  t["Slice"] = lowerSlice;
  t["Gather"] = lowerGather;
  t["Split"] = lowerSplit;
  t["Expand"] = lowerExpand;
  t["Tile"] = lowerTile;
  t["Shape"] = lowerShape;
  t["Size"] = [](NodeLowering &n) {
    n.setOutput(0, Literal::scalarInt(numElements(n.shape(0))));
    return success();
  };
  t["ConstantOfShape"] = lowerConstantOfShape;
  t["Constant"] = lowerConstant;
  t["Range"] = lowerRange;
  t["Pad"] = lowerPad;
  t["Trilu"] = lowerTrilu;
}

} // namespace mcc
