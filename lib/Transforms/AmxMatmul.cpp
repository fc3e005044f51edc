//===- AmxMatmul.cpp - f32 products on AMX tiles in bf16x3 ----------------===//
//
// With --precision bf16x3 on a CPU with AMX-BF16, a buffer-level f32
// linalg.matmul becomes three bf16 tile products per step of K: each f32 is
// split into a bf16 high part and the bf16 rounding of what is left (the
// pair carries 16 of its 24 significant bits), and
//
//   C += Ahi * Bhi + Ahi * Blo + Alo * Bhi
//
// accumulates in f32 on the tiles (the Alo * Blo term is below f32's last
// bit of a product's magnitude). A C model of bert-base's products ran at
// 420-480 GFLOPS this way against 141 for mcc's AVX-512 kernels, with a
// relative error of 4-5e-6 against a float64 product (an f32 product
// summed in order: 1.4-1.8e-6); docs/design/0024.
//
// K is walked in blocks of 256. For each, the product packs its operands
// on the heap, sized to stay in L2: A's two parts as [2][M'][256] bf16
// rows (tile rows are A's rows, 32 steps of K each), B's as
// [2][128][2 N'] with the pairs of K interleaved (the layout tdpbf16ps
// reads B in), M' and N' rounded up to whole 16-row and 16-column tiles,
// the padding zero. Each 32 x 16 block of C then loads two accumulator
// tiles and walks the block's steps (unrolled): four tiles of A (two rows
// of tiles, both parts) and two of B, six products in eight tile
// registers; an odd last row tile is a 16 x 16 block. A C whose rows or
// columns are not whole tiles is computed in a padded copy and copied back.
//
//===----------------------------------------------------------------------===//

#include "mcc/Transforms/Passes.h"
#include "mcc/Transforms/VectorKernelUtils.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"

#include <map>
#include <tuple>

namespace mcc {
#define GEN_PASS_DEF_AMXMATMUL
#include "mcc/Transforms/Passes.h.inc"
} // namespace mcc

using namespace mlir;
using mcc::knownMultiple;

