//===- ElementwiseOps.cpp - ONNX elementwise ops to linalg.generic --------===//
//
// Each op has an IR body (per element, on broadcast operands) and a scalar
// evaluator used to fold it when every input is a literal. Broadcasting
// follows ONNX (NumPy) rules.
//
//===----------------------------------------------------------------------===//

#include "mcc/Import/NodeLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>

using namespace mlir;

namespace mcc {
namespace {

/// What an elementwise op computes, for IR and for folding.
struct ElementwiseDef {
  /// Emits the scalar result; `dtype` is the inputs' ONNX dtype.
  std::function<Value(OpBuilder &, Location, ValueRange, int32_t)> emit;
  std::function<double(const std::vector<double> &)> eval;
  /// Folds integer inputs exactly (int64 bit patterns, uint64 included)
  /// where doubles would lose bits; used instead of `eval` when set.
  std::function<int64_t(const std::vector<int64_t> &)> evalInt;
  bool boolResult = false;
};

using AttrReader = std::function<ElementwiseDef(NodeLowering &)>;

bool isF(int32_t d) { return isFloatDType(d); }
bool isU(int32_t d) { return isUnsignedDType(d); }

/// The unsigned counterpart of a signed ordering predicate.
arith::CmpIPredicate forSignedness(arith::CmpIPredicate p, int32_t dtype) {
  if (!isU(dtype))
    return p;
  switch (p) {
  case arith::CmpIPredicate::slt:
    return arith::CmpIPredicate::ult;
  case arith::CmpIPredicate::sle:
    return arith::CmpIPredicate::ule;
  case arith::CmpIPredicate::sgt:
    return arith::CmpIPredicate::ugt;
  case arith::CmpIPredicate::sge:
    return arith::CmpIPredicate::uge;
  default:
    return p;
  }
}

/// Integer <-> float conversions that respect the integer's signedness.
Value intToFloat(OpBuilder &b, Location loc, Type to, Value x, int32_t t) {
  if (isU(t))
    return arith::UIToFPOp::create(b, loc, to, x);
  return arith::SIToFPOp::create(b, loc, to, x);
}
Value floatToInt(OpBuilder &b, Location loc, Type to, Value x, int32_t t) {
  if (isU(t))
    return arith::FPToUIOp::create(b, loc, to, x);
  return arith::FPToSIOp::create(b, loc, to, x);
}

Value cst(OpBuilder &b, Location loc, Value like, double v) {
  return scalarConstant(b, loc, like.getType(), v);
}

LogicalResult lowerElementwise(NodeLowering &n, const ElementwiseDef &def,
                               size_t firstInput = 0,
                               size_t numInputs = SIZE_MAX) {
  std::vector<size_t> ins;
  for (size_t i = firstInput; i < n.numInputs() && ins.size() < numInputs; ++i)
    if (n.hasInput(i))
      ins.push_back(i);
  if (ins.empty())
    return n.fail("needs at least one input");
  std::vector<Shape> shapes;
  for (size_t i : ins)
    shapes.push_back(n.shape(i));
  Shape out;
  if (!broadcastShapes(shapes, out)) {
    std::string all;
    for (auto &s : shapes)
      all += formatShape(s) + " ";
    return n.fail("input shapes " + all + "do not broadcast");
  }
  // The dtype of the computation: the first non-bool-condition input.
  int32_t dtype = n.dtype(ins[n.node().op_type() == "Where" ? 1 : 0]);
  int32_t outDType = def.boolResult ? kBool : dtype;
  bool literal = true;
  for (size_t i : ins)
    literal &= n.isLiteral(i);
  if (literal) {
    Literal r(outDType, out);
    std::vector<std::vector<int64_t>> strides;
    for (size_t i : ins) {
      const Shape &s = n.shape(i);
      std::vector<int64_t> st = stridesOf(s), bst(out.size(), 0);
      size_t off = out.size() - s.size();
      for (size_t d = 0; d < s.size(); ++d)
        bst[off + d] = s[d] == 1 ? 0 : st[d];
      strides.push_back(bst);
    }
    std::vector<int64_t> idx(out.size(), 0);
    std::vector<double> args(ins.size());
    std::vector<int64_t> intArgs(ins.size());
    bool exactInts = def.evalInt && !isF(dtype);
    for (int64_t e = 0, total = numElements(out); e < total; ++e) {
      for (size_t k = 0; k < ins.size(); ++k) {
        int64_t flat = 0;
        for (size_t d = 0; d < out.size(); ++d)
          flat += idx[d] * strides[k][d];
        if (exactInts)
          intArgs[k] = n.literal(ins[k]).getI(flat);
        else
          args[k] = n.literal(ins[k]).getAsDouble(flat);
      }
      if (exactInts)
        r.setI(e, def.evalInt(intArgs));
      else
        r.setFromDouble(e, def.eval(args));
      for (int d = static_cast<int>(out.size()) - 1; d >= 0; --d) {
        if (++idx[d] < out[d])
          break;
        idx[d] = 0;
      }
    }
    n.setOutput(0, std::move(r));
    return success();
  }
  SmallVector<Value> values;
  for (size_t i : ins)
    values.push_back(n.value(i));
  // A float16/bfloat16 op computes in f32 and rounds its result once: the
  // intermediate steps of a multi-step formula (Elu's exp(x) - 1, ...) must
  // not each round to the narrow type.
  bool widen = (dtype == kFloat16 || dtype == kBFloat16) && !def.boolResult;
  Type narrow = n.elementType(dtype);
  Value result =
      emitElementwise(n.builder(), n.loc(), values, n.elementType(outDType),
                      out, [&](OpBuilder &b, Location loc, ValueRange args) {
                        if (!widen)
                          return def.emit(b, loc, args, dtype);
                        SmallVector<Value> wide;
                        for (Value a : args)
                          wide.push_back(a.getType() == narrow
                                             ? (Value)arith::ExtFOp::create(
                                                   b, loc, b.getF32Type(), a)
                                             : a);
                        Value r = def.emit(b, loc, wide, kFloat);
                        return (Value)arith::TruncFOp::create(b, loc, narrow,
                                                              r);
                      });
  n.setOutput(0, result, outDType);
  return success();
}

template <typename FOp, typename IOp>
ElementwiseDef arithBinary(double (*f)(double, double)) {
  ElementwiseDef d;
  d.emit = [](OpBuilder &b, Location loc, ValueRange a, int32_t t) -> Value {
    if (isF(t))
      return FOp::create(b, loc, a[0], a[1]);
    return IOp::create(b, loc, a[0], a[1]);
  };
  d.eval = [f](const std::vector<double> &v) { return f(v[0], v[1]); };
  return d;
}

template <typename MathOp> ElementwiseDef mathUnary(double (*f)(double)) {
  ElementwiseDef d;
  d.emit = [](OpBuilder &b, Location loc, ValueRange a, int32_t) -> Value {
    return MathOp::create(b, loc, a[0]);
  };
  d.eval = [f](const std::vector<double> &v) { return f(v[0]); };
  return d;
}

ElementwiseDef compare(arith::CmpFPredicate fp, arith::CmpIPredicate ip,
                       bool (*f)(double, double)) {
  ElementwiseDef d;
  d.boolResult = true;
  d.emit = [fp, ip](OpBuilder &b, Location loc, ValueRange a,
                    int32_t t) -> Value {
    if (isF(t))
      return arith::CmpFOp::create(b, loc, fp, a[0], a[1]);
    return arith::CmpIOp::create(b, loc, forSignedness(ip, t), a[0], a[1]);
  };
  d.eval = [f](const std::vector<double> &v) {
    return f(v[0], v[1]) ? 1.0 : 0.0;
  };
  return d;
}

Value sigmoid(OpBuilder &b, Location loc, Value x) {
  Value one = cst(b, loc, x, 1.0);
  Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
  return arith::DivFOp::create(b, loc, one,
                               arith::AddFOp::create(b, loc, one, e));
}

double sigmoidD(double x) { return 1.0 / (1.0 + std::exp(-x)); }

Value selectMax(OpBuilder &b, Location loc, Value x, Value y, int32_t t) {
  if (isF(t))
    return arith::MaximumFOp::create(b, loc, x, y);
  if (isU(t))
    return arith::MaxUIOp::create(b, loc, x, y);
  return arith::MaxSIOp::create(b, loc, x, y);
}
Value selectMin(OpBuilder &b, Location loc, Value x, Value y, int32_t t) {
  if (isF(t))
    return arith::MinimumFOp::create(b, loc, x, y);
  if (isU(t))
    return arith::MinUIOp::create(b, loc, x, y);
  return arith::MinSIOp::create(b, loc, x, y);
}

void registerSimple(const std::string &name, ElementwiseDef def) {
  opLowerings()[name] = [def](NodeLowering &n) {
    return lowerElementwise(n, def);
  };
}

void registerWithAttrs(const std::string &name, AttrReader reader) {
  opLowerings()[name] = [reader](NodeLowering &n) {
    return lowerElementwise(n, reader(n));
  };
}

} // namespace

void registerElementwiseLowerings() {
  registerSimple("Add", arithBinary<arith::AddFOp, arith::AddIOp>(
                            [](double a, double b) { return a + b; }));
  registerSimple("Sub", arithBinary<arith::SubFOp, arith::SubIOp>(
                            [](double a, double b) { return a - b; }));
  registerSimple("Mul", arithBinary<arith::MulFOp, arith::MulIOp>(
                            [](double a, double b) { return a * b; }));
  {
    ElementwiseDef d;
    d.emit = [](OpBuilder &b, Location loc, ValueRange a, int32_t t) -> Value {
      if (isF(t))
        return arith::DivFOp::create(b, loc, a[0], a[1]);
      if (isU(t))
        return arith::DivUIOp::create(b, loc, a[0], a[1]);
      return arith::DivSIOp::create(b, loc, a[0], a[1]);
    };
    d.eval = [](const std::vector<double> &v) {
      return v[1] == 0 ? (v[0] / v[1]) : v[0] / v[1];
    };
    // Integer division truncates toward zero (C semantics, as ONNX).
    opLowerings()["Div"] = [d](NodeLowering &n) {
      ElementwiseDef dd = d;
      if (!isF(n.dtype(0)))
        dd.eval = [](const std::vector<double> &v) {
          return v[1] == 0 ? 0.0 : std::trunc(v[0] / v[1]);
        };
      return lowerElementwise(n, dd);
    };
  }
  {
    // The exponent's dtype decides how an integer exponent widens or
    // converts (uint32 exponents above 2^31 stay positive).
    auto powDef = [](int32_t expT) {
      ElementwiseDef d;
      d.emit = [expT](OpBuilder &b, Location loc, ValueRange a,
                      int32_t t) -> Value {
        Value x = a[0], y = a[1];
        if (!isF(t)) {
          if (isa<IntegerType>(y.getType())) {
            if (y.getType() != x.getType())
              y = y.getType().getIntOrFloatBitWidth() <
                          x.getType().getIntOrFloatBitWidth()
                      ? emitScalarCast(b, loc, y, expT, t, x.getType())
                      : (Value)arith::TruncIOp::create(b, loc, x.getType(), y);
            return math::IPowIOp::create(b, loc, x, y);
          }
          // Integer base, float exponent: compute in f64, truncate toward 0.
          Type f64 = b.getF64Type();
          Value xf = intToFloat(b, loc, f64, x, t);
          Value yf = emitScalarCast(b, loc, y, expT, kDouble, f64);
          return floatToInt(b, loc, x.getType(),
                            math::PowFOp::create(b, loc, xf, yf), t);
        }
        if (y.getType() != x.getType() || expT != t)
          y = emitScalarCast(b, loc, y, expT, t, x.getType());
        return math::PowFOp::create(b, loc, x, y);
      };
      return d;
    };
    ElementwiseDef d;
    d.eval = [](const std::vector<double> &v) { return std::pow(v[0], v[1]); };
    opLowerings()["Pow"] = [d, powDef](NodeLowering &n) -> LogicalResult {
      // x^2 and x^0.5 are common (layer norms, GELU): exact and cheap forms
      // keep them accurate to float32 rounding.
      if (n.isLiteral(1) && n.literal(1).size() == 1 && isF(n.dtype(0)) &&
          !n.isLiteral(0)) {
        double e = n.literal(1).getAsDouble(0);
        ElementwiseDef sq;
        sq.eval = d.eval;
        if (e == 2.0) {
          sq.emit = [](OpBuilder &b, Location loc, ValueRange a, int32_t) {
            return (Value)arith::MulFOp::create(b, loc, a[0], a[0]);
          };
          return lowerElementwise(n, sq, 0, 1);
        }
        if (e == 0.5) {
          sq.emit = [](OpBuilder &b, Location loc, ValueRange a, int32_t) {
            return (Value)math::SqrtOp::create(b, loc, a[0]);
          };
          return lowerElementwise(n, sq, 0, 1);
        }
        if (e == 1.0) {
          sq.emit = [](OpBuilder &, Location, ValueRange a, int32_t) {
            return a[0];
          };
          return lowerElementwise(n, sq, 0, 1);
        }
      }
      ElementwiseDef full = powDef(n.dtype(1));
      full.eval = d.eval;
      return lowerElementwise(n, full);
    };
  }
  {
    ElementwiseDef d;
    d.emit = [](OpBuilder &b, Location loc, ValueRange a, int32_t t) -> Value {
      // Python-style modulo (fmod=0): the result takes the divisor's sign.
      // For floats this is defined from opset 28 (numpy's np.mod).
      if (isF(t)) {
        Value r = arith::RemFOp::create(b, loc, a[0], a[1]);
        Value zero = cst(b, loc, r, 0);
        Value rNeg = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT,
                                           r, zero);
        Value dNeg = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT,
                                           a[1], zero);
        Value nz = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::ONE, r,
                                         zero);
        Value fix = arith::AndIOp::create(
            b, loc, arith::XOrIOp::create(b, loc, rNeg, dNeg), nz);
        return arith::SelectOp::create(
            b, loc, fix, arith::AddFOp::create(b, loc, r, a[1]), r);
      }
      if (isU(t)) // no signs to reconcile
        return arith::RemUIOp::create(b, loc, a[0], a[1]);
      Value r = arith::RemSIOp::create(b, loc, a[0], a[1]);
      Value zero = cst(b, loc, r, 0);
      Value rNeg =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, r, zero);
      Value dNeg =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, a[1], zero);
      Value nz =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, r, zero);
      Value differ = arith::XOrIOp::create(b, loc, rNeg, dNeg);
      Value fix = arith::AndIOp::create(b, loc, differ, nz);
      Value adj = arith::AddIOp::create(b, loc, r, a[1]);
      return arith::SelectOp::create(b, loc, fix, adj, r);
    };
    d.eval = [](const std::vector<double> &v) {
      double r = std::fmod(v[0], v[1]);
      if (r != 0 && ((r < 0) != (v[1] < 0)))
        r += v[1];
      return r;
    };
    opLowerings()["Mod"] = [d](NodeLowering &n) {
      ElementwiseDef dd = d;
      if (n.attrInt("fmod", 0)) {
        dd.emit = [](OpBuilder &b, Location loc, ValueRange a,
                     int32_t t) -> Value {
          if (isF(t))
            return arith::RemFOp::create(b, loc, a[0], a[1]);
          if (isU(t))
            return arith::RemUIOp::create(b, loc, a[0], a[1]);
          return arith::RemSIOp::create(b, loc, a[0], a[1]);
        };
        dd.eval = [](const std::vector<double> &v) {
          return std::fmod(v[0], v[1]);
        };
      }
      return lowerElementwise(n, dd);
    };
  }
  registerSimple("Equal",
                 compare(arith::CmpFPredicate::OEQ, arith::CmpIPredicate::eq,
                         [](double a, double b) { return a == b; }));
  registerSimple("Less",
                 compare(arith::CmpFPredicate::OLT, arith::CmpIPredicate::slt,
                         [](double a, double b) { return a < b; }));
  registerSimple("LessOrEqual",
                 compare(arith::CmpFPredicate::OLE, arith::CmpIPredicate::sle,
                         [](double a, double b) { return a <= b; }));
  registerSimple("Greater",
                 compare(arith::CmpFPredicate::OGT, arith::CmpIPredicate::sgt,
                         [](double a, double b) { return a > b; }));
  registerSimple("GreaterOrEqual",
                 compare(arith::CmpFPredicate::OGE, arith::CmpIPredicate::sge,
                         [](double a, double b) { return a >= b; }));
  {
    auto logical =
        [](std::function<Value(OpBuilder &, Location, Value, Value)> emit,
           double (*f)(double, double)) {
          ElementwiseDef d;
          d.boolResult = true;
          d.emit = [emit](OpBuilder &b, Location loc, ValueRange a, int32_t) {
            return emit(b, loc, a[0], a[1]);
          };
          d.eval = [f](const std::vector<double> &v) { return f(v[0], v[1]); };
          return d;
        };
    registerSimple("And", logical(
                              [](OpBuilder &b, Location l, Value x, Value y) {
                                return (Value)arith::AndIOp::create(b, l, x, y);
                              },
                              [](double a, double b) {
                                return (a != 0 && b != 0) ? 1.0 : 0.0;
                              }));
    registerSimple("Or", logical(
                             [](OpBuilder &b, Location l, Value x, Value y) {
                               return (Value)arith::OrIOp::create(b, l, x, y);
                             },
                             [](double a, double b) {
                               return (a != 0 || b != 0) ? 1.0 : 0.0;
                             }));
    registerSimple("Xor", logical(
                              [](OpBuilder &b, Location l, Value x, Value y) {
                                return (Value)arith::XOrIOp::create(b, l, x, y);
                              },
                              [](double a, double b) {
                                return ((a != 0) != (b != 0)) ? 1.0 : 0.0;
                              }));
  }
  {
    ElementwiseDef d;
    d.boolResult = true;
    d.emit = [](OpBuilder &b, Location loc, ValueRange a, int32_t) -> Value {
      Value one = arith::ConstantOp::create(b, loc, b.getBoolAttr(true));
      return arith::XOrIOp::create(b, loc, a[0], one);
    };
    d.eval = [](const std::vector<double> &v) { return v[0] != 0 ? 0.0 : 1.0; };
    registerSimple("Not", d);
  }
  // Variadic Max/Min/Sum/Mean fold pairwise in one generic.
  auto variadic =
      [](std::function<Value(OpBuilder &, Location, Value, Value, int32_t)>
             combine,
         double (*f)(double, double), bool mean) {
        ElementwiseDef d;
        d.emit = [combine, mean](OpBuilder &b, Location loc, ValueRange a,
                                 int32_t t) -> Value {
          Value acc = a[0];
          for (Value v : a.drop_front())
            acc = combine(b, loc, acc, v, t);
          if (mean)
            acc = arith::DivFOp::create(
                b, loc, acc, cst(b, loc, acc, static_cast<double>(a.size())));
          return acc;
        };
        d.eval = [f, mean](const std::vector<double> &v) {
          double acc = v[0];
          for (size_t i = 1; i < v.size(); ++i)
            acc = f(acc, v[i]);
          return mean ? acc / v.size() : acc;
        };
        return d;
      };
  registerSimple("Max", variadic(
                            selectMax,
                            [](double a, double b) {
                              return std::isnan(a) || std::isnan(b)
                                         ? NAN
                                         : std::max(a, b);
                            },
                            false));
  registerSimple("Min", variadic(
                            selectMin,
                            [](double a, double b) {
                              return std::isnan(a) || std::isnan(b)
                                         ? NAN
                                         : std::min(a, b);
                            },
                            false));
  auto add = [](OpBuilder &b, Location loc, Value x, Value y,
                int32_t t) -> Value {
    if (isF(t))
      return arith::AddFOp::create(b, loc, x, y);
    return arith::AddIOp::create(b, loc, x, y);
  };
  registerSimple("Sum",
                 variadic(
                     add, [](double a, double b) { return a + b; }, false));
  registerSimple("Mean",
                 variadic(
                     add, [](double a, double b) { return a + b; }, true));

  registerSimple("Exp",
                 mathUnary<math::ExpOp>([](double x) { return std::exp(x); }));
  registerSimple("Log",
                 mathUnary<math::LogOp>([](double x) { return std::log(x); }));
  registerSimple(
      "Sqrt", mathUnary<math::SqrtOp>([](double x) { return std::sqrt(x); }));
  registerSimple(
      "Tanh", mathUnary<math::TanhOp>([](double x) { return std::tanh(x); }));
  registerSimple("Erf",
                 mathUnary<math::ErfOp>([](double x) { return std::erf(x); }));
  registerSimple("Floor", mathUnary<math::FloorOp>(
                              [](double x) { return std::floor(x); }));
  registerSimple(
      "Ceil", mathUnary<math::CeilOp>([](double x) { return std::ceil(x); }));
  registerSimple("Round", mathUnary<math::RoundEvenOp>(
                              [](double x) { return std::nearbyint(x); }));
  registerSimple("Sin",
                 mathUnary<math::SinOp>([](double x) { return std::sin(x); }));
  registerSimple("Cos",
                 mathUnary<math::CosOp>([](double x) { return std::cos(x); }));
  registerSimple("Tan",
                 mathUnary<math::TanOp>([](double x) { return std::tan(x); }));
  registerSimple(
      "Asin", mathUnary<math::AsinOp>([](double x) { return std::asin(x); }));
  registerSimple(
      "Acos", mathUnary<math::AcosOp>([](double x) { return std::acos(x); }));
  registerSimple(
      "Atan", mathUnary<math::AtanOp>([](double x) { return std::atan(x); }));
  registerSimple(
      "Sinh", mathUnary<math::SinhOp>([](double x) { return std::sinh(x); }));
  registerSimple(
      "Cosh", mathUnary<math::CoshOp>([](double x) { return std::cosh(x); }));
  registerSimple("Asinh", mathUnary<math::AsinhOp>(
                              [](double x) { return std::asinh(x); }));
  registerSimple("Acosh", mathUnary<math::AcoshOp>(
                              [](double x) { return std::acosh(x); }));
  registerSimple("Atanh", mathUnary<math::AtanhOp>(
                              [](double x) { return std::atanh(x); }));
  {
    ElementwiseDef d;
    d.emit = [](OpBuilder &b, Location loc, ValueRange a, int32_t t) -> Value {
      if (isF(t))
        return math::AbsFOp::create(b, loc, a[0]);
      if (isU(t))
        return a[0];
      return math::AbsIOp::create(b, loc, a[0]);
    };
    d.eval = [](const std::vector<double> &v) { return std::fabs(v[0]); };
    registerSimple("Abs", d);
  }
  {
    ElementwiseDef d;
    d.emit = [](OpBuilder &b, Location loc, ValueRange a, int32_t t) -> Value {
      if (isF(t))
        return arith::NegFOp::create(b, loc, a[0]);
      return arith::SubIOp::create(b, loc, cst(b, loc, a[0], 0), a[0]);
    };
    d.eval = [](const std::vector<double> &v) { return -v[0]; };
    registerSimple("Neg", d);
  }
  {
    ElementwiseDef d;
    d.emit = [](OpBuilder &b, Location loc, ValueRange a, int32_t) -> Value {
      return arith::DivFOp::create(b, loc, cst(b, loc, a[0], 1.0), a[0]);
    };
    d.eval = [](const std::vector<double> &v) { return 1.0 / v[0]; };
    registerSimple("Reciprocal", d);
  }
  {
    ElementwiseDef d;
    d.emit = [](OpBuilder &b, Location loc, ValueRange a, int32_t t) -> Value {
      return selectMax(b, loc, a[0], cst(b, loc, a[0], 0.0), t);
    };
    d.eval = [](const std::vector<double> &v) { return v[0] > 0 ? v[0] : 0; };
    registerSimple("Relu", d);
  }
  {
    ElementwiseDef d;
    d.emit = [](OpBuilder &b, Location loc, ValueRange a, int32_t) {
      return sigmoid(b, loc, a[0]);
    };
    d.eval = [](const std::vector<double> &v) { return sigmoidD(v[0]); };
    registerSimple("Sigmoid", d);
  }
  {
    ElementwiseDef d;
    d.emit = [](OpBuilder &b, Location loc, ValueRange a, int32_t t) -> Value {
      Value zero = cst(b, loc, a[0], 0.0), one = cst(b, loc, a[0], 1.0);
      if (isU(t)) {
        Value nz =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, a[0], zero);
        return arith::SelectOp::create(b, loc, nz, one, zero);
      }
      if (!isF(t)) {
        Value pos = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt,
                                          a[0], zero);
        Value neg = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                          a[0], zero);
        Value minus = cst(b, loc, a[0], -1.0);
        return arith::SelectOp::create(
            b, loc, pos, one,
            arith::SelectOp::create(b, loc, neg, minus, zero));
      }
      Value pos =
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, a[0], zero);
      Value neg =
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, a[0], zero);
      Value minus = cst(b, loc, a[0], -1.0);
      return arith::SelectOp::create(
          b, loc, pos, one, arith::SelectOp::create(b, loc, neg, minus, zero));
    };
    d.eval = [](const std::vector<double> &v) {
      return v[0] > 0 ? 1.0 : (v[0] < 0 ? -1.0 : 0.0);
    };
    registerSimple("Sign", d);
  }
  {
    ElementwiseDef d;
    d.boolResult = true;
    d.emit = [](OpBuilder &b, Location loc, ValueRange a, int32_t) -> Value {
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, a[0],
                                   a[0]);
    };
    d.eval = [](const std::vector<double> &v) {
      return std::isnan(v[0]) ? 1.0 : 0.0;
    };
    registerSimple("IsNaN", d);
  }
  registerWithAttrs("IsInf", [](NodeLowering &n) {
    bool pos = n.attrInt("detect_positive", 1),
         neg = n.attrInt("detect_negative", 1);
    ElementwiseDef d;
    d.boolResult = true;
    d.emit = [pos, neg](OpBuilder &b, Location loc, ValueRange a,
                        int32_t) -> Value {
      Value inf = cst(b, loc, a[0], INFINITY),
            ninf = cst(b, loc, a[0], -INFINITY);
      Value p =
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, a[0], inf);
      Value m =
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, a[0], ninf);
      Value f = arith::ConstantOp::create(b, loc, b.getBoolAttr(false));
      return arith::OrIOp::create(b, loc, pos ? p : f, neg ? m : f);
    };
    d.eval = [pos, neg](const std::vector<double> &v) {
      return ((pos && v[0] == INFINITY) || (neg && v[0] == -INFINITY)) ? 1.0
                                                                       : 0.0;
    };
    return d;
  });
  {
    ElementwiseDef d;
    d.emit = [](OpBuilder &b, Location loc, ValueRange a, int32_t) -> Value {
      // log(1 + exp(x)), stable for large x: max(x,0) + log1p(exp(-|x|)).
      Value zero = cst(b, loc, a[0], 0.0);
      Value mx = arith::MaximumFOp::create(b, loc, a[0], zero);
      Value ab = math::AbsFOp::create(b, loc, a[0]);
      Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, ab));
      return arith::AddFOp::create(b, loc, mx,
                                   math::Log1pOp::create(b, loc, e));
    };
    d.eval = [](const std::vector<double> &v) {
      return std::max(v[0], 0.0) + std::log1p(std::exp(-std::fabs(v[0])));
    };
    registerSimple("Softplus", d);
  }
  {
    ElementwiseDef d;
    d.emit = [](OpBuilder &b, Location loc, ValueRange a, int32_t) -> Value {
      Value one = cst(b, loc, a[0], 1.0);
      Value den = arith::AddFOp::create(b, loc, one,
                                        math::AbsFOp::create(b, loc, a[0]));
      return arith::DivFOp::create(b, loc, a[0], den);
    };
    d.eval = [](const std::vector<double> &v) {
      return v[0] / (1 + std::fabs(v[0]));
    };
    registerSimple("Softsign", d);
  }
  {
    ElementwiseDef d;
    d.emit = [](OpBuilder &b, Location loc, ValueRange a, int32_t) -> Value {
      // x * tanh(softplus(x))
      Value zero = cst(b, loc, a[0], 0.0);
      Value mx = arith::MaximumFOp::create(b, loc, a[0], zero);
      Value ab = math::AbsFOp::create(b, loc, a[0]);
      Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, ab));
      Value sp =
          arith::AddFOp::create(b, loc, mx, math::Log1pOp::create(b, loc, e));
      return arith::MulFOp::create(b, loc, a[0],
                                   math::TanhOp::create(b, loc, sp));
    };
    d.eval = [](const std::vector<double> &v) {
      return v[0] * std::tanh(std::log1p(std::exp(v[0])));
    };
    registerSimple("Mish", d);
  }
  registerWithAttrs("HardSigmoid", [](NodeLowering &n) {
    double alpha = n.attrFloat("alpha", 0.2f), beta = n.attrFloat("beta", 0.5f);
    ElementwiseDef d;
    d.emit = [alpha, beta](OpBuilder &b, Location loc, ValueRange a,
                           int32_t) -> Value {
      Value y = arith::AddFOp::create(
          b, loc, arith::MulFOp::create(b, loc, a[0], cst(b, loc, a[0], alpha)),
          cst(b, loc, a[0], beta));
      y = arith::MaximumFOp::create(b, loc, y, cst(b, loc, a[0], 0.0));
      return arith::MinimumFOp::create(b, loc, y, cst(b, loc, a[0], 1.0));
    };
    d.eval = [alpha, beta](const std::vector<double> &v) {
      return std::min(1.0, std::max(0.0, alpha * v[0] + beta));
    };
    return d;
  });
  {
    ElementwiseDef d;
    d.emit = [](OpBuilder &b, Location loc, ValueRange a, int32_t) -> Value {
      Value y = arith::AddFOp::create(
          b, loc,
          arith::MulFOp::create(b, loc, a[0], cst(b, loc, a[0], 1.0 / 6)),
          cst(b, loc, a[0], 0.5));
      y = arith::MaximumFOp::create(b, loc, y, cst(b, loc, a[0], 0.0));
      y = arith::MinimumFOp::create(b, loc, y, cst(b, loc, a[0], 1.0));
      return arith::MulFOp::create(b, loc, a[0], y);
    };
    d.eval = [](const std::vector<double> &v) {
      return v[0] * std::min(1.0, std::max(0.0, v[0] / 6 + 0.5));
    };
    registerSimple("HardSwish", d);
  }
  // Swish(x) = x * sigmoid(alpha * x); SwiGLU(a, b) = Swish(a) * b with
  // equal shapes (the broadcast check passes those through).
  auto swish = [](OpBuilder &b, Location loc, Value x, double alpha) {
    Value ax = alpha == 1.0 ? x
                            : (Value)arith::MulFOp::create(
                                  b, loc, x, cst(b, loc, x, alpha));
    return (Value)arith::MulFOp::create(b, loc, x, sigmoid(b, loc, ax));
  };
  registerWithAttrs("Swish", [swish](NodeLowering &n) {
    double alpha = n.attrFloat("alpha", 1.0f);
    ElementwiseDef d;
    d.emit = [alpha, swish](OpBuilder &b, Location loc, ValueRange a,
                            int32_t) { return swish(b, loc, a[0], alpha); };
    d.eval = [alpha](const std::vector<double> &v) {
      return v[0] * sigmoidD(alpha * v[0]);
    };
    return d;
  });
  registerWithAttrs("SwiGLU", [swish](NodeLowering &n) {
    double alpha = n.attrFloat("alpha", 1.0f);
    ElementwiseDef d;
    d.emit = [alpha, swish](OpBuilder &b, Location loc, ValueRange a,
                            int32_t) -> Value {
      return arith::MulFOp::create(b, loc, swish(b, loc, a[0], alpha), a[1]);
    };
    d.eval = [alpha](const std::vector<double> &v) {
      return v[0] * sigmoidD(alpha * v[0]) * v[1];
    };
    return d;
  });
  registerWithAttrs("LeakyRelu", [](NodeLowering &n) {
    double alpha = n.attrFloat("alpha", 0.01f);
    ElementwiseDef d;
    d.emit = [alpha](OpBuilder &b, Location loc, ValueRange a,
                     int32_t) -> Value {
      Value zero = cst(b, loc, a[0], 0.0);
      Value neg =
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, a[0], zero);
      Value s = arith::MulFOp::create(b, loc, a[0], cst(b, loc, a[0], alpha));
      return arith::SelectOp::create(b, loc, neg, s, a[0]);
    };
    d.eval = [alpha](const std::vector<double> &v) {
      return v[0] < 0 ? alpha * v[0] : v[0];
    };
    return d;
  });
  {
    ElementwiseDef d;
    d.emit = [](OpBuilder &b, Location loc, ValueRange a, int32_t) -> Value {
      Value zero = cst(b, loc, a[0], 0.0);
      Value neg =
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, a[0], zero);
      Value s = arith::MulFOp::create(b, loc, a[0], a[1]);
      return arith::SelectOp::create(b, loc, neg, s, a[0]);
    };
    d.eval = [](const std::vector<double> &v) {
      return v[0] < 0 ? v[1] * v[0] : v[0];
    };
    registerSimple("PRelu", d);
  }
  auto eluLike = [](double alpha, double gamma, bool celu) {
    ElementwiseDef d;
    d.emit = [alpha, gamma, celu](OpBuilder &b, Location loc, ValueRange a,
                                  int32_t) -> Value {
      Value x = a[0], zero = cst(b, loc, x, 0.0), one = cst(b, loc, x, 1.0);
      Value xs =
          celu ? (Value)arith::DivFOp::create(b, loc, x, cst(b, loc, x, alpha))
               : x;
      Value em1 =
          arith::SubFOp::create(b, loc, math::ExpOp::create(b, loc, xs), one);
      Value neg = arith::MulFOp::create(b, loc, cst(b, loc, x, alpha), em1);
      Value isNeg =
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x, zero);
      Value r = arith::SelectOp::create(b, loc, isNeg, neg, x);
      if (gamma != 1.0)
        r = arith::MulFOp::create(b, loc, r, cst(b, loc, x, gamma));
      return r;
    };
    d.eval = [alpha, gamma, celu](const std::vector<double> &v) {
      double x = v[0];
      double r = x < 0 ? alpha * (std::exp(celu ? x / alpha : x) - 1) : x;
      return r * gamma;
    };
    return d;
  };
  registerWithAttrs("Elu", [eluLike](NodeLowering &n) {
    return eluLike(n.attrFloat("alpha", 1.0f), 1.0, false);
  });
  registerWithAttrs("Celu", [eluLike](NodeLowering &n) {
    return eluLike(n.attrFloat("alpha", 1.0f), 1.0, true);
  });
  registerWithAttrs("Selu", [eluLike](NodeLowering &n) {
    return eluLike(n.attrFloat("alpha", 1.67326319217681884765625f),
                   n.attrFloat("gamma", 1.05070102214813232421875f), false);
  });
  registerWithAttrs("ThresholdedRelu", [](NodeLowering &n) {
    double alpha = n.attrFloat("alpha", 1.0f);
    ElementwiseDef d;
    d.emit = [alpha](OpBuilder &b, Location loc, ValueRange a,
                     int32_t) -> Value {
      Value gt = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, a[0],
                                       cst(b, loc, a[0], alpha));
      return arith::SelectOp::create(b, loc, gt, a[0], cst(b, loc, a[0], 0.0));
    };
    d.eval = [alpha](const std::vector<double> &v) {
      return v[0] > alpha ? v[0] : 0.0;
    };
    return d;
  });
  registerWithAttrs("Gelu", [](NodeLowering &n) {
    bool tanhApprox = n.attrString("approximate", "none") == "tanh";
    ElementwiseDef d;
    d.emit = [tanhApprox](OpBuilder &b, Location loc, ValueRange a,
                          int32_t) -> Value {
      Value x = a[0], half = cst(b, loc, x, 0.5), one = cst(b, loc, x, 1.0);
      Value inner;
      if (tanhApprox) {
        Value x3 = arith::MulFOp::create(b, loc, x,
                                         arith::MulFOp::create(b, loc, x, x));
        Value t = arith::AddFOp::create(
            b, loc, x,
            arith::MulFOp::create(b, loc, x3, cst(b, loc, x, 0.044715)));
        t = arith::MulFOp::create(b, loc, t,
                                  cst(b, loc, x, std::sqrt(2.0 / M_PI)));
        inner = math::TanhOp::create(b, loc, t);
      } else {
        inner = math::ErfOp::create(
            b, loc,
            arith::MulFOp::create(b, loc, x, cst(b, loc, x, M_SQRT1_2)));
      }
      return arith::MulFOp::create(b, loc,
                                   arith::MulFOp::create(b, loc, x, half),
                                   arith::AddFOp::create(b, loc, one, inner));
    };
    d.eval = [tanhApprox](const std::vector<double> &v) {
      double x = v[0];
      if (tanhApprox)
        return 0.5 * x *
               (1 +
                std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
      return 0.5 * x * (1 + std::erf(x * M_SQRT1_2));
    };
    return d;
  });
  opLowerings()["Clip"] = [](NodeLowering &n) -> LogicalResult {
    // Opset >= 11: min and max are optional inputs; missing means unbounded.
    std::optional<double> lo, hi;
    bool dynamicBounds = false;
    for (size_t i : {1, 2}) {
      if (!n.hasInput(i))
        continue;
      if (!n.isLiteral(i)) {
        dynamicBounds = true;
        continue;
      }
      (i == 1 ? lo : hi) = n.literal(i).getAsDouble(0);
    }
    if (dynamicBounds) {
      // Bounds computed at run time: scalar tensors broadcast in.
      bool hasMin = n.hasInput(1), hasMax = n.hasInput(2);
      ElementwiseDef d;
      d.emit = [hasMin, hasMax](OpBuilder &b, Location loc, ValueRange a,
                                int32_t t) -> Value {
        Value x = a[0];
        size_t k = 1;
        if (hasMin)
          x = selectMax(b, loc, x, a[k++], t);
        if (hasMax)
          x = selectMin(b, loc, x, a[k], t);
        return x;
      };
      d.eval = [hasMin, hasMax](const std::vector<double> &v) {
        double x = v[0];
        size_t k = 1;
        if (hasMin)
          x = std::max(x, v[k++]);
        if (hasMax)
          x = std::min(x, v[k]);
        return x;
      };
      return lowerElementwise(n, d);
    }
    if (n.opset() < 11) {
      if (n.hasAttr("min"))
        lo = n.attrFloat("min", 0);
      if (n.hasAttr("max"))
        hi = n.attrFloat("max", 0);
    }
    ElementwiseDef d;
    d.emit = [lo, hi](OpBuilder &b, Location loc, ValueRange a,
                      int32_t t) -> Value {
      Value x = a[0];
      if (lo)
        x = selectMax(b, loc, x, cst(b, loc, x, *lo), t);
      if (hi)
        x = selectMin(b, loc, x, cst(b, loc, x, *hi), t);
      return x;
    };
    d.eval = [lo, hi](const std::vector<double> &v) {
      double x = v[0];
      if (lo)
        x = std::max(x, *lo);
      if (hi)
        x = std::min(x, *hi);
      return x;
    };
    return lowerElementwise(n, d, 0, 1);
  };
  registerWithAttrs("Shrink", [](NodeLowering &n) {
    double lambd = n.attrFloat("lambd", 0.5f), bias = n.attrFloat("bias", 0.0f);
    ElementwiseDef d;
    d.emit = [lambd, bias](OpBuilder &b, Location loc, ValueRange a,
                           int32_t t) -> Value {
      Value x = a[0];
      if (!isF(t)) {
        Type f = b.getF64Type();
        Value xf = intToFloat(b, loc, f, x, t);
        Value lo = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, xf,
                                         cst(b, loc, xf, -lambd));
        Value hi = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, xf,
                                         cst(b, loc, xf, lambd));
        Value r = arith::SelectOp::create(
            b, loc, lo,
            arith::AddFOp::create(b, loc, xf, cst(b, loc, xf, bias)),
            arith::SelectOp::create(
                b, loc, hi,
                arith::SubFOp::create(b, loc, xf, cst(b, loc, xf, bias)),
                cst(b, loc, xf, 0.0)));
        return floatToInt(b, loc, x.getType(), r, t);
      }
      Value lo = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x,
                                       cst(b, loc, x, -lambd));
      Value hi = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x,
                                       cst(b, loc, x, lambd));
      return arith::SelectOp::create(
          b, loc, lo, arith::AddFOp::create(b, loc, x, cst(b, loc, x, bias)),
          arith::SelectOp::create(
              b, loc, hi,
              arith::SubFOp::create(b, loc, x, cst(b, loc, x, bias)),
              cst(b, loc, x, 0.0)));
    };
    d.eval = [lambd, bias](const std::vector<double> &v) {
      return v[0] < -lambd ? v[0] + bias : v[0] > lambd ? v[0] - bias : 0.0;
    };
    return d;
  });
  auto bitShift = [](NodeLowering &n) {
    bool left = n.attrString("direction", "LEFT") == "LEFT";
    int32_t dtype = n.dtype(0);
    bool isSigned = !isU(dtype);
    unsigned width = dtypeSize(dtype) * 8;
    ElementwiseDef d;
    // Shift counts outside [0, width) (negative ones of signed types
    // included: they compare as huge unsigned) give 0, or -1 for a right
    // shift of a negative signed value, as opset 28 defines it; LLVM would
    // leave them undefined. Signed left shifts wrap like unsigned ones.
    d.emit = [left, isSigned, width](OpBuilder &b, Location loc, ValueRange a,
                                     int32_t) -> Value {
      Value tooFar =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, a[1],
                                cst(b, loc, a[1], width));
      if (left || !isSigned) {
        Value shifted = left
                            ? (Value)arith::ShLIOp::create(b, loc, a[0], a[1])
                            : (Value)arith::ShRUIOp::create(b, loc, a[0], a[1]);
        return arith::SelectOp::create(b, loc, tooFar, cst(b, loc, a[0], 0),
                                       shifted);
      }
      Value count = arith::SelectOp::create(b, loc, tooFar,
                                            cst(b, loc, a[1], width - 1), a[1]);
      return arith::ShRSIOp::create(b, loc, a[0], count);
    };
    d.evalInt = [left, isSigned, width](const std::vector<int64_t> &v) {
      int64_t x = v[0];
      uint64_t s = static_cast<uint64_t>(v[1]);
      if (width < 64)
        s &= (uint64_t(1) << width) - 1; // the count's own bit pattern
      if (s >= width)
        return (!left && isSigned && x < 0) ? int64_t(-1) : int64_t(0);
      if (left)
        return static_cast<int64_t>(static_cast<uint64_t>(x) << s);
      if (isSigned)
        return x >> s;
      uint64_t ux = static_cast<uint64_t>(x);
      if (width < 64)
        ux &= (uint64_t(1) << width) - 1;
      return static_cast<int64_t>(ux >> s);
    };
    d.eval = [](const std::vector<double> &) -> double {
      llvm_unreachable("BitShift folds through evalInt");
    };
    return d;
  };
  opLowerings()["BitShift"] = [bitShift](NodeLowering &n) -> LogicalResult {
    if (isF(n.dtype(0)) || n.dtype(0) == kBool)
      return n.fail("BitShift needs integer inputs");
    return lowerElementwise(n, bitShift(n));
  };
  // Bitwise ops on integers (bool too: an i1 is its own bit pattern).
  auto bitwise =
      [](std::function<Value(OpBuilder &, Location, Value, Value)> emit,
         int64_t (*f)(int64_t, int64_t)) {
        ElementwiseDef d;
        d.emit = [emit](OpBuilder &b, Location loc, ValueRange a, int32_t) {
          return emit(b, loc, a[0], a[1]);
        };
        d.evalInt = [f](const std::vector<int64_t> &v) {
          return f(v[0], v[1]);
        };
        d.eval = [](const std::vector<double> &) -> double {
          llvm_unreachable("bitwise ops fold through evalInt");
        };
        return LowerFn([d](NodeLowering &n) -> LogicalResult {
          if (isF(n.dtype(0)))
            return n.fail("needs integer inputs");
          return lowerElementwise(n, d);
        });
      };
  opLowerings()["BitwiseAnd"] =
      bitwise([](OpBuilder &b, Location l, Value x,
                 Value y) { return (Value)arith::AndIOp::create(b, l, x, y); },
              [](int64_t a, int64_t b) { return a & b; });
  opLowerings()["BitwiseOr"] =
      bitwise([](OpBuilder &b, Location l, Value x,
                 Value y) { return (Value)arith::OrIOp::create(b, l, x, y); },
              [](int64_t a, int64_t b) { return a | b; });
  opLowerings()["BitwiseXor"] =
      bitwise([](OpBuilder &b, Location l, Value x,
                 Value y) { return (Value)arith::XOrIOp::create(b, l, x, y); },
              [](int64_t a, int64_t b) { return a ^ b; });
  opLowerings()["BitwiseNot"] = [](NodeLowering &n) -> LogicalResult {
    if (isF(n.dtype(0)))
      return n.fail("needs integer inputs");
    ElementwiseDef d;
    d.emit = [](OpBuilder &b, Location loc, ValueRange a, int32_t) -> Value {
      return arith::XOrIOp::create(b, loc, a[0], cst(b, loc, a[0], -1));
    };
    d.evalInt = [](const std::vector<int64_t> &v) { return ~v[0]; };
    d.eval = [](const std::vector<double> &) -> double {
      llvm_unreachable("BitwiseNot folds through evalInt");
    };
    return lowerElementwise(n, d);
  };
  opLowerings()["Where"] = [](NodeLowering &n) -> LogicalResult {
    ElementwiseDef d;
    d.emit = [](OpBuilder &b, Location loc, ValueRange a, int32_t) -> Value {
      return arith::SelectOp::create(b, loc, a[0], a[1], a[2]);
    };
    d.eval = [](const std::vector<double> &v) {
      return v[0] != 0 ? v[1] : v[2];
    };
    return lowerElementwise(n, d);
  };
  auto castTo = [](NodeLowering &n, int32_t to) -> LogicalResult {
    if (!isSupportedDType(to))
      return n.fail("cast to unsupported dtype " + Twine(to));
    int32_t from = n.dtype(0);
    // saturate (opset 19) and round_mode (25) only change casts to the
    // small float types.
    CastOptions opts;
    opts.saturate = n.attrInt("saturate", 1) != 0;
    std::string mode = n.attrString("round_mode", "up");
    if (mode == "up")
      opts.round = RoundMode::Up;
    else if (mode == "down")
      opts.round = RoundMode::Down;
    else if (mode == "nearest")
      opts.round = RoundMode::Nearest;
    else
      return n.fail("unknown round_mode '" + mode + "'");
    if (n.isLiteral(0)) {
      n.setOutput(0, n.literal(0).castTo(to, opts.saturate, opts.round));
      return success();
    }
    if (from == to) {
      n.setOutput(0, n.value(0));
      return success();
    }
    Type toType = n.elementType(to);
    Value r = emitElementwise(
        n.builder(), n.loc(), n.value(0), toType, n.shape(0),
        [&](OpBuilder &b, Location loc, ValueRange a) {
          return emitScalarCast(b, loc, a[0], from, to, toType, opts);
        });
    n.setOutput(0, r, to);
    return success();
  };
  opLowerings()["Cast"] = [castTo](NodeLowering &n) {
    return castTo(n, static_cast<int32_t>(n.attrInt("to", kFloat)));
  };
  opLowerings()["CastLike"] = [castTo](NodeLowering &n) {
    return castTo(n, n.dtype(1));
  };
  // BitCast (opset 26): the same bits as another type of the same width.
  opLowerings()["BitCast"] = [](NodeLowering &n) -> LogicalResult {
    int32_t from = n.dtype(0), to = static_cast<int32_t>(n.attrInt("to", 0));
    if (!isSupportedDType(to))
      return n.fail("bitcast to unsupported dtype " + Twine(to));
    if (dtypeBits(from) != dtypeBits(to))
      return n.fail("bitcast between types of different widths (" +
                    dtypeName(from) + ", " + dtypeName(to) + ")");
    Type toType = n.elementType(to);
    Value r = emitElementwise(
        n.builder(), n.loc(), n.value(0), toType, n.shape(0),
        [&](OpBuilder &b, Location loc, ValueRange a) -> Value {
          Value v = a[0];
          if (v.getType() == toType) {
            // Sub-byte integers are extended in IR: re-extend the low bits.
            if (dtypeBits(to) < 8)
              return emitWrapSubByteInt(b, loc, v, to);
            return v;
          }
          if (from == kBool) // bool is i1 in IR, one byte in memory
            return arith::ExtUIOp::create(b, loc, toType, v);
          if (to == kBool)
            return arith::CmpIOp::create(
                b, loc, arith::CmpIPredicate::ne, v,
                scalarConstant(b, loc, v.getType(), 0));
          return arith::BitcastOp::create(b, loc, toType, v);
        });
    n.setOutput(0, r, to);
    return success();
  };
}

} // namespace mcc
