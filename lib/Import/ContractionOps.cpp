//===- ContractionOps.cpp - Einsum and ConvTranspose ----------------------===//
//
// ConvTranspose becomes an ordinary stride-1 convolution (the Conv
// lowering's emitConvolution) over an input spread out by the stride and
// padded so that every output sees its whole kernel. Einsum is one
// linalg.generic whose indexing maps come from the equation.
//
//===----------------------------------------------------------------------===//

#include "mcc/Import/NodeLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <map>

using namespace mlir;

namespace mcc {
namespace {

int64_t floorDiv(int64_t a, int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}

/// The ConvTranspose weight [C, M/group, k...] as a Conv weight
/// [M, C/group, k...]: channels swapped within each group, kernel flipped.
Value convWeightOfTransposed(OpBuilder &b, Location loc, Value w,
                             int64_t group) {
  MLIRContext *ctx = b.getContext();
  Shape ws = shapeOf(w);
  size_t r = ws.size() - 2;
  int64_t Cg = ws[0] / group, Mg = ws[1];
  Shape in = {group, Cg, Mg}, out = {group, Mg, Cg};
  in.insert(in.end(), ws.begin() + 2, ws.end());
  out.insert(out.end(), ws.begin() + 2, ws.end());
  // Loops (g, m, c, k...) read w[g, c, m, K-1-k...].
  SmallVector<AffineExpr> inExprs = {getAffineDimExpr(0, ctx),
                                     getAffineDimExpr(2, ctx),
                                     getAffineDimExpr(1, ctx)};
  for (size_t i = 0; i < r; ++i)
    inExprs.push_back(ws[2 + i] - 1 - getAffineDimExpr(3 + i, ctx));
  unsigned rank = out.size();
  SmallVector<AffineMap> maps = {AffineMap::get(rank, 0, inExprs, ctx),
                                 AffineMap::getMultiDimIdentityMap(rank, ctx)};
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  Type et = cast<RankedTensorType>(w.getType()).getElementType();
  Value empty = createEmpty(b, loc, out, et);
  Value t =
      linalg::GenericOp::create(b, loc, TypeRange{empty.getType()},
                                ValueRange{emitReshape(b, loc, w, in)},
                                ValueRange{empty}, maps, iters,
                                [](OpBuilder &nb, Location l, ValueRange a) {
                                  linalg::YieldOp::create(nb, l, a[0]);
                                })
          .getResult(0);
  Shape conv = {group * Mg, Cg};
  conv.insert(conv.end(), ws.begin() + 2, ws.end());
  return emitReshape(b, loc, t, conv);
}

LogicalResult lowerConvTranspose(NodeLowering &n) {
  Shape xs = n.shape(0), ws = n.shape(1);
  if (xs.size() < 3 || xs.size() > 5 || ws.size() != xs.size())
    return n.fail("only 1-D, 2-D and 3-D transposed convolutions are "
                  "supported (input " +
                  formatShape(xs) + ", weight " + formatShape(ws) + ")");
  if (!isFloatDType(n.dtype(0)))
    return n.fail("only floating-point transposed convolutions are supported");
  size_t r = xs.size() - 2;
  int64_t N = xs[0], C = xs[1];
  int64_t group = n.attrInt("group", 1);
  if (group < 1 || ws[0] != C || C % group)
    return n.fail("channels " + Twine(C) + " and weight " + formatShape(ws) +
                  " do not fit group " + Twine(group));
  int64_t M = ws[1] * group;
  Shape kernel(ws.begin() + 2, ws.end());
  if (n.hasAttr("kernel_shape") && n.attrInts("kernel_shape") != kernel)
    return n.fail("kernel_shape differs from the weight's spatial dims " +
                  formatShape(kernel));
  auto strides = n.attrInts("strides", std::vector<int64_t>(r, 1));
  auto dilations = n.attrInts("dilations", std::vector<int64_t>(r, 1));
  auto outPad = n.attrInts("output_padding", std::vector<int64_t>(r, 0));
  auto pads = n.attrInts("pads", std::vector<int64_t>(2 * r, 0));
  auto outShape = n.attrInts("output_shape");
  if (outShape.size() == r + 2) // some exporters give N and M too
    outShape.erase(outShape.begin(), outShape.begin() + 2);
  if (strides.size() != r || dilations.size() != r || outPad.size() != r ||
      pads.size() != 2 * r || (!outShape.empty() && outShape.size() != r))
    return n.fail("strides/dilations/output_padding/pads/output_shape do not "
                  "match " +
                  Twine(r) + " spatial dims");
  std::string autoPad = n.attrString("auto_pad", "NOTSET");
  bool same = autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER";
  if (!same && autoPad != "NOTSET" && autoPad != "VALID")
    return n.fail("unknown auto_pad '" + autoPad + "'");
  if (autoPad == "VALID")
    pads.assign(2 * r, 0);

  // Per spatial dim: output size, and the leading pad it crops.
  Shape out = {N, M}, padLo;
  for (size_t i = 0; i < r; ++i) {
    if (strides[i] < 1 || dilations[i] < 1)
      return n.fail("strides and dilations must be positive");
    int64_t full = strides[i] * (xs[2 + i] - 1) + outPad[i] +
                   (kernel[i] - 1) * dilations[i] + 1;
    int64_t o, lo;
    if (same && !n.hasAttr("pads")) {
      // As the ONNX reference: the output defaults to input * stride and
      // the padding it implies splits with floor division.
      o = outShape.empty() ? xs[2 + i] * strides[i] : outShape[i];
      int64_t total = full - o;
      lo = autoPad == "SAME_UPPER" ? floorDiv(total, 2)
                                   : total - floorDiv(total, 2);
    } else {
      lo = pads[i];
      o = outShape.empty() ? full - pads[i] - pads[r + i] : outShape[i];
    }
    if (o <= 0)
      return n.fail("output size " + Twine(o) + " in spatial dim " + Twine(i));
    out.push_back(o);
    padLo.push_back(lo);
  }

  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Type et = n.elementType(n.dtype(0));
  // out[o] = sum_k spread[o + k*d] * flipped[k], where `spread` holds x[i]
  // at (K - lo) + i*s with K = (k-1)*d, and zeros elsewhere. Inputs that
  // land outside it (negative pads, cropped outputs) are dropped first.
  Shape spreadShape = {N, C};
  SmallVector<OpFoldResult> srcOff = {b.getIndexAttr(0), b.getIndexAttr(0)},
                            srcSize = {b.getIndexAttr(N), b.getIndexAttr(C)},
                            ones(2, b.getIndexAttr(1)), dstOff = srcOff,
                            dstStride = ones;
  bool anyInput = true, cropped = false;
  for (size_t i = 0; i < r; ++i) {
    int64_t K = (kernel[i] - 1) * dilations[i], s = strides[i];
    int64_t len = out[2 + i] + K, left = K - padLo[i];
    int64_t first = left < 0 ? floorDiv(-left + s - 1, s) : 0;
    int64_t last = std::min(xs[2 + i] - 1, floorDiv(len - 1 - left, s));
    anyInput &= last >= first;
    cropped |= first != 0 || last != xs[2 + i] - 1;
    spreadShape.push_back(len);
    srcOff.push_back(b.getIndexAttr(first));
    srcSize.push_back(b.getIndexAttr(last - first + 1));
    ones.push_back(b.getIndexAttr(1));
    dstOff.push_back(b.getIndexAttr(left + first * s));
    dstStride.push_back(b.getIndexAttr(s));
  }
  Value spread = emitFilled(b, loc, spreadShape, b.getFloatAttr(et, 0.0));
  if (anyInput) {
    Value x = n.value(0);
    if (cropped)
      x = tensor::ExtractSliceOp::create(b, loc, x, srcOff, srcSize, ones);
    spread = tensor::InsertSliceOp::create(b, loc, x, spread, dstOff, srcSize,
                                           dstStride);
  }
  Value w = convWeightOfTransposed(b, loc, n.value(1), group);
  Value y = emitConvolution(b, loc, spread, w, group,
                            std::vector<int64_t>(r, 1), dilations);
  if (n.hasInput(2))
    y = emitChannelBias(b, loc, y, n.value(2));
  n.setOutput(0, y, n.dtype(0));
  return success();
}

/// One Einsum term: letters, and where "..." stands (-1 if absent).
struct EinsumTerm {
  std::string letters;
  int64_t ellipsisAt = -1;
};

FailureOr<EinsumTerm> parseEinsumTerm(NodeLowering &n, llvm::StringRef t) {
  EinsumTerm term;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t.substr(i).starts_with("...")) {
      if (term.ellipsisAt >= 0)
        return n.fail("more than one '...' in term '" + t + "'");
      term.ellipsisAt = term.letters.size();
      i += 2;
    } else if (llvm::isAlpha(t[i])) {
      term.letters.push_back(t[i]);
    } else {
      return n.fail("bad character '" + Twine(t[i]) + "' in equation");
    }
  }
  return term;
}

