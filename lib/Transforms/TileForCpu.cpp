//===- TileForCpu.cpp - tile linalg ops into scf.forall for threads -------===//

#include "mcc/Transforms/Passes.h"
#include "mcc/Transforms/VectorKernelUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/IR/PatternMatch.h"

namespace mcc {
#define GEN_PASS_DEF_TILEFORCPU
#include "mcc/Transforms/Passes.h.inc"
} // namespace mcc

using namespace mlir;

namespace {

/// Index arithmetic that folds when both sides are constants, so a fully
/// static op gets exactly the tile sizes it always had.
class IndexMath {
public:
  IndexMath(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  OpFoldResult min(OpFoldResult x, OpFoldResult y) {
    return fold(
        x, y, [](int64_t p, int64_t q) { return std::min(p, q); },
        [&](Value p, Value q) -> Value {
          return arith::MinSIOp::create(b, loc, p, q);
        });
  }
  OpFoldResult max(OpFoldResult x, OpFoldResult y) {
    return fold(
        x, y, [](int64_t p, int64_t q) { return std::max(p, q); },
        [&](Value p, Value q) -> Value {
          return arith::MaxSIOp::create(b, loc, p, q);
        });
  }
  OpFoldResult ceilDiv(OpFoldResult x, OpFoldResult y) {
    return fold(
        x, y, [](int64_t p, int64_t q) { return (p + q - 1) / q; },
        [&](Value p, Value q) -> Value {
          return arith::CeilDivUIOp::create(b, loc, p, q);
        });
  }

private:
  OpFoldResult fold(OpFoldResult x, OpFoldResult y,
                    llvm::function_ref<int64_t(int64_t, int64_t)> constant,
                    llvm::function_ref<Value(Value, Value)> emit) {
    std::optional<int64_t> p = getConstantIntValue(x),
                           q = getConstantIntValue(y);
    if (p && q)
      return b.getIndexAttr(constant(*p, *q));
    return emit(getValueOrCreateConstantIndexOp(b, loc, x),
                getValueOrCreateConstantIndexOp(b, loc, y));
  }

  OpBuilder &b;
  Location loc;
};

/// Tile sizes for the leading parallel loops so that the op splits into
/// about `target` tiles; 0 leaves a loop untiled. A dynamic loop range (a
/// batch or sequence dim) makes the sizes from there on run-time values,
/// computed at the op by the same rule as for static ranges.
SmallVector<OpFoldResult> chooseTileSizes(OpBuilder &b, linalg::LinalgOp op,
                                          int64_t target) {
  Location loc = op.getLoc();
  SmallVector<int64_t> staticRanges = op.getStaticLoopRanges();
  SmallVector<Range> ranges = op.createLoopRanges(b, loc);
  SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
  SmallVector<OpFoldResult> sizes(ranges.size(), b.getIndexAttr(0));
  IndexMath math(b, loc);
  OpFoldResult one = b.getIndexAttr(1);
  OpFoldResult remaining = b.getIndexAttr(target);
  for (size_t i = 0; i < ranges.size(); ++i) {
    std::optional<int64_t> left = getConstantIntValue(remaining);
    if (left && *left <= 1)
      break;
    if (iters[i] != utils::IteratorType::parallel)
      break; // keep tiles rectangular over a prefix of the loop nest
    if (!ShapedType::isDynamic(staticRanges[i]) && staticRanges[i] <= 1)
      continue;
    OpFoldResult dim = ranges[i].size;
    // A dynamic dim may be 1 (or 0): at least one tile, of at least 1.
    OpFoldResult tiles = math.max(math.min(dim, remaining), one);
    OpFoldResult size = math.max(math.ceilDiv(dim, tiles), one);
    sizes[i] = size;
    OpFoldResult actual = math.max(math.ceilDiv(dim, size), one);
    remaining = math.ceilDiv(remaining, actual);
  }
  return sizes;
}

/// Whether `v` is a weight: a constant, or an argument of the function past
/// `mcc.num_inputs`, seen through reshapes.
bool isWeight(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (isa<arith::ConstantOp>(def))
      return true;
    if (!isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(def))
      return false;
    v = def->getOperand(0);
  }
  auto arg = cast<BlockArgument>(v);
  auto fn = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  auto numInputs =
      fn ? fn->getAttrOfType<IntegerAttr>("mcc.num_inputs") : IntegerAttr();
  return numInputs && arg.getArgNumber() >= numInputs.getInt();
}

/// Tiles that mcc-amx-matmul takes, for a static product: the tiles are
/// worth AMX only with little padding (mcc::amxTileable), and the AVX-512
/// rule's shapes (mobilenetv3's 40 x 49, 56 x 49, a ragged 32 + 17) pad a
/// 7 x 7 or 14 x 14 image by half; and a product the AVX-512 rule leaves
/// whole (112 x 196) keeps one of two threads idle. Among exact splits of
/// M (multiples of 16) and N that the tiles take, the one with the least
/// padded work on the busier of two threads, each tile costing a little
/// more for its set-up; ties to fewer tiles. It replaces the AVX-512 shapes
/// only where it costs less than they do, an AVX-512 multiply-add counted
/// as two padded tile ones (per multiply-add, a 160 x 672 x 49 product ran
/// 3.3 times faster on the tiles, 80 x 184 x 196 1.7 times).
void chooseAmxTiles(ArrayRef<int64_t> ranges, int64_t batchTiles, bool weightA,
                    int64_t &mTile, int64_t &nTile) {
  size_t batch = ranges.size() - 3;
  int64_t M = ranges[batch], N = ranges[batch + 1], K = ranges[batch + 2];
  if (ShapedType::isDynamic(K))
    return;
  auto roundUp = [](int64_t v, int64_t m) { return (v + m - 1) / m * m; };
  auto busierThread = [](int64_t tiles) { return (tiles + 1) / 2; };
  // About half a microsecond: a tile's loop set-up, its C block's padded
  // copy, the thread's share of the fork.
  constexpr int64_t kTileOverhead = 100000, kAvx512PerTileMac = 2;
  auto tileCost = [&](int64_t mt, int64_t nt) {
    int64_t tiles = batchTiles * (M / mt) * (N / nt);
    return busierThread(tiles) *
           (roundUp(mt, 16) * roundUp(nt, 16) * roundUp(K, 32) + kTileOverhead);
  };
  // Products of fewer steps whose A is computed on every run (a
  // squeeze-excite scale folded into the weight: A's bf16 parts are then
  // packed in a parallel loop of their own) ran slower at two threads in
  // the fewer, larger tiles of this rule than in the AVX-512 rule's eight
  // (mobilenetv3's 40 x 120 x 784: 0.049 -> 0.067 ms), though 1.3 times
  // faster at one: they keep the AVX-512 shapes. With a weight's A,
  // mobilenetv3's projections of K = 184 and 200 ran 1.3-1.5 times faster
  // at one thread and as fast at two.
  const int64_t kMinStepsToRetile = weightA ? 96 : 384;
  int64_t mt0 = std::min(mTile, M), nt0 = std::min(nTile, N);
  int64_t tiles0 = batchTiles * ((M + mt0 - 1) / mt0) * ((N + nt0 - 1) / nt0);
  bool onTiles = M % mt0 == 0 && N % nt0 == 0 && mcc::amxTileable(mt0, nt0, K);
  if ((onTiles && tiles0 >= 2) || (!onTiles && K < kMinStepsToRetile))
    return;
  int64_t bestCost = onTiles ? tileCost(mt0, nt0)
                             : busierThread(tiles0) * mt0 * nt0 * K *
                                   kAvx512PerTileMac,
          bestM = 0, bestN = 0;
  for (int64_t m = 16; m <= roundUp(M, 16); m += 16) {
    int64_t mt = M % m == 0 ? m : m == roundUp(M, 16) ? M : 0;
    if (!mt)
      continue;
    for (int64_t nt = 16; nt <= N; ++nt)
      if (N % nt == 0 && mcc::amxTileable(mt, nt, K) &&
          tileCost(mt, nt) < bestCost) {
        bestCost = tileCost(mt, nt);
        bestM = mt;
        bestN = nt;
      }
  }
  if (bestM) {
    mTile = bestM;
    nTile = bestN;
  }
}

/// What a dynamic dim of a matrix product is taken to be when choosing its
/// tiles: rows (batch * sequence) and columns (a sequence) of about one
/// full-height tile, and a batch of one (one image through per-image
/// convolution products), so that a batch of one still splits into
/// threads; a larger batch then only adds tiles.
constexpr int64_t kAssumedDynamicRows = 64, kAssumedDynamicCols = 256,
                  kAssumedDynamicBatch = 1;

/// Matrix products tile over (batch, m, n). Every tile packs the B panels it
/// reads, so m stays whole up to 256 rows (one packing of B in total) and
/// threads split n, in multiples of the 32-column register block, at most
/// 256 wide, narrowed down to 32 until there are `minTiles` tiles, then m
/// is halved down to 16 rows. Taller products take m in 128- or 64-row
/// tiles (below). An odd count is made even where an n tile width allows
/// (see below).
/// Dynamic dims are chosen for as if they had the assumed sizes above,
/// and always tiled (a dynamic m in tiles of at most 64 rows): the tile
/// count then grows with the actual size. With `amx` (products that
/// mcc-amx-matmul will take), chooseAmxTiles may replace a static
/// product's shapes.
SmallVector<int64_t> chooseMatmulTileSizes(linalg::LinalgOp op,
                                           int64_t minTiles, bool amx) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  size_t batch = ranges.size() - 3;
  bool dynM = ShapedType::isDynamic(ranges[batch]),
       dynN = ShapedType::isDynamic(ranges[batch + 1]);
  int64_t M = dynM ? kAssumedDynamicRows : ranges[batch];
  int64_t N = dynN ? kAssumedDynamicCols : ranges[batch + 1];
  auto roundUp = [](int64_t v, int64_t m) { return (v + m - 1) / m * m; };
  int64_t nTile = std::min<int64_t>(roundUp(N, 32), 256);
  // A tall product with at least 128 columns takes m in 128-row tiles when
  // those alone make enough tiles: every m tile packs all of B again, and
  // a convolution's B is its activation (resnext101's 1024 x 1024 x 196
  // products packed it 16 times in 64-row tiles; 128 rows: resnext101 -5%).
  // Narrower products (N = 49) ran slower in 128-row tiles.
  int64_t mTile =
      M <= 256 ? M
      : !dynN && N >= 128 &&
              ((M + 127) / 128) * ((N + nTile - 1) / nTile) >= minTiles
          ? 128
          : 64;
  int64_t batchTiles = 1;
  for (size_t i = 0; i < batch; ++i)
    batchTiles *=
        ShapedType::isDynamic(ranges[i]) ? kAssumedDynamicBatch : ranges[i];
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
  // An odd tile count leaves a core idle on the last tile at two (or any
  // even number of) threads: GPT-2's fused QKV product (N = 2304) ran as 9
  // tiles of 256, 5 on one thread and 4 on the other. Take the widest
  // n tile (up to 512) that splits N exactly into an even count of at
  // least minTiles tiles, when there is one. A width need not be a
  // multiple of 32: whole vectors and at most 4 more columns (dot products
  // in mcc-register-tile-matmul, for a static K of at least 64) run as
  // fast. N = 784 (a 28 x 28 image)
  // has no even split into multiples of 32; it ran as 12 tiles of 64 and
  // one of 16, 7 against 6 tiles (1.76x at two threads), now 8 of 98.
  int64_t nTiles = (N + nTile - 1) / nTile;
  int64_t otherTiles = batchTiles * ((M + mTile - 1) / mTile);
  if (!dynN && nTiles > 1 && (otherTiles * nTiles) % 2 == 1) {
    int64_t K = ranges[batch + 2];
    bool dotTail = !ShapedType::isDynamic(K) && K >= 64;
    for (int64_t w = 512; w >= 32; --w)
      if ((w % 32 == 0 || (dotTail && w % 16 <= 4)) && N % w == 0 &&
          (otherTiles * (N / w)) % 2 == 0 && otherTiles * (N / w) >= minTiles) {
        nTile = w;
        break;
      }
  }
  // A last n tile narrower than the rest has a dynamic width, which keeps
  // its product off the static kernels (mcc-amx-matmul takes static shapes
  // only): resnet50's 512 x 128 x 784 products ran as 256, 256, 256 and 16
  // columns, its 256 x 2304 x 196 one as 6 x 32 + 4. Take instead the
  // widest width, down to half the ragged one, that splits N exactly (by
  // the rule above) into at least minTiles tiles with the same m tiles:
  // 784 in 4 of 196, 196 in 4 of 49. (Shorter m tiles to make up the
  // count ran slower on mobilenetv3's narrow products.)
  if (!dynN && N % nTile != 0) {
    int64_t K = ranges[batch + 2];
    bool dotTail = !ShapedType::isDynamic(K) && K >= 64;
    for (int64_t w = std::min<int64_t>(N, 512); w >= nTile / 2; --w)
      if (N % w == 0 && (w % 32 == 0 || (dotTail && w % 16 <= 4)) &&
          otherTiles * (N / w) >= minTiles) {
        nTile = w;
        break;
      }
  }
  // Likewise a ragged last m tile: mobilenetv3's 672 x 112 x 196 products
  // ran as 10 tiles of 64 rows and one of 32; 12 of 56 instead.
  if (!dynM && mTile < M && M % mTile != 0)
    for (int64_t m = mTile - 8; m >= mTile / 2; m -= 8)
      if (M % m == 0) {
        mTile = m;
        break;
      }
  if (amx && !dynM && !dynN)
    chooseAmxTiles(ranges, batchTiles, isWeight(op.getDpsInputs()[0]), mTile,
                   nTile);
  SmallVector<int64_t> sizes(ranges.size(), 0);
  for (size_t i = 0; i < batch; ++i)
    sizes[i] = 1;
  sizes[batch] = dynM || mTile < M ? mTile : 0;
  sizes[batch + 1] = dynN || nTile < N ? nTile : 0;
  return sizes;
}