namespace {

constexpr int64_t kTileRows = 16;    // rows of every tile
constexpr int64_t kTileK = 32;       // bf16 steps of K in an A tile row
constexpr int64_t kBlockRows = 32;   // rows of C per block: two tiles
constexpr int64_t kBlockCols = 16;   // columns of C per block: one tile
constexpr int64_t kKBlock = 256;     // steps of K per pass over C
constexpr int64_t kLanes = 16;       // f32 lanes of a pack vector
constexpr int64_t kPrefetchRows = 8; // rows of B fetched ahead of the pack

int64_t roundUp(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

/// Whether a product of these static 2-D shapes (per batch element) is
/// worth the tiles (mcc::amxTileable), with a unit-stride C.
bool tileable(int64_t m, int64_t n, int64_t k, Value c) {
  return mcc::amxTileable(m, n, k) && mcc::hasUnitInnerStride(c);
}

/// A product on f32 buffers with static shapes of `rank` (2: matmul, 3:
/// batch_matmul) and default indexing maps (a transposed operand keeps the
/// AVX-512 kernels).
bool staticF32Product(linalg::LinalgOp op, unsigned rank) {
  if (!op.hasPureBufferSemantics())
    return false;
  for (Type t : op->getOperandTypes()) {
    auto type = dyn_cast<MemRefType>(t);
    if (!type || !type.hasStaticShape() || !type.getElementType().isF32() ||
        type.getRank() != rank)
      return false;
  }
  return true;
}

/// Rows below which a product whose B is packed on every run keeps the
/// AVX-512 kernels: each tile packs all of its K x N columns of B (both
/// bf16 parts, from wherever B sits), paid for by its few rows.
/// mobilenetv3's 24 x 64 x 3136 convolution ran in 0.109 ms on the tiles,
/// 0.081 ms on the AVX-512 kernels; its products of 40 rows or more ran as
/// fast or faster on the tiles.
constexpr int64_t kMinRowsForPackedB = 32;

bool rewritable(linalg::MatmulOp op) {
  if (!staticF32Product(op, 2) ||
      op.getIndexingMapsArray() != op.getDefaultIndexingMaps(op->getContext()))
    return false;
  auto a = cast<MemRefType>(op.getDpsInputs()[0].getType());
  auto c = cast<MemRefType>(op.getDpsInits()[0].getType());
  if (c.getDimSize(0) < kMinRowsForPackedB &&
      !mcc::isModelWeight(mcc::rootBuffer(op.getDpsInputs()[1])))
    return false;
  return tileable(c.getDimSize(0), c.getDimSize(1), a.getDimSize(1),
                  op.getDpsInits()[0]);
}

bool rewritable(linalg::BatchMatmulOp op) {
  if (!staticF32Product(op, 3) ||
      op.getIndexingMapsArray() != op.getDefaultIndexingMaps(op->getContext()))
    return false;
  auto a = cast<MemRefType>(op.getDpsInputs()[0].getType());
  auto c = cast<MemRefType>(op.getDpsInits()[0].getType());
  return tileable(c.getDimSize(1), c.getDimSize(2), a.getDimSize(2),
                  op.getDpsInits()[0]);
}

/// Erases a zero fill of `c` right before `op`, and says whether there was
/// one: the product then starts its accumulators at zero instead of
/// writing zeros to C and loading them back (resnet50's Winograd products
/// over 28 x 28 images write 3.2 MB of C; K = 64 is one block).
bool absorbZeroFill(Operation *op, Value c) {
  auto fill = dyn_cast_or_null<linalg::FillOp>(op->getPrevNode());
  if (!fill || !fill.hasPureBufferSemantics() || fill.getDpsInits()[0] != c ||
      !matchPattern(fill.getDpsInputs()[0], m_AnyZeroFloat()))
    return false;
  fill->erase();
  return true;
}

/// Element `index` of a static batch of matrices, as a 2-D view.
Value batchElement(OpBuilder &b, Location loc, Value batch, Value index) {
  auto type = cast<MemRefType>(batch.getType());
  SmallVector<OpFoldResult> offsets{index, b.getIndexAttr(0),
                                    b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes{b.getIndexAttr(1),
                                  b.getIndexAttr(type.getDimSize(1)),
                                  b.getIndexAttr(type.getDimSize(2))};
  SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
  auto view = memref::SubViewOp::inferRankReducedResultType(
      {type.getDimSize(1), type.getDimSize(2)}, type, offsets, sizes, strides);
  return memref::SubViewOp::create(b, loc, cast<MemRefType>(view), batch,
                                   offsets, sizes, strides);
}

struct Emitter : mcc::VectorKernelBuilder {
  Emitter(OpBuilder &b, Location loc) : VectorKernelBuilder(b, loc) {}

  /// B's tiles in a weight laid out at compile time (WeightBlob::
  /// setAmxTiles) as [N / 16][K / 32][2][16][16] f32 (bf16 pairs), and the
  /// product's offsets in it (B a subview of the weight); null: packed here.
  Value weightTiles;
  OpFoldResult kOffset, nOffset;
  /// weightTiles is a pack of this run's B in L2 (nothing to fetch ahead).
  bool packedB = false;
  /// C starts at zero (its fill was absorbed): the first K block starts
  /// its accumulators with tile_zero instead of loading C.
  bool zeroInit = false;
  /// A's tiles in a weight laid out at compile time as [M / 16][K / 32][2]
  /// [16][16] f32 (bf16 rows of 32 steps of K), and the product's offsets
  /// in it; null: packed here.
  Value aTiles;
  OpFoldResult aRowOffset, aKOffset;
  /// The elementwise generic after the product, applied as C leaves its
  /// padded copy (emit erases it then; unset: C is copied back as is).
  std::optional<mcc::ProductEpilogue> epilogue;
  bool epilogueApplied = false;

  /// The two bf16 parts of 16 floats.
  std::pair<Value, Value> split(Value x) {
    auto half = VectorType::get({kLanes}, b.getBF16Type());
    Value hi = arith::TruncFOp::create(b, loc, half, x);
    Value rest = arith::SubFOp::create(
        b, loc, x, arith::ExtFOp::create(b, loc, x.getType(), hi));
    return {hi, arith::TruncFOp::create(b, loc, half, rest)};
  }

  Value read(Value mem, Value row, Value col) {
    auto type = VectorType::get({kLanes}, b.getF32Type());
    Value pad = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
    return vector::TransferReadOp::create(b, loc, type, mem,
                                          ValueRange{row, col}, pad);
  }

  /// Columns [k0, k0 + kb) of A's m rows as [2][M'][kBlock] bf16, 16
  /// floats at a time; reads past K are zeros.
  void packA(Value a, Value pack, int64_t m, Value k0, int64_t kb) {
    forLoop(idx(0), idx(m), 1, [&](Value row) {
      forLoop(idx(0), idx(kb), kLanes, [&](Value col) {
        Value from = arith::AddIOp::create(b, loc, k0, col);
        auto [hi, lo] = split(read(a, row, from));
        vector::StoreOp::create(b, loc, hi, pack, ValueRange{idx(0), row, col});
        vector::StoreOp::create(b, loc, lo, pack, ValueRange{idx(1), row, col});
      });
    });
  }

  /// Row tile `block` of A (m x k) in row tiles [M' / 16][K' / 32][2][16]
  /// [32] bf16, the layout of a weight read as A; padding rows and steps
  /// zero (the caller fills).
  void packATiles(Value a, Value tiles, int64_t m, int64_t k, Value block) {
    int64_t kp = roundUp(k, kTileK);
    Value first = arith::MulIOp::create(b, loc, block, idx(kTileRows));
    Value end = arith::MinUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, first, idx(kTileRows)), idx(m));
    forLoop(first, end, 1, [&](Value row) {
      Value inTile = arith::SubIOp::create(b, loc, row, first);
      forLoop(idx(0), idx(kp), kLanes, [&](Value col) {
        auto [hi, lo] = split(read(a, row, col));
        Value step = arith::DivUIOp::create(b, loc, col, idx(kTileK));
        Value at = arith::RemUIOp::create(b, loc, col, idx(kTileK));
        vector::StoreOp::create(b, loc, hi, tiles,
                                ValueRange{block, step, idx(0), inTile, at});
        vector::StoreOp::create(b, loc, lo, tiles,
                                ValueRange{block, step, idx(1), inTile, at});
      });
    });
  }

  /// Step `step` of K (32 rows of B, k x n) in column tiles [N' / 16][K' /
  /// 32][2][16][32] bf16, the layout of a weight read as B (each tile row
  /// a pair of B's rows, interleaved), for every column tile. Rows are read
  /// whole, in order: column tile by column tile, the pack strode over
  /// B's rows and waited on its loads (a fifth of a 160 x 672 x 49
  /// product). Columns past N read as zeros; pairs past K keep the
  /// caller's zero fill.
  void packBTiles(Value bm, Value tiles, int64_t k, int64_t n, Value step) {
    Value zeros = this->zeros(VectorType::get({kLanes}, b.getF32Type()));
    int64_t pairs = roundUp(k, 2) / 2;
    Value first = arith::MulIOp::create(b, loc, step, idx(kTileRows));
    Value end = arith::MinUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, first, idx(kTileRows)),
        idx(pairs));
    forLoop(first, end, 1, [&](Value pair) {
      Value even = arith::MulIOp::create(b, loc, pair, idx(2));
      Value odd = arith::AddIOp::create(b, loc, even, idx(1));
      Value row = arith::SubIOp::create(b, loc, pair, first);
      // The last pair of an odd K has no odd row.
      Value inside =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, odd, idx(k));
      Value safe = arith::MinUIOp::create(b, loc, odd, idx(k - 1));
      forLoop(idx(0), idx(roundUp(n, kBlockCols) / kBlockCols), 1,
              [&](Value block) {
                Value col =
                    arith::MulIOp::create(b, loc, block, idx(kBlockCols));
                Value evenRow = read(bm, even, col);
                Value oddRow = read(bm, safe, col);
                if (k % 2)
                  oddRow =
                      arith::SelectOp::create(b, loc, inside, oddRow, zeros);
                auto [hiEven, loEven] = split(evenRow);
                auto [hiOdd, loOdd] = split(oddRow);
                vector::StoreOp::create(
                    b, loc, vector::InterleaveOp::create(b, loc, hiEven, hiOdd),
                    tiles, ValueRange{block, step, idx(0), row, idx(0)});
                vector::StoreOp::create(
                    b, loc, vector::InterleaveOp::create(b, loc, loEven, loOdd),
                    tiles, ValueRange{block, step, idx(1), row, idx(0)});
              });
    });
  }

  /// Rows [k0, k0 + rows) of B as [2][kBlock / 2][2 N'] bf16, each pair of
  /// rows interleaved (read 16 columns at a time; past N: zeros). An odd
  /// last row pairs with zeros.
  void packB(Value bm, Value pack, Value k0, int64_t rows, int64_t n) {
    int64_t lastRow = cast<MemRefType>(bm.getType()).getDimSize(0) - 1;
    auto storePair = [&](Value pair, Value col, Value even, Value odd) {
      auto [hiEven, loEven] = split(even);
      auto [hiOdd, loOdd] = split(odd);
      Value at = arith::MulIOp::create(b, loc, col, idx(2));
      vector::StoreOp::create(
          b, loc, vector::InterleaveOp::create(b, loc, hiEven, hiOdd), pack,
          ValueRange{idx(0), pair, at});
      vector::StoreOp::create(
          b, loc, vector::InterleaveOp::create(b, loc, loEven, loOdd), pack,
          ValueRange{idx(1), pair, at});
    };
    forLoop(idx(0), idx(rows / 2), 1, [&](Value pair) {
      Value even = arith::AddIOp::create(
          b, loc, k0, arith::MulIOp::create(b, loc, pair, idx(2)));
      Value odd = arith::AddIOp::create(b, loc, even, idx(1));
      // B (a weight streaming from memory) is read some rows ahead: the
      // hardware prefetchers left the pack waiting on every line.
      Value ahead = arith::MinSIOp::create(
          b, loc, arith::AddIOp::create(b, loc, even, idx(kPrefetchRows)),
          idx(lastRow));
      forLoop(idx(0), idx(n), kLanes, [&](Value col) {
        memref::PrefetchOp::create(b, loc, bm, ValueRange{ahead, col},
                                   /*isWrite=*/false, /*localityHint=*/3,
                                   /*isDataCache=*/true);
        Value aheadOdd = arith::MinSIOp::create(
            b, loc, arith::AddIOp::create(b, loc, ahead, idx(1)), idx(lastRow));
        memref::PrefetchOp::create(b, loc, bm, ValueRange{aheadOdd, col},
                                   /*isWrite=*/false, /*localityHint=*/3,
                                   /*isDataCache=*/true);
        storePair(pair, col, read(bm, even, col), read(bm, odd, col));
      });
    });
    if (rows % 2) {
      Value zeros = arith::ConstantOp::create(
          b, loc,
          DenseElementsAttr::get(VectorType::get({kLanes}, b.getF32Type()),
                                 0.0f));
      Value last = arith::AddIOp::create(b, loc, k0, idx(rows - 1));
      forLoop(idx(0), idx(n), kLanes, [&](Value col) {
        storePair(idx(rows / 2), col, read(bm, last, col), zeros);
      });
    }
  }

  /// While a block of rows runs, fetches its share of the weight tiles that
  /// the next K block reads at column n0 (8 steps x 2 parts, 16 KiB
  /// contiguous) into L2: the weight streams from memory, and tile loads
  /// that missed waited for it one tile at a time (bert-base's products
  /// read 9.4 MB weights). Clamped to the weight's last K block.
  void fetchNextBlock(Value m0, Value n0, Value k0, int64_t mp) {
    auto type = cast<MemRefType>(weightTiles.getType());
    int64_t stepsOfK = type.getDimSize(1);
    int64_t lines = kKBlock / kTileK * 2 * 1024 / 64;
    int64_t rowBlocks = roundUp(mp, kBlockRows) / kBlockRows;
    int64_t share = (lines + rowBlocks - 1) / rowBlocks;
    Value kAt = arith::AddIOp::create(
        b, loc, getValueOrCreateConstantIndexOp(b, loc, kOffset), k0);
    Value next = arith::MinSIOp::create(
        b, loc,
        arith::AddIOp::create(b, loc,
                              arith::DivUIOp::create(b, loc, kAt, idx(kTileK)),
                              idx(kKBlock / kTileK)),
        idx(stepsOfK - 1));
    Value block = arith::AddIOp::create(
        b, loc,
        arith::DivUIOp::create(b, loc,
                               getValueOrCreateConstantIndexOp(b, loc, nOffset),
                               idx(kBlockCols)),
        arith::DivUIOp::create(b, loc, n0, idx(kBlockCols)));
    // Line l of the 16 KiB: step l / 32, part l / 16 % 2, row l % 16.
    Value first = arith::MulIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, m0, idx(kBlockRows)),
        idx(share));
    for (int64_t i = 0; i < share; ++i) {
      Value line = arith::MinSIOp::create(
          b, loc, arith::AddIOp::create(b, loc, first, idx(i)), idx(lines - 1));
      Value step = arith::MinSIOp::create(
          b, loc,
          arith::AddIOp::create(b, loc, next,
                                arith::DivUIOp::create(b, loc, line, idx(32))),
          idx(stepsOfK - 1));
      Value part = arith::RemUIOp::create(
          b, loc, arith::DivUIOp::create(b, loc, line, idx(16)), idx(2));
      Value row = arith::RemUIOp::create(b, loc, line, idx(16));
      memref::PrefetchOp::create(b, loc, weightTiles,
                                 ValueRange{block, step, part, row, idx(0)},
                                 /*isWrite=*/false, /*localityHint=*/2,
                                 /*isDataCache=*/true);
    }
  }

  /// C += A * B for one K block of `steps` x 32 (the packs hold it), C (or
  /// its padded copy) in whole 32 x 16 blocks of mp x np, of which the
  /// first m rows are wanted: a last block whose second row tile holds
  /// none of them is a 16 x 16 block (an M of 112 computed 128 rows, and
  /// read A's tiles past its 7 row tiles). The steps are unrolled: tiles
  /// carried by a loop would be block arguments, which the conversion of
  /// the OpenMP regions around them to LLVM does not take.
  void products(Value aPack, Value bPack, Value c, int64_t m, int64_t mp,
                int64_t np, Value k0, int64_t steps, bool fromZero) {
    // The weight's tile block of step 0 and column block of n0.
    Value firstStep, column0;
    if (weightTiles) {
      Value kAt = arith::AddIOp::create(
          b, loc, getValueOrCreateConstantIndexOp(b, loc, kOffset), k0);
      firstStep = arith::DivUIOp::create(b, loc, kAt, idx(kTileK));
      column0 = arith::DivUIOp::create(
          b, loc, getValueOrCreateConstantIndexOp(b, loc, nOffset),
          idx(kBlockCols));
    }
    auto accType = amx::TileType::get({kTileRows, kTileRows}, b.getF32Type());
    auto inType = amx::TileType::get({kTileRows, kTileK}, b.getBF16Type());
    auto rowBlock = [&](Value m0, bool half) {
      Value m1 = arith::AddIOp::create(b, loc, m0, idx(kTileRows));
      forLoop(idx(0), idx(np), kBlockCols, [&](Value n0) {
        Value n2 = arith::MulIOp::create(b, loc, n0, idx(2));
        if (zeroInit && !fromZero) {
          Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                              k0, idx(0));
          scf::IfOp::create(b, loc, first, [&](OpBuilder &then, Location) {
            Value zeros = amx::TileZeroOp::create(then, loc, accType);
            amx::TileStoreOp::create(then, loc, c, ValueRange{m0, n0}, zeros);
            if (!half)
              amx::TileStoreOp::create(then, loc, c, ValueRange{m1, n0}, zeros);
            scf::YieldOp::create(then, loc);
          });
        }
        auto accumulator = [&](Value row) -> Value {
          if (fromZero)
            return amx::TileZeroOp::create(b, loc, accType);
          return amx::TileLoadOp::create(b, loc, accType, c,
                                         ValueRange{row, n0});
        };
        Value c0 = accumulator(m0), c1 = half ? Value() : accumulator(m1);
        if (weightTiles && !packedB)
          fetchNextBlock(m0, n0, k0, mp);
        for (int64_t step = 0; step < steps; ++step) {
          Value kk = idx(step * kTileK), pair = idx(step * kTileK / 2);
          auto loadA = [&](int64_t part, Value row) {
            if (aTiles) {
              Value block = arith::DivUIOp::create(
                  b, loc,
                  arith::AddIOp::create(
                      b, loc,
                      getValueOrCreateConstantIndexOp(b, loc, aRowOffset), row),
                  idx(kTileRows));
              Value kAt = arith::AddIOp::create(
                  b, loc, getValueOrCreateConstantIndexOp(b, loc, aKOffset),
                  k0);
              Value stepAt = arith::AddIOp::create(
                  b, loc, arith::DivUIOp::create(b, loc, kAt, idx(kTileK)),
                  idx(step));
              return amx::TileLoadOp::create(
                         b, loc, inType, aTiles,
                         ValueRange{block, stepAt, idx(part), idx(0), idx(0)})
                  .getResult();
            }
            return amx::TileLoadOp::create(b, loc, inType, aPack,
                                           ValueRange{idx(part), row, kk})
                .getResult();
          };
          auto loadB = [&](int64_t part) {
            if (weightTiles) {
              Value block = arith::AddIOp::create(
                  b, loc, column0,
                  arith::DivUIOp::create(b, loc, n0, idx(kBlockCols)));
              Value stepAt =
                  arith::AddIOp::create(b, loc, firstStep, idx(step));
              return amx::TileLoadOp::create(
                         b, loc, inType, weightTiles,
                         ValueRange{block, stepAt, idx(part), idx(0), idx(0)})
                  .getResult();
            }
            return amx::TileLoadOp::create(b, loc, inType, bPack,
                                           ValueRange{idx(part), pair, n2})
                .getResult();
          };
          auto mul = [&](Value x, Value y, Value into) {
            return amx::TileMulFOp::create(b, loc, accType, x, y, into)
                .getResult();
          };
          // Live tiles stay within the eight registers: both accumulators,
          // A's high rows and B's two parts, then A's low rows with B's
          // high part.
          Value ah0 = loadA(0, m0);
          Value bh = loadB(0), bl = loadB(1);
          if (half) {
            c0 = mul(ah0, bh, c0);
            c0 = mul(ah0, bl, c0);
            c0 = mul(loadA(1, m0), bh, c0);
            continue;
          }
          Value ah1 = loadA(0, m1);
          c0 = mul(ah0, bh, c0);
          c1 = mul(ah1, bh, c1);
          c0 = mul(ah0, bl, c0);
          c1 = mul(ah1, bl, c1);
          c0 = mul(loadA(1, m0), bh, c0);
          c1 = mul(loadA(1, m1), bh, c1);
        }
        amx::TileStoreOp::create(b, loc, c, ValueRange{m0, n0}, c0);
        if (!half)
          amx::TileStoreOp::create(b, loc, c, ValueRange{m1, n0}, c1);
      });
    };
    int64_t wanted = roundUp(m, kTileRows),
            whole = wanted / kBlockRows * kBlockRows;
    forLoop(idx(0), idx(whole), kBlockRows,
            [&](Value m0) { rowBlock(m0, /*half=*/false); });
    if (wanted > whole)
      rowBlock(idx(whole), /*half=*/true);
  }

  /// C's m x n values from its padded copy through the epilogue into the
  /// epilogue's outputs (and into C when something else reads it), 16
  /// columns at a time: the copy back and the epilogue's own pass over C
  /// were two more passes over a tile that is still in L1 or L2.
  void copyBackThroughEpilogue(Value target, Value c, int64_t m, int64_t n) {
    auto vecType = VectorType::get({kLanes}, b.getF32Type());
    int64_t whole = n / kLanes * kLanes;
    auto columns = [&](Value row, Value col, Value mask) {
      Value v = mask ? vector::MaskedLoadOp::create(b, loc, vecType, target,
                                                    ValueRange{row, col}, mask,
                                                    zeros(vecType))
                           .getResult()
                     : vector::LoadOp::create(b, loc, vecType, target,
                                              ValueRange{row, col})
                           .getResult();
      SmallVector<Value> outs(epilogue->op.getDpsInits());
      SmallVector<Value> values =
          mcc::applyProductEpilogue(b, loc, *epilogue, v, row, col, mask);
      if (epilogue->storeC) {
        outs.push_back(c);
        values.push_back(v);
      }
      for (auto [value, out] : llvm::zip(values, outs)) {
        if (mask)
          vector::MaskedStoreOp::create(b, loc, out, ValueRange{row, col}, mask,
                                        value);
        else
          vector::StoreOp::create(b, loc, value, out, ValueRange{row, col});
      }
    };
    forLoop(idx(0), idx(m), 1, [&](Value row) {
      forLoop(idx(0), idx(whole), kLanes,
              [&](Value col) { columns(row, col, Value()); });
      if (whole < n)
        columns(row, idx(whole), mask(vecType, idx(n - whole)));
    });
    epilogueApplied = true;
  }

  /// The whole product, K block by K block: each block's packs (A: M' x
  /// 256, B: 256 x N', both parts) are written and read while they sit in
  /// L2. Packing all of K first wrote bert-base's 9.4 MB weight out to
  /// memory and read it back (the product ran 1.7 times slower than the
  /// AVX-512 kernels).
  void emit(Value a, Value bm, Value c, int64_t m, int64_t n, int64_t k) {
    // (With aTiles, M is a whole number of 16-row tiles or the tiles hold
    // zero rows up to the next one.)
    int64_t mp = roundUp(m, kTileRows), np = roundUp(n, kBlockCols);
    Type bf16 = b.getBF16Type();
    int64_t kBlock = std::min(kKBlock, roundUp(k, kTileK));
    Value aPack = aTiles ? Value()
                         : memref::AllocOp::create(
                               b, loc, MemRefType::get({2, mp, kBlock}, bf16));
    Value bPack =
        weightTiles
            ? Value()
            : memref::AllocOp::create(
                  b, loc, MemRefType::get({2, kBlock / 2, 2 * np}, bf16));
    Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(bf16));
    // A's rows past M stay zero (their results are dropped, but garbage
    // could be NaN or denormal); so do B's pairs past K in a last block
    // whose K is not a whole number of tile steps.
    // Only the rows and pairs the packs leave unwritten are zeroed: a
    // whole-buffer fill of B's pack (K = 112 or 120: 2 x 64 x 2N' bf16 per
    // tile) cost more than the pack itself.
    if (aPack && mp != m)
      linalg::FillOp::create(
          b, loc, zero,
          memref::SubViewOp::create(b, loc, aPack, ArrayRef<int64_t>{0, m, 0},
                                    ArrayRef<int64_t>{2, mp - m, kBlock},
                                    ArrayRef<int64_t>{1, 1, 1})
              .getResult());
    Value target = c;
    bool padded = mp != m || np != n;
    if (padded) {
      target = memref::AllocOp::create(
          b, loc, MemRefType::get({mp, np}, b.getF32Type()));
      // (A C starting at zero is written whole by the first K block.)
      if (!zeroInit) {
        Value zeroF32 = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
        linalg::FillOp::create(b, loc, zeroF32, target);
        Value inner = memref::SubViewOp::create(
            b, loc, target, ArrayRef<int64_t>{0, 0}, ArrayRef<int64_t>{m, n},
            ArrayRef<int64_t>{1, 1});
        linalg::CopyOp::create(b, loc, c, inner);
      }
    }
    auto block = [&](Value k0, int64_t rows, bool first) {
      if (aPack)
        packA(a, aPack, m, k0, roundUp(rows, kTileK));
      if (!weightTiles) {
        // (packB writes ceil(rows / 2) pairs, an odd last row paired with
        // zeros.)
        if (int64_t written = (rows + 1) / 2, pairs = roundUp(rows, kTileK) / 2;
            written < pairs)
          linalg::FillOp::create(
              b, loc, zero,
              memref::SubViewOp::create(
                  b, loc, bPack, ArrayRef<int64_t>{0, written, 0},
                  ArrayRef<int64_t>{2, pairs - written, 2 * np},
                  ArrayRef<int64_t>{1, 1, 1})
                  .getResult());
        packB(bm, bPack, k0, rows, n);
      }
      products(aPack, bPack, target, m, mp, np, k0,
               roundUp(rows, kTileK) / kTileK, first && zeroInit);
    };
    // One block starts from zero; of several, the first zeroes each C
    // block in L1 before loading it (a peeled first block doubled the
    // unrolled code: bert-base compiled in 30 s instead of 17).
    if (k <= kKBlock) {
      block(idx(0), k, /*first=*/true);
    } else {
      int64_t whole = k / kKBlock * kKBlock;
      forLoop(idx(0), idx(whole), kKBlock,
              [&](Value k0) { block(k0, kKBlock, false); });
      if (k > whole)
        block(idx(whole), k - whole, false);
    }
    if (padded && epilogue) {
      copyBackThroughEpilogue(target, c, m, n);
      memref::DeallocOp::create(b, loc, target);
    } else if (padded) {
      Value inner = memref::SubViewOp::create(
          b, loc, target, ArrayRef<int64_t>{0, 0}, ArrayRef<int64_t>{m, n},
          ArrayRef<int64_t>{1, 1});
      linalg::CopyOp::create(b, loc, inner, c);
      memref::DeallocOp::create(b, loc, target);
    }
    if (aPack)
      memref::DeallocOp::create(b, loc, aPack);
    if (bPack)
      memref::DeallocOp::create(b, loc, bPack);
  }
};

