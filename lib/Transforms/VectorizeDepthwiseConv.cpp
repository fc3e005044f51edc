//===- VectorizeDepthwiseConv.cpp - depthwise convolutions along W --------===//
//
// A buffer-level f32 linalg.depthwise_conv_2d_nchw_chw becomes loops over
// (n, c, oh) around a kernel that keeps a few vectors of one output row in
// registers while it walks the KH x KW window: each window step is one
// vector load of the input row (strided rows read `stride` times as many
// floats and keep every stride-th), one broadcast weight and one fma per
// vector. The channel's weights are broadcast once, outside the row loop.
// Without this, the op lowers to scalar loops whose inner loop either runs
// over the window or carries the output through memory. Static images up
// to eight vectors wide instead keep blocks of several output rows in
// registers (emitRowBlocks), so that each input vector is loaded once for
// all the rows whose windows hold it.
//
// A zero-padded input (ConvPadding.h) is read in place: the kernel reads the
// padding's source and treats rows and columns outside it as zeros (rows by
// a branch per window row, the first vector of a row by a shuffle that
// shifts zeros in from the left, the row's end by masks). The padded
// buffer, its border fills and the copy into it go: on mobilenetv3 those
// were an extra write and read of every expanded activation, and their
// producer can then write its result from the product's register block.
//
// Max and sum pooling (linalg.pooling_nchw_max/sum) have the same loops
// with a maximumf or an add instead of the fma: resnet's 3x3 stride-2 max
// pool took 3.9 ms of a 100 ms run as scalar loops with the output carried
// through memory.
//
//===----------------------------------------------------------------------===//

#include "mcc/Transforms/PaddedInput.h"
#include "mcc/Transforms/Passes.h"
#include "mcc/Transforms/VectorKernelUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

#include "mlir/Interfaces/ViewLikeInterface.h"
#include <tuple>

namespace mcc {
#define GEN_PASS_DEF_VECTORIZEDEPTHWISECONV
#include "mcc/Transforms/Passes.h.inc"
} // namespace mcc

using namespace mlir;
using mcc::hasUnitInnerStride;
using mcc::intsOf;
using mcc::PaddedInput;

namespace {

/// How a window step folds into an output: a depthwise convolution's fma
/// with the channel's weight, or a pooling's max or sum.
enum class Combine { Fma, Max, Add };

/// Emits out[n, c, oh, ow] = combine over (kh, kw) of x[n, c, oh*sh + kh*dh,
/// ow*sw + kw*dw] (times w[c, kh, kw] for Fma) for one op, every size but
/// the window's read from the buffers at run time.
class DepthwiseEmitter : mcc::VectorKernelBuilder {
public:
  DepthwiseEmitter(OpBuilder &b, Location loc, Combine combine, Value x,
                   Value w, Value out, int64_t kh, int64_t kw,
                   ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations,
                   int64_t lanes, int64_t vectors)
      : VectorKernelBuilder(b, loc), combine(combine), x(x), w(w), out(out),
        sh(strides[0]), sw(strides[1]), dh(dilations[0]), dw(dilations[1]),
        kh(kh), kw(kw), lanes(lanes), vectors(vectors) {
    vecType = VectorType::get({lanes}, b.getF32Type());
  }

  /// Reads x as if padded: input (ih, iw) of the op is x[ih + rowOffset,
  /// iw + colOffset], zero outside x. colOffset is at most 0 and at least
  /// -lanes * sw (the first output vector holds every output whose window
  /// starts left of the row).
  void readInPlace(Value rowOffset, int64_t colOffset) {
    padded = true;
    this->rowOffset = rowOffset;
    this->colOffset = colOffset;
  }

