//===- GpuLibraryCalls.cpp - matrix products through cuBLAS ---------------===//

#include "mcc/Transforms/BufferUtils.h"
#include "mcc/Transforms/ContractionUtils.h"
#include "mcc/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

namespace mcc {
#define GEN_PASS_DEF_GPULIBRARYCALLS
#include "mcc/Transforms/Passes.h.inc"
} // namespace mcc

using namespace mlir;

namespace {

/// f32, and one of the last two dimensions contiguous: what cuBLAS takes
/// with a leading dimension, as it is (last dimension) or transposed
/// (second to last). Sizes may be dynamic: the shim reads sizes and
/// strides from the descriptors at run time.
bool blasCompatible(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  if (!type || !type.getElementType().isF32())
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) || strides.size() < 2)
    return false;
  return strides.back() == 1 || strides[strides.size() - 2] == 1;
}

/// The product's output: cuBLAS writes it untransposed.
bool blasCompatibleOutput(Value v) {
  auto type = cast<MemRefType>(v.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  return blasCompatible(v) &&
         succeeded(type.getStridesAndOffset(strides, offset)) &&
         strides.back() == 1;
}

/// True if `v` views a memref.global: host memory, which cuBLAS cannot
/// read (kernels can: outlining moves the global to the GPU module).
bool viewsGlobal(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (isa<memref::GetGlobalOp>(def))
      return true;
    if (isa<memref::SubViewOp, memref::CastOp, memref::ExpandShapeOp,
            memref::CollapseShapeOp, memref::ReinterpretCastOp>(def))
      v = def->getOperand(0);
    else
      return false;
  }
  return false;
}

/// A as a [batch, m, k] view with batch stride 0 (`batch` and A's sizes
/// static or dynamic).
Value broadcastView(OpBuilder &b, Location loc, Value a, OpFoldResult batch) {
  auto type = cast<MemRefType>(a.getType());
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, a);
  SmallVector<OpFoldResult> sizes = {batch, meta.getConstifiedMixedSizes()[0],
                                     meta.getConstifiedMixedSizes()[1]};
  SmallVector<OpFoldResult> strides = {b.getIndexAttr(0),
                                       meta.getStrides()[0],
                                       meta.getStrides()[1]};
  auto layout = StridedLayoutAttr::get(
      b.getContext(), ShapedType::kDynamic,
      {0, ShapedType::kDynamic, ShapedType::kDynamic});
  std::optional<int64_t> staticBatch = getConstantIntValue(batch);
  auto viewType =
      MemRefType::get({staticBatch ? *staticBatch : ShapedType::kDynamic,
                       type.getDimSize(0), type.getDimSize(1)},
                      type.getElementType(), layout);
  return memref::ReinterpretCastOp::create(b, loc, viewType,
                                           meta.getBaseBuffer(),
                                           meta.getOffset(), sizes, strides);
}

MemRefType dynamicStrided(MLIRContext *ctx, int64_t rank) {
  SmallVector<int64_t> shape(rank, ShapedType::kDynamic);
  SmallVector<int64_t> strides(rank, ShapedType::kDynamic);
  auto layout = StridedLayoutAttr::get(ctx, ShapedType::kDynamic, strides);
  return MemRefType::get(shape, Float32Type::get(ctx), layout);
}

//===--- Permuted copies folded into the product's strides ---------------===//
//
// Attention transposes its heads around its two batched products: Q and K
// (often times a scale) into [batch, heads, tokens, dim] before Q K^T,
// and the context back to [batch, tokens, heads, dim] after P V. Each is a
// copy kernel per layer; cuBLAS reads and writes those layouts in place
// through leading dimensions, batch strides and a transposed operand, and
// takes the scale as alpha. So a copy that only feeds (or only reads) one
// product goes, and the product gets a strided view instead.

/// A linalg.generic that copies its one input into its one output through
/// a permutation of the dimensions, optionally times a constant:
/// out[..., d_{perm[j]}, ...] = in[..., d_j, ...] (* scale).
struct PermutedCopy {
  linalg::GenericOp op;
  /// Source dimension j moves to output dimension perm[j].
  SmallVector<unsigned> perm;
  double scale = 1.0;
};

