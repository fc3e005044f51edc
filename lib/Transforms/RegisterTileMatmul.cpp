//===- RegisterTileMatmul.cpp - f32 matmuls as register-blocked kernels ---===//
//
// A buffer-level linalg.matmul / batch_matmul C += A * B becomes loops around
// a microkernel that keeps a rows x (vectors * lanes) block of C in vector
// registers while it walks K: each step loads one row segment of B, and
// broadcasts one element of A per row into a fused multiply-add. K is split
// into blocks, and each block's B panel (k-block x columns of one register
// block) is first copied to a contiguous stack buffer that stays in L1 and
// serves every row block. Several neighbouring panels are copied together,
// row by row of B: a row segment of a few hundred bytes streams from memory,
// where one panel's 64-byte segments, rows kilobytes apart, each missed the
// cache and the TLB (the copy was a fifth of GPT-2's matmul time).
// Leftover rows run in smaller blocks (4, 2, 1 rows); leftover columns use
// masked loads and stores.
//
// A weight (an argument of the model function past its inputs) that is only
// ever B of such products, in whole register blocks of columns, is not
// copied at all: the pass marks it `mcc.packed_weights` and reads it as
// [N / nr][K][nr] panels, the layout the compiler writes its record in
// (docs/design/0018). The copy was a tenth to a third of a product's time,
// repeated on every run for data that never changes. A B that several
// tiles of the same tile loop read whole (a tall convolution product's
// activation: every 128-row tile of a 1024 x 1024 x 196 product packed it
// again) is packed once before the loop into a heap buffer of the same
// panel layout, which those tiles read as they read a pre-packed weight.
// With a static M and K of at least a K block, the copy loop goes: the
// first row block of each panel reads B in place and fills the panel's
// stack slot as it computes (docs/design/0022).
//
// Memory the kernels will wait on is fetched while a K loop runs: a
// weight one row block ahead, into L2 (the next pre-packed panel of B, the
// next rows of A), and before the last K loop the lines an epilogue reads
// and writes, or C's lines where the product starts from its fill.
//
//===----------------------------------------------------------------------===//

#include "mcc/Transforms/ContractionUtils.h"
#include "mcc/Transforms/Passes.h"
#include "mcc/Transforms/VectorKernelUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"

#include <map>

namespace mcc {
#define GEN_PASS_DEF_REGISTERTILEMATMUL
#include "mcc/Transforms/Passes.h.inc"
} // namespace mcc

using namespace mlir;
using mcc::hasUnitInnerStride;
using mcc::knownMultiple;
using mcc::readElsewhere;
using mcc::rootBuffer;
using mcc::vectorizableBody;

namespace {

struct KernelShape {
  int64_t rows, vectors, lanes, kBlock, panels;
};

/// At most this many trailing columns run as dot products (see
/// dotTailColumns); each costs a quarter of a masked vector column or less.
constexpr int64_t kMaxDotColumns = 4;

/// Products with a shorter K keep `vectors` where `weight-a-vectors` would
/// widen their blocks.
constexpr int64_t kWideMinK = 128;

/// The L1 data cache's associativity, and the distance at which its set
/// index repeats (32 KiB, 8-way, on Zen 4 and Skylake): rows of A a multiple
/// of kL1SetPeriod bytes apart all fall in one set.
constexpr int64_t kL1Ways = 8, kL1SetPeriod = 4096;

/// Whether A's rows are a multiple of kL1SetPeriod bytes apart (a K of 1024,
/// 2048 or 3072 floats): more than kL1Ways rows of a register block then
/// evict each other from the L1 every K step. bert-base's FFN down products
/// (128 x 768, K = 3072) ran 12-15% slower in 12-row blocks than in 8-row
/// ones on Zen 4 (design 0028); with K = 768 the two were level.
bool rowsShareL1Set(Value a) {
  auto type = cast<MemRefType>(a.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  if (type.getRank() < 2 || failed(type.getStridesAndOffset(strides, offset)))
    return false;
  int64_t rowStride = strides[type.getRank() - 2];
  int64_t bytes = type.getElementTypeBitWidth() / 8;
  return !ShapedType::isDynamic(rowStride) &&
         rowStride * bytes % kL1SetPeriod == 0;
}

/// Products of at most this many row blocks read B in place (no panel).
constexpr int64_t kDirectRowBlocks = 3;

/// Vector registers of the widest ISA the kernel is shaped for (AVX-512's
/// 32; a 6 x 16 AVX2 block never widens).
constexpr int64_t kVectorRegisters = 32;

/// The last columns of C computed as dot products along K instead of by the
/// register-blocked kernel, or 0: a static N that leaves 1 to 4 columns past
/// a whole number of vectors (N = 49 or 196 of a late CNN stage) spent a
/// full masked vector per row and K step on them, a quarter of the work at
/// N = 49. Needs A's rows contiguous along K and a static K of at least a
/// few vectors.
int64_t dotTailColumns(Value a, Value c, int64_t lanes) {
  auto aType = cast<MemRefType>(a.getType());
  auto cType = cast<MemRefType>(c.getType());
  int64_t n = cType.getShape().back(), k = aType.getShape().back();
  SmallVector<int64_t> strides;
  int64_t offset;
  if (ShapedType::isDynamic(n) || ShapedType::isDynamic(k) || k < 4 * lanes ||
      failed(aType.getStridesAndOffset(strides, offset)) || strides.back() != 1)
    return 0;
  int64_t tail = n % lanes;
  return tail <= kMaxDotColumns && n > tail ? tail : 0;
}

/// The stack buffer for packed B panels of C's product, or null where the
/// kernel reads B in place: with at most one row block (a matrix-vector
/// product such as a classifier at batch 1) each panel would be read once
/// after packing. A static N narrower than `panels` blocks packs fewer.
Value allocatePack(OpBuilder &b, Location loc, Value c, KernelShape shape) {
  auto type = cast<MemRefType>(c.getType());
  unsigned r = type.getRank();
  int64_t m = type.getDimSize(r - 2), n = type.getDimSize(r - 1);
  if (!ShapedType::isDynamic(m) && m <= shape.rows)
    return Value();
  int64_t nr = shape.vectors * shape.lanes;
  int64_t panels = shape.panels;
  if (!ShapedType::isDynamic(n))
    panels = std::max<int64_t>(1, std::min(panels, (n + nr - 1) / nr));
  return memref::AllocaOp::create(
      b, loc, MemRefType::get({panels, shape.kBlock, nr}, b.getF32Type()));
}

/// Emits the loops for C[batch..., m, n] += A[batch..., m, k] * B[batch...,
/// k, n] with the leading `batch` indices fixed; a 2-D A (weights shared by
/// the batch) is indexed without them. B is packed into `pack`
/// (allocatePack's), or read in place when that is null.
class MatmulEmitter : mcc::VectorKernelBuilder {
public:
  MatmulEmitter(OpBuilder &b, Location loc, Value a, Value bm, Value c,
                ValueRange batch, Value pack, KernelShape shape)
      : VectorKernelBuilder(b, loc), a(a), bm(bm), c(c), pack(pack),
        direct(!pack), batch(batch.begin(), batch.end()), shape(shape) {
    vecType = VectorType::get({shape.lanes}, b.getF32Type());
    maskType = VectorType::get({shape.lanes}, b.getI1Type());
  }

  void emit() {
    int64_t nr = shape.vectors * shape.lanes;
    unsigned r = cast<MemRefType>(c.getType()).getRank();
    Value M = memref::DimOp::create(b, loc, c, r - 2);
    int64_t staticN = cast<MemRefType>(c.getType()).getShape().back();
    int64_t tail = dotPack ? dotTailColumns(a, c, shape.lanes) : 0;
    // The register-blocked kernel covers the columns before the tail.
    Value N = tail ? idx(staticN - tail)
                   : memref::DimOp::create(b, loc, c, r - 1).getResult();
    Value K = memref::DimOp::create(
        b, loc, a, cast<MemRefType>(a.getType()).getRank() - 1);
    lastK = arith::SubIOp::create(b, loc, K, idx(1));
    bool hasEpilogue = epilogue.has_value();
    if (tail && !dotPackReady)
      packDotColumns(K, staticN - tail, tail);
    Value mFull = roundDown(M, shape.rows);
    Value nFull = roundDown(N, nr);
    fullColumns = nFull;
    int64_t chunk = direct
                        ? shape.panels * nr
                        : cast<MemRefType>(pack.getType()).getDimSize(0) * nr;
    if (fusedPack)
      chunk = nr;
    forLoop(idx(0), K, shape.kBlock, [&](Value k0) {
      Value kEnd = arith::MinSIOp::create(
          b, loc, arith::AddIOp::create(b, loc, k0, idx(shape.kBlock)), K);
      if (hasEpilogue)
        lastBlock =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, kEnd, K);
      // Full column blocks, `panels` of them packed at a time, then the
      // masked remainder.
      forLoop(idx(0), nFull, chunk, [&](Value c0) {
        Value cEnd = arith::MinSIOp::create(
            b, loc, arith::AddIOp::create(b, loc, c0, idx(chunk)), nFull);
        packPanels(k0, kEnd, c0, cEnd, Value());
        auto columnBlock = [&](Value n0, int64_t rows, Value m0, bool packing) {
          Value panel = arith::DivUIOp::create(
              b, loc, arith::SubIOp::create(b, loc, n0, c0), idx(nr));
          kernel(rows, m0, n0, Value(), k0, kEnd, panel, packing);
        };
        if (rowsOuter(K)) {
          rowBlocks(mFull, M, [&](int64_t rows, Value m0, bool packing) {
            forLoop(c0, cEnd, nr,
                    [&](Value n0) { columnBlock(n0, rows, m0, packing); });
          });
          return;
        }
        forLoop(c0, cEnd, nr, [&](Value n0) {
          rowBlocks(mFull, M, [&](int64_t rows, Value m0, bool packing) {
            columnBlock(n0, rows, m0, packing);
          });
        });
      });
      Value hasRest =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, nFull, N);
      scf::IfOp::create(b, loc, hasRest, [&](OpBuilder &, Location) {
        // A static remainder of at most one vector (N = 49 or 196 of a
        // late CNN stage) runs one vector wide on as many accumulators,
        // rows x vectors: the full-width block spent half or more of its
        // FMAs on masked-off lanes.
        KernelShape full = shape;
        if (!ShapedType::isDynamic(staticN) &&
            (staticN - tail) % nr <= shape.lanes) {
          shape.rows *= shape.vectors;
          shape.vectors = 1;
        }
        Value rest = arith::SubIOp::create(b, loc, N, nFull);
        Value end = arith::AddIOp::create(b, loc, nFull,
                                          idx(shape.vectors * shape.lanes));
        packPanels(k0, kEnd, nFull, end, rest);
        rowBlocks(roundDown(M, shape.rows), M,
                  [&](int64_t rows, Value m0, bool packing) {
                    kernel(rows, m0, nFull, rest, k0, kEnd, idx(0), packing);
                  });
        shape = full;
        scf::YieldOp::create(b, loc);
      });
      if (tail)
        dotColumns(M, k0, kEnd, staticN - tail, tail);
    });
  }

private:
  /// Whether a packed chunk's row blocks run outside its column blocks, so
  /// that a block's rows are written left to right across the chunk. A
  /// short K stores a C vector every few FMAs: column blocks outside (each
  /// block's rows, then the next block's) made C a store stream per row,
  /// each a block apart, and mobilenetv3's 64 x 16 x 12544 expansion ran
  /// at the speed of those stores. The chunk's panels (K x 256 floats at
  /// most 64 KiB) stay in cache for every row block. Not with a fused
  /// pack (its first row block fills each panel) or a weight panel fetched
  /// ahead along the column blocks (planNextPanel).
  bool rowsOuter(Value K) {
    std::optional<int64_t> staticK = getConstantIntValue(K);
    if (!staticK) {
      int64_t k = cast<MemRefType>(a.getType()).getShape().back();
      if (!ShapedType::isDynamic(k))
        staticK = k;
    }
    return staticK && *staticK <= kRowsOuterMaxK && !fusedPack &&
           !(prepacked && prefetchPacked);
  }

