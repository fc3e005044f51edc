//===- ShapeBinding.h - dynamic dims of a model's signature ---------------===//
//
// The runtime half of docs/design/0010: a model's dynamic dims are affine
// expressions over symbols (`batch`, `sequence`). Expressions are parsed
// once when the model is loaded; each run binds the symbols from the input
// shapes (checking that inputs agree and that bounds hold) and evaluates
// the output shapes. Internal to the runtime (no MLIR, no LLVM); the unit
// tests use it directly.
//
//===----------------------------------------------------------------------===//
#ifndef MCC_RUNTIME_SHAPEBINDING_H
#define MCC_RUNTIME_SHAPEBINDING_H

#include "mcc/ModelABI.h"
#include "mcc/mcc.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mcc::rt {

/// A dim as an affine expression over symbols, in MLIR's syntax: integers,
/// sK (symbol K), + - *, floordiv ceildiv mod (floor semantics, as MLIR
/// defines them for negative operands), unary -, parentheses.
class DimExpr {
public:
  /// Parses `text`, whose symbols must be below `numSymbols`. On failure
  /// returns false and says what and where in `error`.
  static bool parse(std::string_view text, size_t numSymbols, DimExpr &out,
                    std::string &error);

  /// The value for symbol values `symbols`; false (with `error`) on a
  /// division by zero or an int64 overflow.
  bool evaluate(const int64_t *symbols, int64_t &result,
                std::string &error) const;

  /// K when the expression is exactly the symbol sK, else -1.
  int64_t singleSymbol() const;

  /// The source text with each sK replaced by names[K].
  std::string render(const std::vector<std::string> &names) const;

  const std::string &text() const { return source; }

private:
  enum class Op : uint8_t {
    Const,
    Symbol,
    Neg,
    Add,
    Sub,
    Mul,
    FloorDiv,
    CeilDiv,
    Mod
  };
  /// Nodes in post-order: operands come before their user, the root last.
  struct Node {
    Op op;
    int64_t value; // the constant or the symbol index
    int32_t lhs, rhs;
  };
  friend class DimExprParser;
  std::vector<Node> nodes;
  std::string source;
};

/// An input or output of the signature.
struct TensorShape {
  std::string name;
  std::vector<int64_t> shape;        // -1 where dynamic
  std::vector<DimExpr> exprs;        // per dim; meaningful where dynamic
  std::vector<std::string> dimNames; // "" where static, else rendered
};

struct SymbolBounds {
  std::string name;
  int64_t lo = 1;
  int64_t hi = INT64_MAX;
};

/// The shapes of a model's signature, read and checked once at load.
class ShapeSignature {
public:
  /// Reads the tensors and symbols of a v2 descriptor. Fails (saying which
  /// tensor and dim) on a malformed expression, a symbol out of range, an
  /// input dim that is not one symbol, or a symbol no input carries.
  static bool fromDescriptor(const MccModelDescriptor &d, ShapeSignature &out,
                             std::string &error);

  std::vector<TensorShape> inputs, outputs;
  std::vector<SymbolBounds> symbols;
  std::vector<std::string> symbolNames;
  bool dynamic = false;

  /// "[batch,8]": the shape with dynamic dims by name.
  static std::string shapeString(const TensorShape &t);
};

/// Binds the symbols of one run from the input shapes, then evaluates the
/// output shapes.
class ShapeBinder {
public:
  explicit ShapeBinder(const ShapeSignature &sig);

  /// Checks input `i`'s rank and dims and binds its symbols: a symbol
  /// already bound by an earlier input must agree, and bounds must hold.
  mcc_status bindInput(size_t i, int32_t rank, const int64_t *shape,
                       std::string &error);

  /// Output `i`'s shape (rank values) once every input is bound.
  mcc_status outputShape(size_t i, int64_t *shape, std::string &error) const;

  /// "batch=2, sequence=8": the bound symbols, for messages.
  std::string boundSymbols() const;

  const std::vector<int64_t> &symbolValues() const { return values; }

private:
  const ShapeSignature &sig;
  std::vector<int64_t> values;
  /// The input and axis that bound each symbol (for messages).
  std::vector<std::pair<size_t, int64_t>> boundBy;
};

/// "[2,3,8]".
std::string shapeString(int64_t rank, const int64_t *shape);

} // namespace mcc::rt

#endif // MCC_RUNTIME_SHAPEBINDING_H