std::optional<PermutedCopy> matchPermutedCopy(Operation *op) {
  auto generic = dyn_cast_or_null<linalg::GenericOp>(op);
  if (!generic || generic.getNumDpsInputs() != 1 ||
      generic.getNumDpsInits() != 1 || !generic.hasPureBufferSemantics() ||
      generic.getNumReductionLoops() != 0)
    return std::nullopt;
  AffineMap in = generic.getIndexingMapsArray()[0];
  AffineMap out = generic.getIndexingMapsArray()[1];
  if (!out.isIdentity() || !in.isPermutation())
    return std::nullopt;
  for (Value v : generic->getOperands())
    if (!cast<MemRefType>(v.getType()).getElementType().isF32())
      return std::nullopt;
  PermutedCopy copy{generic, {}, 1.0};
  for (unsigned j = 0; j < in.getNumResults(); ++j)
    copy.perm.push_back(in.getDimPosition(j));
  Block &body = generic.getRegion().front();
  Value input = body.getArgument(0);
  Value yielded = body.getTerminator()->getOperand(0);
  if (yielded == input)
    return copy;
  auto mul = yielded.getDefiningOp<arith::MulFOp>();
  if (!mul || &body.front() != mul.getOperation())
    return std::nullopt;
  Value other = mul.getLhs() == input   ? mul.getRhs()
                : mul.getRhs() == input ? mul.getLhs()
                                        : Value();
  FloatAttr constant;
  if (!other || !matchPattern(other, m_Constant(&constant)))
    return std::nullopt;
  copy.scale = constant.getValueAsDouble();
  return copy;
}

/// Static sizes and element strides of a view.
struct Strided {
  SmallVector<int64_t> sizes, strides;
};

/// The reshapes (collapse/expand_shape) from a memref.alloc to `v`,
/// outermost first; fails if `v` is not such a view of an allocation.
FailureOr<SmallVector<Operation *>> reshapesFromAlloc(Value v,
                                                     memref::AllocOp &root) {
  SmallVector<Operation *> chain;
  while (Operation *def = v.getDefiningOp()) {
    if (auto alloc = dyn_cast<memref::AllocOp>(def)) {
      if (!alloc.getType().hasStaticShape() ||
          !alloc.getType().getLayout().isIdentity())
        return failure();
      root = alloc;
      std::reverse(chain.begin(), chain.end());
      return chain;
    }
    if (!isa<memref::CollapseShapeOp, memref::ExpandShapeOp>(def))
      return failure();
    chain.push_back(def);
    v = def->getOperand(0);
  }
  return failure();
}

/// Merges each group of dimensions; fails unless each group is one
/// strided run.
FailureOr<Strided> collapse(const Strided &in,
                            ArrayRef<ReassociationIndices> groups) {
  Strided out;
  for (const ReassociationIndices &group : groups) {
    int64_t size = 1, stride = 1, run = -1;
    for (int64_t d : llvm::reverse(group)) {
      size *= in.sizes[d];
      if (in.sizes[d] == 1)
        continue;
      if (run < 0)
        stride = in.strides[d];
      else if (in.strides[d] != run)
        return failure();
      run = in.strides[d] * in.sizes[d];
    }
    out.sizes.push_back(size);
    out.strides.push_back(stride);
  }
  return out;
}

/// Splits each dimension into its group's sizes.
Strided expand(const Strided &in, ArrayRef<ReassociationIndices> groups,
               ArrayRef<int64_t> sizes) {
  Strided out{SmallVector<int64_t>(sizes), SmallVector<int64_t>(sizes.size())};
  for (auto [i, group] : llvm::enumerate(groups)) {
    int64_t stride = in.strides[i];
    for (int64_t d : llvm::reverse(group)) {
      out.strides[d] = stride;
      stride *= sizes[d];
    }
  }
  return out;
}

/// `in` (the allocation's layout) seen through `chain`, or back through it
/// (`inverse`: from the chain's end to the allocation).
FailureOr<Strided> throughReshapes(Strided in, ArrayRef<Operation *> chain,
                                   bool inverse) {
  auto step = [&](Operation *op) -> FailureOr<Strided> {
    bool collapsing = isa<memref::CollapseShapeOp>(op) != inverse;
    SmallVector<ReassociationIndices> groups =
        isa<memref::CollapseShapeOp>(op)
            ? cast<memref::CollapseShapeOp>(op).getReassociationIndices()
            : cast<memref::ExpandShapeOp>(op).getReassociationIndices();
    if (collapsing)
      return collapse(in, groups);
    auto target = cast<MemRefType>(
        (inverse ? op->getOperand(0) : op->getResult(0)).getType());
    if (!target.hasStaticShape())
      return failure();
    return expand(in, groups, target.getShape());
  };
  if (inverse) {
    for (Operation *op : llvm::reverse(chain)) {
      FailureOr<Strided> next = step(op);
      if (failed(next))
        return failure();
      in = *next;
    }
    return in;
  }
  for (Operation *op : chain) {
    FailureOr<Strided> next = step(op);
    if (failed(next))
      return failure();
    in = *next;
  }
  return in;
}