  /// Copies B[k0:kEnd, c0:cEnd] into consecutive panels of nr columns,
  /// walking each row of B across all of them; a masked remainder (`cols`
  /// columns, one panel) is zero-filled past its end. B rows are far apart
  /// in memory (often a multiple of 4 KiB, so they collide in the same L1
  /// sets), a panel's are not.
  void packPanels(Value k0, Value kEnd, Value c0, Value cEnd, Value cols) {
    if (direct || fusedPack)
      return;
    int64_t nr = shape.vectors * shape.lanes;
    forLoop(k0, kEnd, 1, [&](Value k) {
      Value row = arith::SubIOp::create(b, loc, k, k0);
      // B rows are pages apart, beyond the hardware prefetchers' reach.
      Value ahead = arith::MinSIOp::create(
          b, loc, arith::AddIOp::create(b, loc, k, idx(kPrefetchRows)), lastK);
      forLoop(c0, cEnd, nr, [&](Value n0) {
        Value panel = arith::DivUIOp::create(
            b, loc, arith::SubIOp::create(b, loc, n0, c0), idx(nr));
        for (int64_t j = 0; j < shape.vectors; ++j) {
          if (j * shape.lanes % kFloatsPerLine == 0)
            memref::PrefetchOp::create(
                b, loc, bm,
                at({ahead,
                    arith::AddIOp::create(b, loc, n0, idx(j * shape.lanes))}),
                /*isWrite=*/false, /*localityHint=*/3, /*isDataCache=*/true);
          vector::StoreOp::create(b, loc, load(bm, k, n0, cols, j), pack,
                                  ValueRange{panel, row, idx(j * shape.lanes)});
        }
      });
    });
  }

  /// Full register blocks of `rows` rows, then the leftover rows. With a
  /// static M the leftover is one block, or, when it is at most half a
  /// block, shares the last full block's rows in two near-equal blocks: a
  /// block of r rows keeps 2r accumulators in flight, too few to cover the
  /// FMA latency below 4 rows (M = 128 in 6-row blocks ran its last 2 rows
  /// at half speed; now 20 blocks of 6 and two of 4). A dynamic M takes
  /// its leftover in blocks of the powers of two below `rows` (4, 2, 1 for
  /// 6 or 8), each at most once or twice.
  void
  rowBlocks(Value mFull, Value M,
            function_ref<void(int64_t rows, Value m0, bool packing)> block) {
    int64_t staticM =
        cast<MemRefType>(c.getType()).getShape().drop_back().back();
    if (!ShapedType::isDynamic(staticM)) {
      int64_t full = staticM / shape.rows, left = staticM % shape.rows;
      SmallVector<int64_t> tail;
      if (left && full && 2 * left <= shape.rows) {
        --full;
        tail = {(shape.rows + left + 1) / 2, (shape.rows + left) / 2};
      } else if (left) {
        tail = {left};
      }
      // With fusedPack the first block reads B in place and fills the
      // panel that the others read.
      int64_t start = 0;
      if (fusedPack && full) {
        block(shape.rows, idx(0), true);
        start = shape.rows;
      }
      forLoop(idx(start), idx(full * shape.rows), shape.rows,
              [&](Value m0) { block(shape.rows, m0, false); });
      start = full * shape.rows;
      for (auto [i, rows] : llvm::enumerate(tail)) {
        block(rows, idx(start), fusedPack && !full && i == 0);
        start += rows;
      }
      return;
    }
    forLoop(idx(0), mFull, shape.rows,
            [&](Value m0) { block(shape.rows, m0, false); });
    Value start = mFull;
    int64_t sub = 1;
    while (sub * 2 < shape.rows)
      sub *= 2;
    for (; sub >= 1; sub /= 2) {
      Value left = arith::SubIOp::create(b, loc, M, start);
      Value end = arith::AddIOp::create(b, loc, start, roundDown(left, sub));
      forLoop(start, end, sub, [&](Value m0) { block(sub, m0, false); });
      start = end;
    }
  }

  SmallVector<Value> at(ValueRange tail) {
    SmallVector<Value> i(batch.begin(), batch.end());
    i.append(tail.begin(), tail.end());
    return i;
  }

  /// Mask for vector `j` of a partial column block with `cols` columns.
  Value mask(Value cols, int64_t j) {
    Value left = arith::SubIOp::create(b, loc, cols, idx(j * shape.lanes));
    return vector::CreateMaskOp::create(b, loc, maskType, ValueRange{left});
  }

  Value load(Value mem, Value row, Value col, Value cols, int64_t j) {
    Value colJ = arith::AddIOp::create(b, loc, col, idx(j * shape.lanes));
    if (!cols)
      return vector::LoadOp::create(b, loc, vecType, mem, at({row, colJ}));
    Value zero = arith::ConstantOp::create(
        b, loc, vecType, DenseElementsAttr::get(vecType, 0.0f));
    return vector::MaskedLoadOp::create(b, loc, vecType, mem, at({row, colJ}),
                                        mask(cols, j), zero);
  }