  void emit() {
    Value N = dim(out, 0), C = dim(out, 1), OH = dim(out, 2), OW = dim(out, 3);
    inWidth = dim(x, 3);
    inHeight = dim(x, 2);
    if (emitRowBlocks(N, C))
      return;
    RowSpans spans =
        rowSpans(inWidth, OW, kw, dw, sw, colOffset, lanes, vectors);
    Value start = spans.start, blockEnd = spans.blockEnd, vecEnd = spans.vecEnd;
    int64_t block = lanes * vectors;
    bool leftEdge = colOffset < 0;
    forLoop(idx(0), N, 1, [&](Value n) {
      forLoop(idx(0), C, 1, [&](Value c) {
        broadcastWeights(c);
        auto outputRow = [&](Value oh, bool guarded) {
          Value ih = arith::MulIOp::create(b, loc, oh, idx(sh));
          if (padded)
            ih = arith::AddIOp::create(b, loc, ih, rowOffset);
          auto row = [&](Value ow0, int64_t count, Value valid) {
            rowBlock(n, c, oh, ih, ow0, count, valid, false, guarded);
          };
          if (leftEdge)
            rowBlock(n, c, oh, ih, idx(0), 1,
                     arith::MinSIOp::create(b, loc, OW, idx(lanes)), true,
                     guarded);
          forLoop(start, blockEnd, block,
                  [&](Value ow0) { row(ow0, vectors, Value()); });
          forLoop(blockEnd, vecEnd, lanes,
                  [&](Value ow0) { row(ow0, 1, Value()); });
          // The rest of the row, masked on both the output and the input.
          forLoop(vecEnd, OW, lanes, [&](Value ow0) {
            row(ow0, 1, arith::SubIOp::create(b, loc, OW, ow0));
          });
        };
        if (!padded) {
          forLoop(idx(0), OH, 1, [&](Value oh) { outputRow(oh, false); });
          return;
        }
        // Rows whose window lies inside x run without the per-window-row
        // check: [top, bottom) of OH.
        Value top, bottom;
        std::tie(top, bottom) = rowsInside(inHeight, OH, rowOffset, kh, dh, sh);
        forLoop(idx(0), top, 1, [&](Value oh) { outputRow(oh, true); });
        forLoop(top, bottom, 1, [&](Value oh) { outputRow(oh, false); });
        forLoop(bottom, OH, 1, [&](Value oh) { outputRow(oh, true); });
      });
    });
  }

private:
  /// The largest number of output vectors a block of rows keeps in
  /// registers (with the window column's weights and an input vector).
  static constexpr int64_t kBlockAccumulators = 14;
  /// Rows are cut into strips of at most this many vectors, and images of
  /// more than kMaxStrips strips keep the row-by-row kernel.
  static constexpr int64_t kStripVectors = 2, kMaxStrips = 4;