/// Whether the B operand `use` reads whole tiles of a K x N weight: a
/// rewritable product's B, directly or through a unit-stride subview whose
/// K offset is a multiple of 32 and whose N offset and width are multiples
/// of 16.
bool readsWholeTiles(OpOperand &use) {
  Operation *user = use.getOwner();
  if (auto sub = dyn_cast<memref::SubViewOp>(user)) {
    ArrayRef<int64_t> sizes = sub.getStaticSizes();
    if (sub.getType().getRank() != 2 || !sub.hasUnitStride() ||
        ShapedType::isDynamic(sizes[0]) || ShapedType::isDynamic(sizes[1]) ||
        sizes[1] % kBlockCols || sizes[0] % kTileK ||
        !knownMultiple(sub.getMixedOffsets()[0], kTileK) ||
        !knownMultiple(sub.getMixedOffsets()[1], kBlockCols) ||
        sub->use_empty())
      return false;
    return llvm::all_of(sub->getUses(), [](OpOperand &inner) {
      auto mm = dyn_cast<linalg::MatmulOp>(inner.getOwner());
      return mm && inner.getOperandNumber() == 1 && rewritable(mm);
    });
  }
  auto mm = dyn_cast<linalg::MatmulOp>(user);
  return mm && use.getOperandNumber() == 1 && rewritable(mm);
}