/// Depthwise convolutions (n, oh, ow, c, kh, kw) tile over channels, then
/// output rows when there are fewer channels than `target`; rows stay
/// whole, as mcc-vectorize-depthwise-conv walks them in vectors.
SmallVector<int64_t> chooseDepthwiseTileSizes(linalg::LinalgOp op,
                                              int64_t target) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<int64_t> sizes(ranges.size(), 0);
  int64_t n = ranges[0], oh = ranges[1], c = ranges[3];
  if (ShapedType::isDynamic(n) || n > 1)
    sizes[0] = 1;
  if (ShapedType::isDynamic(c) || ShapedType::isDynamic(oh))
    return sizes;
  int64_t cTiles = std::min(c, target);
  sizes[3] = (c + cTiles - 1) / cTiles;
  int64_t rowTiles = std::min(oh, (target + cTiles - 1) / cTiles);
  if (rowTiles > 1)
    sizes[1] = (oh + rowTiles - 1) / rowTiles;
  return sizes;
}

/// Grouped convolutions (n, g, f, oh, ow, c, kh, kw) tile over groups (a
/// group's input planes are what a tile reads), then output rows when
/// there are fewer groups than `target`; rows stay whole for
/// mcc-vectorize-grouped-conv.
SmallVector<int64_t> chooseGroupedConvTileSizes(linalg::LinalgOp op,
                                                int64_t target) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<int64_t> sizes(ranges.size(), 0);
  int64_t n = ranges[0], g = ranges[1], oh = ranges[3];
  if (ShapedType::isDynamic(n) || n > 1)
    sizes[0] = 1;
  if (ShapedType::isDynamic(g) || ShapedType::isDynamic(oh))
    return sizes;
  int64_t gTiles = std::min(g, target);
  sizes[1] = (g + gTiles - 1) / gTiles;
  int64_t rowTiles = std::min(oh, (target + gTiles - 1) / gTiles);
  if (rowTiles > 1)
    sizes[3] = (oh + rowTiles - 1) / rowTiles;
  return sizes;
}

