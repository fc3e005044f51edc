//===- CollapseProductEpilogues.cpp - epilogues on the product's 2-D shape ===//
//
// A 1x1 convolution or a linear layer becomes a 2-D linalg.matmul whose
// result is reshaped back to the model's shape ([F, H*W] -> [1, F, H, W],
// [S, C] -> [1, S, C]) before the bias, normalization and activation that
// follow it, fused into one elementwise linalg.generic. Tiling cannot fuse
// the product into that generic through the reshape, so the two ran as
// separate loop nests: the product's output went to memory and came back.
// Here such a generic is rewritten on the product's own 2-D iteration space
// (its other operands collapsed to 2-D, or to the rows' or the columns'
// vector when they broadcast), and the reshape moves after it; the tiler
// and the register-tiled kernel then apply it to the product's register
// block (mcc-tile-for-cpu, mcc-register-tile-matmul).
//
// Generics whose result is padded are left alone: mcc-pad-into-producer
// has them write the interior of the padded buffer, which is not a 2-D view.
// The exception is a depthwise convolution's zero padding, which the CPU
// kernel reads in place (ConvPadding.h): the generic keeps its own buffer.
//
//===----------------------------------------------------------------------===//

#include "mcc/Transforms/ConvPadding.h"
#include "mcc/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace mcc {
#define GEN_PASS_DEF_COLLAPSEPRODUCTEPILOGUES
#include "mcc/Transforms/Passes.h.inc"
} // namespace mcc

using namespace mlir;

namespace {

/// How a 2-D epilogue reads one operand.
enum class Access { Full, PerRow, PerColumn };

/// A static 2-D linalg.matmul result seen through a chain of reshapes
/// (ConvToMatmul's [F, H*W] -> [F, 1, H, W] -> [1, F, H, W] takes three),
/// each used once.
struct ReshapedProduct {
  Value product;
  /// The loop dims of the reshaped value that make the product's rows,
  /// then those that make its columns.
  SmallVector<ReassociationIndices> groups;
};

std::optional<ReshapedProduct> reshapedProduct(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || !type.hasStaticShape())
    return std::nullopt;
  Value source = v;
  while (true) {
    Operation *def = source.getDefiningOp();
    if (!isa_and_nonnull<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(def) ||
        !def->hasOneUse())
      break;
    source = def->getOperand(0);
  }
  auto product = source.getDefiningOp<linalg::MatmulOp>();
  if (source == v || !product || !product->hasOneUse())
    return std::nullopt;
  auto productType = cast<RankedTensorType>(source.getType());
  if (!productType.hasStaticShape())
    return std::nullopt;
  // Reshapes keep the row-major order, so the leading dims whose sizes
  // multiply to the product's rows are its rows.
  int64_t rows = productType.getDimSize(0), size = 1;
  int64_t split = 0;
  while (split < type.getRank() && size < rows)
    size *= type.getDimSize(split++);
  if (size != rows)
    return std::nullopt;
  ReshapedProduct r{source, {}};
  r.groups.push_back(llvm::to_vector(llvm::seq<int64_t>(0, split)));
  r.groups.push_back(
      llvm::to_vector(llvm::seq<int64_t>(split, type.getRank())));
  if (r.groups[0].empty() || r.groups[1].empty())
    return std::nullopt;
  return r;
}

/// How `map` (an operand's indexing map in a loop space of `shape`) reads
/// the loops of `groups` (the product's rows and columns, as loop dims):
/// every loop dim the operand uses, other than unit ones, must be a whole
/// group in order, and its other dims must be size 1.
std::optional<Access> accessOf(AffineMap map, ArrayRef<int64_t> operandShape,
                               ArrayRef<int64_t> shape,
                               ArrayRef<ReassociationIndices> groups) {
  if (map.isIdentity())
    return Access::Full;
  SmallVector<int64_t> used; // loop dims the operand varies with, in order
  for (auto [i, e] : llvm::enumerate(map.getResults())) {
    if (auto d = dyn_cast<AffineDimExpr>(e)) {
      if (shape[d.getPosition()] != 1)
        used.push_back(d.getPosition());
      else if (operandShape[i] != 1)
        return std::nullopt;
      continue;
    }
    auto c = dyn_cast<AffineConstantExpr>(e);
    if (!c || c.getValue() != 0 || operandShape[i] != 1)
      return std::nullopt;
  }
  for (auto [g, access] :
       {std::pair{0, Access::PerRow}, std::pair{1, Access::PerColumn}}) {
    SmallVector<int64_t> wanted;
    for (int64_t d : groups[g])
      if (shape[d] != 1)
        wanted.push_back(d);
    if (used == wanted)
      return access;
  }
  return std::nullopt;
}

