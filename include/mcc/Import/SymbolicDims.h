//===- SymbolicDims.h - symbolic dims while importing (design 0010) -------===//
//
// A Shape holds sizes >= 0 and, for dims not known at compile time,
// negative *handles*. A handle names an affine expression over the graph's
// symbols (batch, sequence, ...) or over an opaque size read from the IR
// (a data-dependent dim); handles are uniqued, so two dims are the same
// exactly when their handles are equal. Lowerings that only move dims
// around keep working on handles; arithmetic on dims goes through here.
//
//===----------------------------------------------------------------------===//
#ifndef MCC_IMPORT_SYMBOLICDIMS_H
#define MCC_IMPORT_SYMBOLICDIMS_H

#include "mcc/Import/Literal.h"

#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"

#include <optional>
#include <string>
#include <vector>

namespace mcc {

/// Handles lie in (kSymbolicHandleBase - kMaxSymbolicHandles,
/// kSymbolicHandleBase]: far from every real size and from
/// ShapedType::kDynamic, and inside int32 so a Cast of a shape keeps them.
constexpr int64_t kSymbolicHandleBase = -(int64_t(1) << 30);
constexpr int64_t kMaxSymbolicHandles = int64_t(1) << 20;

inline bool isSymbolicDim(int64_t d) {
  return d <= kSymbolicHandleBase && d > kSymbolicHandleBase - kMaxSymbolicHandles;
}
bool hasSymbolicDims(const Shape &shape);
/// An integer literal holding handles (the folded result of Shape).
bool isSymbolicLiteral(const Literal &lit);

class SymbolicDims {
public:
  explicit SymbolicDims(mlir::MLIRContext *ctx) : ctx(ctx) {}

  /// A graph symbol with the bounds a run is checked against; its handle.
  int64_t addSymbol(const std::string &name, int64_t lo, int64_t hi);
  size_t numSymbols() const { return symbols.size(); }
  /// The graph's symbols come first; opaque sizes follow them.
  size_t numGraphSymbols() const { return graphSymbols; }
  const std::string &symbolName(size_t k) const { return symbols[k].name; }
  int64_t symbolLo(size_t k) const { return symbols[k].lo; }
  int64_t symbolHi(size_t k) const { return symbols[k].hi; }

  /// The expression of a dim (a constant for a static one).
  mlir::AffineExpr expr(int64_t dim) const;
  /// The dim of an expression: its value if constant, else a handle.
  int64_t dimOf(mlir::AffineExpr e);

  int64_t add(int64_t a, int64_t b) { return dimOf(expr(a) + expr(b)); }
  int64_t sub(int64_t a, int64_t b) { return dimOf(expr(a) - expr(b)); }
  int64_t mul(int64_t a, int64_t b) { return dimOf(expr(a) * expr(b)); }
  /// Floor/ceil division and remainder by a positive static divisor, or of
  /// equal dims; nullopt otherwise.
  std::optional<int64_t> floorDiv(int64_t a, int64_t b);
  std::optional<int64_t> ceilDiv(int64_t a, int64_t b);
  std::optional<int64_t> mod(int64_t a, int64_t b);
  /// Product of dims; divides `numerator` by `denominator` by cancelling
  /// equal symbolic factors (nullopt if they do not cancel).
  int64_t product(const Shape &dims);
  std::optional<int64_t> quotient(const Shape &numerator,
                                  const Shape &denominator);
  /// Bounds of a dim (symbols: theirs; expressions: by interval arithmetic
  /// on + and * of nonnegative terms, else [0, INT64_MAX]).
  int64_t lowerBound(int64_t dim) const;
  int64_t upperBound(int64_t dim) const;

  /// Whether a <= b, from the bounds; nullopt when they cannot tell.
  std::optional<bool> knownLE(int64_t a, int64_t b) const;
  /// Records that a symbol cannot exceed `bound` (a model that slices a
  /// 512-entry table by `sequence` makes sequence <= 512): the run-time
  /// check then refuses larger sizes instead of reading out of bounds.
  void assumeAtMost(int64_t dim, int64_t bound);

