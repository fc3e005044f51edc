//===- SmallTypes.cpp - float8/float4/e8m0 and 4-/2-bit integers in IR ----===//
//
// The ten small element types are i8 in IR (docs/design/0009): float types
// hold their bit pattern, sub-byte integers their extended value. These
// builders convert them with integer ops: LLVM has no float8 or float4,
// MLIR's truncf has no saturate flag, and ONNX's rules (ml_dtypes' round
// to nearest even, overflow to Inf or NaN, e8m0's rounding modes) are a
// few shifts and selects. Literal.cpp has the same rules for folding.
//
//===----------------------------------------------------------------------===//

#include "mcc/Import/NodeLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>

using namespace mlir;

namespace mcc {
namespace {

/// Integer and float scalar builders over one float type `ft` (f32 unless
/// given) and the integer type `it` of its width.
struct Ops {
  OpBuilder &b;
  Location loc;
  Type ft = b.getF32Type();
  Type it = b.getIntegerType(ft.getIntOrFloatBitWidth());

  Value c(int64_t v) {
    return arith::ConstantOp::create(b, loc, b.getIntegerAttr(it, v));
  }
  Value f(double v) {
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(ft, v));
  }
  Value shl(Value x, int64_t n) {
    return arith::ShLIOp::create(b, loc, x, c(n));
  }
  Value shr(Value x, int64_t n) {
    return arith::ShRUIOp::create(b, loc, x, c(n));
  }
  Value andi(Value x, int64_t m) {
    return arith::AndIOp::create(b, loc, x, c(m));
  }
  Value ori(Value x, Value y) { return arith::OrIOp::create(b, loc, x, y); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  }
  Value eq(Value x, int64_t v) {
    return cmp(arith::CmpIPredicate::eq, x, c(v));
  }
  Value sel(Value cond, Value x, Value y) {
    return arith::SelectOp::create(b, loc, cond, x, y);
  }
  Value toFloat(Value bits) {
    return arith::BitcastOp::create(b, loc, ft, bits);
  }
  Value toBits(Value x) { return arith::BitcastOp::create(b, loc, it, x); }
  Value byte(Value x) {
    return arith::TruncIOp::create(b, loc, b.getI8Type(), x);
  }
};

} // namespace

Value emitSmallFloatToF32(OpBuilder &b, Location loc, Value v, int32_t dtype) {
  Ops o{b, loc};
  Value x = arith::ExtUIOp::create(b, loc, o.it, v);
  if (dtype == kFloat8E8M0) {
    // 2^(x - 127); 0 is 2^-127, a float32 subnormal; 0xff is NaN.
    Value r = o.toFloat(o.sel(o.eq(x, 0), o.c(0x00400000), o.shl(x, 23)));
    return o.sel(o.eq(x, 0xff), o.f(NAN), r);
  }
  MiniFloat mf = miniFloat(dtype);
  int magBits = mf.expBits + mf.manBits;
  Value mag = o.andi(x, (1 << magBits) - 1);
  Value exp = o.shr(mag, mf.manBits);
  Value man = o.andi(mag, (1 << mf.manBits) - 1);
  Value normal = o.toFloat(
      o.add(o.shl(mag, 23 - mf.manBits), o.c(int64_t(127 - mf.bias) << 23)));
  Value sub =
      arith::MulFOp::create(b, loc, arith::UIToFPOp::create(b, loc, o.ft, man),
                            o.f(std::ldexp(1.0, 1 - mf.bias - mf.manBits)));
  Value r = o.sel(o.eq(exp, 0), sub, normal);
  int64_t expOnes = int64_t((1 << mf.expBits) - 1) << mf.manBits;
  switch (mf.kind) {
  case MiniFloat::IEEE:
    r = o.sel(o.eq(mag, expOnes), o.f(INFINITY), r);
    r = o.sel(o.cmp(arith::CmpIPredicate::ugt, mag, o.c(expOnes)), o.f(NAN), r);
    break;
  case MiniFloat::FN:
    r = o.sel(o.eq(mag, (1 << magBits) - 1), o.f(NAN), r);
    break;
  case MiniFloat::FNUZ:
    r = o.sel(o.eq(x, 0x80), o.f(NAN), r);
    break;
  case MiniFloat::NoSpecials:
    break;
  }
  Value sign = o.shl(o.andi(o.shr(x, magBits), 1), 31);
  return o.toFloat(o.ori(o.toBits(r), sign));
}