/// The buffer that `v` views (through any view-like op).
Value rootOf(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v;
}

/// Every user of `root` and of the views of it, views excluded.
SmallVector<std::pair<Operation *, Value>> usersThroughViews(Value root) {
  SmallVector<std::pair<Operation *, Value>> users;
  SmallVector<Value> aliases = {root};
  for (size_t i = 0; i < aliases.size(); ++i)
    for (Operation *user : aliases[i].getUsers()) {
      if (isa<ViewLikeOpInterface>(user) &&
          cast<ViewLikeOpInterface>(user).getViewSource() == aliases[i]) {
        llvm::append_range(aliases, user->getResults());
        continue;
      }
      users.push_back({user, aliases[i]});
    }
  return users;
}

/// True if an op strictly between `from` and `to` (one block) may write
/// the buffer `root` or a view of it.
bool writtenBetween(Value root, Operation *from, Operation *to) {
  for (Operation *op = from->getNextNode(); op && op != to;
       op = op->getNextNode()) {
    WalkResult r = op->walk([&](Operation *inner) {
      for (OpOperand &use : inner->getOpOperands()) {
        if (rootOf(use.get()) != root || isa<ViewLikeOpInterface>(inner))
          continue;
        if (auto linalgOp = dyn_cast<linalg::LinalgOp>(inner);
            linalgOp && linalgOp.isDpsInput(&use))
          continue;
        if (auto copy = dyn_cast<memref::CopyOp>(inner);
            copy && copy.getSource() == use.get())
          continue;
        // A product already turned into a call writes only its C.
        if (auto call = dyn_cast<func::CallOp>(inner);
            call && call.getCallee().starts_with("mcc_gpu_sgemm") &&
            use.getOperandNumber() != 2)
          continue;
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (r.wasInterrupted())
      return true;
  }
  return false;
}

/// `base` (a strided memref whose layout is `layout`) as a view with
/// `view`'s sizes and strides, at `base`'s offset.
Value stridedView(OpBuilder &b, Location loc, Value base,
                  const Strided &view) {
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, base);
  auto type = MemRefType::get(
      view.sizes, b.getF32Type(),
      StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic,
                             view.strides));
  SmallVector<OpFoldResult> sizes, strides;
  for (int64_t s : view.sizes)
    sizes.push_back(b.getIndexAttr(s));
  for (int64_t s : view.strides)
    strides.push_back(b.getIndexAttr(s));
  return memref::ReinterpretCastOp::create(b, loc, type, meta.getBaseBuffer(),
                                           meta.getOffset(), sizes, strides);
}

bool blasLayout(const Strided &s, bool output) {
  size_t r = s.strides.size();
  return r >= 2 && (s.strides[r - 1] == 1 || (!output && s.strides[r - 2] == 1));
}

/// The users of `root` and of its views (views excluded), as the ops of
/// `block` that hold them, in block order, each with the value it uses;
/// fails if one lies outside `block`.
FailureOr<SmallVector<std::pair<Operation *, Value>>>
orderedUsers(Value root, Block *block) {
  SmallVector<std::pair<Operation *, Value>> users;
  for (auto [user, through] : usersThroughViews(root)) {
    Operation *op = block->findAncestorOpInBlock(*user);
    if (!op)
      return failure();
    users.push_back({op, through});
  }
  llvm::stable_sort(users, [](const auto &x, const auto &y) {
    return x.first != y.first && x.first->isBeforeInBlock(y.first);
  });
  return users;
}

/// True if `op` replaces all of `buffer` without reading it, or frees it.
bool overwrites(Operation *op, Value buffer) {
  if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
    if (generic.getNumDpsInits() != 1 ||
        generic.getDpsInits()[0] != buffer ||
        generic.getNumReductionLoops() != 0 ||
        !generic.getMatchingIndexingMap(generic.getDpsInitOperand(0))
             .isPermutation() ||
        generic.payloadUsesValueFromOperand(generic.getDpsInitOperand(0)))
      return false;
    for (Value in : generic.getDpsInputs())
      if (rootOf(in) == buffer)
        return false;
    return true;
  }
  if (auto copy = dyn_cast<memref::CopyOp>(op))
    return copy.getTarget() == buffer;
  if (auto fill = dyn_cast<linalg::FillOp>(op))
    return fill.getOutputs()[0] == buffer;
  return isa<memref::DeallocOp>(op);
}

