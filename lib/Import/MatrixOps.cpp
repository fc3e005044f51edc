//===- MatrixOps.cpp - Det ------------------------------------------------===//
//
// Det is Gaussian elimination with partial pivoting, unrolled for the static
// matrix size inside one linalg.generic over the batch dims: row swaps are
// selects, so the body has no control flow.
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

/// The elimination on values of type T, given the ops: shared by the IR
/// body and the compile-time fold so both pivot identically.
template <typename T, typename Ops>
T eliminate(std::vector<T> a, int64_t m, Ops &ops) {
  T det = ops.c(1.0), zero = ops.c(0.0);
  for (int64_t k = 0; k < m; ++k) {
    // Bubble the largest |a[i][k]| (i >= k) into row k; each swap flips
    // the sign.
    for (int64_t i = k + 1; i < m; ++i) {
      auto swap = ops.gt(ops.abs(a[i * m + k]), ops.abs(a[k * m + k]));
      for (int64_t j = k; j < m; ++j) {
        T rk = a[k * m + j], ri = a[i * m + j];
        a[k * m + j] = ops.sel(swap, ri, rk);
        a[i * m + j] = ops.sel(swap, rk, ri);
      }
      det = ops.sel(swap, ops.neg(det), det);
    }
    T pivot = a[k * m + k];
    det = ops.mul(det, pivot);
    // A zero pivot means a zero column below: det is 0, and the factors
    // stay finite.
    auto singular = ops.eq(pivot, zero);
    for (int64_t i = k + 1; i < m; ++i) {
      T f = ops.sel(singular, zero, ops.div(a[i * m + k], pivot));
      for (int64_t j = k + 1; j < m; ++j)
        a[i * m + j] = ops.sub(a[i * m + j], ops.mul(f, a[k * m + j]));
    }
  }
  return det;
}

struct DoubleOps {
  double c(double v) { return v; }
  double abs(double v) { return std::fabs(v); }
  bool gt(double a, double b) { return a > b; }
  bool eq(double a, double b) { return a == b; }
  double sel(bool p, double a, double b) { return p ? a : b; }
  double neg(double v) { return -v; }
  double mul(double a, double b) { return a * b; }
  double div(double a, double b) { return a / b; }
  double sub(double a, double b) { return a - b; }
};

struct IROps {
  OpBuilder &b;
  Location l;
  Type t;
  Value c(double v) { return scalarConstant(b, l, t, v); }
  Value abs(Value v) { return math::AbsFOp::create(b, l, v); }
  Value gt(Value x, Value y) {
    return arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT, x, y);
  }
  Value eq(Value x, Value y) {
    return arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ, x, y);
  }
  Value sel(Value p, Value x, Value y) {
    return arith::SelectOp::create(b, l, p, x, y);
  }
  Value neg(Value v) { return arith::NegFOp::create(b, l, v); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, l, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, l, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, l, x, y); }
};

LogicalResult lowerDet(NodeLowering &n) {
  const Shape &in = n.shape(0);
  int64_t rank = in.size();
  if (rank < 2 || in[rank - 1] != in[rank - 2])
    return n.fail("needs [..., M, M] input, not " + formatShape(in));
  if (!isFloatDType(n.dtype(0)))
    return n.fail("needs a floating-point input");
  int64_t m = in[rank - 1];
  // The body grows as M^3.
  if (m > 16)
    return n.fail("matrices larger than 16x16 are not supported");
  Shape out(in.begin(), in.end() - 2);
  if (n.isLiteral(0)) {
    const Literal &x = n.literal(0);
    Literal r(n.dtype(0), out);
    DoubleOps ops;
    for (int64_t e = 0; e < numElements(out); ++e) {
      std::vector<double> a(m * m);
      for (int64_t i = 0; i < m * m; ++i)
        a[i] = x.getF(e * m * m + i);
      r.setF(e, eliminate(a, m, ops));
    }
    n.setOutput(0, std::move(r));
    return success();
  }
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  MLIRContext *ctx = b.getContext();
  Type et = n.elementType(n.dtype(0));
  // f16/bf16 eliminate in f32.
  Type ct = et.isF64() ? et : b.getF32Type();
  int32_t cdt = et.isF64() ? kDouble : kFloat;
  Value x = n.value(0);
  int64_t outRank = out.size();
  Value init = createEmpty(b, loc, out, et);
  SmallVector<AffineMap> maps = {
      AffineMap::getMultiDimIdentityMap(outRank, ctx)};
  SmallVector<utils::IteratorType> iters(outRank,
                                         utils::IteratorType::parallel);
  auto op = linalg::GenericOp::create(
      b, loc, init.getType(), ValueRange{}, ValueRange{init}, maps, iters,
      [&](OpBuilder &nb, Location l, ValueRange) {
        SmallVector<Value> batch;
        for (int64_t d = 0; d < outRank; ++d)
          batch.push_back(linalg::IndexOp::create(nb, l, d));
        std::vector<Value> a;
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < m; ++j) {
            SmallVector<Value> at = batch;
            at.push_back(arith::ConstantIndexOp::create(nb, l, i));
            at.push_back(arith::ConstantIndexOp::create(nb, l, j));
            Value v = tensor::ExtractOp::create(nb, l, x, at);
            if (et != ct)
              v = emitScalarCast(nb, l, v, n.dtype(0), cdt, ct);
            a.push_back(v);
          }
        IROps ops{nb, l, ct};
        Value det = eliminate(a, m, ops);
        if (et != ct)
          det = emitScalarCast(nb, l, det, cdt, n.dtype(0), et);
        linalg::YieldOp::create(nb, l, det);
      });
  n.setOutput(0, op.getResult(0), n.dtype(0));
  return success();
}

} // namespace

void registerMatrixLowerings() { opLowerings()["Det"] = lowerDet; }

} // namespace mcc
