//===- TileForCpu.cpp - tile linalg ops into scf.forall for threads -------===//

#include "mcc/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/IR/PatternMatch.h"

namespace mcc {
#define GEN_PASS_DEF_TILEFORCPU
#include "mcc/Transforms/Passes.h.inc"
} // namespace mcc

using namespace mlir;

namespace {

/// Tile sizes for the leading parallel loops so that the op splits into
/// about `target` tiles; 0 leaves a loop untiled.
SmallVector<int64_t> chooseTileSizes(linalg::LinalgOp op, int64_t target) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
  SmallVector<int64_t> sizes(ranges.size(), 0);
  int64_t remaining = target;
  for (size_t i = 0; i < ranges.size() && remaining > 1; ++i) {
    if (iters[i] != utils::IteratorType::parallel)
      break; // keep tiles rectangular over a prefix of the loop nest
    int64_t dim = ranges[i];
    if (ShapedType::isDynamic(dim) || dim <= 1)
      continue;
    int64_t tiles = std::min(dim, remaining);
    int64_t size = (dim + tiles - 1) / tiles;
    sizes[i] = size;
    int64_t actual = (dim + size - 1) / size;
    remaining = (remaining + actual - 1) / actual;
  }
  return sizes;
}

/// Matrix products tile over (batch, m, n). Every tile packs the B panels it
/// reads, so m stays whole up to 256 rows (one packing of B in total) and
/// threads split n, in multiples of the 32-column register block, at most
/// 256 wide, narrowed down to 32 until there are `minTiles` tiles, then m
/// is halved down to 16 rows. Taller products take m in 64-row tiles.
SmallVector<int64_t> chooseMatmulTileSizes(linalg::LinalgOp op,
                                           int64_t minTiles) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  size_t batch = ranges.size() - 3;
  int64_t M = ranges[batch], N = ranges[batch + 1];
  auto roundUp = [](int64_t v, int64_t m) { return (v + m - 1) / m * m; };
  int64_t mTile = M <= 256 ? M : 64;
  int64_t nTile = std::min<int64_t>(roundUp(N, 32), 256);
  int64_t batchTiles = 1;
  for (size_t i = 0; i < batch; ++i)
    batchTiles *= ranges[i];
  auto tiles = [&] {
    return batchTiles * ((M + mTile - 1) / mTile) * ((N + nTile - 1) / nTile);
  };
  while (tiles() < minTiles) {
    if (nTile > 32)
      nTile = roundUp(nTile / 2, 32);
    else if (mTile > 16)
      mTile = roundUp(mTile / 2, 8);
    else
      break;
  }
  SmallVector<int64_t> sizes(ranges.size(), 0);
  for (size_t i = 0; i < batch; ++i)
    sizes[i] = 1;
  sizes[batch] = mTile < M ? mTile : 0;
  sizes[batch + 1] = nTile < N ? nTile : 0;
  return sizes;
}

int64_t outputElements(linalg::LinalgOp op) {
  int64_t n = 1;
  for (Value v : op.getDpsInits()) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t || !t.hasStaticShape())
      return 0;
    n = std::max<int64_t>(n, t.getNumElements());
  }
  return n;
}

struct TileForCpuPass : mcc::impl::TileForCpuBase<TileForCpuPass> {
  using TileForCpuBase::TileForCpuBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    SmallVector<linalg::LinalgOp> candidates;
    for (Operation &op : func.getBody().front())
      if (auto lop = dyn_cast<linalg::LinalgOp>(&op))
        if (!isa<linalg::FillOp>(&op) && lop.hasPureTensorSemantics() &&
            outputElements(lop) >= minTileElements)
          candidates.push_back(lop);
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : candidates) {
      bool product = isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op) &&
                     !llvm::any_of(op.getStaticLoopRanges(), ShapedType::isDynamic);
      SmallVector<int64_t> sizes = product ? chooseMatmulTileSizes(op, 8)
                                           : chooseTileSizes(op, targetTiles);
      if (llvm::all_of(sizes, [](int64_t s) { return s == 0; }))
        continue;
      scf::SCFTilingOptions tiling;
      tiling.setTileSizes(getAsIndexOpFoldResult(&getContext(), sizes));
      tiling.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
      scf::SCFTileAndFuseOptions options;
      options.setTilingOptions(tiling);
      // Fuse only the accumulator's fill: fusing other producers would
      // recompute them per tile.
      options.setFusionControlFn(
          [](tensor::ExtractSliceOp, OpResult producer, bool)
              -> std::optional<scf::SCFTileAndFuseOptions::ControlFnResult> {
            if (isa<linalg::FillOp>(producer.getOwner()))
              return scf::SCFTileAndFuseOptions::ControlFnResult{false};
            return std::nullopt;
          });
      rewriter.setInsertionPoint(op);
      auto result = scf::tileConsumerAndFuseProducersUsingSCF(
          rewriter, cast<TilingInterface>(op.getOperation()), options);
      if (failed(result)) {
        op->emitError("mcc-tile-for-cpu: tiling failed");
        return signalPassFailure();
      }
      for (OpResult res : op->getResults())
        if (Value repl = result->replacements.lookup(res))
          rewriter.replaceAllUsesWith(res, repl);
      if (op->use_empty())
        rewriter.eraseOp(op);
    }
  }
};

} // namespace