  /// Vector j of B's row k from the pre-packed weight, at (panel, column).
  Value loadPrepacked(Value k, std::pair<Value, Value> at, Value cols,
                      int64_t j) {
    SmallVector<Value, 3> where{
        at.first, arith::AddIOp::create(b, loc, kOffset, k), at.second};
    if (!cols)
      return vector::LoadOp::create(b, loc, vecType, prepacked, where);
    return vector::MaskedLoadOp::create(b, loc, vecType, prepacked, where,
                                        mask(cols, j), zeros(vecType));
  }

  void store(Value v, Value row, Value col, Value cols, int64_t j) {
    Value colJ = arith::AddIOp::create(b, loc, col, idx(j * shape.lanes));
    if (!cols)
      vector::StoreOp::create(b, loc, v, c, at({row, colJ}));
    else
      vector::MaskedStoreOp::create(b, loc, c, at({row, colJ}), mask(cols, j),
                                    v);
  }

  /// rows x vectors accumulators live across the K loop as iter_args.
  /// `packing`: this block reads B in place and stores each vector into
  /// the panel for the blocks after it (fusedPack).
  void kernel(int64_t rows, Value m0, Value n0, Value cols, Value k0,
              Value kEnd, Value panel, bool packing = false) {
    SmallVector<Value> rowIdx;
    for (int64_t i = 0; i < rows; ++i)
      rowIdx.push_back(i ? arith::AddIOp::create(b, loc, m0, idx(i)) : m0);
    auto loadC = [&] {
      SmallVector<Value> acc;
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < shape.vectors; ++j)
          acc.push_back(load(c, rowIdx[i], n0, cols, j));
      return acc;
    };
    SmallVector<Value> acc;
    if (!initValue) {
      acc = loadC();
    } else {
      // The first K block starts from the fill's value instead of C.
      Value first =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, k0, idx(0));
      auto choose = scf::IfOp::create(
          b, loc, first,
          [&](OpBuilder &, Location) {
            Value splat =
                vector::BroadcastOp::create(b, loc, vecType, initValue);
            scf::YieldOp::create(
                b, loc, SmallVector<Value>(rows * shape.vectors, splat));
          },
          [&](OpBuilder &, Location) {
            scf::YieldOp::create(b, loc, loadC());
          });
      acc.assign(choose.getResults().begin(), choose.getResults().end());
    }
    if (epilogue && !cols)
      prefetchEpilogue(rowIdx, n0);
    else if (!epilogue && initValue && !cols)
      prefetchFirstStores(rowIdx, n0, k0);
    // Pre-packed B: vector j's panel and column in it, fixed along K.
    SmallVector<std::pair<Value, Value>> packedAt;
    if (prepacked) {
      int64_t nr = cast<MemRefType>(prepacked.getType()).getShape().back();
      for (int64_t j = 0; j < shape.vectors; ++j) {
        Value col = arith::AddIOp::create(
            b, loc, nOffset,
            arith::AddIOp::create(b, loc, n0, idx(j * shape.lanes)));
        packedAt.push_back({arith::DivUIOp::create(b, loc, col, idx(nr)),
                            arith::RemUIOp::create(b, loc, col, idx(nr))});
      }
    }
    nextPanel = Value();
    if (prepacked && prefetchPacked && !cols && fullColumns)
      planNextPanel(m0, n0, k0);
    nextRows = Value();
    // Not where B is a pre-packed weight: A is then an activation that the
    // panels before this one brought into cache.
    if (prefetchA && !(prepacked && prefetchPacked) && !cols)
      planNextRows(rows, m0, k0);
    auto loop = scf::ForOp::create(
        b, loc, k0, kEnd, idx(1), acc,
        [&](OpBuilder &, Location, Value k, ValueRange in) {
          SmallVector<Value> bv, out;
          Value row = arith::SubIOp::create(b, loc, k, k0);
          // A pre-packed panel streams from memory on the first row block;
          // fetch its rows ahead of the loads (without, 12-17% of a
          // product's samples sat on the first B load).
          if (prepacked && prefetchPacked) {
            auto packedType = cast<MemRefType>(prepacked.getType());
            auto fetchAhead = [&] {
              Value ahead = arith::MinSIOp::create(
                  b, loc,
                  arith::AddIOp::create(
                      b, loc, arith::AddIOp::create(b, loc, kOffset, k),
                      idx(kPackedPrefetchRows)),
                  idx(packedType.getDimSize(1) - 1));
              for (int64_t j = 0; j < packedType.getDimSize(2);
                   j += kFloatsPerLine)
                memref::PrefetchOp::create(
                    b, loc, prepacked,
                    ValueRange{packedAt[0].first, ahead, idx(j)},
                    /*isWrite=*/false, /*localityHint=*/3,
                    /*isDataCache=*/true);
            };
            if (!nextPanel) {
              fetchAhead();
            } else {
              scf::IfOp::create(
                  b, loc, firstBlock,
                  [&](OpBuilder &, Location) {
                    fetchAhead();
                    scf::YieldOp::create(b, loc);
                  },
                  [&](OpBuilder &, Location) {
                    fetchNextPanel(k, k0);
                    scf::YieldOp::create(b, loc);
                  });
            }
          }
          if (nextRows)
            fetchNextRows(rows, k, k0);
          if (packing) {
            // B's rows are pages apart: fetch them ahead of the loads.
            Value ahead = arith::MinSIOp::create(
                b, loc, arith::AddIOp::create(b, loc, k, idx(kPrefetchRows)),
                lastK);
            for (int64_t j = 0; j < shape.vectors; ++j)
              if (j * shape.lanes % kFloatsPerLine == 0)
                memref::PrefetchOp::create(
                    b, loc, bm,
                    at({ahead, arith::AddIOp::create(b, loc, n0,
                                                     idx(j * shape.lanes))}),
                    /*isWrite=*/false, /*localityHint=*/3,
                    /*isDataCache=*/true);
          }
          for (int64_t j = 0; j < shape.vectors; ++j) {
            if (packing) {
              bv.push_back(load(bm, k, n0, cols, j));
              vector::StoreOp::create(
                  b, loc, bv.back(), pack,
                  ValueRange{panel, row, idx(j * shape.lanes)});
              continue;
            }
            bv.push_back(
                prepacked ? loadPrepacked(k, packedAt[j], cols, j)
                : direct  ? load(bm, k, n0, cols, j)
                          : vector::LoadOp::create(
                                b, loc, vecType, pack,
                                ValueRange{panel, row, idx(j * shape.lanes)}));
          }
          for (int64_t i = 0; i < rows; ++i) {
            // A broadcast over the batch (a 2-D A) takes no batch index.
            SmallVector<Value> aIdx =
                cast<MemRefType>(a.getType()).getRank() == 2
                    ? SmallVector<Value>{rowIdx[i], k}
                    : at({rowIdx[i], k});
            Value s = memref::LoadOp::create(b, loc, a, aIdx);
            Value sv = vector::BroadcastOp::create(b, loc, vecType, s);
            for (int64_t j = 0; j < shape.vectors; ++j)
              out.push_back(vector::FMAOp::create(b, loc, sv, bv[j],
                                                  in[i * shape.vectors + j]));
          }
          scf::YieldOp::create(b, loc, out);
        });
    auto storeC = [&] {
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < shape.vectors; ++j)
          store(loop.getResult(i * shape.vectors + j), rowIdx[i], n0, cols, j);
    };
    if (!epilogue)
      return storeC();
    // The last K block stores the epilogue's results instead.
    scf::IfOp::create(
        b, loc, lastBlock,
        [&](OpBuilder &, Location) {
          if (epilogue->storeC)
            storeC();
          for (int64_t i = 0; i < rows; ++i)
            for (int64_t j = 0; j < shape.vectors; ++j) {
              Value colJ =
                  arith::AddIOp::create(b, loc, n0, idx(j * shape.lanes));
              SmallVector<Value> results =
                  applyEpilogue(loop.getResult(i * shape.vectors + j),
                                rowIdx[i], colJ, cols, j);
              for (auto [value, out] :
                   llvm::zip(results, epilogue->op.getDpsInits())) {
                if (!cols)
                  vector::StoreOp::create(b, loc, value, out,
                                          ValueRange{rowIdx[i], colJ});
                else
                  vector::MaskedStoreOp::create(b, loc, out,
                                                ValueRange{rowIdx[i], colJ},
                                                mask(cols, j), value);
              }
            }
          scf::YieldOp::create(b, loc);
        },
        [&](OpBuilder &, Location) {
          storeC();
          scf::YieldOp::create(b, loc);
        });
  }

  /// In the last K block, fetches the lines of the block that the epilogue
  /// reads at C's index (a residual) and those it writes, while the K loop
  /// runs: a short K (64 for a ResNet block's last 1x1 convolution) left
  /// their misses exposed after the loop.
  void prefetchEpilogue(ArrayRef<Value> rowIdx, Value n0) {
    scf::IfOp::create(b, loc, lastBlock, [&](OpBuilder &, Location) {
      linalg::GenericOp op = epilogue->op;
      SmallVector<std::pair<Value, bool>> targets;
      for (OpOperand *in : op.getDpsInputOperands())
        if (in->getOperandNumber() != epilogue->cInput &&
            mcc::readOf(op.getMatchingIndexingMap(in)) ==
                mcc::EpilogueRead::Full)
          targets.push_back({in->get(), false});
      for (Value out : op.getDpsInits())
        targets.push_back({out, true});
      for (Value row : rowIdx)
        for (int64_t j = 0; j < shape.vectors; ++j) {
          if (j * shape.lanes % kFloatsPerLine)
            continue;
          Value col = arith::AddIOp::create(b, loc, n0, idx(j * shape.lanes));
          for (auto [mem, write] : targets)
            memref::PrefetchOp::create(b, loc, mem, ValueRange{row, col}, write,
                                       /*localityHint=*/3,
                                       /*isDataCache=*/true);
        }
      scf::YieldOp::create(b, loc);
    });
  }

  /// In the first K block of a product that starts from its fill (C is not
  /// read), fetches C's lines for writing while the K loop runs (Winograd's
  /// batched products, K = 64, store their whole block right after it).
  void prefetchFirstStores(ArrayRef<Value> rowIdx, Value n0, Value k0) {
    Value first =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, k0, idx(0));
    scf::IfOp::create(b, loc, first, [&](OpBuilder &, Location) {
      for (Value row : rowIdx)
        for (int64_t j = 0; j < shape.vectors; ++j) {
          if (j * shape.lanes % kFloatsPerLine)
            continue;
          Value col = arith::AddIOp::create(b, loc, n0, idx(j * shape.lanes));
          memref::PrefetchOp::create(b, loc, c, at({row, col}),
                                     /*isWrite=*/true, /*localityHint=*/3,
                                     /*isDataCache=*/true);
        }
      scf::YieldOp::create(b, loc);
    });
  }

  /// The pre-packed panel the kernels read after this one (the next column
  /// block, or the tile's first in the next K block) and this block's share
  /// of its lines: a weight panel streams from memory, and in the first row
  /// block alone its fetch ran at a third of the kernel's speed (bert's
  /// linear layers; a C model of the kernel: the first of 10 row blocks took
  /// 28% of the cycles). Row blocks after the first each fetch a slice of
  /// the next panel into L2, one line every fourth K step.
  void planNextPanel(Value m0, Value n0, Value k0) {
    auto packedType = cast<MemRefType>(prepacked.getType());
    int64_t nr = packedType.getDimSize(2);
    firstBlock =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, m0, idx(0));
    Value nextN = arith::AddIOp::create(b, loc, n0, idx(nr));
    Value wrap = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, nextN,
                                       fullColumns);
    Value col = arith::SelectOp::create(b, loc, wrap, idx(0), nextN);
    nextK0 = arith::SelectOp::create(
        b, loc, wrap, arith::AddIOp::create(b, loc, k0, idx(shape.kBlock)), k0);
    nextPanel = arith::DivUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, nOffset, col), idx(nr));
    // Row block index - 1 (unused in the first block), times its lines.
    Value block = arith::DivUIOp::create(b, loc, m0, idx(shape.rows));
    sliceStart = arith::MulIOp::create(
        b, loc, arith::SubIOp::create(b, loc, block, idx(1)),
        idx(shape.kBlock / kNextPanelEvery));
  }

  /// The rows of A the next row block reads (the next block, or after the
  /// last one the first block's in the next K block): each row block
  /// fetches them into L2 while it runs, one line every few K steps. A
  /// weight read as A (a convolution's) streams from memory in 8 rows
  /// kilobytes apart, 1 KiB of each per block, too short for the hardware
  /// prefetchers: a C model of resnet50's 512 x 4608 x 48 products ran at
  /// 82 GFLOPS with cold weights, 135 with this.
  void planNextRows(int64_t rows, Value m0, Value k0) {
    unsigned rank = cast<MemRefType>(a.getType()).getRank();
    Value M = memref::DimOp::create(b, loc, a, rank - 2);
    Value next = arith::AddIOp::create(b, loc, m0, idx(rows));
    Value wrap = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::sgt,
        arith::AddIOp::create(b, loc, next, idx(rows)), M);
    nextRows = arith::SelectOp::create(b, loc, wrap, idx(0), next);
    nextRowsK = arith::SelectOp::create(
        b, loc, wrap, arith::AddIOp::create(b, loc, k0, idx(shape.kBlock)), k0);
    lastRowOfA = arith::SubIOp::create(b, loc, M, idx(1));
    lastColumnOfA = arith::SubIOp::create(
        b, loc, memref::DimOp::create(b, loc, a, rank - 1), idx(1));
  }

  /// Line `t / every` of the next row block's K block at K step t = k - k0:
  /// rows cycle fastest, so each row's lines come in order.
  void fetchNextRows(int64_t rows, Value k, Value k0) {
    int64_t every = std::max<int64_t>(1, kFloatsPerLine / rows);
    Value t = arith::SubIOp::create(b, loc, k, k0);
    auto fetch = [&] {
      Value line =
          every == 1
              ? t
              : arith::DivUIOp::create(b, loc, t, idx(every)).getResult();
      Value row = arith::MinSIOp::create(
          b, loc,
          arith::AddIOp::create(
              b, loc, nextRows,
              arith::RemUIOp::create(b, loc, line, idx(rows))),
          lastRowOfA);
      Value col = arith::MinSIOp::create(
          b, loc,
          arith::AddIOp::create(
              b, loc, nextRowsK,
              arith::MulIOp::create(
                  b, loc, arith::DivUIOp::create(b, loc, line, idx(rows)),
                  idx(kFloatsPerLine))),
          lastColumnOfA);
      // A batch's A (Winograd's transformed weights) at this batch index.
      bool unbatched = cast<MemRefType>(a.getType()).getRank() == 2;
      memref::PrefetchOp::create(
          b, loc, a, unbatched ? SmallVector<Value>{row, col} : at({row, col}),
          /*isWrite=*/false, /*localityHint=*/2, /*isDataCache=*/true);
    };
    if (every == 1)
      return fetch();
    Value onStep = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq,
        arith::RemUIOp::create(b, loc, t, idx(every)), idx(0));
    scf::IfOp::create(b, loc, onStep, [&](OpBuilder &, Location) {
      fetch();
      scf::YieldOp::create(b, loc);
    });
  }

  /// One line of the next panel at K step k, every kNextPanelEvery steps.
  void fetchNextPanel(Value k, Value k0) {
    auto packedType = cast<MemRefType>(prepacked.getType());
    int64_t linesPerRow = packedType.getDimSize(2) / kFloatsPerLine;
    Value t = arith::SubIOp::create(b, loc, k, k0);
    Value onStep = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq,
        arith::RemUIOp::create(b, loc, t, idx(kNextPanelEvery)), idx(0));
    Value line = arith::AddIOp::create(
        b, loc, sliceStart,
        arith::DivUIOp::create(b, loc, t, idx(kNextPanelEvery)));
    Value inPanel =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, line,
                              idx(shape.kBlock * linesPerRow));
    Value fetch = arith::AndIOp::create(b, loc, onStep, inPanel);
    scf::IfOp::create(b, loc, fetch, [&](OpBuilder &, Location) {
      Value row = arith::MinSIOp::create(
          b, loc,
          arith::AddIOp::create(
              b, loc, arith::AddIOp::create(b, loc, kOffset, nextK0),
              arith::DivUIOp::create(b, loc, line, idx(linesPerRow))),
          idx(packedType.getDimSize(1) - 1));
      Value column = arith::MulIOp::create(
          b, loc, arith::RemUIOp::create(b, loc, line, idx(linesPerRow)),
          idx(kFloatsPerLine));
      memref::PrefetchOp::create(b, loc, prepacked,
                                 ValueRange{nextPanel, row, column},
                                 /*isWrite=*/false, /*localityHint=*/2,
                                 /*isDataCache=*/true);
      scf::YieldOp::create(b, loc);
    });
  }

  /// The epilogue's results at C[row, col...] given C's value there: a
  /// vector of lanes columns from col (vector `j` of a block whose `cols`
  /// columns mask a partial one), or, for a scalar `value`, the one element.
  SmallVector<Value> applyEpilogue(Value value, Value row, Value col,
                                   Value cols, int64_t j) {
    return mcc::applyProductEpilogue(b, loc, *epilogue, value, row, col,
                                     cols ? mask(cols, j) : Value());
  }

  /// Copies the `count` tail columns from n0 of B to `dotPack` (count x K,
  /// contiguous), once for all K blocks.
  void packDotColumns(Value K, int64_t n0, int64_t count) {
    forLoop(idx(0), K, 1, [&](Value k) {
      for (int64_t j = 0; j < count; ++j) {
        Value v = memref::LoadOp::create(b, loc, bm, at({k, idx(n0 + j)}));
        memref::StoreOp::create(b, loc, v, dotPack, ValueRange{idx(j), k});
      }
    });
  }

  /// C[m, n0 + j] += A[m, k0:kEnd] . B[k0:kEnd, n0 + j] for the `count`
  /// packed tail columns: each block of rows keeps rows x count vector
  /// accumulators along the K block, summed across lanes at its end. Run
  /// per K block, right after the register-blocked kernel, A's block is
  /// still in cache (over all of K at once, a 512 x 2048 A came from
  /// memory a second time for one column).
  void dotColumns(Value M, Value k0, Value kEnd, int64_t n0, int64_t count) {
    // As many accumulators as the register block has (16 zmm on AVX-512,
    // 12 ymm on AVX2), at most 8 rows.
    int64_t rows =
        std::clamp<int64_t>(shape.rows * shape.vectors / count, 1, 8);
    Value kFull = arith::AddIOp::create(
        b, loc, k0,
        roundDown(arith::SubIOp::create(b, loc, kEnd, k0), shape.lanes));
    Value restMask = vector::CreateMaskOp::create(
        b, loc, maskType,
        ValueRange{arith::SubIOp::create(b, loc, kEnd, kFull)});
    Value first =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, k0, idx(0));
    Value zero = arith::ConstantOp::create(
        b, loc, vecType, DenseElementsAttr::get(vecType, 0.0f));
    auto block = [&](int64_t n, Value m0) {
      SmallVector<Value> rowIdx;
      for (int64_t i = 0; i < n; ++i)
        rowIdx.push_back(i ? arith::AddIOp::create(b, loc, m0, idx(i)) : m0);
      auto aAt = [&](int64_t i, Value k) {
        return cast<MemRefType>(a.getType()).getRank() == 2
                   ? SmallVector<Value>{rowIdx[i], k}
                   : at({rowIdx[i], k});
      };
      auto step = [&](Value k, ValueRange in, Value mask) {
        auto load = [&](Value mem, ValueRange where) -> Value {
          if (mask)
            return vector::MaskedLoadOp::create(b, loc, vecType, mem, where,
                                                mask, zero);
          return vector::LoadOp::create(b, loc, vecType, mem, where);
        };
        SmallVector<Value> xv, out;
        for (int64_t j = 0; j < count; ++j)
          xv.push_back(load(dotPack, ValueRange{idx(j), k}));
        for (int64_t i = 0; i < n; ++i) {
          Value av = load(a, aAt(i, k));
          for (int64_t j = 0; j < count; ++j)
            out.push_back(
                vector::FMAOp::create(b, loc, av, xv[j], in[i * count + j]));
        }
        return out;
      };
      auto loop = scf::ForOp::create(
          b, loc, k0, kFull, idx(shape.lanes),
          SmallVector<Value>(n * count, zero),
          [&](OpBuilder &, Location, Value k, ValueRange in) {
            scf::YieldOp::create(b, loc, step(k, in, Value()));
          });
      SmallVector<Value> acc = step(kFull, loop.getResults(), restMask);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < count; ++j) {
          // reassoc: a tree of shuffles; without it LLVM sums the 16 lanes
          // in order, a chain of 16 dependent adds per accumulator (N = 196's
          // 4 tail columns then cost as much as a 32-column panel).
          Value sum = vector::ReductionOp::create(
              b, loc, vector::CombiningKind::ADD, acc[i * count + j],
              arith::FastMathFlags::reassoc);
          SmallVector<Value> where = at({rowIdx[i], idx(n0 + j)});
          Value before = memref::LoadOp::create(b, loc, c, where);
          // The first K block starts from the fill's value instead of C.
          if (initValue)
            before = arith::SelectOp::create(b, loc, first, initValue, before);
          Value total = arith::AddFOp::create(b, loc, before, sum);
          if (!epilogue) {
            memref::StoreOp::create(b, loc, total, c, where);
            continue;
          }
          scf::IfOp::create(
              b, loc, lastBlock,
              [&](OpBuilder &, Location) {
                if (epilogue->storeC)
                  memref::StoreOp::create(b, loc, total, c, where);
                SmallVector<Value> results =
                    applyEpilogue(total, rowIdx[i], idx(n0 + j), Value(), 0);
                for (auto [value, out] :
                     llvm::zip(results, epilogue->op.getDpsInits()))
                  memref::StoreOp::create(b, loc, value, out, where);
                scf::YieldOp::create(b, loc);
              },
              [&](OpBuilder &, Location) {
                memref::StoreOp::create(b, loc, total, c, where);
                scf::YieldOp::create(b, loc);
              });
        }
    };
    Value mFull = roundDown(M, rows);
    forLoop(idx(0), mFull, rows, [&](Value m0) { block(rows, m0); });
    forLoop(mFull, M, 1, [&](Value m0) { block(1, m0); });
  }