/// The position of `op` in `users`, if it is there exactly once.
std::optional<size_t>
onlyPosition(ArrayRef<std::pair<Operation *, Value>> users, Operation *op) {
  std::optional<size_t> at;
  for (auto [i, u] : llvm::enumerate(users))
    if (u.first == op) {
      if (at)
        return std::nullopt;
      at = i;
    }
  return at;
}

/// An input of `product` that a permuted copy wrote into a buffer which
/// nothing else reads before it is overwritten (bufferization reuses one
/// buffer for the same copy in every layer): the copy goes, and `product`
/// reads the copy's source through a strided view (returned, with the
/// copy's scale).
std::optional<std::pair<Value, double>>
foldPermutedInput(OpBuilder &b, linalg::LinalgOp product, Value operand) {
  memref::AllocOp alloc;
  FailureOr<SmallVector<Operation *>> chain = reshapesFromAlloc(operand, alloc);
  if (failed(chain))
    return std::nullopt;
  auto users = orderedUsers(alloc.getResult(), product->getBlock());
  if (failed(users))
    return std::nullopt;
  std::optional<size_t> at = onlyPosition(*users, product);
  if (!at || *at == 0 || (*users)[*at].second != operand)
    return std::nullopt;
  std::optional<PermutedCopy> copy = matchPermutedCopy((*users)[*at - 1].first);
  if (!copy || copy->op.getDpsInits()[0] != alloc.getResult() ||
      (*at + 1 < users->size() &&
       !overwrites((*users)[*at + 1].first, alloc.getResult())))
    return std::nullopt;
  Value source = copy->op.getDpsInputs()[0];
  auto sourceType = cast<MemRefType>(source.getType());
  Strided src;
  int64_t offset;
  if (!sourceType.hasStaticShape() ||
      failed(sourceType.getStridesAndOffset(src.strides, offset)) ||
      llvm::is_contained(src.strides, ShapedType::kDynamic))
    return std::nullopt;
  // The source indexed as the copy's output.
  Strided asOutput{SmallVector<int64_t>(alloc.getType().getShape()),
                   SmallVector<int64_t>(src.strides.size())};
  for (auto [j, d] : llvm::enumerate(copy->perm))
    asOutput.strides[d] = src.strides[j];
  FailureOr<Strided> view = throughReshapes(asOutput, *chain, false);
  if (failed(view) || !blasLayout(*view, false) ||
      writtenBetween(rootOf(source), copy->op, product))
    return std::nullopt;
  Value folded = stridedView(b, product.getLoc(), source, *view);
  double scale = copy->scale;
  copy->op->erase();
  return std::make_pair(folded, scale);
}

/// The output of `product` (overwritten, beta = 0) when the next use of it
/// is a permuted copy, and nothing reads it after that before it is
/// overwritten: `product` writes the copy's target (a buffer nothing uses
/// between the two) through a strided view (returned, with the copy's
/// scale) and the copy goes.
std::optional<std::pair<Value, double>>
foldPermutedOutput(OpBuilder &b, linalg::LinalgOp product, Value output,
                   bool scaleAllowed) {
  memref::AllocOp alloc;
  FailureOr<SmallVector<Operation *>> chain = reshapesFromAlloc(output, alloc);
  if (failed(chain))
    return std::nullopt;
  Block *block = product->getBlock();
  auto users = orderedUsers(alloc.getResult(), block);
  if (failed(users))
    return std::nullopt;
  std::optional<size_t> at = onlyPosition(*users, product);
  if (!at || *at + 1 >= users->size() || (*users)[*at].second != output)
    return std::nullopt;
  auto [next, copied] = (*users)[*at + 1];
  std::optional<PermutedCopy> copy = matchPermutedCopy(next);
  if (!copy || copy->op.getDpsInputs()[0] != copied ||
      (!scaleAllowed && copy->scale != 1.0) ||
      copy->op.getDpsInits()[0] == copied ||
      (*at + 2 < users->size() &&
       !overwrites((*users)[*at + 2].first, alloc.getResult())))
    return std::nullopt;
  memref::AllocOp copiedAlloc;
  FailureOr<SmallVector<Operation *>> copiedChain =
      reshapesFromAlloc(copied, copiedAlloc);
  auto target = copy->op.getDpsInits()[0].getDefiningOp<memref::AllocOp>();
  if (failed(copiedChain) || copiedAlloc != alloc || !target ||
      target->getBlock() != block || !target.getType().hasStaticShape() ||
      !target.getType().getLayout().isIdentity())
    return std::nullopt;
  auto targetUsers = orderedUsers(target.getResult(), block);
  if (failed(targetUsers))
    return std::nullopt;
  for (auto [user, through] : *targetUsers)
    if (product->isBeforeInBlock(user) && user->isBeforeInBlock(copy->op))
      return std::nullopt;
  // The target indexed as the copy's input, then as the allocation and as
  // the product's output.
  SmallVector<int64_t> targetStrides;
  int64_t offset;
  if (failed(target.getType().getStridesAndOffset(targetStrides, offset)))
    return std::nullopt;
  auto copiedType = cast<MemRefType>(copied.getType());
  Strided asInput{SmallVector<int64_t>(copiedType.getShape()),
                  SmallVector<int64_t>(targetStrides.size())};
  for (auto [j, d] : llvm::enumerate(copy->perm))
    asInput.strides[j] = targetStrides[d];
  FailureOr<Strided> asAlloc = throughReshapes(asInput, *copiedChain, true);
  if (failed(asAlloc))
    return std::nullopt;
  FailureOr<Strided> view = throughReshapes(*asAlloc, *chain, false);
  if (failed(view) || !blasLayout(*view, true))
    return std::nullopt;
  if (product->isBeforeInBlock(target))
    target->moveBefore(product);
  Value folded = stridedView(b, product.getLoc(), target.getResult(), *view);
  double scale = copy->scale;
  copy->op->erase();
  return std::make_pair(folded, scale);
}

