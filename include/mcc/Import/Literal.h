//===- Literal.h - compile-time tensors for folding ONNX graphs -----------===//
//
// A Literal is a tensor whose value is known while compiling: an
// initializer, a Constant, or the folded result of a node whose inputs are
// all literals. Elements are kept in ONNX's little-endian layout and read or
// written as double (floats) or int64 (integers, bool) on demand.
//
//===----------------------------------------------------------------------===//
#ifndef MCC_IMPORT_LITERAL_H
#define MCC_IMPORT_LITERAL_H

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mcc {

/// onnx.TensorProto.DataType values the compiler handles.
enum DType : int32_t {
  kFloat = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kBFloat16 = 16,
  // Small element types (docs/design/0009): one element per byte in IR,
  // literals and at the ABI.
  kFloat8E4M3FN = 17,
  kFloat8E4M3FNUZ = 18,
  kFloat8E5M2 = 19,
  kFloat8E5M2FNUZ = 20,
  kUInt4 = 21,
  kInt4 = 22,
  kFloat4E2M1 = 23,
  kFloat8E8M0 = 24,
  kUInt2 = 25,
  kInt2 = 26,
};

bool isSupportedDType(int32_t dtype);
bool isFloatDType(int32_t dtype);
/// uint8/16/32/64: integers whose IR type (signless iN) is shared with the
/// signed dtype of that width, so lowerings must pick unsigned ops.
bool isUnsignedDType(int32_t dtype);
size_t dtypeSize(int32_t dtype);

/// float8 (all four), float4e2m1 and float8e8m0: IR type i8 holding the bit
/// pattern (float4 in the low 4 bits), converted with integer ops.
bool isSmallFloatDType(int32_t dtype);
/// int4/uint4/int2/uint2: IR type i8 holding the value, sign- or
/// zero-extended, so they compute like int8/uint8.
bool isSubByteIntDType(int32_t dtype);
/// One of the ten element types above (17-26).
bool isSmallDType(int32_t dtype);
/// Bits of a sub-byte type (4 or 2), else 8 * dtypeSize.
int dtypeBits(int32_t dtype);
/// Value range of a sub-byte integer type.
void subByteIntRange(int32_t dtype, int64_t &lo, int64_t &hi);

/// A float8/float4 format: exponent and mantissa bits, bias, what its
/// all-ones patterns mean (IEEE: Inf and NaN, e5m2; FN: only S.1111.111 is
/// NaN; FNUZ: 0x80 is NaN, no -0; float4: none), and its largest finite
/// magnitude pattern.
struct MiniFloat {
  int expBits, manBits, bias;
  enum Kind { IEEE, FN, FNUZ, NoSpecials } kind;
  uint32_t maxBits;
};
/// The format of float8e4m3fn/e4m3fnuz/e5m2/e5m2fnuz or float4e2m1.
MiniFloat miniFloat(int32_t dtype);

/// How Cast rounds to float8e8m0 (opset 25's round_mode attribute).
enum class RoundMode { Up, Down, Nearest };

/// ONNX's float conversions of the small float types (onnx.numpy_helper
/// and ml_dtypes): round to nearest even; `saturate` clamps finite and
/// infinite overflow to the largest finite value, else overflow is Inf
/// (float8e5m2) or NaN. float4e2m1 has neither and always saturates;
/// float8e8m0 rounds by `round` from the float32 exponent.
float smallFloatToFloat(uint8_t bits, int32_t dtype);
uint8_t floatToSmallFloat(double v, int32_t dtype, bool saturate = true,
                          RoundMode round = RoundMode::Up);
/// ml_dtypes' float to int4/uint4/int2/uint2: truncation toward zero, 0
/// when out of range or NaN.
int64_t floatToSubByteInt(double v, int32_t dtype);
/// An integer wrapped into a sub-byte integer type (its low bits).
int64_t wrapSubByteInt(int64_t v, int32_t dtype);
std::string dtypeName(int32_t dtype);

using Shape = std::vector<int64_t>;
int64_t numElements(const Shape &shape);
std::string formatShape(const Shape &shape);
std::vector<int64_t> stridesOf(const Shape &shape);

class Literal {
public:
  Literal() = default;
  Literal(int32_t dtype, Shape shape);
  Literal(int32_t dtype, Shape shape, std::vector<uint8_t> bytes);
  /// Borrows `data` (e.g. a slice of a mapped external-data file) without a
  /// copy; `owner` keeps it alive as long as any copy of the literal.
  Literal(int32_t dtype, Shape shape, const uint8_t *data,
          std::shared_ptr<const void> owner);

  int32_t dtype() const { return dtype_; }
  const Shape &shape() const { return shape_; }
  int64_t size() const { return numElements(shape_); }
  const uint8_t *data() const { return bytes_->data; }
  /// Writable bytes; a borrowed literal first becomes a private copy.
  uint8_t *mutableData();
  size_t byteSize() const { return bytes_->size; }
  /// Identity of the underlying bytes: shared by copies and reshapes, new
  /// for every computed literal. Lets a weight name the initializer it is.
  const void *storageId() const { return bytes_.get(); }

  double getF(int64_t i) const;
  int64_t getI(int64_t i) const;
  void setF(int64_t i, double v);
  void setI(int64_t i, int64_t v);
  /// Reads as the dtype's natural kind, converting to double (uint64
  /// values above 2^63 included).
  double getAsDouble(int64_t i) const;
  void setFromDouble(int64_t i, double v);

  std::vector<int64_t> toInts() const;
  /// Same bytes, new shape (element count must match).
  Literal reshaped(Shape shape) const;
  /// `saturate` and `round` apply to the small float types only.
  Literal castTo(int32_t dtype, bool saturate = true,
                 RoundMode round = RoundMode::Up) const;

  /// out[idx] = this[source(idx)] for every multi-index of `outShape`.
  Literal gather(const Shape &outShape,
                 const std::function<int64_t(const int64_t *)> &source) const;

  static Literal scalarInt(int64_t v, int32_t dtype = kInt64);
  static Literal fromInts(const std::vector<int64_t> &v);

private:
  int32_t dtype_ = kFloat;
  Shape shape_;
  /// Owned bytes, or borrowed ones kept alive by `owner`.
  struct Bytes {
    std::vector<uint8_t> owned;
    std::shared_ptr<const void> owner;
    const uint8_t *data = nullptr;
    size_t size = 0;
  };
  std::shared_ptr<Bytes> bytes_;
  static std::shared_ptr<Bytes> ownedBytes(std::vector<uint8_t> v);
};

/// Broadcast shape of NumPy-style multidirectional broadcasting; false if
/// the shapes are incompatible.
bool broadcastShapes(const std::vector<Shape> &shapes, Shape &result);

} // namespace mcc

#endif // MCC_IMPORT_LITERAL_H