/// Whether `use` reads an M x K weight (or its 2-D collapse) as A of a
/// rewritten product in whole tiles: the product's A itself, or a
/// unit-stride subview at multiples of 16 rows and 32 steps of K, of whole
/// 16-row tiles (the tiles hold no padding rows).
bool readsWholeATiles(OpOperand &use) {
  auto isA = [](OpOperand &u) {
    auto mm = dyn_cast<linalg::MatmulOp>(u.getOwner());
    return mm && u.getOperandNumber() == 0 && rewritable(mm) &&
           cast<MemRefType>(u.get().getType()).getDimSize(0) % kTileRows == 0;
  };
  if (auto sub = dyn_cast<memref::SubViewOp>(use.getOwner())) {
    ArrayRef<int64_t> sizes = sub.getStaticSizes();
    if (sub.getType().getRank() != 2 || !sub.hasUnitStride() ||
        ShapedType::isDynamic(sizes[0]) || ShapedType::isDynamic(sizes[1]) ||
        sizes[0] % kTileRows || sizes[1] % kTileK ||
        !knownMultiple(sub.getMixedOffsets()[0], kTileRows) ||
        !knownMultiple(sub.getMixedOffsets()[1], kTileK) || sub->use_empty())
      return false;
    return llvm::all_of(sub->getUses(), isA);
  }
  return isA(use);
}

