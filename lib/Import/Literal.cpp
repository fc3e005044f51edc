//===- Literal.cpp - compile-time tensors ---------------------------------===//

#include "mcc/Import/Literal.h"
#include "mcc/Import/SymbolicDims.h"

#include <cmath>
#include <cstring>

namespace mcc {

bool isSupportedDType(int32_t d) {
  switch (d) {
  case kFloat:
  case kUInt8:
  case kInt8:
  case kInt32:
  case kInt64:
  case kBool:
  case kFloat16:
  case kDouble:
  case kUInt16:
  case kInt16:
  case kUInt32:
  case kUInt64:
  case kBFloat16:
    return true;
  default:
    return isSmallDType(d);
  }
}

bool isSmallFloatDType(int32_t d) {
  return (d >= kFloat8E4M3FN && d <= kFloat8E5M2FNUZ) || d == kFloat4E2M1 ||
         d == kFloat8E8M0;
}

bool isSubByteIntDType(int32_t d) {
  return d == kUInt4 || d == kInt4 || d == kUInt2 || d == kInt2;
}

bool isSmallDType(int32_t d) { return d >= kFloat8E4M3FN && d <= kInt2; }

int dtypeBits(int32_t d) {
  if (d == kUInt4 || d == kInt4 || d == kFloat4E2M1)
    return 4;
  if (d == kUInt2 || d == kInt2)
    return 2;
  return 8 * static_cast<int>(dtypeSize(d));
}

void subByteIntRange(int32_t d, int64_t &lo, int64_t &hi) {
  int bits = dtypeBits(d);
  bool isSigned = d == kInt4 || d == kInt2;
  lo = isSigned ? -(int64_t(1) << (bits - 1)) : 0;
  hi = isSigned ? (int64_t(1) << (bits - 1)) - 1 : (int64_t(1) << bits) - 1;
}

MiniFloat miniFloat(int32_t d) {
  switch (d) {
  case kFloat8E4M3FN:
    return {4, 3, 7, MiniFloat::FN, 0x7e};
  case kFloat8E4M3FNUZ:
    return {4, 3, 8, MiniFloat::FNUZ, 0x7f};
  case kFloat8E5M2:
    return {5, 2, 15, MiniFloat::IEEE, 0x7b};
  case kFloat8E5M2FNUZ:
    return {5, 2, 16, MiniFloat::FNUZ, 0x7f};
  default: // kFloat4E2M1
    return {2, 1, 1, MiniFloat::NoSpecials, 0x7};
  }
}

float smallFloatToFloat(uint8_t bits, int32_t d) {
  if (d == kFloat8E8M0) {
    if (bits == 0xff)
      return NAN;
    return std::ldexp(1.0f, static_cast<int>(bits) - 127);
  }
  MiniFloat f = miniFloat(d);
  int magBits = f.expBits + f.manBits;
  uint32_t sign = (bits >> magBits) & 1, mag = bits & ((1u << magBits) - 1);
  uint32_t exp = mag >> f.manBits, man = mag & ((1u << f.manBits) - 1);
  if (f.kind == MiniFloat::FNUZ && bits == 0x80)
    return NAN;
  if (f.kind == MiniFloat::FN && mag == (1u << magBits) - 1)
    return sign ? -NAN : NAN;
  if (f.kind == MiniFloat::IEEE && exp == (1u << f.expBits) - 1)
    return man ? (sign ? -NAN : NAN) : (sign ? -INFINITY : INFINITY);
  float v = exp == 0
                ? std::ldexp(static_cast<float>(man), 1 - f.bias - f.manBits)
                : std::ldexp(static_cast<float>(man | (1u << f.manBits)),
                             static_cast<int>(exp) - f.bias - f.manBits);
  return sign ? -v : v;
}

uint8_t floatToSmallFloat(double v, int32_t d, bool saturate, RoundMode round) {
  if (d == kFloat8E8M0) {
    // onnx.numpy_helper.to_float8e8m0: the float32 exponent, rounded by
    // the bits below it; the sign is dropped.
    float f = static_cast<float>(v);
    uint32_t x;
    std::memcpy(&x, &f, 4);
    uint32_t exp = (x >> 23) & 0xff;
    if (exp == 0xff)
      return 0xff;
    bool up = false;
    if (round == RoundMode::Nearest)
      up = (x & 0x400000) && ((x & 0x200000) || (x & 0x1fffff) || exp > 0);
    else if (round == RoundMode::Up)
      up = (x & 0x7fffff) != 0;
    if (up && !(saturate && exp == 0xfe))
      ++exp;
    return static_cast<uint8_t>(exp);
  }
  // Rounded once from the double (float32 values convert exactly).
  MiniFloat f = miniFloat(d);
  int magBits = f.expBits + f.manBits;
  uint64_t x;
  std::memcpy(&x, &v, 8);
  uint64_t sign = x >> 63, abs = x & ~(uint64_t(1) << 63);
  if (abs > (uint64_t(0x7ff) << 52)) { // NaN
    switch (f.kind) {
    case MiniFloat::IEEE:
      return static_cast<uint8_t>((sign << 7) | 0x7e);
    case MiniFloat::FN:
      return static_cast<uint8_t>((sign << 7) | 0x7f);
    case MiniFloat::FNUZ:
      return 0x80;
    case MiniFloat::NoSpecials:
      return static_cast<uint8_t>((sign ^ 1) << 3); // as ml_dtypes
    }
  }
  uint64_t mag;
  uint64_t minNormal = static_cast<uint64_t>(1023 + 1 - f.bias) << 52;
  if (abs < minNormal) {
    // Subnormal (or zero) in the target: a multiple of its smallest step,
    // exact in double after scaling.
    double a;
    std::memcpy(&a, &abs, 8);
    mag = static_cast<uint64_t>(
        std::nearbyint(std::ldexp(a, f.bias - 1 + f.manBits)));
  } else {
    int shift = 52 - f.manBits;
    uint64_t r =
        abs + ((uint64_t(1) << (shift - 1)) - 1) + ((abs >> shift) & 1);
    mag = (r >> shift) - (static_cast<uint64_t>(1023 - f.bias) << f.manBits);
  }
  if (mag > f.maxBits) {
    if (saturate || f.kind == MiniFloat::NoSpecials)
      mag = f.maxBits;
    else if (f.kind == MiniFloat::IEEE)
      mag = 0x7c;
    else if (f.kind == MiniFloat::FN)
      mag = 0x7f;
    else
      return 0x80;
  }
  if (f.kind == MiniFloat::FNUZ && mag == 0)
    return 0; // no negative zero
  return static_cast<uint8_t>((sign << magBits) | mag);
}

int64_t floatToSubByteInt(double v, int32_t d) {
  int64_t lo, hi;
  subByteIntRange(d, lo, hi);
  if (!(v > static_cast<double>(lo - 1) && v < static_cast<double>(hi + 1)))
    return 0;
  return static_cast<int64_t>(v);
}

int64_t wrapSubByteInt(int64_t v, int32_t d) {
  int bits = dtypeBits(d);
  uint64_t low = static_cast<uint64_t>(v) & ((uint64_t(1) << bits) - 1);
  if ((d == kInt4 || d == kInt2) && (low >> (bits - 1)))
    return static_cast<int64_t>(low) - (int64_t(1) << bits);
  return static_cast<int64_t>(low);
}

bool isFloatDType(int32_t d) {
  return d == kFloat || d == kDouble || d == kFloat16 || d == kBFloat16;
}

bool isUnsignedDType(int32_t d) {
  return d == kUInt8 || d == kUInt16 || d == kUInt32 || d == kUInt64;
}

size_t dtypeSize(int32_t d) {
  switch (d) {
  case kFloat:
  case kInt32:
  case kUInt32:
    return 4;
  case kInt64:
  case kUInt64:
  case kDouble:
    return 8;
  case kFloat16:
  case kBFloat16:
  case kInt16:
  case kUInt16:
    return 2;
  default:
    return 1;
  }
}

std::string dtypeName(int32_t d) {
  switch (d) {
  case kFloat:
    return "float32";
  case kUInt8:
    return "uint8";
  case kInt8:
    return "int8";
  case kInt32:
    return "int32";
  case kInt64:
    return "int64";
  case kBool:
    return "bool";
  case kFloat16:
    return "float16";
  case kDouble:
    return "float64";
  case kUInt16:
    return "uint16";
  case kInt16:
    return "int16";
  case kUInt32:
    return "uint32";
  case kUInt64:
    return "uint64";
  case kBFloat16:
    return "bfloat16";
  case kFloat8E4M3FN:
    return "float8e4m3fn";
  case kFloat8E4M3FNUZ:
    return "float8e4m3fnuz";
  case kFloat8E5M2:
    return "float8e5m2";
  case kFloat8E5M2FNUZ:
    return "float8e5m2fnuz";
  case kUInt4:
    return "uint4";
  case kInt4:
    return "int4";
  case kFloat4E2M1:
    return "float4e2m1";
  case kFloat8E8M0:
    return "float8e8m0";
  case kUInt2:
    return "uint2";
  case kInt2:
    return "int2";
  default:
    return "dtype#" + std::to_string(d);
  }
}

int64_t numElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string formatShape(const Shape &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s + "]";
}

std::vector<int64_t> stridesOf(const Shape &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

static float halfToFloat(uint16_t h) {
  uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float v;
  if (exp == 0)
    v = std::ldexp(static_cast<float>(mant), -24);
  else if (exp == 31)
    v = mant ? NAN : INFINITY;
  else
    v = std::ldexp(static_cast<float>(mant | 0x400),
                   static_cast<int>(exp) - 25);
  return sign ? -v : v;
}

static uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffff;
  if (((x >> 23) & 0xff) == 0xff)
    return sign | 0x7c00 | (mant ? 0x200 : 0);
  if (exp >= 31)
    return sign | 0x7c00;
  if (exp <= 0) {
    if (exp < -10)
      return sign;
    mant |= 0x800000;
    uint32_t shift = 14 - exp;
    uint32_t half = mant >> shift;
    if ((mant >> (shift - 1)) & 1)
      ++half;
    return sign | half;
  }
  uint32_t half = sign | (exp << 10) | (mant >> 13);
  if (mant & 0x1000)
    ++half;
  return half;
}

static float bf16ToFloat(uint16_t h) {
  uint32_t x = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

/// Round to nearest even, as ONNX's reference (1.14 on) and LLVM's fptrunc;
/// NaN stays a quiet NaN of the same sign.
static uint16_t floatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if (std::isnan(f))
    return static_cast<uint16_t>((x >> 16) | 0x40);
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

std::shared_ptr<Literal::Bytes> Literal::ownedBytes(std::vector<uint8_t> v) {
  auto b = std::make_shared<Bytes>();
  b->owned = std::move(v);
  b->data = b->owned.data();
  b->size = b->owned.size();
  return b;
}

Literal::Literal(int32_t dtype, Shape shape)
    : dtype_(dtype), shape_(std::move(shape)),
      bytes_(ownedBytes(std::vector<uint8_t>(numElements(shape_) *
                                             dtypeSize(dtype)))) {}

Literal::Literal(int32_t dtype, Shape shape, std::vector<uint8_t> bytes)
    : dtype_(dtype), shape_(std::move(shape)),
      bytes_(ownedBytes(std::move(bytes))) {}

Literal::Literal(int32_t dtype, Shape shape, const uint8_t *data,
                 std::shared_ptr<const void> owner)
    : dtype_(dtype), shape_(std::move(shape)),
      bytes_(std::make_shared<Bytes>()) {
  bytes_->owner = std::move(owner);
  bytes_->data = data;
  bytes_->size = numElements(shape_) * dtypeSize(dtype_);
}

uint8_t *Literal::mutableData() {
  if (bytes_->owner || bytes_.use_count() > 1)
    bytes_ = ownedBytes(std::vector<uint8_t>(data(), data() + byteSize()));
  return bytes_->owned.data();
}

/// The int64 bits setI stores for `v` (truncated toward zero) as `dtype`:
/// uint64 values from 2^63 up would overflow a plain int64 conversion.
static int64_t doubleToIntBits(double v, int32_t dtype) {
  if (std::isnan(v))
    return 0;
  if (dtype == kUInt64 && v >= 0x1p63)
    return v >= 0x1p64 ? -1 : static_cast<int64_t>(static_cast<uint64_t>(v));
  if (v >= 0x1p63)
    return INT64_MAX;
  if (v < -0x1p63)
    return INT64_MIN;
  return static_cast<int64_t>(v);
}

template <typename T> static T load(const uint8_t *p, int64_t i) {
  T v;
  std::memcpy(&v, p + i * sizeof(T), sizeof(T));
  return v;
}
template <typename T> static void store(uint8_t *p, int64_t i, T v) {
  std::memcpy(p + i * sizeof(T), &v, sizeof(T));
}

double Literal::getF(int64_t i) const {
  const uint8_t *p = data();
  switch (dtype_) {
  case kFloat:
    return load<float>(p, i);
  case kDouble:
    return load<double>(p, i);
  case kFloat16:
    return halfToFloat(load<uint16_t>(p, i));
  case kBFloat16:
    return bf16ToFloat(load<uint16_t>(p, i));
  default:
    if (isSmallFloatDType(dtype_))
      return smallFloatToFloat(p[i], dtype_);
    return static_cast<double>(getI(i));
  }
}

double Literal::getAsDouble(int64_t i) const {
  if (isFloatDType(dtype_) || isSmallFloatDType(dtype_))
    return getF(i);
  if (dtype_ == kUInt64)
    return static_cast<double>(static_cast<uint64_t>(getI(i)));
  return static_cast<double>(getI(i));
}

int64_t Literal::getI(int64_t i) const {
  const uint8_t *p = data();
  switch (dtype_) {
  case kInt64:
    return load<int64_t>(p, i);
  case kInt32:
    return load<int32_t>(p, i);
  case kInt8:
  case kInt4:
  case kInt2:
    return load<int8_t>(p, i);
  case kUInt8:
  case kUInt4:
  case kUInt2:
    return load<uint8_t>(p, i);
  case kInt16:
    return load<int16_t>(p, i);
  case kUInt16:
    return load<uint16_t>(p, i);
  case kUInt32:
    return load<uint32_t>(p, i);
  case kUInt64:
    return static_cast<int64_t>(load<uint64_t>(p, i)); // the bit pattern
  case kBool:
    return load<uint8_t>(p, i) != 0;
  default:
    return static_cast<int64_t>(getF(i));
  }
}

void Literal::setF(int64_t i, double v) {
  uint8_t *p = mutableData();
  switch (dtype_) {
  case kFloat:
    return store<float>(p, i, static_cast<float>(v));
  case kDouble:
    return store<double>(p, i, v);
  case kFloat16:
    return store<uint16_t>(p, i, floatToHalf(static_cast<float>(v)));
  case kBFloat16:
    return store<uint16_t>(p, i, floatToBf16(static_cast<float>(v)));
  default:
    if (isSmallFloatDType(dtype_)) {
      p[i] = floatToSmallFloat(v, dtype_);
      return;
    }
    if (isSubByteIntDType(dtype_))
      return setI(i, floatToSubByteInt(v, dtype_));
    return setI(i, doubleToIntBits(v, dtype_));
  }
}

void Literal::setI(int64_t i, int64_t v) {
  uint8_t *p = mutableData();
  switch (dtype_) {
  case kInt64:
    return store<int64_t>(p, i, v);
  case kInt32:
    return store<int32_t>(p, i, static_cast<int32_t>(v));
  case kInt8:
    return store<int8_t>(p, i, static_cast<int8_t>(v));
  case kUInt8:
    return store<uint8_t>(p, i, static_cast<uint8_t>(v));
  case kInt16:
    return store<int16_t>(p, i, static_cast<int16_t>(v));
  case kUInt16:
    return store<uint16_t>(p, i, static_cast<uint16_t>(v));
  case kUInt32:
    return store<uint32_t>(p, i, static_cast<uint32_t>(v));
  case kUInt64:
    return store<uint64_t>(p, i, static_cast<uint64_t>(v));
  case kBool:
    return store<uint8_t>(p, i, v != 0);
  case kInt4:
  case kInt2:
  case kUInt4:
  case kUInt2:
    return store<int8_t>(p, i, static_cast<int8_t>(wrapSubByteInt(v, dtype_)));
  default:
    return setF(i, static_cast<double>(v));
  }
}

void Literal::setFromDouble(int64_t i, double v) {
  if (isFloatDType(dtype_) || isSmallFloatDType(dtype_) ||
      isSubByteIntDType(dtype_))
    setF(i, v);
  else if (dtype_ == kBool)
    setI(i, v != 0.0);
  else
    setI(i, doubleToIntBits(v, dtype_));
}

std::vector<int64_t> Literal::toInts() const {
  std::vector<int64_t> v(size());
  for (int64_t i = 0; i < size(); ++i)
    v[i] = getI(i);
  return v;
}

Literal Literal::reshaped(Shape shape) const {
  Literal r = *this;
  r.shape_ = std::move(shape);
  return r;
}

Literal Literal::castTo(int32_t dtype, bool saturate, RoundMode round) const {
  if (dtype == dtype_)
    return *this;
  Literal r(dtype, shape_);
  bool srcFloat = isFloatDType(dtype_) || isSmallFloatDType(dtype_),
       dstFloat = isFloatDType(dtype);
  for (int64_t i = 0, n = size(); i < n; ++i) {
    if (isSmallFloatDType(dtype))
      r.mutableData()[i] =
          floatToSmallFloat(getAsDouble(i), dtype, saturate, round);
    else if (isSubByteIntDType(dtype))
      r.setI(i, srcFloat ? floatToSubByteInt(getF(i), dtype) : getI(i));
    else if (dstFloat)
      r.setF(i, getAsDouble(i));
    else if (dtype == kBool)
      r.setI(i, srcFloat ? getF(i) != 0.0 : getI(i) != 0);
    else if (srcFloat)
      r.setI(i, doubleToIntBits(std::trunc(getF(i)), dtype));
    else
      r.setI(i, getI(i));
  }
  return r;
}

Literal
Literal::gather(const Shape &outShape,
                const std::function<int64_t(const int64_t *)> &source) const {
  Literal r(dtype_, outShape);
  size_t es = dtypeSize(dtype_);
  int64_t n = numElements(outShape);
  std::vector<int64_t> idx(outShape.size(), 0);
  const uint8_t *src = data();
  uint8_t *dst = r.mutableData();
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(dst + i * es, src + source(idx.data()) * es, es);
    for (int d = static_cast<int>(outShape.size()) - 1; d >= 0; --d) {
      if (++idx[d] < outShape[d])
        break;
      idx[d] = 0;
    }
  }
  return r;
}

Literal Literal::scalarInt(int64_t v, int32_t dtype) {
  Literal r(dtype, {});
  r.setI(0, v);
  return r;
}

Literal Literal::fromInts(const std::vector<int64_t> &v) {
  Literal r(kInt64, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i)
    r.setI(i, v[i]);
  return r;
}

bool broadcastShapes(const std::vector<Shape> &shapes, Shape &result) {
  size_t rank = 0;
  for (const Shape &s : shapes)
    rank = std::max(rank, s.size());
  result.assign(rank, 1);
  for (const Shape &s : shapes) {
    size_t off = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t &r = result[off + i];
      if (s[i] == r || s[i] == 1)
        continue;
      if (r == 1)
        r = s[i];
      else if (isSymbolicDim(r) != isSymbolicDim(s[i]))
        // A symbolic dim meeting a static one is taken to equal it
        // (docs/design/0010); two different symbols do not broadcast.
        r = isSymbolicDim(r) ? s[i] : r;
      else
        return false;
    }
  }
  return true;
}

} // namespace mcc