/// Output elements, for the min-tile-elements cut; a dynamic dim counts as
/// kAssumedDynamicRows (it is usually a batch or a sequence, and a tile
/// loop costs little when it turns out small).
int64_t outputElements(linalg::LinalgOp op) {
  int64_t n = 1;
  for (Value v : op.getDpsInits()) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t)
      return 0;
    int64_t elements = 1;
    for (int64_t d : t.getShape())
      elements *= ShapedType::isDynamic(d) ? kAssumedDynamicRows : d;
    n = std::max<int64_t>(n, elements);
  }
  return n;
}

int64_t iterations(linalg::LinalgOp op);

/// How many register-blocked fmas one fma of a matrix-vector product costs
/// (it waits on memory).
constexpr int64_t kMatvecWorkPerFma = 16;

/// Multiply-adds of a static matrix product (0 for other ops), a matrix-
/// vector product's weighted: it has few outputs (a classifier or
/// squeeze-excite at batch 1) but may stream megabytes of weights.
int64_t productWork(linalg::LinalgOp op) {
  if (!isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op))
    return 0;
  // A matrix-vector product reads each element of A once, for one fma: it
  // streams A from memory instead of reusing it from registers. Squeeze-
  // excite's 960 x 240 (0.9 MB) took 85 us on one thread below the
  // threshold, at two threads as at one.
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  size_t batch = ranges.size() - 3;
  bool vector = ranges[batch] == 1 || ranges[batch + 1] == 1;
  return iterations(op) * (vector ? kMatvecWorkPerFma : 1);
}