public:
  /// The value a fill just before the product wrote to all of C: the
  /// accumulators start from it and C is not read (K must not be empty).
  Value initValue;
  /// B's whole weight as [N / nr][K][nr] panels, and where B starts in it
  /// (row, column; the column a multiple of nr): B is read from there.
  Value prepacked, kOffset, nOffset;
  /// count x K floats for dotTailColumns' columns; null: no dot tail.
  Value dotPack;
  /// dotPack was filled before the tile loop (shareDotPack).
  bool dotPackReady = false;
  /// Fetch the pre-packed panel's rows ahead: a weight streams from memory,
  /// a B packed just before the tile loop (sharePack) is already in cache.
  bool prefetchPacked = true;
  /// Applied to C in the last K block (2-D products only).
  std::optional<mcc::ProductEpilogue> epilogue;
  /// Fetch the next row block's rows of A (unit stride along K; a batch's
  /// at its batch index) while each row block runs (planNextRows).
  bool prefetchA = false;
  /// The first row block of each panel packs it as it computes (a static
  /// M): a separate copy loop ran at load/store speed, about a fifth of a
  /// 64 x 256 x 3136 product's time, where inside the kernel the stores
  /// hide behind its fmas.
  bool fusedPack = false;

private:
  /// Rows of B fetched ahead of the packing copy, and 64-byte cache lines.
  static constexpr int64_t kPrefetchRows = 16, kFloatsPerLine = 16;
  /// Rows of a pre-packed panel fetched ahead of the kernel's loads: a chain
  /// of 32 products of 128 x 768 x 768 ran in 35.6 ms without, 33.4 with
  /// 64, 33.7 with 128, 34.9 with 256.
  static constexpr int64_t kPackedPrefetchRows = 64;

  /// The longest K whose products run their row blocks outside (rowsOuter).
  static constexpr int64_t kRowsOuterMaxK = 64;

  /// K steps between two lines of the next panel fetched by a row block.
  static constexpr int64_t kNextPanelEvery = 4;

  Value a, bm, c, pack, lastK;
  /// The full column blocks' end (emit), and planNextPanel's values.
  Value fullColumns, firstBlock, nextPanel, nextK0, sliceStart;
  /// planNextRows' first row and K offset (null: no fetch), and A's bounds.
  Value nextRows, nextRowsK, lastRowOfA, lastColumnOfA;
  /// Whether the current K block is the last one (with an epilogue).
  Value lastBlock;
  bool direct;
  SmallVector<Value> batch;
  KernelShape shape;
  VectorType vecType, maskType;
};

