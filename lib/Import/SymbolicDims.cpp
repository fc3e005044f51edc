//===- SymbolicDims.cpp - symbolic dims while importing (design 0010) -----===//

#include "mcc/Import/SymbolicDims.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineExprVisitor.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"

#include <algorithm>

using namespace mlir;

namespace mcc {

bool hasSymbolicDims(const Shape &shape) {
  return std::any_of(shape.begin(), shape.end(), isSymbolicDim);
}

bool isSymbolicLiteral(const Literal &lit) {
  if (isFloatDType(lit.dtype()) || isSmallDType(lit.dtype()) ||
      lit.dtype() == kBool || lit.size() > 64)
    return false;
  SymbolicDims *dims = activeSymbolicDims();
  if (!dims)
    return false;
  for (int64_t i = 0; i < lit.size(); ++i)
    if (isSymbolicDim(lit.getI(i)))
      return true;
  return false;
}

int64_t SymbolicDims::addSymbol(const std::string &name, int64_t lo,
                                int64_t hi) {
  for (size_t k = 0; k < symbols.size(); ++k)
    if (symbols[k].name == name)
      return dimOf(getAffineSymbolExpr(k, ctx));
  symbols.push_back({name, lo, hi, Value()});
  graphSymbols = symbols.size();
  return dimOf(getAffineSymbolExpr(symbols.size() - 1, ctx));
}

AffineExpr SymbolicDims::expr(int64_t dim) const {
  if (!isSymbolicDim(dim))
    return getAffineConstantExpr(dim, ctx);
  size_t i = static_cast<size_t>(kSymbolicHandleBase - dim);
  assert(i < handles.size() && "unknown symbolic handle");
  return handles[i];
}

int64_t SymbolicDims::dimOf(AffineExpr e) {
  e = simplifyAffineExpr(e, 0, symbols.size());
  if (auto c = dyn_cast<AffineConstantExpr>(e))
    return c.getValue();
  auto it = handleOf.find(e);
  if (it != handleOf.end())
    return it->second;
  int64_t h = kSymbolicHandleBase - static_cast<int64_t>(handles.size());
  handles.push_back(e);
  handleOf[e] = h;
  return h;
}

std::optional<int64_t> SymbolicDims::floorDiv(int64_t a, int64_t b) {
  if (a == b && isSymbolicDim(a))
    return 1;
  if (isSymbolicDim(b) || b <= 0)
    return std::nullopt;
  return dimOf(expr(a).floorDiv(b));
}

std::optional<int64_t> SymbolicDims::ceilDiv(int64_t a, int64_t b) {
  if (a == b && isSymbolicDim(a))
    return 1;
  if (isSymbolicDim(b) || b <= 0)
    return std::nullopt;
  return dimOf(expr(a).ceilDiv(b));
}

std::optional<int64_t> SymbolicDims::mod(int64_t a, int64_t b) {
  if (a == b && isSymbolicDim(a))
    return 0;
  if (isSymbolicDim(b) || b <= 0)
    return std::nullopt;
  return dimOf(expr(a) % b);
}

int64_t SymbolicDims::product(const Shape &dims) {
  AffineExpr p = getAffineConstantExpr(1, ctx);
  for (int64_t d : dims)
    p = p * expr(d);
  return dimOf(p);
}

/// Splits a dim into a constant and its symbolic multiplicative factors.
static void factorize(SymbolicDims &dims, AffineExpr e, Shape &symbolic,
                      int64_t &constant) {
  if (auto c = dyn_cast<AffineConstantExpr>(e)) {
    constant *= c.getValue();
    return;
  }
  if (e.getKind() == AffineExprKind::Mul) {
    auto bin = cast<AffineBinaryOpExpr>(e);
    factorize(dims, bin.getLHS(), symbolic, constant);
    factorize(dims, bin.getRHS(), symbolic, constant);
    return;
  }
  symbolic.push_back(dims.dimOf(e));
}

std::optional<int64_t> SymbolicDims::quotient(const Shape &numerator,
                                              const Shape &denominator) {
  Shape num, den;
  int64_t cnum = 1, cden = 1;
  for (int64_t d : numerator)
    factorize(*this, expr(d), num, cnum);
  for (int64_t d : denominator)
    factorize(*this, expr(d), den, cden);
  for (int64_t d : den) {
    auto it = std::find(num.begin(), num.end(), d);
    if (it == num.end())
      return std::nullopt;
    num.erase(it);
  }
  if (cden == 0 || cnum % cden != 0)
    return std::nullopt;
  num.push_back(cnum / cden);
  return product(num);
}

namespace {
/// [lo, hi] of an expression over symbols with known bounds.
struct Interval {
  int64_t lo, hi;
};
int64_t satMul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}
int64_t satAdd(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}
} // namespace