  /// Static images up to 4 x 2 vectors wide (mobilenetv3's from 7 x 7 to
  /// 112 x 112): blocks of rows, a strip of up to two vectors of each at a
  /// time (up to 14 output vectors in registers), all their window taps
  /// unrolled, each input vector loaded once and used by every output row
  /// whose window holds it. Row by row, a 7-wide row was one accumulator
  /// whose 25 fmas (5 x 5) waited on each other, and every input row was
  /// loaded once per output row that reads it (960 channels of 7 x 7: 0.092
  /// ms against ONNX Runtime's 0.034). The first and last blocks skip the
  /// rows above and below x (known here); the blocks between run in a loop.
  bool emitRowBlocks(Value N, Value C) {
    auto outType = cast<MemRefType>(out.getType());
    auto xType = cast<MemRefType>(x.getType());
    if (outType.isDynamicDim(2) || outType.isDynamicDim(3) ||
        xType.isDynamicDim(2) || xType.isDynamicDim(3))
      return false;
    Image im;
    im.oh = outType.getDimSize(2);
    im.ow = outType.getDimSize(3);
    im.ih = xType.getDimSize(2);
    im.iw = xType.getDimSize(3);
    std::optional<int64_t> rowOff =
        padded ? getConstantIntValue(rowOffset) : std::optional<int64_t>(0);
    int64_t perRow = (im.ow + lanes - 1) / lanes;
    int64_t strips = (perRow + kStripVectors - 1) / kStripVectors;
    if (!rowOff || strips > kMaxStrips)
      return false;
    im.rowOff = *rowOff;
    int64_t stripVectors = std::min(perRow, kStripVectors);
    int64_t rows = std::min(im.oh, kBlockAccumulators / stripVectors);
    // Blocks [inner, innerEnd) read no row outside x.
    auto inside = [&](int64_t block) {
      int64_t oh0 = block * rows;
      return oh0 + rows <= im.oh && oh0 * sh + im.rowOff >= 0 &&
             (oh0 + rows - 1) * sh + im.rowOff + (kh - 1) * dh < im.ih;
    };
    int64_t blocks = (im.oh + rows - 1) / rows, inner = 0;
    while (inner < blocks && !inside(inner))
      ++inner;
    int64_t innerEnd = inner;
    while (innerEnd < blocks && inside(innerEnd))
      ++innerEnd;
    forLoop(idx(0), N, 1, [&](Value n) {
      forLoop(idx(0), C, 1, [&](Value c) {
        broadcastWeights(c);
        auto block = [&](Value oh0, std::optional<int64_t> staticOh0,
                         int64_t count) {
          for (int64_t v0 = 0; v0 < perRow; v0 += kStripVectors)
            blockOfRows(n, c, oh0, staticOh0, count, v0,
                        std::min(kStripVectors, perRow - v0), im);
        };
        auto staticBlock = [&](int64_t at) {
          int64_t oh0 = at * rows;
          block(idx(oh0), oh0, std::min(rows, im.oh - oh0));
        };
        for (int64_t at = 0; at < inner; ++at)
          staticBlock(at);
        if (innerEnd - inner == 1)
          staticBlock(inner);
        else if (innerEnd > inner)
          forLoop(idx(inner * rows), idx(innerEnd * rows), rows,
                  [&](Value oh0) { block(oh0, std::nullopt, rows); });
        for (int64_t at = std::max(inner, innerEnd); at < blocks; ++at)
          staticBlock(at);
      });
    });
    return true;
  }

  /// The channel's weights, broadcast once (a pooling has none).
  void broadcastWeights(Value c) {
    weights.clear();
    for (int64_t i = 0; i < kh && combine == Combine::Fma; ++i)
      for (int64_t j = 0; j < kw; ++j) {
        Value s =
            memref::LoadOp::create(b, loc, w, ValueRange{c, idx(i), idx(j)});
        weights.push_back(vector::BroadcastOp::create(b, loc, vecType, s));
      }
  }

  /// A static image's sizes and the row of x that output row 0's window
  /// starts at.
  struct Image {
    int64_t oh, ow, ih, iw, rowOff;
  };