/// C[m, 0] += A[m, :] . x for a product whose B is one contiguous column x
/// (a 1x1 convolution over a 1x1 image: squeeze-excite, a classifier head
/// in NCHW). The register-blocked kernel would run it one lane wide; here
/// each row of A is a dot product along K, one row at a time with
/// kMatvecAccumulators vector accumulators along K, summed across lanes at
/// the end. One row at a time reads A as one sequential stream, which the
/// hardware prefetchers follow from memory: the weights of a model's head
/// are usually cold, and eight rows interleaved (eight streams a row's
/// length apart) ran mobilenetv3's head and classifier at half the
/// bandwidth (design 0028).
class MatvecEmitter : mcc::VectorKernelBuilder {
public:
  MatvecEmitter(OpBuilder &b, Location loc, Value a, Value x, Value c,
                int64_t lanes)
      : VectorKernelBuilder(b, loc), a(a), x(x), c(c), lanes(lanes) {
    vecType = VectorType::get({lanes}, b.getF32Type());
    maskType = VectorType::get({lanes}, b.getI1Type());
  }

  void emit() {
    Value M = memref::DimOp::create(b, loc, c, 0);
    Value K = memref::DimOp::create(b, loc, a, 1);
    kFull = roundDown(K, lanes);
    kUnrolled = roundDown(K, lanes * kMatvecAccumulators);
    kRest = arith::SubIOp::create(b, loc, K, kFull);
    loop(idx(0), M, 1, ValueRange{}, [&](Value m, ValueRange) {
      row(m);
      return SmallVector<Value>{};
    });
  }

