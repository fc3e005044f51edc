//===- RecurrentOps.cpp - RNN, GRU, LSTM unrolled over the sequence -------===//
//
// The sequence length is static, so each direction becomes a chain of
// cells: the input projection X * W^T (+ biases) is one matrix product for
// all steps up front; each step then adds H * R^T and applies the gates
// elementwise. Layout 1 (batch first) is transposed in and out.
//
//===----------------------------------------------------------------------===//

#include "mcc/Import/NodeLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace mcc {
namespace {

enum class Cell { RNN, GRU, LSTM };

struct Activation {
  std::string name;
  double alpha = 0, beta = 0;
};

/// The activation functions of each direction, defaults filled in; alpha
/// and beta values are consumed in order by the functions that take them.
FailureOr<std::vector<Activation>> activations(NodeLowering &n, Cell cell,
                                               int64_t dirs) {
  std::vector<std::string> defaults;
  if (cell == Cell::RNN)
    defaults = {"Tanh"};
  else if (cell == Cell::GRU)
    defaults = {"Sigmoid", "Tanh"};
  else
    defaults = {"Sigmoid", "Tanh", "Tanh"};
  std::vector<std::string> names;
  if (const onnx::AttributeProto *a = n.attr("activations"))
    names.assign(a->strings().begin(), a->strings().end());
  if (names.empty())
    for (int64_t d = 0; d < dirs; ++d)
      names.insert(names.end(), defaults.begin(), defaults.end());
  if (names.size() != defaults.size() * dirs)
    return n.fail("expected " + Twine(defaults.size() * dirs) +
                  " activations, got " + Twine(names.size()));
  std::vector<float> alphas = n.attrFloats("activation_alpha"),
                     betas = n.attrFloats("activation_beta");
  size_t ai = 0, bi = 0;
  std::vector<Activation> acts;
  for (const std::string &name : names) {
    // Default alpha and beta as for the ONNX operator of the same name.
    static const std::map<std::string,
                          std::pair<int, std::pair<double, double>>>
        params = {
            {"Relu", {0, {0, 0}}},           {"Tanh", {0, {0, 0}}},
            {"Sigmoid", {0, {0, 0}}},        {"Softsign", {0, {0, 0}}},
            {"Softplus", {0, {0, 0}}},       {"Affine", {2, {1.0, 0.0}}},
            {"LeakyRelu", {1, {0.01, 0}}},   {"ThresholdedRelu", {1, {1.0, 0}}},
            {"Elu", {1, {1.0, 0}}},          {"ScaledTanh", {2, {1.0, 1.0}}},
            {"HardSigmoid", {2, {0.2, 0.5}}}};
    auto it = params.find(name);
    if (it == params.end())
      return n.fail("unsupported activation '" + name + "'");
    Activation act{name, it->second.second.first, it->second.second.second};
    if (it->second.first >= 1 && ai < alphas.size())
      act.alpha = alphas[ai++];
    if (it->second.first >= 2 && bi < betas.size())
      act.beta = betas[bi++];
    acts.push_back(act);
  }
  return acts;
}

Value activate(OpBuilder &b, Location l, const Activation &a, double clip,
               Value x) {
  Type et = x.getType();
  auto c = [&](double v) { return scalarConstant(b, l, et, v); };
  if (clip > 0)
    x = arith::MinimumFOp::create(
        b, l, arith::MaximumFOp::create(b, l, x, c(-clip)), c(clip));
  auto sigmoid = [&](Value v) -> Value {
    Value e = math::ExpOp::create(b, l, arith::NegFOp::create(b, l, v));
    return arith::DivFOp::create(b, l, c(1.0),
                                 arith::AddFOp::create(b, l, c(1.0), e));
  };
  auto mul = [&](Value p, Value q) -> Value {
    return arith::MulFOp::create(b, l, p, q);
  };
  auto add = [&](Value p, Value q) -> Value {
    return arith::AddFOp::create(b, l, p, q);
  };
  const std::string &f = a.name;
  if (f == "Tanh")
    return math::TanhOp::create(b, l, x);
  if (f == "Sigmoid")
    return sigmoid(x);
  if (f == "Relu")
    return arith::MaximumFOp::create(b, l, x, c(0.0));
  if (f == "Affine")
    return add(mul(c(a.alpha), x), c(a.beta));
  if (f == "LeakyRelu")
    return arith::SelectOp::create(
        b, l, arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGE, x, c(0)),
        x, mul(c(a.alpha), x));
  if (f == "ThresholdedRelu")
    return arith::SelectOp::create(
        b, l,
        arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT, x, c(a.alpha)),
        x, c(0.0));
  if (f == "Elu")
    return arith::SelectOp::create(
        b, l, arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGE, x, c(0)),
        x,
        mul(c(a.alpha),
            arith::SubFOp::create(b, l, math::ExpOp::create(b, l, x), c(1.0))));
  if (f == "ScaledTanh")
    return mul(c(a.alpha), math::TanhOp::create(b, l, mul(c(a.beta), x)));
  if (f == "HardSigmoid")
    return arith::MinimumFOp::create(
        b, l,
        arith::MaximumFOp::create(b, l, add(mul(c(a.alpha), x), c(a.beta)),
                                  c(0.0)),
        c(1.0));
  if (f == "Softsign")
    return arith::DivFOp::create(b, l, x,
                                 add(c(1.0), math::AbsFOp::create(b, l, x)));
  // Softplus
  return math::Log1pOp::create(b, l, math::ExpOp::create(b, l, x));
}