/// Einsum as one linalg.generic: a loop per "..." dim and per distinct
/// letter; a letter repeated within a term reads a diagonal (the same loop
/// twice in that map); loops absent from the output are reductions.
LogicalResult lowerEinsum(NodeLowering &n) {
  std::string eq;
  for (char c : n.attrString("equation"))
    if (c != ' ')
      eq.push_back(c);
  llvm::StringRef eqRef(eq);
  auto [lhs, rhs] = eqRef.split("->");
  bool explicitOut = eqRef.contains("->");
  SmallVector<llvm::StringRef> termText;
  lhs.split(termText, ',');
  if (termText.size() != n.numInputs())
    return n.fail("equation '" + eq + "' has " + Twine(termText.size()) +
                  " terms for " + Twine(n.numInputs()) + " inputs");
  SmallVector<EinsumTerm> terms;
  for (llvm::StringRef t : termText) {
    auto term = parseEinsumTerm(n, t);
    if (failed(term))
      return failure();
    terms.push_back(*term);
  }
  // Rank of "..." per input (right-aligned broadcast), and loop sizes.
  int64_t ellRank = 0;
  SmallVector<int64_t> inEll;
  for (size_t i = 0; i < terms.size(); ++i) {
    int64_t extra = (int64_t)n.rank(i) - (int64_t)terms[i].letters.size();
    if (extra < 0 || (extra > 0 && terms[i].ellipsisAt < 0))
      return n.fail("term " + Twine(i) + " does not match input rank " +
                    Twine(n.rank(i)));
    inEll.push_back(extra);
    ellRank = std::max(ellRank, extra);
  }
  // Loops: ellipsis dims first, then letters in order of appearance.
  std::string letters;
  std::map<char, int64_t> count;
  for (const EinsumTerm &t : terms)
    for (char c : t.letters)
      if (++count[c] == 1)
        letters.push_back(c);
  auto loopOf = [&](char c) -> int64_t { return ellRank + letters.find(c); };
  auto dimLoop = [&](size_t i, int64_t d) -> int64_t {
    const EinsumTerm &t = terms[i];
    if (t.ellipsisAt < 0 || d < t.ellipsisAt)
      return loopOf(t.letters[d]);
    if (d < t.ellipsisAt + inEll[i])
      return ellRank - inEll[i] + (d - t.ellipsisAt);
    return loopOf(t.letters[d - inEll[i]]);
  };
  Shape sizes(ellRank + letters.size(), 1);
  for (size_t i = 0; i < terms.size(); ++i) {
    const Shape &s = n.shape(i);
    for (int64_t d = 0; d < (int64_t)s.size(); ++d) {
      int64_t loop = dimLoop(i, d);
      if (sizes[loop] != 1 && s[d] != 1 && sizes[loop] != s[d])
        return n.fail("dimension " + Twine(d) + " of input " + Twine(i) +
                      " has size " + Twine(s[d]) + ", elsewhere " +
                      Twine(sizes[loop]));
      sizes[loop] = std::max(sizes[loop], s[d]);
    }
  }
  EinsumTerm outTerm;
  if (explicitOut) {
    auto t = parseEinsumTerm(n, rhs);
    if (failed(t))
      return failure();
    outTerm = *t;
    if (outTerm.ellipsisAt < 0 && ellRank > 0 &&
        llvm::any_of(llvm::ArrayRef<int64_t>(sizes).take_front(ellRank),
                     [](int64_t s) { return s != 1; }))
      return n.fail("'...' dims are missing from the output");
  } else {
    // Implicit output: "..." then the letters used once, alphabetically.
    outTerm.ellipsisAt = ellRank > 0 ? 0 : -1;
    for (auto &[c, k] : count)
      if (k == 1)
        outTerm.letters.push_back(c);
  }
  MLIRContext *ctx = n.builder().getContext();
  int64_t numLoops = sizes.size();
  SmallVector<bool> isOut(numLoops, false);
  SmallVector<AffineExpr> outExprs;
  Shape outShape;
  auto addOut = [&](int64_t loop) {
    isOut[loop] = true;
    outExprs.push_back(getAffineDimExpr(loop, ctx));
    outShape.push_back(sizes[loop]);
  };
  for (size_t k = 0; k <= outTerm.letters.size(); ++k) {
    if ((int64_t)k == outTerm.ellipsisAt)
      for (int64_t e = 0; e < ellRank; ++e)
        addOut(e);
    if (k == outTerm.letters.size())
      break;
    char c = outTerm.letters[k];
    if (letters.find(c) == std::string::npos)
      return n.fail("output letter '" + Twine(c) + "' is in no input");
    if (isOut[loopOf(c)])
      return n.fail("output letter '" + Twine(c) + "' repeats");
    addOut(loopOf(c));
  }
  // Input maps; a size-1 dim broadcast against a longer loop reads index 0.
  SmallVector<AffineMap> maps;
  for (size_t i = 0; i < terms.size(); ++i) {
    const Shape &s = n.shape(i);
    SmallVector<AffineExpr> exprs;
    for (int64_t d = 0; d < (int64_t)s.size(); ++d) {
      int64_t loop = dimLoop(i, d);
      exprs.push_back(s[d] == 1 && sizes[loop] != 1
                          ? getAffineConstantExpr(0, ctx)
                          : getAffineDimExpr(loop, ctx));
    }
    maps.push_back(AffineMap::get(numLoops, 0, exprs, ctx));
  }
  maps.push_back(AffineMap::get(numLoops, 0, outExprs, ctx));
  SmallVector<utils::IteratorType> iters;
  for (int64_t l = 0; l < numLoops; ++l)
    iters.push_back(isOut[l] ? utils::IteratorType::parallel
                             : utils::IteratorType::reduction);

  OpBuilder &b = n.builder();
  Location loc = n.loc();
  int32_t dt = n.dtype(0);
  for (size_t i = 1; i < n.numInputs(); ++i)
    if (n.dtype(i) != dt)
      return n.fail("inputs have different element types");
  if (dt == kBool)
    return n.fail("boolean Einsum is not supported");
  Type et = n.elementType(dt);
  bool fl = isFloatDType(dt);
  Value init = emitFilled(b, loc, outShape,
                          fl ? (TypedAttr)b.getFloatAttr(et, 0.0)
                             : (TypedAttr)b.getIntegerAttr(et, 0));
  SmallVector<Value> ins;
  for (size_t i = 0; i < n.numInputs(); ++i)
    ins.push_back(n.value(i));
  auto op = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, ins, ValueRange{init}, maps, iters,
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Value p = a[0];
        for (size_t i = 1; i + 1 < a.size(); ++i)
          p = fl ? (Value)arith::MulFOp::create(nb, l, p, a[i])
                 : (Value)arith::MulIOp::create(nb, l, p, a[i]);
        Value acc = a.back();
        linalg::YieldOp::create(
            nb, l,
            fl ? (Value)arith::AddFOp::create(nb, l, acc, p)
               : (Value)arith::AddIOp::create(nb, l, acc, p));
      });
  n.setOutput(0, op.getResult(0), dt);
  return success();
}

} // namespace

void registerContractionLowerings() {
  opLowerings()["ConvTranspose"] = lowerConvTranspose;
  opLowerings()["Einsum"] = lowerEinsum;
}

} // namespace mcc