  /// Output rows [oh0, oh0 + rows) of channel c, output vectors [v0, v0 +
  /// vectors) of each. With `staticOh0` the rows' window rows outside x are
  /// skipped; without, they all lie inside.
  void blockOfRows(Value n, Value c, Value oh0,
                   std::optional<int64_t> staticOh0, int64_t rows, int64_t v0,
                   int64_t vectors, const Image &im) {
    // An output vector's outputs left in the row (a partial vector is
    // masked).
    SmallVector<Value> valid(vectors);
    for (int64_t v = 0; v < vectors; ++v)
      if (im.ow - (v0 + v) * lanes < lanes)
        valid[v] = idx(im.ow - (v0 + v) * lanes);
    auto outRow = [&](int64_t r) {
      return r ? arith::AddIOp::create(b, loc, oh0, idx(r)).getResult() : oh0;
    };
    SmallVector<Value> accs;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t v = 0; v < vectors; ++v) {
        SmallVector<Value, 4> at{n, c, outRow(r), idx((v0 + v) * lanes)};
        if (initValue)
          accs.push_back(
              vector::BroadcastOp::create(b, loc, vecType, initValue));
        else
          accs.push_back(
              valid[v] ? vector::MaskedLoadOp::create(b, loc, vecType, out, at,
                                                      mask(vecType, valid[v]),
                                                      zeros(vecType))
                             .getResult()
                       : vector::LoadOp::create(b, loc, vecType, out, at)
                             .getResult());
      }
    // Input row t of the block is x's row oh0 * sh + rowOff + t.
    Value first = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, oh0, idx(sh)), idx(im.rowOff));
    int64_t span = (rows - 1) * sh + (kh - 1) * dh + 1;
    for (int64_t t = 0; t < span; ++t) {
      if (staticOh0) {
        int64_t row = *staticOh0 * sh + im.rowOff + t;
        if (row < 0 || row >= im.ih)
          continue; // zero padding
      }
      Value row = arith::AddIOp::create(b, loc, first, idx(t));
      // The (output row, window row) pairs that read this input row.
      SmallVector<std::pair<int64_t, int64_t>> uses;
      for (int64_t r = 0; r < rows; ++r) {
        int64_t d = t - r * sh;
        if (d >= 0 && d % dh == 0 && d / dh < kh)
          uses.push_back({r, d / dh});
      }
      if (uses.empty())
        continue;
      for (int64_t j = 0; j < kw; ++j)
        for (int64_t v = 0; v < vectors; ++v) {
          int64_t col = (v0 + v) * lanes * sw + j * dw + colOffset;
          Value in;
          if (col < 0) {
            in =
                loadLeftEdge(x, ValueRange{n, c, row}, inWidth, col, lanes, sw);
          } else {
            bool overhangs = col + (lanes - 1) * sw >= im.iw;
            in = loadInput(n, c, row, idx(std::min(col, im.iw)), overhangs);
          }
          for (auto [r, i] : uses) {
            Value &acc = accs[r * vectors + v];
            switch (combine) {
            case Combine::Fma:
              acc = vector::FMAOp::create(b, loc, in, weights[i * kw + j], acc);
              break;
            case Combine::Max:
              acc = arith::MaximumFOp::create(b, loc, acc, in);
              break;
            case Combine::Add:
              acc = arith::AddFOp::create(b, loc, acc, in);
              break;
            }
          }
        }
    }
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t v = 0; v < vectors; ++v)
        storeOutput(accs[r * vectors + v],
                    {n, c, outRow(r), idx((v0 + v) * lanes)}, valid[v]);
  }

  /// Stores an output vector at `at` (n, c, oh, ow) through the epilogue
  /// (and to the convolution's output when something else reads it);
  /// `valid` masks a partial vector.
  void storeOutput(Value acc, SmallVector<Value, 4> at, Value valid) {
    auto store = [&](Value value, Value mem) {
      if (valid)
        vector::MaskedStoreOp::create(b, loc, mem, at, mask(vecType, valid),
                                      value);
      else
        vector::StoreOp::create(b, loc, value, mem, at);
    };
    if (epilogue) {
      for (auto [result, init] : llvm::zip(
               mcc::applyConvEpilogue(b, loc, *epilogue, acc, at,
                                      valid ? mask(vecType, valid) : Value()),
               epilogue->op.getDpsInits()))
        store(result, init);
      if (!epilogue->storeOut)
        return;
    }
    store(acc, out);
  }

  /// `lanes` inputs sw apart from x[n, c, ih, iw]; `masked` loads only the
  /// floats inside the row (the last vector of a row may overhang it).
  Value loadInput(Value n, Value c, Value ih, Value iw, bool masked) {
    Value left = masked ? arith::SubIOp::create(b, loc, inWidth, iw).getResult()
                        : Value();
    // Right padding may put a whole vector past the row: its mask is empty,
    // but its address stays inside the buffer.
    if (masked && padded)
      iw = arith::MinSIOp::create(b, loc, iw, inWidth);
    SmallVector<Value, 4> at{n, c, ih, iw};
    return loadStrided(x, at, lanes, sw, left);
  }

  /// `count` output vectors from ow0 of row (n, c, oh); `valid` (the
  /// outputs left in the row) masks a partial vector.
  void rowBlock(Value n, Value c, Value oh, Value ih, Value ow0, int64_t count,
                Value valid, bool leftEdge, bool guarded) {
    SmallVector<Value> ows, accs;
    for (int64_t v = 0; v < count; ++v) {
      Value ow = v ? arith::AddIOp::create(b, loc, ow0, idx(v * lanes)) : ow0;
      ows.push_back(ow);
      SmallVector<Value, 4> at{n, c, oh, ow};
      if (initValue) {
        accs.push_back(vector::BroadcastOp::create(b, loc, vecType, initValue));
        continue;
      }
      accs.push_back(
          valid ? vector::MaskedLoadOp::create(b, loc, vecType, out, at,
                                               mask(vecType, valid),
                                               zeros(vecType))
                : vector::LoadOp::create(b, loc, vecType, out, at).getResult());
    }
    for (int64_t i = 0; i < kh; ++i) {
      Value row = arith::AddIOp::create(b, loc, ih, idx(i * dh));
      // A window row above or below x adds nothing.
      scf::IfOp inside;
      OpBuilder::InsertionGuard guard(b);
      if (guarded) {
        inside = ifRowInside(row, inHeight, accs);
        b.setInsertionPointToStart(inside.thenBlock());
      }
      for (int64_t j = 0; j < kw; ++j)
        for (int64_t v = 0; v < count; ++v) {
          Value in;
          if (leftEdge && j * dw + colOffset < 0) {
            in = loadLeftEdge(x, ValueRange{n, c, row}, inWidth,
                              j * dw + colOffset, lanes, sw);
          } else {
            Value iw = arith::AddIOp::create(
                b, loc, arith::MulIOp::create(b, loc, ows[v], idx(sw)),
                idx(j * dw + colOffset));
            in = loadInput(n, c, row, iw, bool(valid));
          }
          switch (combine) {
          case Combine::Fma:
            accs[v] =
                vector::FMAOp::create(b, loc, in, weights[i * kw + j], accs[v]);
            break;
          case Combine::Max:
            accs[v] = arith::MaximumFOp::create(b, loc, accs[v], in);
            break;
          case Combine::Add:
            accs[v] = arith::AddFOp::create(b, loc, accs[v], in);
            break;
          }
        }
      if (inside) {
        scf::YieldOp::create(b, loc, accs);
        accs = SmallVector<Value>(inside.getResults());
      }
    }
    for (int64_t v = 0; v < count; ++v)
      storeOutput(accs[v], {n, c, oh, ows[v]}, valid);
  }

  Value vectorOf(Value v) {
    if (isa<VectorType>(v.getType()))
      return v;
    return vector::BroadcastOp::create(
        b, loc, VectorType::get({lanes}, v.getType()), v);
  }

  Combine combine;