/// `v[offsets..., sizes...]` with unit strides.
Value slice(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> offsets,
            ArrayRef<int64_t> sizes) {
  SmallVector<OpFoldResult> o, s, one;
  for (size_t i = 0; i < sizes.size(); ++i) {
    o.push_back(b.getIndexAttr(offsets[i]));
    s.push_back(b.getIndexAttr(sizes[i]));
    one.push_back(b.getIndexAttr(1));
  }
  return tensor::ExtractSliceOp::create(b, loc, v, o, s, one);
}

/// a [m, k] times w^T for w [n, k].
Value matmulT(OpBuilder &b, Location loc, Value a, Value w) {
  Shape as = shapeOf(a), ws = shapeOf(w);
  Type et = cast<RankedTensorType>(a.getType()).getElementType();
  Value wt = emitTranspose(b, loc, w, {1, 0});
  Value init = emitFilled(b, loc, {as[0], ws[0]}, b.getFloatAttr(et, 0.0));
  return linalg::MatmulOp::create(b, loc, ValueRange{a, wt}, ValueRange{init})
      .getResult(0);
}

LogicalResult lowerRecurrent(NodeLowering &n, Cell cell) {
  const int64_t G = cell == Cell::RNN ? 1 : cell == Cell::GRU ? 3 : 4;
  if (!isFloatDType(n.dtype(0)))
    return n.fail("needs a floating-point input");
  if (n.rank(0) != 3 || n.rank(1) != 3 || n.rank(2) != 3)
    return n.fail("X, W and R must be 3-D");
  std::string direction = n.attrString("direction", "forward");
  if (direction != "forward" && direction != "reverse" &&
      direction != "bidirectional")
    return n.fail("unknown direction '" + direction + "'");
  int64_t dirs = direction == "bidirectional" ? 2 : 1;
  bool batchFirst = n.attrInt("layout", 0) != 0;
  if (cell == Cell::LSTM && n.attrInt("input_forget", 0) != 0)
    return n.fail("input_forget=1 is not supported");
  bool lbr = cell == Cell::GRU && n.attrInt("linear_before_reset", 0) != 0;
  double clip = n.hasAttr("clip") ? n.attrFloat("clip", 0) : 0;
  auto acts = activations(n, cell, dirs);
  if (failed(acts))
    return failure();

  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Type et = n.elementType(n.dtype(0));
  Value x = n.value(0);
  if (batchFirst)
    x = emitTranspose(b, loc, x, {1, 0, 2});
  Shape xs = shapeOf(x);
  int64_t T = xs[0], N = xs[1], I = xs[2];
  int64_t H = n.attrInt("hidden_size", n.shape(2)[2]);
  if (n.shape(1) != Shape{dirs, G * H, I} ||
      n.shape(2) != Shape{dirs, G * H, H})
    return n.fail("W " + formatShape(n.shape(1)) + " and R " +
                  formatShape(n.shape(2)) + " do not fit input size " +
                  Twine(I) + ", hidden size " + Twine(H) + " and " +
                  Twine(dirs) + " direction(s)");
  if (n.hasInput(4)) {
    // Shorter sequences would need per-batch masking; equal ones are the
    // plain case.
    if (failed(n.requireLiterals({4}, "sequence_lens")))
      return failure();
    for (int64_t v : n.literal(4).toInts())
      if (v != T)
        return n.fail("sequence_lens other than the sequence length (" +
                      Twine(T) + ") are not supported");
  }
  // Initial states as [dirs, N, H].
  auto initialState = [&](size_t i) -> Value {
    if (!n.hasInput(i))
      return emitFilled(b, loc, {dirs, N, H}, b.getFloatAttr(et, 0.0));
    Value v = n.value(i);
    return batchFirst ? emitTranspose(b, loc, v, {1, 0, 2}) : v;
  };
  Value h0 = initialState(5);
  Value c0 = cell == Cell::LSTM ? initialState(6) : Value();
  auto ew = [&](ValueRange ins, const ScalarBody &body) {
    return emitElementwise(b, loc, ins, et, {N, H}, body);
  };

  Value Y = emitFilled(b, loc, {T, dirs, N, H}, b.getFloatAttr(et, 0.0));
  SmallVector<Value> lastH, lastC;
  for (int64_t d = 0; d < dirs; ++d) {
    bool reverse = direction == "reverse" || d == 1;
    const Activation *act = &(*acts)[d * (acts->size() / dirs)];
    Value W =
        emitReshape(b, loc, slice(b, loc, n.value(1), {d, 0, 0}, {1, G * H, I}),
                    {G * H, I});
    Value R =
        emitReshape(b, loc, slice(b, loc, n.value(2), {d, 0, 0}, {1, G * H, H}),
                    {G * H, H});
    // X * W^T + Wb + Rb for all steps; GRU keeps Rb of its h gate apart
    // (it is added inside the reset when linear_before_reset).
    Value xw = matmulT(b, loc, emitReshape(b, loc, x, {T * N, I}), W);
    Value rbH;
    if (n.hasInput(3)) {
      Value B =
          emitReshape(b, loc, slice(b, loc, n.value(3), {d, 0}, {1, 2 * G * H}),
                      {2 * G * H});
      Value wb = slice(b, loc, B, {0}, {G * H});
      Value rb = slice(b, loc, B, {G * H}, {G * H});
      if (cell == Cell::GRU) {
        // A mask rather than an insert_slice into rb: that would write
        // into the caller's B.
        rbH = slice(b, loc, rb, {2 * H}, {H});
        std::vector<double> mask(G * H, 1.0);
        std::fill(mask.begin() + 2 * H, mask.end(), 0.0);
        Value m = floatConstantTensor(b, loc, {G * H}, et, mask);
        rb = emitElementwise(b, loc, ValueRange{rb, m}, et, {G * H},
                             [](OpBuilder &nb, Location l, ValueRange v) {
                               return (Value)arith::MulFOp::create(nb, l, v[0],
                                                                   v[1]);
                             });
      }
      xw = emitElementwise(
          b, loc, ValueRange{xw, wb, rb}, et, {T * N, G * H},
          [](OpBuilder &nb, Location l, ValueRange v) {
            return (Value)arith::AddFOp::create(
                nb, l, arith::AddFOp::create(nb, l, v[0], v[1]), v[2]);
          });
    }
    xw = emitReshape(b, loc, xw, {T, N, G * H});
    Value P;
    if (cell == Cell::LSTM && n.hasInput(7))
      P = emitReshape(b, loc, slice(b, loc, n.value(7), {d, 0}, {1, 3 * H}),
                      {3 * H});
    Value h =
        emitReshape(b, loc, slice(b, loc, h0, {d, 0, 0}, {1, N, H}), {N, H});
    Value c;
    if (cell == Cell::LSTM)
      c = emitReshape(b, loc, slice(b, loc, c0, {d, 0, 0}, {1, N, H}), {N, H});
    for (int64_t step = 0; step < T; ++step) {
      int64_t t = reverse ? T - 1 - step : step;
      Value xt = emitReshape(
          b, loc, slice(b, loc, xw, {t, 0, 0}, {1, N, G * H}), {N, G * H});
      auto gate = [&](Value v, int64_t g) {
        return slice(b, loc, v, {0, g * H}, {N, H});
      };
      if (cell == Cell::RNN) {
        Value hr = matmulT(b, loc, h, R);
        h = ew(ValueRange{xt, hr},
               [&](OpBuilder &nb, Location l, ValueRange v) {
                 return activate(nb, l, act[0], clip,
                                 arith::AddFOp::create(nb, l, v[0], v[1]));
               });
      } else if (cell == Cell::GRU) {
        // Gates z, r, h.
        Value rZR = slice(b, loc, R, {0, 0}, {2 * H, H});
        Value rH = slice(b, loc, R, {2 * H, 0}, {H, H});
        Value hr = matmulT(b, loc, h, rZR);
        auto sig = [&](int64_t g) {
          return ew(ValueRange{gate(xt, g), gate(hr, g)},
                    [&](OpBuilder &nb, Location l, ValueRange v) {
                      return activate(nb, l, act[0], clip,
                                      arith::AddFOp::create(nb, l, v[0], v[1]));
                    });
        };
        Value z = sig(0), r = sig(1);
        auto addRb = [&](Value v) {
          if (!rbH)
            return v;
          return ew(ValueRange{v, rbH},
                    [](OpBuilder &nb, Location l, ValueRange a) {
                      return (Value)arith::AddFOp::create(nb, l, a[0], a[1]);
                    });
        };
        Value pre; // the recurrent term of the h gate
        if (lbr) {
          Value hh = addRb(matmulT(b, loc, h, rH));
          pre = ew(ValueRange{r, hh},
                   [](OpBuilder &nb, Location l, ValueRange a) {
                     return (Value)arith::MulFOp::create(nb, l, a[0], a[1]);
                   });
        } else {
          Value rh =
              ew(ValueRange{r, h}, [](OpBuilder &nb, Location l, ValueRange a) {
                return (Value)arith::MulFOp::create(nb, l, a[0], a[1]);
              });
          pre = addRb(matmulT(b, loc, rh, rH));
        }
        h = ew(ValueRange{gate(xt, 2), pre, z, h},
               [&](OpBuilder &nb, Location l, ValueRange v) {
                 Value hc = activate(nb, l, act[1], clip,
                                     arith::AddFOp::create(nb, l, v[0], v[1]));
                 // (1 - z) * hc + z * h = hc + z * (h - hc)
                 return (Value)arith::AddFOp::create(
                     nb, l, hc,
                     arith::MulFOp::create(
                         nb, l, v[2], arith::SubFOp::create(nb, l, v[3], hc)));
               });
      } else {
        // Gates i, o, f, c; peepholes P = [Pi, Po, Pf].
        Value hr = matmulT(b, loc, h, R);
        Value pre = emitElementwise(
            b, loc, ValueRange{xt, hr}, et, {N, G * H},
            [](OpBuilder &nb, Location l, ValueRange v) {
              return (Value)arith::AddFOp::create(nb, l, v[0], v[1]);
            });
        Value zeroH = emitFilled(b, loc, {H}, b.getFloatAttr(et, 0.0));
        Value pi = P ? slice(b, loc, P, {0}, {H}) : zeroH;
        Value po = P ? slice(b, loc, P, {H}, {H}) : zeroH;
        Value pf = P ? slice(b, loc, P, {2 * H}, {H}) : zeroH;
        c = ew(ValueRange{gate(pre, 0), gate(pre, 2), gate(pre, 3), c, pi, pf},
               [&](OpBuilder &nb, Location l, ValueRange v) {
                 auto fma = [&](Value a, Value p, Value q) -> Value {
                   return arith::AddFOp::create(
                       nb, l, a, arith::MulFOp::create(nb, l, p, q));
                 };
                 Value i = activate(nb, l, act[0], clip, fma(v[0], v[4], v[3]));
                 Value f = activate(nb, l, act[0], clip, fma(v[1], v[5], v[3]));
                 Value cc = activate(nb, l, act[1], clip, v[2]);
                 return (Value)arith::AddFOp::create(
                     nb, l, arith::MulFOp::create(nb, l, f, v[3]),
                     arith::MulFOp::create(nb, l, i, cc));
               });
        h = ew(ValueRange{gate(pre, 1), c, po}, [&](OpBuilder &nb, Location l,
                                                    ValueRange v) {
          Value o = activate(
              nb, l, act[0], clip,
              arith::AddFOp::create(nb, l, v[0],
                                    arith::MulFOp::create(nb, l, v[2], v[1])));
          return (Value)arith::MulFOp::create(nb, l, o,
                                              activate(nb, l, act[2], 0, v[1]));
        });
      }
      SmallVector<OpFoldResult> off = {b.getIndexAttr(t), b.getIndexAttr(d),
                                       b.getIndexAttr(0), b.getIndexAttr(0)},
                                sizes = {b.getIndexAttr(1), b.getIndexAttr(1),
                                         b.getIndexAttr(N), b.getIndexAttr(H)},
                                ones(4, b.getIndexAttr(1));
      Y = tensor::InsertSliceOp::create(
          b, loc, emitReshape(b, loc, h, {1, 1, N, H}), Y, off, sizes, ones);
    }
    lastH.push_back(emitReshape(b, loc, h, {1, N, H}));
    if (cell == Cell::LSTM)
      lastC.push_back(emitReshape(b, loc, c, {1, N, H}));
  }
  auto stack = [&](ArrayRef<Value> parts) -> Value {
    Value r = parts[0];
    if (dirs == 2) {
      r = emitFilled(b, loc, {2, N, H}, b.getFloatAttr(et, 0.0));
      for (int64_t d = 0; d < 2; ++d)
        r = tensor::InsertSliceOp::create(
            b, loc, parts[d], r,
            ArrayRef<OpFoldResult>{b.getIndexAttr(d), b.getIndexAttr(0),
                                   b.getIndexAttr(0)},
            ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(N),
                                   b.getIndexAttr(H)},
            ArrayRef<OpFoldResult>(
                SmallVector<OpFoldResult>(3, b.getIndexAttr(1))));
    }
    return batchFirst ? emitTranspose(b, loc, r, {1, 0, 2}) : r;
  };
  if (n.hasOutput(0))
    n.setOutput(0, batchFirst ? emitTranspose(b, loc, Y, {2, 0, 1, 3}) : Y,
                n.dtype(0));
  if (n.hasOutput(1))
    n.setOutput(1, stack(lastH), n.dtype(0));
  if (n.hasOutput(2) && cell == Cell::LSTM)
    n.setOutput(2, stack(lastC), n.dtype(0));
  return success();
}

} // namespace

void registerRecurrentLowerings() {
  auto &t = opLowerings();
  t["RNN"] = [](NodeLowering &n) { return lowerRecurrent(n, Cell::RNN); };
  t["GRU"] = [](NodeLowering &n) { return lowerRecurrent(n, Cell::GRU); };
  t["LSTM"] = [](NodeLowering &n) { return lowerRecurrent(n, Cell::LSTM); };
}

} // namespace mcc