/// `product`'s output R (a whole static buffer) and the elementwise
/// generic that is its next use and its only reader before R is
/// overwritten or freed, with the view of R the generic reads.
struct NextReader {
  memref::AllocOp alloc;
  linalg::GenericOp generic;
  Value view;
};

std::optional<NextReader> soleElementwiseReader(linalg::MatmulOp product,
                                                Value output) {
  auto alloc = output.getDefiningOp<memref::AllocOp>();
  if (!alloc || !alloc.getType().hasStaticShape() ||
      !alloc.getType().getLayout().isIdentity())
    return std::nullopt;
  auto users = orderedUsers(alloc.getResult(), product->getBlock());
  if (failed(users))
    return std::nullopt;
  std::optional<size_t> at = onlyPosition(*users, product);
  if (!at || *at + 1 >= users->size())
    return std::nullopt;
  auto [next, view] = (*users)[*at + 1];
  auto generic = dyn_cast<linalg::GenericOp>(next);
  if (!generic || !generic.hasPureBufferSemantics() ||
      generic.getNumReductionLoops() != 0 || !onlyPosition(*users, generic) ||
      (*at + 2 < users->size() &&
       !overwrites((*users)[*at + 2].first, alloc.getResult())))
    return std::nullopt;
  return NextReader{alloc, generic, view};
}

/// The value of a one-input elementwise body at x = `value` (computed in
/// double), or none if it uses an op this does not know or another input.
std::optional<double> evaluateBody(Block &body, BlockArgument x, double value) {
  llvm::DenseMap<Value, double> known;
  known[x] = value;
  auto valueOf = [&](Value v) -> std::optional<double> {
    if (auto it = known.find(v); it != known.end())
      return it->second;
    FloatAttr constant;
    if (matchPattern(v, m_Constant(&constant)))
      return constant.getValueAsDouble();
    return std::nullopt;
  };
  for (Operation &op : body) {
    if (auto yield = dyn_cast<linalg::YieldOp>(op))
      return yield.getNumOperands() == 1 ? valueOf(yield.getOperand(0))
                                         : std::nullopt;
    SmallVector<double> in;
    for (Value operand : op.getOperands()) {
      std::optional<double> v = valueOf(operand);
      if (!v)
        return std::nullopt;
      in.push_back(*v);
    }
    std::optional<double> r;
    if (isa<arith::ConstantOp>(op)) {
      r = valueOf(op.getResult(0));
    } else if (in.size() == 1) {
      double a = in[0];
      r = TypeSwitch<Operation *, std::optional<double>>(&op)
              .Case([&](arith::NegFOp) { return -a; })
              .Case([&](math::TanhOp) { return std::tanh(a); })
              .Case([&](math::ExpOp) { return std::exp(a); })
              .Case([&](math::SqrtOp) { return std::sqrt(a); })
              .Case([&](math::ErfOp) { return std::erf(a); })
              .Case([&](math::AbsFOp) { return std::fabs(a); })
              .Default([](Operation *) { return std::nullopt; });
    } else if (in.size() == 2) {
      double a = in[0], b = in[1];
      r = TypeSwitch<Operation *, std::optional<double>>(&op)
              .Case([&](arith::AddFOp) { return a + b; })
              .Case([&](arith::SubFOp) { return a - b; })
              .Case([&](arith::MulFOp) { return a * b; })
              .Case([&](arith::DivFOp) { return a / b; })
              .Case([&](arith::MaximumFOp) { return std::max(a, b); })
              .Case([&](arith::MinimumFOp) { return std::min(a, b); })
              .Case([&](math::PowFOp) { return std::pow(a, b); })
              .Default([](Operation *) { return std::nullopt; });
    }
    if (!r || op.getNumResults() != 1)
      return std::nullopt;
    known[op.getResult(0)] = *r;
  }
  return std::nullopt;
}