Value emitFloatToSmallFloat(OpBuilder &b, Location loc, Value v, int32_t dtype,
                            bool saturate, RoundMode round) {
  if (dtype == kFloat8E8M0) {
    Ops o{b, loc};
    // The reference converts to float32 first.
    if (!v.getType().isF32())
      v = v.getType().getIntOrFloatBitWidth() > 32
              ? Value(arith::TruncFOp::create(b, loc, o.ft, v))
              : Value(arith::ExtFOp::create(b, loc, o.ft, v));
    Value x = o.toBits(v);
    // onnx.numpy_helper.to_float8e8m0: the float32 exponent, rounded by the
    // bits below it; the sign is dropped; Inf and NaN become NaN.
    Value exp = o.andi(o.shr(x, 23), 0xff);
    Value up;
    auto nonzero = [&](int64_t m) {
      return o.cmp(arith::CmpIPredicate::ne, o.andi(x, m), o.c(0));
    };
    if (round == RoundMode::Nearest) {
      Value lsb = o.cmp(arith::CmpIPredicate::ne, exp, o.c(0));
      Value rest = arith::OrIOp::create(
          b, loc,
          arith::OrIOp::create(b, loc, nonzero(0x200000), nonzero(0x1fffff)),
          lsb);
      up = arith::AndIOp::create(b, loc, nonzero(0x400000), rest);
    } else if (round == RoundMode::Up) {
      up = nonzero(0x7fffff);
    }
    Value r = exp;
    if (up) {
      if (saturate)
        up = arith::AndIOp::create(
            b, loc, up, o.cmp(arith::CmpIPredicate::ne, exp, o.c(0xfe)));
      r = o.add(exp, arith::ExtUIOp::create(b, loc, o.it, up));
    }
    return o.byte(o.sel(o.eq(exp, 0xff), o.c(0xff), r));
  }
  // Rounded once from the source: f32, or f64 (as ml_dtypes does); f16
  // and bf16 widen to f32 exactly.
  if (v.getType().getIntOrFloatBitWidth() < 32)
    v = arith::ExtFOp::create(b, loc, b.getF32Type(), v);
  bool wide = v.getType().isF64();
  Ops o{b, loc, v.getType()};
  int width = wide ? 64 : 32, srcMan = wide ? 52 : 23,
      srcBias = wide ? 1023 : 127;
  Value x = o.toBits(v);
  MiniFloat mf = miniFloat(dtype);
  int magBits = mf.expBits + mf.manBits;
  Value sign = o.shr(x, width - 1);
  Value abs = o.andi(x, int64_t(~uint64_t(0) >> (65 - width)));
  // Below the target's smallest normal: a multiple of its smallest step,
  // exact in the source type once scaled, rounded half to even.
  Value scaled = arith::MulFOp::create(
      b, loc, o.toFloat(abs), o.f(std::ldexp(1.0, mf.bias - 1 + mf.manBits)));
  Value sub = arith::FPToUIOp::create(
      b, loc, o.it, math::RoundEvenOp::create(b, loc, scaled));
  // Normal: round the source mantissa half to even, then rebias.
  int shift = srcMan - mf.manBits;
  Value rounded = o.add(o.add(abs, o.c((int64_t(1) << (shift - 1)) - 1)),
                        o.andi(o.shr(abs, shift), 1));
  Value normal =
      arith::SubIOp::create(b, loc, o.shr(rounded, shift),
                            o.c(int64_t(srcBias - mf.bias) << mf.manBits));
  int64_t minNormal = int64_t(srcBias + 1 - mf.bias) << srcMan;
  Value mag =
      o.sel(o.cmp(arith::CmpIPredicate::ult, abs, o.c(minNormal)), sub, normal);
  // Overflow (Inf included): the largest finite value when saturating or
  // for float4, else Inf (e5m2) or NaN.
  int64_t overflow = mf.maxBits;
  if (!saturate && mf.kind == MiniFloat::IEEE)
    overflow = 0x7c;
  else if (!saturate && mf.kind == MiniFloat::FN)
    overflow = 0x7f;
  else if (!saturate && mf.kind == MiniFloat::FNUZ)
    overflow = 0x80; // NaN, whatever the sign
  mag = o.sel(o.cmp(arith::CmpIPredicate::ugt, mag, o.c(mf.maxBits)),
              o.c(overflow), mag);
  Value r = o.ori(o.shl(sign, magBits), mag);
  if (mf.kind == MiniFloat::FNUZ) // no negative zero
    r = o.sel(o.eq(mag, 0), o.c(0), r);
  Value signBit = o.shl(sign, magBits), nan;
  switch (mf.kind) {
  case MiniFloat::IEEE:
    nan = o.ori(o.c(0x7e), signBit);
    break;
  case MiniFloat::FN:
    nan = o.ori(o.c(0x7f), signBit);
    break;
  case MiniFloat::FNUZ:
    nan = o.c(0x80);
    break;
  case MiniFloat::NoSpecials: // a zero, of the opposite sign as ml_dtypes
    nan = arith::XOrIOp::create(b, loc, o.c(0x8), signBit);
    break;
  }
  Value isNan = o.cmp(arith::CmpIPredicate::ugt, abs,
                      o.c(int64_t(2 * srcBias + 1) << srcMan));
  return o.byte(o.sel(isNan, nan, r));
}