/// Whether `use` of an E x M x K weight is A of batch products, in whole
/// elements: the weight itself, or a subview of whole elements.
bool readsWholeBatchATiles(OpOperand &use) {
  auto isA = [](OpOperand &u) {
    auto bmm = dyn_cast<linalg::BatchMatmulOp>(u.getOwner());
    return bmm && u.getOperandNumber() == 0 && rewritable(bmm);
  };
  if (auto sub = dyn_cast<memref::SubViewOp>(use.getOwner())) {
    auto source = cast<MemRefType>(sub.getSource().getType());
    ArrayRef<int64_t> sizes = sub.getStaticSizes();
    if (sub.getType().getRank() != 3 || !sub.hasUnitStride() ||
        sizes[1] != source.getDimSize(1) || sizes[2] != source.getDimSize(2) ||
        !isConstantIntValue(sub.getMixedOffsets()[1], 0) ||
        !isConstantIntValue(sub.getMixedOffsets()[2], 0) || sub->use_empty())
      return false;
    return llvm::all_of(sub->getUses(), isA);
  }
  return isA(use);
}

/// A weight's record laid out as tiles (WeightBlob::setAmxTiles), seen as
/// [blocks][steps of K][2 parts][16][16] f32: each 1 KiB tile's rows are 64
/// bytes, as many bf16 (or pairs) as `amx.tile_load` reads from an f32
/// memref.
Value tileView(OpBuilder &b, Value weight, int64_t blocks, int64_t steps) {
  SmallVector<int64_t> shape{blocks, steps, 2, kTileRows, kBlockCols};
  SmallVector<int64_t> strides{steps * 2 * 256, 2 * 256, 256, 16, 1};
  return memref::ReinterpretCastOp::create(
      b, weight.getLoc(), MemRefType::get(shape, b.getF32Type()), weight,
      /*offset=*/0, shape, strides);
}