static Interval boundsOf(AffineExpr e,
                         const std::function<Interval(unsigned)> &symbol) {
  if (auto c = dyn_cast<AffineConstantExpr>(e))
    return {c.getValue(), c.getValue()};
  if (auto s = dyn_cast<AffineSymbolExpr>(e))
    return symbol(s.getPosition());
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  if (!bin)
    return {0, INT64_MAX};
  Interval l = boundsOf(bin.getLHS(), symbol), r = boundsOf(bin.getRHS(), symbol);
  if (l.lo < 0 || r.lo < 0)
    return {INT64_MIN, INT64_MAX};
  switch (bin.getKind()) {
  case AffineExprKind::Add:
    return {satAdd(l.lo, r.lo), satAdd(l.hi, r.hi)};
  case AffineExprKind::Mul:
    return {satMul(l.lo, r.lo), satMul(l.hi, r.hi)};
  case AffineExprKind::FloorDiv:
    if (r.lo > 0)
      return {l.lo / r.hi, l.hi / r.lo};
    break;
  case AffineExprKind::CeilDiv:
    if (r.lo > 0)
      return {(l.lo + r.hi - 1) / r.hi,
              l.hi == INT64_MAX ? INT64_MAX : (l.hi + r.lo - 1) / r.lo};
    break;
  case AffineExprKind::Mod:
    if (r.lo > 0)
      return {0, r.hi - 1};
    break;
  default:
    break;
  }
  return {0, INT64_MAX};
}

int64_t SymbolicDims::lowerBound(int64_t dim) const {
  if (!isSymbolicDim(dim))
    return dim;
  return boundsOf(expr(dim), [&](unsigned k) {
           return Interval{symbols[k].lo, symbols[k].hi};
         }).lo;
}

int64_t SymbolicDims::upperBound(int64_t dim) const {
  if (!isSymbolicDim(dim))
    return dim;
  return boundsOf(expr(dim), [&](unsigned k) {
           return Interval{symbols[k].lo, symbols[k].hi};
         }).hi;
}

std::optional<bool> SymbolicDims::knownLE(int64_t a, int64_t b) const {
  if (a == b)
    return true;
  if (upperBound(a) <= lowerBound(b))
    return true;
  if (lowerBound(a) > upperBound(b))
    return false;
  return std::nullopt;
}

void SymbolicDims::assumeAtMost(int64_t dim, int64_t bound) {
  if (auto s = dyn_cast<AffineSymbolExpr>(expr(dim)))
    if (s.getPosition() < graphSymbols)
      symbols[s.getPosition()].hi =
          std::min(symbols[s.getPosition()].hi, bound);
}

/// Prints an expression with symbols named by `name`.
static std::string printExpr(AffineExpr e,
                             const std::function<std::string(unsigned)> &name) {
  std::string s;
  llvm::raw_string_ostream os(s);
  e.print(os);
  // AffineExpr prints symbols as s<k>; substitute from the highest index
  // down so s1 is not taken for a prefix of s12.
  std::string out;
  for (size_t i = 0; i < s.size();) {
    if (s[i] == 's' && i + 1 < s.size() && isdigit(s[i + 1]) &&
        (i == 0 || !isalnum(s[i - 1]))) {
      size_t j = i + 1;
      while (j < s.size() && isdigit(s[j]))
        ++j;
      out += name(std::stoul(s.substr(i + 1, j - i - 1)));
      i = j;
    } else {
      out += s[i++];
    }
  }
  return out;
}

std::string SymbolicDims::describe(int64_t dim) const {
  if (!isSymbolicDim(dim))
    return std::to_string(dim);
  return printExpr(expr(dim), [&](unsigned k) {
    return k < graphSymbols ? symbols[k].name
                            : "<size of " + symbols[k].name + ">";
  });
}

std::string SymbolicDims::describe(const Shape &shape) const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + describe(shape[i]);
  return s + "]";
}

