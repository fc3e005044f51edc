//===- Literal.cpp - compile-time tensors ---------------------------------===//

#include "mcc/Import/Literal.h"

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
    return false;
  }
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
    return static_cast<double>(getI(i));
  }
}

double Literal::getAsDouble(int64_t i) const {
  if (isFloatDType(dtype_))
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
    return load<int8_t>(p, i);
  case kUInt8:
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
  default:
    return setF(i, static_cast<double>(v));
  }
}

void Literal::setFromDouble(int64_t i, double v) {
  if (isFloatDType(dtype_))
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

Literal Literal::castTo(int32_t dtype) const {
  if (dtype == dtype_)
    return *this;
  Literal r(dtype, shape_);
  bool srcFloat = isFloatDType(dtype_), dstFloat = isFloatDType(dtype);
  for (int64_t i = 0, n = size(); i < n; ++i) {
    if (dstFloat)
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
      else
        return false;
    }
  }
  return true;
}

} // namespace mcc