public:
  /// The value a fill just before the op wrote to the whole output: the
  /// accumulators start from it and the output is not read.
  Value initValue;
  std::optional<mcc::ConvEpilogue> epilogue;

private:
  Value x, w, out, inWidth, inHeight;
  int64_t sh, sw, dh, dw, kh, kw, lanes, vectors;
  bool padded = false;
  Value rowOffset;
  int64_t colOffset = 0;
  VectorType vecType;
  SmallVector<Value> weights;
};

/// The window's (KH, KW), if both are static.
std::optional<std::pair<int64_t, int64_t>> windowOf(Value v, unsigned first) {
  auto t = dyn_cast<MemRefType>(v.getType());
  if (!t || t.getRank() < first + 2 || t.isDynamicDim(first) ||
      t.isDynamicDim(first + 1))
    return std::nullopt;
  return std::make_pair(t.getDimSize(first), t.getDimSize(first + 1));
}

struct VectorizeDepthwiseConvPass
    : mcc::impl::VectorizeDepthwiseConvBase<VectorizeDepthwiseConvPass> {
  using VectorizeDepthwiseConvBase::VectorizeDepthwiseConvBase;

  void runOnOperation() override {
    struct Candidate {
      linalg::LinalgOp op;
      Combine combine;
      int64_t kh, kw;
      SmallVector<int64_t> strides, dilations;
    };
    SmallVector<Candidate> ops;
    auto consider = [&](linalg::LinalgOp op, Combine combine, unsigned first,
                        DenseIntElementsAttr strides,
                        DenseIntElementsAttr dilations) {
      Value x = op.getDpsInputs()[0], w = op.getDpsInputs()[1],
            out = op.getDpsInits()[0];
      auto wt = dyn_cast<MemRefType>(w.getType());
      std::optional<std::pair<int64_t, int64_t>> window = windowOf(w, first);
      if (!op.hasPureBufferSemantics() || !hasUnitInnerStride(x) ||
          !hasUnitInnerStride(out) || !window ||
          (combine == Combine::Fma && !wt.getElementType().isF32()))
        return;
      ops.push_back({op, combine, window->first, window->second,
                     intsOf(strides), intsOf(dilations)});
    };
    getOperation().walk([&](Operation *op) {
      if (auto conv = dyn_cast<linalg::DepthwiseConv2DNchwChwOp>(op))
        consider(conv, Combine::Fma, 1, conv.getStrides(), conv.getDilations());
      else if (auto pool = dyn_cast<linalg::PoolingNchwMaxOp>(op))
        consider(pool, Combine::Max, 0, pool.getStrides(), pool.getDilations());
      else if (auto pool = dyn_cast<linalg::PoolingNchwSumOp>(op))
        consider(pool, Combine::Add, 0, pool.getStrides(), pool.getDilations());
    });
    // Padded inputs of the convolutions that the kernel can read in place.
    llvm::DenseSet<Operation *> convs;
    for (Candidate &c : ops)
      if (c.combine == Combine::Fma)
        convs.insert(c.op);
    SmallVector<PaddedInput> padded;
    llvm::DenseMap<Operation *, std::pair<size_t, memref::SubViewOp>> readers;
    getOperation().walk([&](memref::AllocOp alloc) {
      std::optional<PaddedInput> p = mcc::findPaddedInput(alloc, convs);
      if (!p)
        return;
      for (memref::SubViewOp view : p->reads)
        for (Operation *conv : view->getUsers())
          readers[conv] = {padded.size(), view};
      padded.push_back(std::move(*p));
    });
    // A window that starts further left than the first output vector holds
    // keeps its padded buffer (and the buffer's other readers with it).
    for (Candidate &c : ops) {
      auto it = readers.find(c.op);
      if (it == readers.end())
        continue;
      PaddedInput &p = padded[it->second.first];
      std::optional<int64_t> col =
          getConstantIntValue(it->second.second.getMixedOffsets()[3]);
      int64_t sw = c.strides[1];
      if (!col || (p.low[3] - *col + sw - 1) / sw > lanes)
        p.alloc = {};
    }
    for (Candidate &c : ops) {
      linalg::LinalgOp op = c.op;
      // The accumulator's fill (fused into the same tile) is folded into
      // the kernel: one pass over the output instead of two.
      auto fill = dyn_cast_or_null<linalg::FillOp>(op->getPrevNode());
      if (fill && (!fill.hasPureBufferSemantics() ||
                   fill.getDpsInits()[0] != op.getDpsInits()[0] ||
                   !fill.value().getType().isF32()))
        fill = {};
      OpBuilder b(op);
      Value x = op.getDpsInputs()[0];
      Value rowOffset;
      int64_t colOffset = 0;
      if (auto it = readers.find(op);
          it != readers.end() && padded[it->second.first].alloc) {
        // The tile of the source that the op's view of the padded buffer
        // covers: the same batch and channels, every row and column.
        std::optional<int64_t> col;
        x = mcc::sourceTileOf(b, op.getLoc(), padded[it->second.first],
                              it->second.second, rowOffset, col);
        colOffset = *col;
      }
      DepthwiseEmitter emitter(b, op.getLoc(), c.combine, x,
                               op.getDpsInputs()[1], op.getDpsInits()[0], c.kh,
                               c.kw, c.strides, c.dilations, lanes, vectors);
      if (rowOffset)
        emitter.readInPlace(rowOffset, colOffset);
      if (fill)
        emitter.initValue = fill.value();
      if (c.combine == Combine::Fma)
        emitter.epilogue = mcc::matchConvEpilogue(op, x, fill, 2);
      emitter.emit();
      op->erase();
      if (emitter.initValue)
        fill->erase();
      if (emitter.epilogue)
        emitter.epilogue->op->erase();
    }
    for (PaddedInput &p : padded)
      if (p.alloc)
        mcc::erasePaddedInput(p);
  }
};

} // namespace