/// The value a product's operand views (through one subview) and the
/// view's offsets in it (zeros: the operand itself).
std::pair<Value, SmallVector<OpFoldResult>> sourceOf(OpBuilder &b, Value v) {
  if (auto sub = v.getDefiningOp<memref::SubViewOp>())
    return {sub.getSource(), sub.getMixedOffsets()};
  return {v, SmallVector<OpFoldResult>(2, b.getIndexAttr(0))};
}

struct AmxMatmulPass : mcc::impl::AmxMatmulBase<AmxMatmulPass> {
  using AmxMatmulBase::AmxMatmulBase;

  /// Weights (arguments past `mcc.num_inputs`) read only as B of the
  /// products rewritten here, in whole tiles, K a multiple of 32 and N of
  /// 16: their records are written as bf16x3 tiles at compile time (the
  /// function is marked `mcc.amx_weights` = [weight index, 1, ...]) and
  /// read through a [N / 16][K / 32][2][16][16] f32 view. Likewise weights
  /// read only as A in whole 32-row blocks (a convolution's, through its
  /// collapse to M x K; marked [weight index, 2]), as [M / 16][K / 32][2]
  /// [16][16] (aViews): each column tile of a product packed them again.
  /// Packing a weight on every run read it from memory and wrote its tiles back
  /// (bert-base's products 1.3 times the AVX-512 kernels' time).
  llvm::DenseMap<Value, Value> aViews;
  /// Weights read only as A of batch products (Winograd's transformed
  /// weights, E x M x K), in whole elements of whole 32-row blocks: laid
  /// out as the row tiles of their (E * M) x K view (marked [index, 3]).
  llvm::DenseMap<Value, Value> batchAViews;
  /// Operands packed once per tile loop, by (loop, operand, as A).
  std::map<std::tuple<Operation *, void *, bool>, Value> shared;