Value emitFloatToSubByteInt(OpBuilder &b, Location loc, Value v,
                            int32_t dtype) {
  Type ft = v.getType();
  if (ft.getIntOrFloatBitWidth() < 32) {
    ft = b.getF32Type();
    v = arith::ExtFOp::create(b, loc, ft, v);
  }
  int64_t lo, hi;
  subByteIntRange(dtype, lo, hi);
  // ml_dtypes: truncation toward zero; out of range or NaN gives 0.
  Value inRange = arith::AndIOp::create(
      b, loc,
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, v,
                            scalarConstant(b, loc, ft, double(lo - 1))),
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, v,
                            scalarConstant(b, loc, ft, double(hi + 1))));
  Value i = arith::FPToSIOp::create(b, loc, b.getI8Type(), v);
  return arith::SelectOp::create(b, loc, inRange, i,
                                 scalarConstant(b, loc, b.getI8Type(), 0));
}

Value emitWrapSubByteInt(OpBuilder &b, Location loc, Value v, int32_t dtype) {
  Type i8 = b.getI8Type();
  int bits = dtypeBits(dtype);
  if (dtype == kInt4 || dtype == kInt2) {
    Value s = scalarConstant(b, loc, i8, 8 - bits);
    return arith::ShRSIOp::create(b, loc, arith::ShLIOp::create(b, loc, v, s),
                                  s);
  }
  return arith::AndIOp::create(b, loc, v,
                               scalarConstant(b, loc, i8, (1 << bits) - 1));
}

Value emitSmallCast(OpBuilder &b, Location loc, Value v, int32_t from,
                    int32_t to, Type toType, const CastOptions &opts) {
  Type f32 = b.getF32Type(), i8 = b.getI8Type();
  // Source: a float8/float4 decodes to f32; sub-byte integers are already
  // extended int8/uint8 values.
  if (isSmallFloatDType(from)) {
    v = emitSmallFloatToF32(b, loc, v, from);
    from = kFloat;
  } else if (from == kInt4 || from == kInt2) {
    from = kInt8;
  } else if (from == kUInt4 || from == kUInt2) {
    from = kUInt8;
  }
  if (!isSmallDType(to))
    return emitScalarCast(b, loc, v, from, to, toType);
  if (isSmallFloatDType(to)) {
    // Integers through f32: exact up to 2^24, and every float8 overflows
    // before that.
    if (!isa<FloatType>(v.getType()))
      v = emitScalarCast(b, loc, v, from, kFloat, f32);
    return emitFloatToSmallFloat(b, loc, v, to, opts.saturate, opts.round);
  }
  if (from == kBool)
    return arith::ExtUIOp::create(b, loc, i8, v);
  if (isa<FloatType>(v.getType()))
    return emitFloatToSubByteInt(b, loc, v, to);
  // Integers wrap to the low bits, as ml_dtypes does.
  v = emitScalarCast(b, loc, v, from, isUnsignedDType(from) ? kUInt8 : kInt8,
                     i8);
  return emitWrapSubByteInt(b, loc, v, to);
}

} // namespace mcc