/// Iterations of an op with static loop ranges (0 if any is dynamic).
int64_t iterations(linalg::LinalgOp op) {
  int64_t work = 1;
  for (int64_t r : op.getStaticLoopRanges()) {
    if (ShapedType::isDynamic(r))
      return 0;
    work *= r;
  }
  return work;
}

/// Products below this many multiply-adds per minimum tile element stay
/// whole when their output is small: a thread's start costs about as much.
constexpr int64_t kWorkPerOutputElement = 64;

/// Iterations of a reduction other than a matrix product (a global
/// average pool, squeeze-excite's pooling over 28 x 28 x 120): its output
/// is small but each output element sums a whole plane.
int64_t reductionWork(linalg::LinalgOp op) {
  if (op.getNumReductionLoops() == 0 ||
      isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op))
    return 0;
  return iterations(op);
}

/// Reductions below this many iterations per minimum tile element stay
/// whole (about 32K: a few microseconds of work, a thread's start).
constexpr int64_t kWorkPerReducedElement = 8;

/// The elementwise generic that is the only user of a 2-D product's result
/// and reads it at the same indices (mcc-collapse-product-epilogues puts
/// bias and activation generics in this form). It is tiled in the
/// product's place, with the product fused into its tiles, so that
/// mcc-register-tile-matmul finds it right after the product's tile.
/// A depthwise convolution's bias and activation (an elementwise generic
/// over [n, c, h, w]) are tiled the same way, for
/// mcc-vectorize-depthwise-conv to apply to its accumulators, and a grouped
/// convolution's (over [n, g, f, h, w]) for mcc-vectorize-grouped-conv.
linalg::GenericOp epilogueOf(linalg::LinalgOp op) {
  bool depthwise = isa<linalg::DepthwiseConv2DNchwChwOp>(op);
  bool grouped = isa<linalg::Conv2DNgchwGfchwOp>(op);
  if ((!isa<linalg::MatmulOp>(op) && !depthwise && !grouped) ||
      op->getNumResults() != 1 || !op->getResult(0).hasOneUse())
    return {};
  OpOperand &use = *op->getResult(0).getUses().begin();
  auto generic = dyn_cast<linalg::GenericOp>(use.getOwner());
  if (!generic || generic->getBlock() != op->getBlock() ||
      !generic.hasPureTensorSemantics() ||
      generic.getNumLoops() != (grouped ? 5u : (depthwise ? 4u : 2u)) ||
      generic.getNumReductionLoops() != 0 || generic.hasIndexSemantics() ||
      !generic.isDpsInput(&use) ||
      !generic.getMatchingIndexingMap(&use).isIdentity())
    return {};
  return generic;
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
            (outputElements(lop) >= minTileElements ||
             productWork(lop) >= minTileElements * kWorkPerOutputElement ||
             reductionWork(lop) >= minTileElements * kWorkPerReducedElement))
          candidates.push_back(lop);
    IRRewriter rewriter(&getContext());
    llvm::DenseSet<Operation *> tiled;
    for (linalg::LinalgOp candidate : candidates) {
      if (tiled.contains(candidate))
        continue;
      // A product with an epilogue: the epilogue is tiled by the product's
      // tile sizes, and the product (and its fill) fused into it.
      linalg::LinalgOp op = candidate;
      Operation *product = nullptr;
      if (linalg::GenericOp epilogue = epilogueOf(candidate)) {
        product = candidate;
        op = epilogue;
        tiled.insert(epilogue);
      }
      rewriter.setInsertionPoint(op);
      SmallVector<OpFoldResult> sizes;
      if (product && isa<linalg::DepthwiseConv2DNchwChwOp>(product)) {
        // The convolution's (n, oh, ow, c) tiles as the generic's (n, c,
        // h, w).
        SmallVector<int64_t> conv = chooseDepthwiseTileSizes(
            cast<linalg::LinalgOp>(product), targetTiles);
        sizes = getAsIndexOpFoldResult(
            &getContext(),
            ArrayRef<int64_t>{conv[0], conv[3], conv[1], conv[2]});
      } else if (product && isa<linalg::Conv2DNgchwGfchwOp>(product)) {
        // The convolution's (n, g, f, oh, ow) tiles as the generic's.
        sizes = getAsIndexOpFoldResult(
            &getContext(),
            ArrayRef(chooseGroupedConvTileSizes(cast<linalg::LinalgOp>(product),
                                                targetTiles))
                .take_front(5));
      } else if (product)
        sizes = getAsIndexOpFoldResult(
            &getContext(),
            ArrayRef(chooseMatmulTileSizes(cast<linalg::LinalgOp>(product), 8,
                                           amxTiles))
                .take_front(2));
      else if (isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op))
        sizes = getAsIndexOpFoldResult(&getContext(),
                                       chooseMatmulTileSizes(op, 8, amxTiles));
      else if (isa<linalg::DepthwiseConv2DNchwChwOp>(op))
        sizes = getAsIndexOpFoldResult(
            &getContext(), chooseDepthwiseTileSizes(op, targetTiles));
      else if (isa<linalg::Conv2DNgchwGfchwOp>(op))
        sizes = getAsIndexOpFoldResult(
            &getContext(), chooseGroupedConvTileSizes(op, targetTiles));
      else
        sizes = chooseTileSizes(rewriter, op, targetTiles);
      if (llvm::all_of(sizes, isZeroInteger))
        continue;
      scf::SCFTilingOptions tiling;
      tiling.setTileSizes(sizes);
      tiling.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
      scf::SCFTileAndFuseOptions options;
      options.setTilingOptions(tiling);
      // Fuse only the accumulator's fill (and a product into its
      // epilogue): fusing other producers would recompute them per tile.
      options.setFusionControlFn(
          [product](tensor::ExtractSliceOp, OpResult producer, bool)
              -> std::optional<scf::SCFTileAndFuseOptions::ControlFnResult> {
            if (isa<linalg::FillOp>(producer.getOwner()) ||
                producer.getOwner() == product)
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
      if (product && product->use_empty())
        rewriter.eraseOp(product);
    }
  }
};

} // namespace