  /// The value a fill just before the product wrote to all of C.
  Value initValue;

private:
  /// Accumulators along K a row: enough independent FMA chains to cover
  /// the FMA latency while one row streams.
  static constexpr int64_t kMatvecAccumulators = 4;

  scf::ForOp
  loop(Value lo, Value hi, int64_t step, ValueRange init,
       llvm::function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    return scf::ForOp::create(
        b, loc, lo, hi, idx(step), init,
        [&](OpBuilder &, Location, Value iv, ValueRange in) {
          scf::YieldOp::create(b, loc, body(iv, in));
        });
  }

  /// acc + A[m, k : k + lanes] * x[k : k + lanes], masked when `mask` is set.
  Value step(Value m, Value k, Value acc, Value mask) {
    auto read = [&](Value src, ValueRange at) -> Value {
      if (mask)
        return vector::MaskedLoadOp::create(
            b, loc, vecType, src, at, mask,
            arith::ConstantOp::create(b, loc, vecType,
                                      DenseElementsAttr::get(vecType, 0.0f)));
      return vector::LoadOp::create(b, loc, vecType, src, at);
    };
    return vector::FMAOp::create(b, loc, read(a, {m, k}), read(x, {k}), acc);
  }

  /// Row m: kMatvecAccumulators vectors of K a step, the remaining full
  /// vectors into one accumulator, then the masked rest.
  void row(Value m) {
    Value zero = arith::ConstantOp::create(
        b, loc, vecType, DenseElementsAttr::get(vecType, 0.0f));
    int64_t stride = lanes * kMatvecAccumulators;
    scf::ForOp unrolled = loop(
        idx(0), kUnrolled, stride,
        SmallVector<Value>(kMatvecAccumulators, zero),
        [&](Value k, ValueRange in) {
          SmallVector<Value> out;
          for (int64_t j = 0; j < kMatvecAccumulators; ++j)
            out.push_back(step(
                m, j ? arith::AddIOp::create(b, loc, k, idx(j * lanes)) : k,
                in[j], Value()));
          return out;
        });
    Value acc = unrolled.getResult(0);
    for (int64_t j = 1; j < kMatvecAccumulators; ++j)
      acc = arith::AddFOp::create(b, loc, acc, unrolled.getResult(j));
    acc = loop(kUnrolled, kFull, lanes, acc, [&](Value k, ValueRange in) {
            return SmallVector<Value>{step(m, k, in[0], Value())};
          }).getResult(0);
    Value mask =
        vector::CreateMaskOp::create(b, loc, maskType, ValueRange{kRest});
    acc = step(m, kFull, acc, mask);
    Value sum = vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD,
                                            acc, arith::FastMathFlags::reassoc);
    ValueRange at{m, idx(0)};
    Value before =
        initValue ? initValue : memref::LoadOp::create(b, loc, c, at);
    memref::StoreOp::create(b, loc, arith::AddFOp::create(b, loc, before, sum),
                            c, at);
  }

  Value a, x, c, kFull, kUnrolled, kRest;
  int64_t lanes;
  VectorType vecType, maskType;
};

/// B as the 1-D vector x when it is one contiguous column (static N = 1,
/// unit stride along K); null otherwise.
Value columnVector(OpBuilder &b, Location loc, Value bm) {
  auto t = cast<MemRefType>(bm.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  if (t.getRank() != 2 || t.getDimSize(1) != 1 ||
      failed(t.getStridesAndOffset(strides, offset)) || strides[0] != 1)
    return Value();
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, bm);
  OpFoldResult size = memref::getMixedSize(b, loc, bm, 0);
  auto type = MemRefType::get(
      {t.getDimSize(0)}, t.getElementType(),
      StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic, {1}));
  return memref::ReinterpretCastOp::create(
      b, loc, type, meta.getBaseBuffer(), meta.getConstifiedMixedOffset(),
      ArrayRef<OpFoldResult>{size}, ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
}

/// Whether the pass rewrites `op` (the others lower to plain loops).
bool rewritable(linalg::LinalgOp op) {
  if (!isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op) ||
      !op.hasPureBufferSemantics())
    return false;
  // Only the default (non-transposing, non-broadcasting) maps.
  if (auto mm = dyn_cast<linalg::MatmulOp>(op.getOperation()))
    if (mm.hasUserDefinedMaps())
      return false;
  if (auto bmm = dyn_cast<linalg::BatchMatmulOp>(op.getOperation()))
    if (bmm.hasUserDefinedMaps() && !mcc::isBatchMatmulWithSharedA(bmm))
      return false;
  Value a = op.getDpsInputs()[0], bm = op.getDpsInputs()[1],
        c = op.getDpsInits()[0];
  return isa<MemRefType>(a.getType()) &&
         cast<MemRefType>(a.getType()).getElementType().isF32() &&
         hasUnitInnerStride(bm) && hasUnitInnerStride(c);
}

/// The buffer B views: a subview's source, else B itself.
Value viewedBuffer(Value bm) {
  if (auto sub = bm.getDefiningOp<memref::SubViewOp>())
    return sub.getSource();
  return bm;
}

/// Iterations of an scf.forall with static bounds, or 0.
int64_t forallTrips(scf::ForallOp forall) {
  int64_t trips = 1;
  for (auto [lb, ub, step] :
       llvm::zip(forall.getMixedLowerBound(), forall.getMixedUpperBound(),
                 forall.getMixedStep())) {
    std::optional<int64_t> l = getConstantIntValue(lb),
                           u = getConstantIntValue(ub),
                           s = getConstantIntValue(step);
    if (!l || !u || !s || *s <= 0)
      return 0;
    trips *= (*u - *l + *s - 1) / *s;
  }
  return trips;
}

/// B of a 2-D product that several tiles of its scf.forall read: a static
/// [K, N] f32 buffer from outside the loop, whole or through a unit-stride
/// subview whose columns start at a multiple of `nr`, and more tiles than
/// column windows of it (tall products tile m as well as n). Every such
/// tile packed the same panels of B again (1024 x 1024 x 196 products, 8
/// tiles of 128 rows: a tenth of their time); the caller packs them once,
/// before the loop (sharePack). Sets `src` and the view's `offsets`.
scf::ForallOp sharedPackLoop(linalg::LinalgOp op, Value bm, int64_t nr,
                             Value &src, SmallVector<OpFoldResult> &offsets) {
  auto forall = op->getParentOfType<scf::ForallOp>();
  if (!forall || !isa<linalg::MatmulOp>(op.getOperation()))
    return {};
  src = bm;
  offsets.assign(2, OpBuilder(op).getIndexAttr(0));
  int64_t windowCols = cast<MemRefType>(bm.getType()).getDimSize(1);
  if (auto sub = bm.getDefiningOp<memref::SubViewOp>()) {
    if (!sub.hasUnitStride() || sub.getType().getRank() != 2 ||
        !knownMultiple(sub.getMixedOffsets()[1], nr))
      return {};
    src = sub.getSource();
    offsets = sub.getMixedOffsets();
  }
  auto type = dyn_cast<MemRefType>(src.getType());
  if (!type || type.getRank() != 2 || !type.hasStaticShape() ||
      !type.getElementType().isF32() || !hasUnitInnerStride(src) ||
      ShapedType::isDynamic(windowCols) || windowCols <= 0)
    return {};
  Operation *owner = src.getDefiningOp();
  if (!owner)
    owner = cast<BlockArgument>(src).getOwner()->getParentOp();
  if (forall->isAncestor(owner))
    return {};
  int64_t windows = (type.getDimSize(1) + windowCols - 1) / windowCols;
  int64_t trips = forallTrips(forall);
  return trips >= 2 * windows ? forall : scf::ForallOp();
}