/// True if the body computes GELU's tanh form of `x` (GPT-2's gelu_new,
/// what cuBLASLt's GELU epilogue computes), however the exporter wrote it:
/// judged by its values, which also tells it from the erf form (they
/// differ by up to 5e-4).
bool isTanhGelu(Block &body, BlockArgument x) {
  for (double v : {-9.5, -4.2, -2.0, -1.3, -0.6, -0.05, 0.0, 0.02, 0.37, 0.9,
                   1.7, 3.1, 7.5}) {
    double want =
        0.5 * v *
        (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    std::optional<double> got = evaluateBody(body, x, v);
    if (!got || !(std::fabs(*got - want) <= 1e-6 * (1.0 + std::fabs(want))))
      return false;
  }
  return true;
}

/// After its bias was absorbed: `product`'s output R (a whole buffer) whose
/// next and only reader is an elementwise generic computing GELU's tanh form
/// of R alone into a buffer G of its own. The product writes G (a
/// row-major view) with cuBLASLt's GELU epilogue, and the generic goes.
/// Returns the view, or null.
Value absorbTanhGelu(RewriterBase &rw, linalg::MatmulOp product,
                     Value output) {
  std::optional<NextReader> reader = soleElementwiseReader(product, output);
  if (!reader)
    return {};
  auto [alloc, generic, view] = *reader;
  Block *block = product->getBlock();
  if (generic.getNumDpsInputs() != 1 || generic.getNumDpsInits() != 1 ||
      generic.getDpsInputs()[0] != view)
    return {};
  for (AffineMap map : generic.getIndexingMapsArray())
    if (!map.isIdentity())
      return {};
  auto target = generic.getDpsInits()[0].getDefiningOp<memref::AllocOp>();
  auto viewType = cast<MemRefType>(view.getType());
  if (!target || target->getBlock() != block ||
      target.getType() != viewType.clone(viewType.getShape()) ||
      !viewType.getLayout().isIdentity() ||
      (view != alloc.getResult() &&
       !isa_and_present<memref::ExpandShapeOp, memref::CollapseShapeOp>(
           view.getDefiningOp())))
    return {};
  Block &body = generic.getRegion().front();
  if (!body.getArgument(1).use_empty() ||
      !isTanhGelu(body, body.getArgument(0)))
    return {};
  // Nothing may touch G between the product and the generic.
  auto targetUsers = orderedUsers(target.getResult(), block);
  if (failed(targetUsers))
    return {};
  for (auto [user, through] : *targetUsers)
    if (product->isBeforeInBlock(user) && user->isBeforeInBlock(generic))
      return {};
  if (product->isBeforeInBlock(target))
    target->moveBefore(product);
  // R and G hold the same elements in the same row-major order.
  ArrayRef<int64_t> shape = alloc.getType().getShape();
  Strided rowMajor{SmallVector<int64_t>(shape), {shape[1], 1}};
  rw.setInsertionPoint(product);
  Value written = stridedView(rw, product.getLoc(), target.getResult(),
                              rowMajor);
  rw.eraseOp(generic);
  if (Operation *reshape = view.getDefiningOp(); reshape && view.use_empty())
    rw.eraseOp(reshape);
  return written;
}

/// A Linear layer's bias: `product`'s output R (overwritten, a whole
/// buffer) whose next use is a generic that adds a vector along R's
/// columns as the first thing it does with each element of R, and nothing
/// reads R after it before R is overwritten. The add moves into the
/// product (cuBLASLt's bias epilogue) and the generic reads R as it then
/// is; returns the vector (1-D, unit stride), or null. For the bias of
/// attention's Q, K and V, this leaves the head transposes as plain
/// permuted copies, which then fold into the products' strides.
Value absorbBias(RewriterBase &rw, linalg::MatmulOp product, Value output) {
  std::optional<NextReader> reader = soleElementwiseReader(product, output);
  if (!reader)
    return {};
  auto [alloc, generic, view] = *reader;
  Block *block = product->getBlock();
  // R's columns among the dimensions of the generic's view of it.
  SmallVector<int64_t> columnDims = {1};
  if (view != alloc.getResult()) {
    auto expand = view.getDefiningOp<memref::ExpandShapeOp>();
    if (!expand || expand.getSrc() != alloc.getResult())
      return {};
    columnDims = llvm::to_vector(expand.getReassociationIndices()[1]);
  }
  OpOperand *rOperand = nullptr;
  for (OpOperand *in : generic.getDpsInputOperands())
    if (in->get() == view)
      rOperand = in;
  if (!rOperand)
    return {};
  auto viewShape = cast<MemRefType>(view.getType()).getShape();
  AffineMap rMap = generic.getMatchingIndexingMap(rOperand);
  Block &body = generic.getRegion().front();
  BlockArgument rArg = body.getArgument(rOperand->getOperandNumber());
  if (!rArg.hasOneUse())
    return {};
  auto add = dyn_cast<arith::AddFOp>(*rArg.getUsers().begin());
  if (!add)
    return {};
  Value other = add.getLhs() == rArg ? add.getRhs() : add.getLhs();
  auto biasArg = dyn_cast<BlockArgument>(other);
  if (!biasArg || biasArg.getOwner() != &body || !biasArg.hasOneUse() ||
      biasArg.getArgNumber() >= generic.getNumDpsInputs())
    return {};
  OpOperand *biasOperand = generic.getDpsInputOperand(biasArg.getArgNumber());
  Value bias = biasOperand->get();
  // The vector, maybe expanded into the shape of R's column dimensions,
  // read at the same indices as those dimensions of R.
  auto biasType = cast<MemRefType>(bias.getType());
  AffineMap biasMap = generic.getMatchingIndexingMap(biasOperand);
  if (biasType.getRank() != static_cast<int64_t>(columnDims.size()) ||
      biasMap.getNumResults() != columnDims.size())
    return {};
  for (auto [i, d] : llvm::enumerate(columnDims))
    if (biasType.getDimSize(i) != viewShape[d] ||
        biasMap.getResult(i) != rMap.getResult(d))
      return {};
  Value vector = bias;
  if (biasType.getRank() != 1) {
    auto expand = bias.getDefiningOp<memref::ExpandShapeOp>();
    if (!expand)
      return {};
    vector = expand.getSrc();
  }
  auto vectorType = cast<MemRefType>(vector.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  if (vectorType.getRank() != 1 || !vectorType.getElementType().isF32() ||
      failed(vectorType.getStridesAndOffset(strides, offset)) ||
      strides[0] != 1 || viewsGlobal(vector) ||
      !vector.getParentRegion()->isAncestor(product->getParentRegion()))
    return {};
  // The vector must exist, with its values, when the product runs (a
  // recurrent cell may compute it between the product and the add).
  if (Operation *def = vector.getDefiningOp()) {
    Operation *top = block->findAncestorOpInBlock(*def);
    if (top && !top->isBeforeInBlock(product))
      return {};
  }
  if (writtenBetween(rootOf(vector), product, generic))
    return {};
  // The generic without the add and without the vector.
  rw.replaceAllUsesWith(add.getResult(), rArg);
  rw.eraseOp(add);
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (OpOperand *in : generic.getDpsInputOperands())
    if (in != biasOperand) {
      inputs.push_back(in->get());
      maps.push_back(generic.getMatchingIndexingMap(in));
    }
  for (OpOperand &out : generic.getDpsInitsMutable())
    maps.push_back(generic.getMatchingIndexingMap(&out));
  rw.setInsertionPoint(generic);
  auto rebuilt = linalg::GenericOp::create(
      rw, generic.getLoc(), TypeRange{}, inputs, generic.getDpsInits(), maps,
      generic.getIteratorTypesArray());
  rebuilt.getRegion().takeBody(generic.getRegion());
  rebuilt.getRegion().front().eraseArgument(biasArg.getArgNumber());
  rw.eraseOp(generic);
  rw.setInsertionPoint(product);
  return vector;
}

struct GpuLibraryCallsPass
    : mcc::impl::GpuLibraryCallsBase<GpuLibraryCallsPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    SmallVector<linalg::LinalgOp> products;
    module.walk([&](linalg::LinalgOp op) {
      if (!isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op) ||
          !op.hasPureBufferSemantics())
        return;
      // A matmul with a transposing or broadcasting indexing_maps
      // attribute is not a plain product, except a batch_matmul whose A is
      // shared by the whole batch: cuBLAS takes that as batch stride 0.
      if (op.hasUserDefinedMaps() && !mcc::isBatchMatmulWithSharedA(op))
        return;
      for (Value v : op->getOperands())
        if (!blasCompatible(v) || viewsGlobal(v))
          return;
      if (!blasCompatibleOutput(op.getDpsInits()[0]))
        return;
      products.push_back(op);
    });
    OpBuilder builder(ctx);
    auto declare = [&](StringRef name, int64_t rank, bool withBias = false) {
      if (module.lookupSymbol<func::FuncOp>(name))
        return;
      builder.setInsertionPointToStart(module.getBody());
      MemRefType t = dynamicStrided(ctx, rank);
      // A, B, C[, bias], alpha and beta: C = alpha A B + beta C (+ bias
      // along C's rows).
      SmallVector<Type> args = {t, t, t};
      if (withBias)
        args.push_back(dynamicStrided(ctx, 1));
      args.append({builder.getF32Type(), builder.getF32Type()});
      auto fn = func::FuncOp::create(builder, module.getLoc(), name,
                                     builder.getFunctionType(args, {}));
      fn.setPrivate();
    };
    IRRewriter rewriter(ctx);
    for (linalg::LinalgOp op : products) {
      bool batched = isa<linalg::BatchMatmulOp>(op);
      std::string name = batched ? "mcc_gpu_sgemm_batched" : "mcc_gpu_sgemm";
      int64_t rank = batched ? 3 : 2;
      declare(name, rank);
      rewriter.setInsertionPoint(op);
      // An output zeroed right before the product is overwritten instead
      // (beta = 0), and the zeroing goes.
      Attribute init;
      Operation *zeroing = mcc::constantInitOf(op, op.getDpsInits()[0], init);
      float beta = 1.0f;
      if (zeroing && matchPattern(init, m_PosZeroFloat())) {
        beta = 0.0f;
        rewriter.eraseOp(zeroing);
      }
      SmallVector<Value> operands(op->getOperands());
      double alpha = 1.0;
      Value bias;
      if (fuseBias && beta == 0.0f)
        if (auto matmul = dyn_cast<linalg::MatmulOp>(op.getOperation());
            matmul && !matmul.hasUserDefinedMaps())
          bias = absorbBias(rewriter, matmul, operands[2]);
      if (foldTransposes) {
        for (Value &v : MutableArrayRef<Value>(operands).take_front(2))
          if (auto folded = foldPermutedInput(rewriter, op, v)) {
            v = folded->first;
            alpha *= folded->second;
          }
        // Not a scaling copy after a bias: alpha would scale A B alone.
        if (beta == 0.0f)
          if (auto folded = foldPermutedOutput(rewriter, op, operands[2],
                                               /*scaleAllowed=*/!bias)) {
            operands[2] = folded->first;
            alpha *= folded->second;
          }
      }
      bool gelu = false;
      if (bias)
        if (Value view = absorbTanhGelu(
                rewriter, cast<linalg::MatmulOp>(op.getOperation()),
                operands[2])) {
          operands[2] = view;
          gelu = true;
        }
      if (bias) {
        name = gelu ? "mcc_gpu_sgemm_bias_gelu" : "mcc_gpu_sgemm_bias";
        declare(name, rank, /*withBias=*/true);
        operands.push_back(bias);
      }
      SmallVector<Value> args;
      for (Value v : operands) {
        int64_t vRank = cast<MemRefType>(v.getType()).getRank();
        if (vRank == 1) { // the bias
          args.push_back(memref::CastOp::create(rewriter, op.getLoc(),
                                                dynamicStrided(ctx, 1), v));
          continue;
        }
        if (batched && vRank == 2)
          v = broadcastView(rewriter, op.getLoc(), v,
                            memref::getMixedSize(rewriter, op.getLoc(),
                                                 op.getDpsInits()[0], 0));
        args.push_back(memref::CastOp::create(rewriter, op.getLoc(),
                                              dynamicStrided(ctx, rank), v));
      }
      args.push_back(arith::ConstantOp::create(
          rewriter, op.getLoc(),
          rewriter.getF32FloatAttr(static_cast<float>(alpha))));
      args.push_back(arith::ConstantOp::create(
          rewriter, op.getLoc(), rewriter.getF32FloatAttr(beta)));
      func::CallOp::create(rewriter, op.getLoc(), name, TypeRange{}, args);
      rewriter.eraseOp(op);
    }
    mcc::eraseDeadFills(module);
  }
};

} // namespace