  /// The tiles of `v` (defined outside `loop`, read whole by every tile of
  /// it), packed once on the heap before the loop and freed after it: as A,
  /// row tiles [M' / 16][K' / 32][2][16][32] bf16 (the layout of a weight
  /// read as A); as B, column tiles [N' / 16][K' / 32][2][16][32] (a weight
  /// read as B). Packed in a parallel loop: one thread packing left the
  /// others waiting (bert-base at two threads 50.9 -> 49.5 ms).
  Value sharedTiles(scf::ForallOp loop, Value v, bool asA) {
    Value &tiles = shared[{loop.getOperation(), v.getAsOpaquePointer(), asA}];
    if (tiles)
      return tiles;
    OpBuilder b(loop);
    Location loc = loop.getLoc();
    auto type = cast<MemRefType>(v.getType());
    int64_t k = type.getDimSize(asA ? 1 : 0);
    int64_t other = type.getDimSize(asA ? 0 : 1);
    int64_t padded = roundUp(other, asA ? kTileRows : kBlockCols);
    int64_t kp = roundUp(k, kTileK);
    tiles = memref::AllocOp::create(
        b, loc,
        MemRefType::get({padded / kTileRows, kp / kTileK, 2, kTileRows, kTileK},
                        b.getBF16Type()));
    // Only what the pack leaves unwritten is zeroed (a whole-buffer fill
    // was 7% of a 160 x 672 x 49 product at two threads): A's padding
    // rows, from the tile that holds row M; B's padding steps, from the
    // step that holds row K (the pack reads columns past N as zeros).
    int64_t unwritten = asA ? (padded != other ? other / kTileRows : -1)
                            : (kp != k ? k / kTileK : -1);
    if (unwritten >= 0) {
      auto tilesType = cast<MemRefType>(tiles.getType());
      SmallVector<OpFoldResult> offsets(5, b.getIndexAttr(0)),
          strides(5, b.getIndexAttr(1));
      SmallVector<OpFoldResult> sizes =
          getAsIndexOpFoldResult(b.getContext(), tilesType.getShape());
      unsigned dim = asA ? 0 : 1;
      offsets[dim] = b.getIndexAttr(unwritten);
      sizes[dim] = b.getIndexAttr(tilesType.getDimSize(dim) - unwritten);
      Value rest =
          memref::SubViewOp::create(b, loc, tiles, offsets, sizes, strides);
      Value zero =
          arith::ConstantOp::create(b, loc, b.getZeroAttr(b.getBF16Type()));
      linalg::FillOp::create(b, loc, zero, rest);
    }
    // A in parallel over its row tiles, B over its steps of K (each reads
    // whole rows).
    Value block =
        mcc::beginParallelLoop(b, loc, asA ? padded / kTileRows : kp / kTileK);
    if (asA)
      Emitter(b, loc).packATiles(v, tiles, other, k, block);
    else
      Emitter(b, loc).packBTiles(v, tiles, k, other, block);
    b.setInsertionPointAfter(loop);
    memref::DeallocOp::create(b, loc, tiles);
    return tiles;
  }

  llvm::DenseMap<Value, Value> tileWeights() {
    llvm::DenseMap<Value, Value> views;
    aViews.clear();
    batchAViews.clear();
    shared.clear();
    func::FuncOp fn = getOperation();
    auto numInputs = fn->getAttrOfType<IntegerAttr>("mcc.num_inputs");
    if (!numInputs || fn.isExternal())
      return views;
    OpBuilder b = OpBuilder::atBlockBegin(&fn.getBody().front());
    SmallVector<int64_t> marks;
    for (BlockArgument arg : fn.getArguments()) {
      auto type = dyn_cast<MemRefType>(arg.getType());
      if (arg.getArgNumber() < numInputs.getInt() || !type ||
          type.getRank() != 2 || !type.hasStaticShape() ||
          !type.getElementType().isF32() || !type.getLayout().isIdentity() ||
          type.getDimSize(0) % kTileK || type.getDimSize(1) % kBlockCols ||
          arg.use_empty() || !llvm::all_of(arg.getUses(), [](OpOperand &use) {
            return readsWholeTiles(use);
          }))
        continue;
      views[arg] = tileView(b, arg, type.getDimSize(1) / kBlockCols,
                            type.getDimSize(0) / kTileK);
      marks.append({arg.getArgNumber() - numInputs.getInt(), 1});
    }
    // Weights read as A (a convolution's, M x C*kh*kw): their 2-D view,
    // the arguments itself or its collapse, maps to the tiles.
    for (BlockArgument arg : fn.getArguments()) {
      auto type = dyn_cast<MemRefType>(arg.getType());
      if (arg.getArgNumber() < numInputs.getInt() || views.count(arg) ||
          !type || type.getRank() < 2 || !type.hasStaticShape() ||
          !type.getElementType().isF32() || !type.getLayout().isIdentity() ||
          arg.use_empty())
        continue;
      int64_t m = type.getDimSize(0), k = type.getNumElements() / m;
      if (m % kTileRows || k % kTileK)
        continue;
      // The 2-D values the products read: the argument, or collapses of
      // it to M x K.
      SmallVector<Value> flat;
      bool ok = true;
      for (OpOperand &use : arg.getUses()) {
        auto collapse = dyn_cast<memref::CollapseShapeOp>(use.getOwner());
        if (type.getRank() == 2 && !collapse) {
          ok &= readsWholeATiles(use);
          continue;
        }
        if (!collapse || collapse.getResultType().getRank() != 2 ||
            collapse.getResultType().getDimSize(0) != m) {
          ok = false;
          break;
        }
        flat.push_back(collapse.getResult());
        for (OpOperand &inner : collapse->getUses())
          ok &= readsWholeATiles(inner);
      }
      if (!ok)
        continue;
      if (type.getRank() == 2)
        flat.push_back(arg);
      Value view = tileView(b, arg, m / kTileRows, k / kTileK);
      for (Value v : flat)
        aViews[v] = view;
      marks.append({arg.getArgNumber() - numInputs.getInt(), 2});
    }
    for (BlockArgument arg : fn.getArguments()) {
      auto type = dyn_cast<MemRefType>(arg.getType());
      if (arg.getArgNumber() < numInputs.getInt() || !type ||
          type.getRank() != 3 || !type.hasStaticShape() ||
          !type.getElementType().isF32() || !type.getLayout().isIdentity() ||
          type.getDimSize(1) % kBlockRows || type.getDimSize(2) % kTileK ||
          arg.use_empty() || !llvm::all_of(arg.getUses(), [](OpOperand &use) {
            return readsWholeBatchATiles(use);
          }))
        continue;
      batchAViews[arg] =
          tileView(b, arg, type.getDimSize(0) * type.getDimSize(1) / kTileRows,
                   type.getDimSize(2) / kTileK);
      marks.append({arg.getArgNumber() - numInputs.getInt(), 3});
    }
    if (!marks.empty())
      fn->setAttr("mcc.amx_weights", b.getDenseI64ArrayAttr(marks));
    return views;
  }