std::string SymbolicDims::abiText(int64_t dim) const {
  bool opaqueUsed = false;
  expr(dim).walk([&](AffineExpr e) {
    if (auto s = dyn_cast<AffineSymbolExpr>(e))
      opaqueUsed |= s.getPosition() >= graphSymbols;
  });
  if (opaqueUsed)
    return "";
  return printExpr(expr(dim),
                   [](unsigned k) { return "s" + std::to_string(k); });
}

void SymbolicDims::setSymbolValue(size_t k, Value v) {
  symbols[k].value = v;
  sizeValues[v] = dimOf(getAffineSymbolExpr(k, ctx));
}

Value SymbolicDims::build(OpBuilder &b, Location loc, AffineExpr e) {
  if (auto c = dyn_cast<AffineConstantExpr>(e))
    return arith::ConstantIndexOp::create(b, loc, c.getValue());
  if (auto s = dyn_cast<AffineSymbolExpr>(e))
    return symbols[s.getPosition()].value;
  auto bin = cast<AffineBinaryOpExpr>(e);
  Value l = build(b, loc, bin.getLHS()), r = build(b, loc, bin.getRHS());
  switch (bin.getKind()) {
  case AffineExprKind::Add:
    return arith::AddIOp::create(b, loc, l, r);
  case AffineExprKind::Mul:
    return arith::MulIOp::create(b, loc, l, r);
  case AffineExprKind::FloorDiv:
    return arith::FloorDivSIOp::create(b, loc, l, r);
  case AffineExprKind::CeilDiv:
    return arith::CeilDivSIOp::create(b, loc, l, r);
  case AffineExprKind::Mod: {
    // Affine mod is nonnegative for a positive divisor.
    Value rem = arith::RemSIOp::create(b, loc, l, r);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value neg =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, rem, zero);
    Value fixed = arith::AddIOp::create(b, loc, rem, r);
    return arith::SelectOp::create(b, loc, neg, fixed, rem);
  }
  default:
    llvm_unreachable("not an affine binary op");
  }
}

Value SymbolicDims::materialize(OpBuilder &b, Location loc, int64_t dim) {
  Value v = build(b, loc, expr(dim));
  if (isSymbolicDim(dim))
    sizeValues.try_emplace(v, dim);
  return v;
}

SmallVector<Value> SymbolicDims::dynamicSizes(OpBuilder &b, Location loc,
                                              const Shape &shape) {
  SmallVector<Value> sizes;
  for (int64_t d : shape)
    if (isSymbolicDim(d))
      sizes.push_back(materialize(b, loc, d));
  return sizes;
}

void SymbolicDims::setShape(Value tensor, const Shape &shape) {
  shapes[tensor] = shape;
}

Shape SymbolicDims::shapeOf(Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  auto it = shapes.find(tensor);
  if (it != shapes.end())
    return it->second;
  Shape s(type.getShape().begin(), type.getShape().end());
  if (type.hasStaticShape())
    return s;
  for (unsigned i = 0; i < s.size(); ++i)
    if (ShapedType::isDynamic(s[i]))
      s[i] = traceDim(tensor, i);
  shapes[tensor] = s;
  return s;
}

int64_t SymbolicDims::opaque(Value tensor, unsigned axis) {
  std::string what = "a tensor";
  if (auto *op = tensor.getDefiningOp())
    what = op->getName().getStringRef().str();
  symbols.push_back({what + " dim " + std::to_string(axis), 0, INT64_MAX,
                     Value()});
  OpBuilder b(ctx);
  b.setInsertionPointAfterValue(tensor);
  symbols.back().value =
      tensor::DimOp::create(b, tensor.getLoc(), tensor, axis);
  return dimOf(getAffineSymbolExpr(symbols.size() - 1, ctx));
}

std::optional<int64_t> SymbolicDims::dimOfSize(Value index) {
  auto it = sizeValues.find(index);
  if (it != sizeValues.end())
    return it->second;
  if (auto c = index.getDefiningOp<arith::ConstantIndexOp>())
    return c.value();
  if (auto cast = index.getDefiningOp<arith::IndexCastOp>())
    return dimOfSize(cast.getIn());
  if (auto dim = index.getDefiningOp<tensor::DimOp>())
    if (auto axis = dim.getConstantIndex())
      return shapeOf(dim.getSource())[*axis];
  return std::nullopt;
}

