//===- ControlFlowOps.cpp - If, Loop and Scan, resolved while compiling ---===//
//
// mcc compiles static shapes and straight-line code, so control flow is
// resolved at import: If lowers the branch its (compile-time) condition
// picks, or with a runtime condition selects between both branches; Loop
// and Scan are unrolled, their bodies lowered inline once per iteration.
// Loop trip counts/conditions must be known while compiling (literals, or
// inputs frozen with --const-input); Scan's length is a static shape.
//
//===----------------------------------------------------------------------===//

#include "mcc/Import/NodeLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cstring>

using namespace mlir;

namespace mcc {
namespace {

/// More iterations than this would bloat the program: refuse them.
constexpr int64_t kMaxUnroll = 4096;

GraphValue literalValue(Literal l) {
  GraphValue v;
  v.dtype = l.dtype();
  v.shape = l.shape();
  v.literal = std::move(l);
  return v;
}

GraphValue tensorValue(Value t, int32_t dtype) {
  GraphValue v;
  v.dtype = dtype;
  v.shape = shapeOf(t);
  v.tensor = t;
  return v;
}

/// v[..., index, ...] along `axis`, the axis dropped.
GraphValue sliceAt(NodeLowering &n, GraphValue v, int64_t axis, int64_t index) {
  Shape out = v.shape;
  out.erase(out.begin() + axis);
  if (v.literal) {
    std::vector<int64_t> strides = stridesOf(v.shape);
    int64_t rank = out.size();
    return literalValue(v.literal->gather(out, [&](const int64_t *idx) {
      int64_t f = index * strides[axis];
      for (int64_t d = 0; d < rank; ++d)
        f += idx[d] * strides[d < axis ? d : d + 1];
      return f;
    }));
  }
  OpBuilder &b = n.builder();
  SmallVector<OpFoldResult> offs, sizes, ones;
  for (size_t d = 0; d < v.shape.size(); ++d) {
    offs.push_back(b.getIndexAttr((int64_t)d == axis ? index : 0));
    sizes.push_back(b.getIndexAttr((int64_t)d == axis ? 1 : v.shape[d]));
    ones.push_back(b.getIndexAttr(1));
  }
  auto type = n.tensorType(out, v.dtype);
  Value t = tensor::ExtractSliceOp::create(b, n.loc(), type, n.materialize(v),
                                           offs, sizes, ones);
  return tensorValue(t, v.dtype);
}

/// The values stacked along a new axis `axis`; all of one shape and dtype.
FailureOr<GraphValue> stack(NodeLowering &n, std::vector<GraphValue> &vs,
                            int64_t axis) {
  const Shape &s = vs[0].shape;
  for (auto &v : vs)
    if (v.shape != s || v.dtype != vs[0].dtype) {
      (void)n.fail("iterations give outputs of different shapes (" +
                   formatShape(s) + ", " + formatShape(v.shape) + ")");
      return failure();
    }
  Shape out = s;
  out.insert(out.begin() + axis, vs.size());
  int64_t inner = 1, outer = 1, count = vs.size();
  for (size_t d = axis; d < s.size(); ++d)
    inner *= s[d];
  for (int64_t d = 0; d < axis; ++d)
    outer *= s[d];
  bool allLiteral = true;
  for (auto &v : vs)
    allLiteral &= v.literal.has_value();
  if (allLiteral) {
    Literal r(vs[0].dtype, out);
    size_t es = dtypeSize(vs[0].dtype);
    for (int64_t k = 0; k < count; ++k)
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(r.mutableData() + ((o * count + k) * inner) * es,
                    vs[k].literal->data() + o * inner * es, inner * es);
    return literalValue(std::move(r));
  }
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Value acc = createEmpty(b, loc, out, n.elementType(vs[0].dtype));
  for (int64_t k = 0; k < count; ++k) {
    SmallVector<OpFoldResult> offs, sizes, ones;
    for (size_t d = 0; d < out.size(); ++d) {
      offs.push_back(b.getIndexAttr((int64_t)d == axis ? k : 0));
      sizes.push_back(b.getIndexAttr((int64_t)d == axis ? 1 : out[d]));
      ones.push_back(b.getIndexAttr(1));
    }
    acc = tensor::InsertSliceOp::create(b, loc, n.materialize(vs[k]), acc, offs,
                                        sizes, ones);
  }
  return tensorValue(acc, vs[0].dtype);
}

const onnx::GraphProto *graphAttr(NodeLowering &n, StringRef name) {
  const onnx::AttributeProto *a = n.attr(name);
  return a && a->has_g() ? &a->g() : nullptr;
}

/// If: a condition known while compiling lowers the branch it picks. A
/// runtime condition computes both branches (pure tensor code) and selects
/// their results, which needs outputs of one dtype and shape; otherwise
/// the condition must be frozen.
LogicalResult lowerIf(NodeLowering &n) {
  const onnx::GraphProto *thenBranch = graphAttr(n, "then_branch");
  const onnx::GraphProto *elseBranch = graphAttr(n, "else_branch");
  if (!thenBranch || !elseBranch)
    return n.fail("has no branch graph");
  if (numElements(n.shape(0)) != 1)
    return n.fail("condition of shape " + formatShape(n.shape(0)) +
                  " is not a single value");
  auto lowerBranch = [&](const onnx::GraphProto &g)
      -> FailureOr<std::vector<GraphValue>> {
    auto outs = n.lowerSubgraph(g, {});
    if (failed(outs))
      return failure();
    if (outs->size() != n.numOutputs())
      return n.fail("the branch gives " + Twine(outs->size()) +
                    " outputs for " + Twine(n.numOutputs()));
    return outs;
  };
  if (n.isLiteral(0)) {
    auto outs = lowerBranch(n.literal(0).getI(0) ? *thenBranch : *elseBranch);
    if (failed(outs))
      return failure();
    for (size_t i = 0; i < outs->size(); ++i)
      n.setOutput(i, (*outs)[i]);
    return success();
  }
  auto thenOuts = lowerBranch(*thenBranch);
  if (failed(thenOuts))
    return failure();
  auto elseOuts = lowerBranch(*elseBranch);
  if (failed(elseOuts))
    return failure();
  for (size_t i = 0; i < thenOuts->size(); ++i) {
    const GraphValue &t = (*thenOuts)[i], &e = (*elseOuts)[i];
    if (t.dtype != e.dtype || t.shape != e.shape)
      return n.requireLiterals(
          {0}, "If (its branches' output " + std::to_string(i) + " differ: " +
                   dtypeName(t.dtype) + formatShape(t.shape) + " and " +
                   dtypeName(e.dtype) + formatShape(e.shape) + ")");
  }
  OpBuilder &b = n.builder();
  Value cond = emitReshape(b, n.loc(), n.value(0), {});
  for (size_t i = 0; i < thenOuts->size(); ++i) {
    GraphValue &t = (*thenOuts)[i], &e = (*elseOuts)[i];
    Value selected = emitElementwise(
        b, n.loc(), ValueRange{cond, n.materialize(t), n.materialize(e)},
        n.elementType(t.dtype), t.shape,
        [](OpBuilder &nb, Location l, ValueRange a) -> Value {
          return arith::SelectOp::create(nb, l, a[0], a[1], a[2]);
        });
    n.setOutput(i, selected, t.dtype);
  }
  return success();
}

LogicalResult lowerLoop(NodeLowering &n) {
  const onnx::GraphProto *body = graphAttr(n, "body");
  if (!body)
    return n.fail("has no body graph");
  if (failed(n.requireLiterals({0, 1}, "Loop (mcc unrolls it: the trip "
                                       "count and condition)")))
    return failure();
  bool bounded = n.hasInput(0);
  int64_t trip = bounded ? n.literal(0).getI(0) : 0;
  bool cond = n.hasInput(1) ? n.literal(1).getI(0) != 0 : true;
  std::vector<GraphValue> carried;
  for (size_t i = 2; i < n.numInputs(); ++i)
    carried.push_back(n.input(i));
  size_t numCarried = carried.size();
  if ((size_t)body->output_size() < 1 + numCarried)
    return n.fail("body has too few outputs");
  size_t numScan = body->output_size() - 1 - numCarried;
  std::vector<std::vector<GraphValue>> scans(numScan);
  for (int64_t i = 0; (!bounded || i < trip) && cond; ++i) {
    if (i >= kMaxUnroll)
      return n.fail("more than " + Twine(kMaxUnroll) +
                    " iterations are not supported (the loop is unrolled)");
    std::vector<GraphValue> ins = {
        literalValue(Literal::scalarInt(i, kInt64)),
        literalValue(Literal::scalarInt(cond, kBool))};
    ins.insert(ins.end(), carried.begin(), carried.end());
    auto outs = n.lowerSubgraph(*body, ins);
    if (failed(outs))
      return failure();
    const GraphValue &c = (*outs)[0];
    if (!c.literal)
      return n.fail("a condition computed at run time is not supported (the "
                    "loop is unrolled)");
    cond = c.literal->getI(0) != 0;
    for (size_t k = 0; k < numCarried; ++k)
      carried[k] = (*outs)[1 + k];
    for (size_t k = 0; k < numScan; ++k)
      scans[k].push_back((*outs)[1 + numCarried + k]);
  }
  for (size_t k = 0; k < numCarried; ++k)
    n.setOutput(k, carried[k]);
  for (size_t k = 0; k < numScan; ++k) {
    if (scans[k].empty())
      return n.fail("a loop that runs zero times has empty scan outputs, "
                    "which are not supported");
    auto s = stack(n, scans[k], 0);
    if (failed(s))
      return failure();
    n.setOutput(numCarried + k, *s);
  }
  return success();
}

/// Scan: opset 9 on; opset 8 adds a leading batch axis to every state and
/// scan input (and an optional sequence_lens input, which must be full).
LogicalResult lowerScan(NodeLowering &n) {
  const onnx::GraphProto *body = graphAttr(n, "body");
  if (!body)
    return n.fail("has no body graph");
  bool batched = n.opset() < 9;
  size_t first = batched ? 1 : 0;
  int64_t numScanIn = n.attrInt("num_scan_inputs", 0);
  size_t numIn = n.numInputs() - first;
  if (numScanIn < 1 || (size_t)numScanIn > numIn)
    return n.fail("num_scan_inputs is out of range");
  size_t numState = numIn - numScanIn;
  size_t numScanOut = body->output_size() - numState;
  std::vector<int64_t> inAxes = n.attrInts("scan_input_axes",
                                           std::vector<int64_t>(numScanIn, 0)),
                       inDirs = n.attrInts(batched ? "directions"
                                                   : "scan_input_directions",
                                           std::vector<int64_t>(numScanIn, 0)),
                       outAxes =
                           n.attrInts("scan_output_axes",
                                      std::vector<int64_t>(numScanOut, 0)),
                       outDirs =
                           n.attrInts("scan_output_directions",
                                      std::vector<int64_t>(numScanOut, 0));
  if ((int64_t)inAxes.size() != numScanIn ||
      (int64_t)inDirs.size() != numScanIn || outAxes.size() != numScanOut ||
      outDirs.size() != numScanOut)
    return n.fail("scan axes/directions do not match the inputs/outputs");
  std::vector<GraphValue> states, xs;
  for (size_t i = 0; i < numState; ++i)
    states.push_back(n.input(first + i));
  for (int64_t j = 0; j < numScanIn; ++j)
    xs.push_back(n.input(first + numState + j));
  int64_t batch = batched ? xs[0].shape[0] : 1;
  // Per batch element (one without a batch axis): run the steps.
  std::vector<std::vector<GraphValue>> finalStates(numState),
      scanOuts(numScanOut);
  for (int64_t bi = 0; bi < batch; ++bi) {
    std::vector<GraphValue> st, x;
    for (auto &s : states)
      st.push_back(batched ? sliceAt(n, s, 0, bi) : s);
    for (auto &v : xs)
      x.push_back(batched ? sliceAt(n, v, 0, bi) : v);
    std::vector<int64_t> axes;
    for (int64_t j = 0; j < numScanIn; ++j) {
      int64_t a = normalizeAxis(inAxes[j], x[j].shape.size());
      if (a < 0 || a >= (int64_t)x[j].shape.size())
        return n.fail("scan input axis out of range");
      axes.push_back(a);
    }
    int64_t steps = x[0].shape[axes[0]];
    for (int64_t j = 1; j < numScanIn; ++j)
      if (x[j].shape[axes[j]] != steps)
        return n.fail("scan inputs differ in length");
    if (batched && n.hasInput(0)) {
      if (failed(n.requireLiterals({0}, "sequence_lens")))
        return failure();
      if (n.literal(0).getI(bi) != steps)
        return n.fail("sequence_lens shorter than the sequence are not "
                      "supported");
    }
    if (steps > kMaxUnroll)
      return n.fail("more than " + Twine(kMaxUnroll) +
                    " steps are not supported (the scan is unrolled)");
    std::vector<std::vector<GraphValue>> perStep(numScanOut);
    for (int64_t t = 0; t < steps; ++t) {
      std::vector<GraphValue> ins = st;
      for (int64_t j = 0; j < numScanIn; ++j)
        ins.push_back(sliceAt(n, x[j], axes[j], inDirs[j] ? steps - 1 - t : t));
      auto outs = n.lowerSubgraph(*body, ins);
      if (failed(outs))
        return failure();
      for (size_t k = 0; k < numState; ++k)
        st[k] = (*outs)[k];
      for (size_t k = 0; k < numScanOut; ++k)
        perStep[k].push_back((*outs)[numState + k]);
    }
    for (size_t k = 0; k < numState; ++k)
      finalStates[k].push_back(st[k]);
    for (size_t k = 0; k < numScanOut; ++k) {
      if (perStep[k].empty())
        return n.fail("an empty scan is not supported");
      if (outDirs[k])
        std::reverse(perStep[k].begin(), perStep[k].end());
      int64_t rank = perStep[k][0].shape.size() + 1;
      int64_t a = normalizeAxis(outAxes[k], rank);
      if (a < 0 || a >= rank)
        return n.fail("scan output axis out of range");
      auto s = stack(n, perStep[k], a);
      if (failed(s))
        return failure();
      scanOuts[k].push_back(*s);
    }
  }
  auto result =
      [&](std::vector<GraphValue> &perBatch) -> FailureOr<GraphValue> {
    if (!batched)
      return perBatch[0];
    return stack(n, perBatch, 0);
  };
  for (size_t k = 0; k < numState; ++k) {
    auto v = result(finalStates[k]);
    if (failed(v))
      return failure();
    n.setOutput(k, *v);
  }
  for (size_t k = 0; k < numScanOut; ++k) {
    auto v = result(scanOuts[k]);
    if (failed(v))
      return failure();
    n.setOutput(numState + k, *v);
  }
  return success();
}

} // namespace

void registerControlFlowLowerings() {
  opLowerings()["If"] = lowerIf;
  opLowerings()["Loop"] = lowerLoop;
  opLowerings()["Scan"] = lowerScan;
}

} // namespace mcc