  void runOnOperation() override {
    SmallVector<linalg::MatmulOp> ops;
    getOperation().walk([&](linalg::MatmulOp op) {
      if (rewritable(op))
        ops.push_back(op);
    });
    SmallVector<linalg::BatchMatmulOp> batches;
    getOperation().walk([&](linalg::BatchMatmulOp op) {
      if (rewritable(op))
        batches.push_back(op);
    });
    llvm::DenseMap<Value, Value> weights = tileWeights();
    // A batch (attention's heads, Winograd's 16 transformed products): the
    // same product per element, in a loop.
    for (linalg::BatchMatmulOp op : batches) {
      OpBuilder b(op);
      Location loc = op.getLoc();
      auto cType = cast<MemRefType>(op.getDpsInits()[0].getType());
      int64_t count = cType.getDimSize(0);
      bool zeroInit = absorbZeroFill(op, op.getDpsInits()[0]);
      auto [aSource, aOffsets] = sourceOf(b, op.getDpsInputs()[0]);
      Value aTiles = batchAViews.lookup(aSource);
      int64_t m = cType.getDimSize(1);
      Value lb = arith::ConstantIndexOp::create(b, loc, 0);
      Value ub = arith::ConstantIndexOp::create(b, loc, count);
      Value one = arith::ConstantIndexOp::create(b, loc, 1);
      scf::ForOp::create(
          b, loc, lb, ub, one, ValueRange{},
          [&](OpBuilder &, Location, Value i, ValueRange) {
            Value a = batchElement(b, loc, op.getDpsInputs()[0], i);
            Value bm = batchElement(b, loc, op.getDpsInputs()[1], i);
            Value c = batchElement(b, loc, op.getDpsInits()[0], i);
            Emitter emitter(b, loc);
            emitter.zeroInit = zeroInit;
            if (aTiles) {
              // Element i of the batch is rows (first + i) * M of the
              // weight's (E * M) x K tiles.
              Value element = arith::AddIOp::create(
                  b, loc, getValueOrCreateConstantIndexOp(b, loc, aOffsets[0]),
                  i);
              emitter.aTiles = aTiles;
              emitter.aRowOffset =
                  arith::MulIOp::create(
                      b, loc, element,
                      arith::ConstantIndexOp::create(b, loc, m))
                      .getResult();
              emitter.aKOffset = b.getIndexAttr(0);
            }
            emitter.emit(a, bm, c, cType.getDimSize(1), cType.getDimSize(2),
                         cast<MemRefType>(a.getType()).getDimSize(1));
            scf::YieldOp::create(b, loc);
          });
      op->erase();
    }
    for (linalg::MatmulOp op : ops) {
      OpBuilder b(op);
      Emitter emitter(b, op.getLoc());
      Value a = op.getDpsInputs()[0], bm = op.getDpsInputs()[1],
            c = op.getDpsInits()[0];
      emitter.zeroInit = absorbZeroFill(op, c);
      auto [weight, offsets] = sourceOf(b, bm);
      auto loop = op->getParentOfType<scf::ForallOp>();
      if (Value tiles = weights.lookup(weight)) {
        emitter.weightTiles = tiles;
        emitter.kOffset = offsets[0];
        emitter.nOffset = offsets[1];
      } else if (loop && loop.isDefinedOutsideOfLoop(bm)) {
        // A B that every tile of a tile loop reads whole (the activation of
        // a convolution whose output channels are tiled): each row tile
        // packed it again, K block by K block.
        emitter.weightTiles = sharedTiles(loop, bm, /*asA=*/false);
        emitter.packedB = true;
        emitter.kOffset = b.getIndexAttr(0);
        emitter.nOffset = b.getIndexAttr(0);
      }
      auto [aSource, aOffsets] = sourceOf(b, a);
      if (Value tiles = aViews.lookup(aSource)) {
        emitter.aTiles = tiles;
        emitter.aRowOffset = aOffsets[0];
        emitter.aKOffset = aOffsets[1];
      } else if (loop && loop.isDefinedOutsideOfLoop(a)) {
        // An A that every tile of a tile loop reads whole (the activation
        // of a linear layer whose columns are tiled) is packed once, before
        // the loop: each of bert-base's 12 column tiles packed it again,
        // 0.85 of a 3.3 ms product.
        emitter.aTiles = sharedTiles(loop, a, /*asA=*/true);
        emitter.aRowOffset = b.getIndexAttr(0);
        emitter.aKOffset = b.getIndexAttr(0);
      }
      emitter.epilogue = mcc::matchProductEpilogue(op, c, nullptr);
      auto cType = cast<MemRefType>(c.getType());
      emitter.emit(a, bm, c, cType.getDimSize(0), cType.getDimSize(1),
                   cast<MemRefType>(a.getType()).getDimSize(1));
      if (emitter.epilogueApplied)
        emitter.epilogue->op->erase();
      op->erase();
    }
  }
};

} // namespace