  /// For messages: "batch * 12", "7".
  std::string describe(int64_t dim) const;
  std::string describe(const Shape &shape) const;
  /// The ABI's form (design 0010): over s0, s1, ...; empty if the dim
  /// depends on an opaque size rather than on the graph symbols only.
  std::string abiText(int64_t dim) const;

  //===--- IR ---------------------------------------------------------===//
  /// The index value of graph symbol k (a tensor.dim at function entry).
  void setSymbolValue(size_t k, mlir::Value v);
  /// The dim as an index value at the builder's insertion point.
  mlir::Value materialize(mlir::OpBuilder &b, mlir::Location loc, int64_t dim);
  /// Index values for the dynamic dims of `shape`, in order.
  llvm::SmallVector<mlir::Value> dynamicSizes(mlir::OpBuilder &b,
                                              mlir::Location loc,
                                              const Shape &shape);
  /// Registers the shape (with handles) of a tensor whose type has `?`s,
  /// e.g. a function argument.
  void setShape(mlir::Value tensor, const Shape &shape);
  /// The shape of a tensor with handles for its dynamic dims, traced back
  /// through the IR to the sizes it was built from; a dim the trace cannot
  /// name becomes an opaque symbol read with tensor.dim.
  Shape shapeOf(mlir::Value tensor);

private:
  struct Symbol {
    std::string name;
    int64_t lo = 1, hi = INT64_MAX;
    mlir::Value value; // index; null until set
  };
  int64_t traceDim(mlir::Value tensor, unsigned axis);
  std::optional<int64_t> dimOfSize(mlir::Value index);
  mlir::Value build(mlir::OpBuilder &b, mlir::Location loc,
                    mlir::AffineExpr e);
  int64_t opaque(mlir::Value tensor, unsigned axis);

  mlir::MLIRContext *ctx;
  std::vector<Symbol> symbols;
  /// Number of leading symbols that are graph symbols (the rest opaque).
  size_t graphSymbols = 0;
  std::vector<mlir::AffineExpr> handles;
  llvm::DenseMap<mlir::AffineExpr, int64_t> handleOf;
  llvm::DenseMap<mlir::Value, Shape> shapes;
  llvm::DenseMap<mlir::Value, int64_t> sizeValues;
};

/// The SymbolicDims of the import in progress on this thread (null when
/// none): lets the shared IR helpers size their tensors.
SymbolicDims *activeSymbolicDims();
class ActiveSymbolicDims {
public:
  explicit ActiveSymbolicDims(SymbolicDims *dims);
  ~ActiveSymbolicDims();

private:
  SymbolicDims *previous;
};

/// The import's SymbolicDims (there is one whenever handles exist).
inline SymbolicDims &symbolicDims() {
  assert(activeSymbolicDims() && "symbolic dims outside an import");
  return *activeSymbolicDims();
}
/// Product of dims (a handle when any is symbolic); `a * b` likewise.
int64_t dimsProduct(const Shape &dims);
int64_t dimsMul(int64_t a, int64_t b);
/// A dim as an OpFoldResult: an index attribute, or its value.
mlir::OpFoldResult dimFoldResult(mlir::OpBuilder &b, mlir::Location loc,
                                 int64_t dim);

/// A dim as an index value: a constant, or materialized.
mlir::Value dimValue(mlir::OpBuilder &b, mlir::Location loc, int64_t dim);

/// A tensor type for `shape`, `?` where it has handles.
mlir::RankedTensorType tensorTypeOf(const Shape &shape, mlir::Type element);
/// tensor.empty of `shape`, its dynamic sizes materialized.
mlir::Value createEmpty(mlir::OpBuilder &b, mlir::Location loc,
                        const Shape &shape, mlir::Type element);

} // namespace mcc

#endif // MCC_IMPORT_SYMBOLICDIMS_H