/// Packs all of `src` (static K x N) as [ceil(N / nr)][K][nr] panels into a
/// heap buffer before `loop`, one panel per iteration of a parallel loop
/// (the last one zero-padded), and frees it after `loop`.
Value sharePack(scf::ForallOp loop, Value src, int64_t nr, int64_t lanes) {
  OpBuilder b(loop);
  Location loc = loop.getLoc();
  auto type = cast<MemRefType>(src.getType());
  int64_t K = type.getDimSize(0), N = type.getDimSize(1);
  int64_t P = (N + nr - 1) / nr;
  auto vecType = VectorType::get({lanes}, b.getF32Type());
  auto maskType = VectorType::get({lanes}, b.getI1Type());
  auto cst = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value packed = memref::AllocOp::create(
      b, loc, MemRefType::get({P, K, nr}, b.getF32Type()));
  Value zeros = arith::ConstantOp::create(
      b, loc, vecType, DenseElementsAttr::get(vecType, 0.0f));
  Value p = mcc::beginParallelLoop(b, loc, P);
  Value col0 = arith::MulIOp::create(b, loc, p, cst(nr));
  SmallVector<Value> cols, masks;
  for (int64_t j = 0; j < nr / lanes; ++j) {
    Value col = arith::AddIOp::create(b, loc, col0, cst(j * lanes));
    cols.push_back(col);
    // create_mask clamps: every lane inside N, none past it.
    masks.push_back(vector::CreateMaskOp::create(
        b, loc, maskType,
        ValueRange{arith::SubIOp::create(b, loc, cst(N), col)}));
  }
  auto rows = scf::ForOp::create(b, loc, cst(0), cst(K), cst(1));
  b.setInsertionPoint(rows.getBody()->getTerminator());
  Value k = rows.getInductionVar();
  for (int64_t j = 0; j < nr / lanes; ++j) {
    Value v = N % nr == 0 ? vector::LoadOp::create(b, loc, vecType, src,
                                                   ValueRange{k, cols[j]})
                                .getResult()
                          : vector::MaskedLoadOp::create(b, loc, vecType, src,
                                                         ValueRange{k, cols[j]},
                                                         masks[j], zeros)
                                .getResult();
    vector::StoreOp::create(b, loc, v, packed,
                            ValueRange{p, k, cst(j * lanes)});
  }
  b.setInsertionPointAfter(loop);
  memref::DeallocOp::create(b, loc, packed);
  return packed;
}

/// Copies the last `count` columns of `src` (static K x N) to a heap
/// buffer of count x K floats before `loop`, freed after it: the
/// dot-product tail of every tile of a tall product (N = 196 = 192 + 4)
/// gathered the same columns again, one float per row of B.
Value shareDotPack(scf::ForallOp loop, Value src, int64_t count) {
  OpBuilder b(loop);
  Location loc = loop.getLoc();
  auto type = cast<MemRefType>(src.getType());
  int64_t K = type.getDimSize(0), N = type.getDimSize(1);
  auto cst = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value packed = memref::AllocOp::create(
      b, loc, MemRefType::get({count, K}, b.getF32Type()));
  auto rows = scf::ForOp::create(b, loc, cst(0), cst(K), cst(1));
  b.setInsertionPoint(rows.getBody()->getTerminator());
  Value k = rows.getInductionVar();
  for (int64_t j = 0; j < count; ++j) {
    Value v =
        memref::LoadOp::create(b, loc, src, ValueRange{k, cst(N - count + j)});
    memref::StoreOp::create(b, loc, v, packed, ValueRange{cst(j), k});
  }
  b.setInsertionPointAfter(loop);
  memref::DeallocOp::create(b, loc, packed);
  return packed;
}

/// Whether `use` is B of a 2-D product this pass rewrites with the
/// register-blocked kernel.
bool isKernelB(OpOperand &use) {
  auto mm = dyn_cast<linalg::MatmulOp>(use.getOwner());
  return mm && use.getOperandNumber() == 1 &&
         rewritable(cast<linalg::LinalgOp>(mm.getOperation()));
}

/// Whether weight `w` (a static K x N f32 argument) is only ever B of the
/// kernel's products, whole or through unit-stride subviews whose columns
/// start at a multiple of `nr` and span whole panels of nr: then no read of
/// it needs the [K][N] layout. A product with one row of A reads it too.
bool onlyKernelB(BlockArgument w, int64_t nr) {
  auto type = dyn_cast<MemRefType>(w.getType());
  if (!type || type.getRank() != 2 || !type.hasStaticShape() ||
      !type.getElementType().isF32() || !type.getLayout().isIdentity() ||
      type.getDimSize(1) % nr != 0 || w.use_empty())
    return false;
  for (OpOperand &use : w.getUses()) {
    if (auto sub = dyn_cast<memref::SubViewOp>(use.getOwner())) {
      ArrayRef<int64_t> sizes = sub.getStaticSizes();
      if (sub.getType().getRank() != 2 || !sub.hasUnitStride() ||
          ShapedType::isDynamic(sizes[1]) || sizes[1] % nr != 0 ||
          !knownMultiple(sub.getMixedOffsets()[1], nr))
        return false;
      for (OpOperand &inner : sub->getUses())
        if (!isKernelB(inner))
          return false;
      continue;
    }
    if (!isKernelB(use))
      return false;
  }
  return true;
}