/// Rewrites `op` on the 2-D space of the product behind its operand
/// `fromProduct`; false if it does not qualify.
bool collapse(IRRewriter &rewriter, linalg::GenericOp op,
              OpOperand &fromProduct, const ReshapedProduct &reshaped) {
  if (op.getNumReductionLoops() != 0 || op.hasIndexSemantics() ||
      !op.hasPureTensorSemantics() ||
      !op.getMatchingIndexingMap(&fromProduct).isIdentity())
    return false;
  for (Operation *user : op->getUsers())
    if (auto pad = dyn_cast<tensor::PadOp>(user);
        pad && !mcc::isDepthwisePadReadInPlace(pad))
      return false;
  ArrayRef<ReassociationIndices> groups = reshaped.groups;
  ArrayRef<int64_t> shape =
      cast<RankedTensorType>(fromProduct.get().getType()).getShape();
  if (op.getStaticLoopRanges() != SmallVector<int64_t>(shape))
    return false;
  Location loc = op.getLoc();
  Value product = reshaped.product;
  auto productType = cast<RankedTensorType>(product.getType());
  MLIRContext *ctx = op.getContext();
  AffineExpr i = getAffineDimExpr(0, ctx), j = getAffineDimExpr(1, ctx);
  AffineMap full = AffineMap::get(2, 0, {i, j}, ctx),
            perRow = AffineMap::get(2, 0, {i}, ctx),
            perColumn = AffineMap::get(2, 0, {j}, ctx);

  rewriter.setInsertionPoint(op);
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (OpOperand *in : op.getDpsInputOperands()) {
    if (in == &fromProduct) {
      inputs.push_back(product);
      maps.push_back(full);
      continue;
    }
    auto type = dyn_cast<RankedTensorType>(in->get().getType());
    if (!type || !type.hasStaticShape())
      return false;
    std::optional<Access> access =
        accessOf(op.getMatchingIndexingMap(in), type.getShape(), shape, groups);
    if (!access)
      return false;
    Value value = in->get();
    if (*access == Access::Full) {
      maps.push_back(full);
      inputs.push_back(
          tensor::CollapseShapeOp::create(rewriter, loc, value, groups));
      continue;
    }
    maps.push_back(*access == Access::PerRow ? perRow : perColumn);
    ReassociationIndices all =
        llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
    inputs.push_back(
        type.getRank() == 1
            ? value
            : tensor::CollapseShapeOp::create(
                  rewriter, loc, value, ArrayRef<ReassociationIndices>{all})
                  .getResult());
  }
  SmallVector<Value> inits;
  for (OpOperand &out : op.getDpsInitsMutable()) {
    // An elementwise op that reads its init is not a plain epilogue.
    if (!op.getMatchingIndexingMap(&out).isIdentity() ||
        op.payloadUsesValueFromOperand(&out))
      return false;
    Type element = getElementTypeOrSelf(out.get().getType());
    inits.push_back(tensor::EmptyOp::create(rewriter, loc,
                                            productType.getShape(), element));
    maps.push_back(full);
  }
  // Nothing has been rewritten until here but unused collapse_shape ops,
  // which canonicalization removes if we bail.
  auto collapsed = linalg::GenericOp::create(
      rewriter, loc, TypeRange(ValueRange(inits)), inputs, inits, maps,
      SmallVector<utils::IteratorType>(2, utils::IteratorType::parallel));
  rewriter.inlineRegionBefore(op.getRegion(), collapsed.getRegion(),
                              collapsed.getRegion().begin());
  SmallVector<Value> results;
  for (auto [old, now] : llvm::zip(op.getResults(), collapsed.getResults()))
    results.push_back(tensor::ExpandShapeOp::create(
        rewriter, loc, old.getType(), now, groups));
  rewriter.replaceOp(op, results);
  return true;
}

struct CollapseProductEpiloguesPass
    : mcc::impl::CollapseProductEpiloguesBase<CollapseProductEpiloguesPass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> generics;
    getOperation()->walk([&](linalg::GenericOp op) { generics.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp op : generics)
      for (OpOperand *in : op.getDpsInputOperands())
        if (std::optional<ReshapedProduct> r = reshapedProduct(in->get())) {
          collapse(rewriter, op, *in, *r);
          break;
        }
  }
};

} // namespace