int64_t SymbolicDims::traceDim(Value tensor, unsigned axis) {
  auto known = [&](OpFoldResult size) -> std::optional<int64_t> {
    if (auto attr = dyn_cast<Attribute>(size))
      return cast<IntegerAttr>(attr).getInt();
    return dimOfSize(cast<Value>(size));
  };
  Operation *op = tensor.getDefiningOp();
  std::optional<int64_t> d;
  if (!op) {
    d = std::nullopt;
  } else if (auto empty = dyn_cast<tensor::EmptyOp>(op)) {
    d = known(empty.getMixedSizes()[axis]);
  } else if (auto dps = dyn_cast<DestinationStyleOpInterface>(op)) {
    if (OpOperand *init = dps.getTiedOpOperand(cast<OpResult>(tensor)))
      d = shapeOf(init->get())[axis];
  } else if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
    d = known(expand.getMixedOutputShape()[axis]);
  } else if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
    Shape src = shapeOf(collapse.getSrc()), group;
    for (int64_t i : collapse.getReassociationIndices()[axis])
      group.push_back(src[i]);
    d = product(group);
  } else if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
    llvm::SmallBitVector dropped = slice.getDroppedDims();
    unsigned seen = 0;
    SmallVector<OpFoldResult> sizes = slice.getMixedSizes();
    for (unsigned i = 0; i < sizes.size(); ++i) {
      if (dropped.test(i))
        continue;
      if (seen++ == axis) {
        d = known(sizes[i]);
        break;
      }
    }
  } else if (auto cast = dyn_cast<tensor::CastOp>(op)) {
    d = shapeOf(cast.getSource())[axis];
  } else if (auto pad = dyn_cast<tensor::PadOp>(op)) {
    auto lo = known(pad.getMixedLowPad()[axis]),
         hi = known(pad.getMixedHighPad()[axis]);
    if (lo && hi)
      d = add(add(shapeOf(pad.getSource())[axis], *lo), *hi);
  } else if (auto concat = dyn_cast<tensor::ConcatOp>(op)) {
    if (concat.getDim() == axis) {
      int64_t sum = 0;
      for (Value in : concat.getInputs())
        sum = add(sum, shapeOf(in)[axis]);
      d = sum;
    } else {
      d = shapeOf(concat.getInputs()[0])[axis];
    }
  } else if (auto select = dyn_cast<arith::SelectOp>(op)) {
    d = shapeOf(select.getTrueValue())[axis];
  }
  if (d && (isSymbolicDim(*d) || *d >= 0))
    return *d;
  return opaque(tensor, axis);
}

namespace {
thread_local SymbolicDims *active = nullptr;
} // namespace

SymbolicDims *activeSymbolicDims() { return active; }

ActiveSymbolicDims::ActiveSymbolicDims(SymbolicDims *dims) : previous(active) {
  active = dims;
}
ActiveSymbolicDims::~ActiveSymbolicDims() { active = previous; }

int64_t dimsProduct(const Shape &dims) {
  if (!hasSymbolicDims(dims))
    return numElements(dims);
  return symbolicDims().product(dims);
}

int64_t dimsMul(int64_t a, int64_t b) {
  if (!isSymbolicDim(a) && !isSymbolicDim(b))
    return a * b;
  return symbolicDims().mul(a, b);
}

OpFoldResult dimFoldResult(OpBuilder &b, Location loc, int64_t dim) {
  if (!isSymbolicDim(dim))
    return b.getIndexAttr(dim);
  return symbolicDims().materialize(b, loc, dim);
}

Value dimValue(OpBuilder &b, Location loc, int64_t dim) {
  if (!isSymbolicDim(dim))
    return arith::ConstantIndexOp::create(b, loc, dim);
  return symbolicDims().materialize(b, loc, dim);
}

RankedTensorType tensorTypeOf(const Shape &shape, Type element) {
  SmallVector<int64_t> dims;
  for (int64_t d : shape)
    dims.push_back(isSymbolicDim(d) ? ShapedType::kDynamic : d);
  return RankedTensorType::get(dims, element);
}

Value createEmpty(OpBuilder &b, Location loc, const Shape &shape,
                  Type element) {
  if (!hasSymbolicDims(shape))
    return tensor::EmptyOp::create(b, loc, shape, element);
  SymbolicDims *dims = activeSymbolicDims();
  assert(dims && "symbolic dims outside an import");
  Value empty = tensor::EmptyOp::create(b, loc, tensorTypeOf(shape, element),
                                        dims->dynamicSizes(b, loc, shape));
  dims->setShape(empty, shape);
  return empty;
}

} // namespace mcc