struct RegisterTileMatmulPass
    : mcc::impl::RegisterTileMatmulBase<RegisterTileMatmulPass> {
  using RegisterTileMatmulBase::RegisterTileMatmulBase;

  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> ops;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (rewritable(op))
        ops.push_back(op);
    });
    KernelShape shape{rows, vectors, lanes, kBlock, panels};
    llvm::DenseMap<Value, Value> packedWeights = packWeights(shape);
    // B packed once per tile loop, shared by its products.
    std::map<std::tuple<Operation *, void *, int64_t>, Value> sharedPacks,
        sharedDotPacks;
    for (linalg::LinalgOp op : ops) {
      OpBuilder b(op);
      Location loc = op.getLoc();
      Value a = op.getDpsInputs()[0], bm = op.getDpsInputs()[1],
            c = op.getDpsInits()[0];
      // The accumulator's fill (fused into the same tile) is folded into
      // the kernel when K is known not to be empty: C is written once
      // instead of zeroed, read back and written.
      auto fill = dyn_cast_or_null<linalg::FillOp>(op->getPrevNode());
      int64_t staticK = cast<MemRefType>(a.getType()).getShape().back();
      Value init;
      if (fill && fill.hasPureBufferSemantics() && fill.getDpsInits()[0] == c &&
          fill.value().getType().isF32() && !ShapedType::isDynamic(staticK) &&
          staticK > 0)
        init = fill.value();
      // The packed panels live on the stack of the thread that runs this
      // tile; the scope returns them when the product is done. A batch
      // shares one buffer: allocas in a loop body are only freed per
      // iteration by a scope, which canonicalization removes there (an
      // scf.for is an allocation scope), and each iteration grew the stack.
      // Matched before the scope: views between the product and its
      // epilogue move before both.
      std::optional<mcc::ProductEpilogue> epilogue;
      if (auto matmul = dyn_cast<linalg::MatmulOp>(op.getOperation());
          matmul && fuseEpilogues)
        epilogue = mcc::matchProductEpilogue(matmul, c, init ? fill : nullptr);
      auto scope = memref::AllocaScopeOp::create(b, loc, TypeRange{});
      b.setInsertionPointToStart(b.createBlock(&scope.getBodyRegion()));
      // One row of A (a classifier at batch 1) reads B in place, a wide
      // strip of it per K step: 128 contiguous columns on AVX-512 instead
      // of 32 keep more of B's cache lines in flight, and the strip's rows
      // are pages apart.
      KernelShape opShape = shape;
      auto cType = cast<MemRefType>(c.getType());
      if (cType.getDimSize(cType.getRank() - 2) == 1) {
        int64_t n = cType.getShape().back();
        // At most 16 vectors (256 columns on AVX-512), as with 8-row blocks.
        int64_t widest = std::min<int64_t>(shape.rows, 8) * shape.vectors;
        opShape.rows = 1;
        opShape.vectors =
            ShapedType::isDynamic(n)
                ? widest / 2
                : std::clamp<int64_t>((n + shape.lanes - 1) / shape.lanes, 1,
                                      widest);
      } else if (int64_t n = cType.getShape().back();
                 !ShapedType::isDynamic(n) && shape.vectors == 2 &&
                 std::min<int64_t>(shape.rows, 8) * 3 + 4 <= kVectorRegisters &&
                 n - dotTailColumns(a, c, shape.lanes) == 3 * shape.lanes) {
        // Three vectors of columns (N = 49 = 48 + a dot-product column, a
        // 7 x 7 image): one block of rows x 3 vectors, where 2 + 1 ran the
        // last vector on twice the rows and spent a broadcast of A per FMA.
        opShape.vectors = 3;
        opShape.rows = std::min<int64_t>(shape.rows, 8);
      } else if (weightRows > 0 && isa<linalg::MatmulOp>(op) &&
                 packedWeights.count(viewedBuffer(bm)) &&
                 (weightRows <= kL1Ways || !rowsShareL1Set(a))) {
        // B streams from a pre-packed weight (a linear layer): taller
        // blocks load each B vector for more rows.
        opShape.rows = weightRows;
      } else if (int64_t n = cType.getShape().back(),
                 k = cast<MemRefType>(a.getType()).getShape().back();
                 weightAVectors > 0 && mcc::isModelWeight(mcc::rootBuffer(a)) &&
                 !ShapedType::isDynamic(n) && !ShapedType::isDynamic(k) &&
                 k >= kWideMinK && n >= 2 * weightAVectors * shape.lanes) {
        // A is a weight (a convolution's, or Winograd's transformed one)
        // and B its activation: wider blocks load fewer B vectors and
        // broadcasts per fma (resnext101 320.1-344.4 -> 315.1-317.6 ms on
        // Zen 4, design 0027). Not for short K or narrow N: mobilenetv3's
        // K = 40 and 40-row products ran slower.
        opShape.vectors = weightAVectors;
      }
      Value column = isa<linalg::MatmulOp>(op) && hasUnitInnerStride(a)
                         ? columnVector(b, loc, bm)
                         : Value();
      // A panel packed by its first row block is read right after by the
      // others: one panel's slot, which stays in L1. Only for a K of a whole
      // K block or more: with K = 64 (Winograd's 16 x 64 x 784 products)
      // the first block's 64 steps could not hide the fetch of B's rows,
      // and those products ran 40% slower than with the copy loop.
      bool fused =
          fusePacks &&
          !ShapedType::isDynamic(cType.getDimSize(cType.getRank() - 2)) &&
          !ShapedType::isDynamic(staticK) && staticK >= kBlock;
      KernelShape packShape = opShape;
      if (fused)
        packShape.panels = 1;
      // B is read in place by products of at most three row blocks: a
      // panel packed for so few reads cost more than it saved (mobilenetv3's
      // 16 x 16 x 12544 and 24 x 64 x 3136 convolutions ran 25-30% faster
      // without it; 48 rows, 6 blocks, 4% slower).
      int64_t tileRows = cType.getDimSize(cType.getRank() - 2);
      bool fewRowBlocks = !ShapedType::isDynamic(tileRows) &&
                          tileRows <= kDirectRowBlocks * opShape.rows;
      Value pack =
          column || fewRowBlocks ? Value() : allocatePack(b, loc, c, packShape);
      Value dotPack;
      if (int64_t tail = column ? 0 : dotTailColumns(a, c, shape.lanes))
        dotPack = memref::AllocaOp::create(
            b, loc,
            MemRefType::get(
                {tail, cast<MemRefType>(a.getType()).getShape().back()},
                b.getF32Type()));
      if (column) {
        MatvecEmitter emitter(b, loc, a, column, c, shape.lanes);
        emitter.initValue = init;
        emitter.emit();
      } else if (isa<linalg::MatmulOp>(op)) {
        // B from a pre-packed weight: the weight itself or a subview of it.
        SmallVector<OpFoldResult> offsets(2, b.getIndexAttr(0));
        if (auto sub = bm.getDefiningOp<memref::SubViewOp>())
          offsets = sub.getMixedOffsets();
        Value prepacked = packedWeights.lookup(viewedBuffer(bm));
        int64_t nr = opShape.vectors * opShape.lanes;
        Value shared;
        bool dotPackReady = false, sharedB = false;
        if (!prepacked && pack && shareBPacks)
          if (scf::ForallOp loop =
                  sharedPackLoop(op, bm, nr, shared, offsets)) {
            Value &packs = sharedPacks[{loop.getOperation(),
                                        shared.getAsOpaquePointer(), nr}];
            if (!packs)
              packs = sharePack(loop, shared, nr, opShape.lanes);
            prepacked = packs;
            sharedB = true;
            // The tail columns are the source's last ones when the tile
            // reads all of it.
            auto srcType = cast<MemRefType>(shared.getType());
            auto viewType = cast<MemRefType>(bm.getType());
            if (dotPack && viewType.getShape() == srcType.getShape()) {
              int64_t tail = cast<MemRefType>(dotPack.getType()).getDimSize(0);
              Value &dots = sharedDotPacks[{loop.getOperation(),
                                            shared.getAsOpaquePointer(), tail}];
              if (!dots)
                dots = shareDotPack(loop, shared, tail);
              dotPack.getDefiningOp()->erase();
              dotPack = dots;
              dotPackReady = true;
            }
          }
        if (prepacked && pack) {
          pack.getDefiningOp()->erase();
          pack = Value();
        }
        MatmulEmitter emitter(b, loc, a, bm, c, ValueRange{}, pack, opShape);
        if (prepacked) {
          emitter.prepacked = prepacked;
          emitter.kOffset = getValueOrCreateConstantIndexOp(b, loc, offsets[0]);
          emitter.nOffset = getValueOrCreateConstantIndexOp(b, loc, offsets[1]);
        }
        emitter.initValue = init;
        emitter.dotPack = dotPack;
        emitter.dotPackReady = dotPackReady;
        emitter.prefetchPacked = !sharedB;
        emitter.epilogue = epilogue;
        emitter.fusedPack = fused && pack;
        emitter.prefetchA = prefetchRowsOfA && hasUnitInnerStride(a);
        emitter.emit();
      } else {
        Value zero = arith::ConstantIndexOp::create(b, loc, 0);
        Value one = arith::ConstantIndexOp::create(b, loc, 1);
        Value batch = memref::DimOp::create(b, loc, c, 0);
        scf::ForOp::create(b, loc, zero, batch, one, ValueRange{},
                           [&](OpBuilder &nb, Location l, Value i, ValueRange) {
                             MatmulEmitter emitter(
                                 nb, l, a, bm, c, ValueRange{i}, pack, opShape);
                             emitter.initValue = init;
                             emitter.dotPack = dotPack;
                             emitter.fusedPack = fused && pack;
                             emitter.prefetchA =
                                 prefetchRowsOfA && hasUnitInnerStride(a);
                             emitter.emit();
                             scf::YieldOp::create(nb, l);
                           });
      }
      memref::AllocaScopeReturnOp::create(b, loc, ValueRange{});
      op->erase();
      if (epilogue && !column)
        epilogue->op->erase();
      if (init)
        fill->erase();
    }
  }

  /// The weights every read of which the kernel makes (onlyKernelB), each
  /// viewed as [N / nr][K][nr] panels at the top of the function; marks the
  /// function `mcc.packed_weights` = [weight index, nr, ...] (the index
  /// counts from the first argument past `mcc.num_inputs`), which tells the
  /// compiler to write those records in that layout. Subviews of them are
  /// unit-stride, so the rewritten products never read the arguments'
  /// layout; their subviews die with them.
  llvm::DenseMap<Value, Value> packWeights(const KernelShape &shape) {
    llvm::DenseMap<Value, Value> packed;
    func::FuncOp fn = getOperation();
    auto numInputs = fn->getAttrOfType<IntegerAttr>("mcc.num_inputs");
    if (!prepackWeights || !numInputs || fn.isExternal())
      return packed;
    int64_t nr = shape.vectors * shape.lanes;
    SmallVector<int64_t> marks;
    OpBuilder b = OpBuilder::atBlockBegin(&fn.getBody().front());
    for (BlockArgument arg : fn.getArguments()) {
      if (arg.getArgNumber() < numInputs.getInt() || !onlyKernelB(arg, nr))
        continue;
      auto type = cast<MemRefType>(arg.getType());
      int64_t k = type.getDimSize(0), n = type.getDimSize(1);
      auto panels = memref::ReinterpretCastOp::create(
          b, arg.getLoc(), MemRefType::get({n / nr, k, nr}, b.getF32Type()),
          arg, /*offset=*/0, /*sizes=*/ArrayRef<int64_t>{n / nr, k, nr},
          /*strides=*/ArrayRef<int64_t>{k * nr, nr, 1});
      packed[arg] = panels;
      marks.append({arg.getArgNumber() - numInputs.getInt(), nr});
    }
    if (!marks.empty())
      fn->setAttr("mcc.packed_weights", b.getDenseI64ArrayAttr(marks));
    return packed;
  }
};

} // namespace
