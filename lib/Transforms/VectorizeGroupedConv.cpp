//===- VectorizeGroupedConv.cpp - grouped convolutions without im2col -----===//
//
// A grouped convolution with few channels per group (ResNeXt's 32 groups of
// 4 to 64 channels, RegNet's groups of 8 to 32) multiplies each input float
// by only F/G weights per tap. As im2col + batch_matmul, its column buffer
// is KH*KW times the input (29 MB for resnext101's first stage) and the
// product streams it from memory at ~4 flops per byte: 34 GFLOPS against
// ~90 for a dense product. Here a buffer-level f32 linalg.conv_2d_ngchw_gfchw
// becomes loops over (n, g, output-channel block, oh) around a register
// block of rows x vectors outputs (rows output channels, vectors of one
// output row), walking (c, kh, kw) like a matmul's K: each step loads the
// input row segment in place (a wider load and a shuffle for stride 2),
// broadcasts one weight per row and issues rows x vectors fmas. No im2col.
//
// A zero-padded input (PaddedInput.h: border fills and a copy of the
// producer's result into the interior, which a product's output needs as it
// cannot write a row-strided interior) is read in place: window rows above
// and below the source add nothing (a branch per window row, only in the
// top and bottom output rows), the first vector of a row masks off the
// lanes left of it, the row's end is masked. The padded buffer, its fills
// and the copy go: on resnext101 they were ~10 ms of a ~270 ms run.
//
//===----------------------------------------------------------------------===//

#include "mcc/Transforms/PaddedInput.h"
#include "mcc/Transforms/Passes.h"
#include "mcc/Transforms/VectorKernelUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"

#include <tuple>

namespace mcc {
#define GEN_PASS_DEF_VECTORIZEGROUPEDCONV
#include "mcc/Transforms/Passes.h.inc"
} // namespace mcc

using namespace mlir;
using mcc::hasUnitInnerStride;
using mcc::intsOf;

namespace {

/// Windows of more taps than this run their rows as a loop.
constexpr int64_t kMaxUnrolledTaps = 9;

/// Emits out[n, g, f, oh, ow] += sum_(c, kh, kw) x[n, g, c, oh*sh + kh*dh,
/// ow*sw + kw*dw] * w[g, f, c, kh, kw], every size but the window's read
/// from the buffers at run time.
class GroupedConvEmitter : mcc::VectorKernelBuilder {
public:
  GroupedConvEmitter(OpBuilder &b, Location loc, Value x, Value w, Value out,
                     ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations,
                     int64_t rows, int64_t lanes, int64_t vectors)
      : VectorKernelBuilder(b, loc), x(x), w(w), out(out), sh(strides[0]),
        sw(strides[1]), dh(dilations[0]), dw(dilations[1]), rows(rows),
        lanes(lanes), vectors(vectors) {
    auto wShape = cast<MemRefType>(w.getType()).getShape();
    kh = wShape[3];
    kw = wShape[4];
    vecType = VectorType::get({lanes}, b.getF32Type());
  }

  /// Reads x as if padded: input (ih, iw) of the op is x[.., ih +
  /// rowOffset, iw + colOffset], zero outside x. colOffset is at most 0 and
  /// the first output vector of a row holds every output whose window
  /// starts left of it.
  void readInPlace(Value rowOffset, int64_t colOffset) {
    padded = true;
    this->rowOffset = rowOffset;
    this->colOffset = colOffset;
  }

  void emit() {
    Value N = dim(out, 0), G = dim(out, 1), F = dim(out, 2), OH = dim(out, 3),
          OW = dim(out, 4);
    C = dim(x, 2);
    inHeight = dim(x, 3);
    inWidth = dim(x, 4);
    RowSpans spans =
        rowSpans(inWidth, OW, kw, dw, sw, colOffset, lanes, vectors);
    Value start = spans.start, blockEnd = spans.blockEnd, vecEnd = spans.vecEnd;
    int64_t block = lanes * vectors;
    bool leftEdge = colOffset < 0;
    Value fFull = roundDown(F, rows);
    forLoop(idx(0), N, 1, [&](Value n) {
      forLoop(idx(0), G, 1, [&](Value g) {
        auto channels = [&](Value f0, int64_t count) {
          auto outputRow = [&](Value oh, bool guarded) {
            Value ih = arith::MulIOp::create(b, loc, oh, idx(sh));
            if (padded)
              ih = arith::AddIOp::create(b, loc, ih, rowOffset);
            Site at{n, g, f0, oh, ih, guarded};
            if (leftEdge)
              tile(at, count, idx(0), 1,
                   arith::MinSIOp::create(b, loc, OW, idx(lanes)), true);
            if (guarded) {
              // The few top and bottom rows: single masked vectors only,
              // less code to compile.
              forLoop(start, OW, lanes, [&](Value ow0) {
                tile(at, count, ow0, 1, arith::SubIOp::create(b, loc, OW, ow0));
              });
              return;
            }
            forLoop(start, blockEnd, block,
                    [&](Value ow0) { tile(at, count, ow0, vectors, Value()); });
            forLoop(blockEnd, vecEnd, lanes,
                    [&](Value ow0) { tile(at, count, ow0, 1, Value()); });
            // The rest of the row, masked on the output and the input.
            forLoop(vecEnd, OW, lanes, [&](Value ow0) {
              tile(at, count, ow0, 1, arith::SubIOp::create(b, loc, OW, ow0));
            });
          };
          if (!padded) {
            forLoop(idx(0), OH, 1, [&](Value oh) { outputRow(oh, false); });
            return;
          }
          // Rows whose window lies inside x run without the per-window-row
          // check: [top, bottom) of OH.
          Value top, bottom;
          std::tie(top, bottom) =
              rowsInside(inHeight, OH, rowOffset, kh, dh, sh);
          forLoop(top, bottom, 1, [&](Value oh) { outputRow(oh, false); });
          // The top rows and then the bottom ones, in one loop: one copy of
          // the guarded code.
          Value edgeRows = arith::AddIOp::create(
              b, loc, top, arith::SubIOp::create(b, loc, OH, bottom));
          forLoop(idx(0), edgeRows, 1, [&](Value i) {
            Value below = arith::AddIOp::create(
                b, loc, bottom, arith::SubIOp::create(b, loc, i, top));
            Value inTop = arith::CmpIOp::create(
                b, loc, arith::CmpIPredicate::slt, i, top);
            outputRow(arith::SelectOp::create(b, loc, inTop, i, below), true);
          });
        };
        forLoop(idx(0), fFull, rows, [&](Value f0) { channels(f0, rows); });
        // Single channels after the blocks, unless F is known to need none
        // (ResNeXt's 8 to 64 per group): each copy of the row code costs
        // compile time.
        int64_t staticF = cast<MemRefType>(out.getType()).getDimSize(2);
        if (ShapedType::isDynamic(staticF) || staticF % rows)
          forLoop(fFull, F, 1, [&](Value f0) { channels(f0, 1); });
      });
    });
  }

  /// The value a fill just before the op wrote to the whole output: the
  /// accumulators start from it and the output is not read.
  Value initValue;
  /// The bias and activation after the convolution, applied before each
  /// store (mcc::matchConvEpilogue).
  std::optional<mcc::ConvEpilogue> epilogue;

private:
  struct Site {
    Value n, g, f0, oh, ih;
    /// Whether window rows may lie above or below x.
    bool guarded;
  };

  /// `lanes` inputs sw apart from x[n, g, c, ih, iw]; `masked` loads only
  /// the floats inside the row.
  Value loadInput(const Site &s, Value c, Value ih, Value iw, bool masked) {
    Value left = masked ? arith::SubIOp::create(b, loc, inWidth, iw).getResult()
                        : Value();
    // Right padding may put a whole vector past the row: its mask is empty,
    // but its address stays inside the buffer.
    if (masked && padded)
      iw = arith::MinSIOp::create(b, loc, iw, inWidth);
    SmallVector<Value, 5> at{s.n, s.g, c, ih, iw};
    return loadStrided(x, at, lanes, sw, left);
  }

  /// `count` output channels from f0 times `nv` vectors of row oh from ow0;
  /// `valid` (outputs left in the row) masks a partial vector; `leftEdge`:
  /// the row's first vector, whose first taps may lie left of x.
  void tile(const Site &s, int64_t count, Value ow0, int64_t nv, Value valid,
            bool leftEdge = false) {
    SmallVector<Value> fs, ows, iws;
    for (int64_t i = 0; i < count; ++i)
      fs.push_back(i ? arith::AddIOp::create(b, loc, s.f0, idx(i)) : s.f0);
    for (int64_t v = 0; v < nv; ++v) {
      Value ow = v ? arith::AddIOp::create(b, loc, ow0, idx(v * lanes)) : ow0;
      ows.push_back(ow);
      iws.push_back(arith::MulIOp::create(b, loc, ow, idx(sw)));
      if (colOffset)
        iws.back() = arith::AddIOp::create(b, loc, iws.back(), idx(colOffset));
    }
    auto outAt = [&](int64_t i, int64_t v) {
      return SmallVector<Value, 5>{s.n, s.g, fs[i], s.oh, ows[v]};
    };
    SmallVector<Value> acc;
    for (int64_t i = 0; i < count; ++i)
      for (int64_t v = 0; v < nv; ++v) {
        if (initValue)
          acc.push_back(
              vector::BroadcastOp::create(b, loc, vecType, initValue));
        else if (valid)
          acc.push_back(vector::MaskedLoadOp::create(
              b, loc, vecType, out, outAt(i, v), mask(vecType, valid),
              zeros(vecType)));
        else
          acc.push_back(
              vector::LoadOp::create(b, loc, vecType, out, outAt(i, v)));
      }
    // One window row of channel c: kw taps, unrolled.
    auto taps = [&](Value c, Value p, Value row, SmallVector<Value> sums) {
      for (int64_t q = 0; q < kw; ++q) {
        SmallVector<Value> inputs;
        for (int64_t v = 0; v < nv; ++v) {
          if (leftEdge && q * dw + colOffset < 0)
            inputs.push_back(loadLeftEdge(x, ValueRange{s.n, s.g, c, row},
                                          inWidth, q * dw + colOffset, lanes,
                                          sw));
          else
            inputs.push_back(loadInput(
                s, c, row, arith::AddIOp::create(b, loc, iws[v], idx(q * dw)),
                bool(valid)));
        }
        for (int64_t i = 0; i < count; ++i) {
          Value weight = memref::LoadOp::create(
              b, loc, w, ValueRange{s.g, fs[i], c, p, idx(q)});
          Value splat = vector::BroadcastOp::create(b, loc, vecType, weight);
          for (int64_t v = 0; v < nv; ++v)
            sums[i * nv + v] = vector::FMAOp::create(b, loc, inputs[v], splat,
                                                     sums[i * nv + v]);
        }
      }
      return sums;
    };
    auto rowOf = [&](Value p) {
      return arith::AddIOp::create(b, loc, s.ih,
                                   arith::MulIOp::create(b, loc, p, idx(dh)))
          .getResult();
    };
    // `body` over every channel of the group, carrying the accumulators.
    auto overChannels =
        [&](SmallVector<Value> sums,
            function_ref<SmallVector<Value>(Value, SmallVector<Value>)> body) {
          auto loop = scf::ForOp::create(
              b, loc, idx(0), C, idx(1), sums,
              [&](OpBuilder &, Location, Value c, ValueRange in) {
                scf::YieldOp::create(
                    b, loc, body(c, SmallVector<Value>(in.begin(), in.end())));
              });
          return SmallVector<Value>(loop.getResults());
        };
    // `body` over the window rows: unrolled for small windows; a large one
    // (resnet's 7 x 7 stem) fully unrolled kept more values live than
    // registers (LLVM hoisted loads and spilled accumulators, 37 GFLOPS),
    // so its rows are a loop.
    auto overWindowRows =
        [&](SmallVector<Value> sums,
            function_ref<SmallVector<Value>(Value, SmallVector<Value>)> body) {
          if (kh * kw <= kMaxUnrolledTaps) {
            for (int64_t p = 0; p < kh; ++p)
              sums = body(idx(p), sums);
            return sums;
          }
          auto loop = scf::ForOp::create(
              b, loc, idx(0), idx(kh), idx(1), sums,
              [&](OpBuilder &, Location, Value p, ValueRange in) {
                scf::YieldOp::create(
                    b, loc, body(p, SmallVector<Value>(in.begin(), in.end())));
              });
          return SmallVector<Value>(loop.getResults());
        };
    SmallVector<Value> result;
    if (!s.guarded) {
      result = overChannels(acc, [&](Value c, SmallVector<Value> sums) {
        return overWindowRows(sums, [&](Value p, SmallVector<Value> sums) {
          return taps(c, p, rowOf(p), sums);
        });
      });
    } else {
      // The top and bottom output rows: window rows outer, so that one
      // above or below x is skipped whole, with no branch in the channel
      // loop (with one, a stride-2 block of resnext101's layer2 took 1.77
      // ms against 1.48 ms).
      result = overWindowRows(acc, [&](Value p, SmallVector<Value> sums) {
        Value row = rowOf(p);
        scf::IfOp inside = ifRowInside(row, inHeight, sums);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(inside.thenBlock());
        scf::YieldOp::create(
            b, loc, overChannels(sums, [&](Value c, SmallVector<Value> sums) {
              return taps(c, p, row, sums);
            }));
        return SmallVector<Value>(inside.getResults());
      });
    }
    for (int64_t i = 0; i < count; ++i)
      for (int64_t v = 0; v < nv; ++v)
        storeOutput(result[i * nv + v], outAt(i, v), valid);
  }

  /// Stores an output vector at `at` (n, g, f, oh, ow) through the
  /// epilogue (and to the convolution's output when something else reads
  /// it); `valid` masks a partial vector.
  void storeOutput(Value sum, SmallVector<Value, 5> at, Value valid) {
    Value lanesMask = valid ? mask(vecType, valid) : Value();
    auto store = [&](Value value, Value mem) {
      if (lanesMask)
        vector::MaskedStoreOp::create(b, loc, mem, at, lanesMask, value);
      else
        vector::StoreOp::create(b, loc, value, mem, at);
    };
    if (epilogue) {
      for (auto [result, init] : llvm::zip(
               mcc::applyConvEpilogue(b, loc, *epilogue, sum, at, lanesMask),
               epilogue->op.getDpsInits()))
        store(result, init);
      if (!epilogue->storeOut)
        return;
    }
    store(sum, out);
  }

  Value x, w, out, C, inHeight, inWidth;
  int64_t sh, sw, dh, dw, kh, kw, rows, lanes, vectors;
  bool padded = false;
  Value rowOffset;
  int64_t colOffset = 0;
  VectorType vecType;
};

struct VectorizeGroupedConvPass
    : mcc::impl::VectorizeGroupedConvBase<VectorizeGroupedConvPass> {
  using VectorizeGroupedConvBase::VectorizeGroupedConvBase;

  void runOnOperation() override {
    SmallVector<linalg::Conv2DNgchwGfchwOp> ops;
    getOperation().walk([&](linalg::Conv2DNgchwGfchwOp op) {
      Value w = op.getDpsInputs()[1];
      auto wt = dyn_cast<MemRefType>(w.getType());
      if (op.hasPureBufferSemantics() &&
          hasUnitInnerStride(op.getDpsInputs()[0]) &&
          hasUnitInnerStride(op.getDpsInits()[0]) && wt &&
          wt.getElementType().isF32() && !wt.isDynamicDim(3) &&
          !wt.isDynamicDim(4))
        ops.push_back(op);
    });
    // Padded inputs of these convolutions that the kernel can read in place.
    llvm::DenseSet<Operation *> convs;
    for (linalg::Conv2DNgchwGfchwOp op : ops)
      convs.insert(op);
    SmallVector<mcc::PaddedInput> padded;
    llvm::DenseMap<Operation *, std::pair<size_t, memref::SubViewOp>> readers;
    getOperation().walk([&](memref::AllocOp alloc) {
      std::optional<mcc::PaddedInput> p = mcc::findPaddedInput(alloc, convs);
      if (!p || p->low.size() != 5)
        return;
      for (memref::SubViewOp view : p->reads)
        for (Operation *conv : view->getUsers())
          readers[conv] = {padded.size(), view};
      padded.push_back(std::move(*p));
    });
    // A window that starts further left than the first output vector holds
    // keeps its padded buffer (and the buffer's other readers with it).
    for (linalg::Conv2DNgchwGfchwOp op : ops) {
      auto it = readers.find(op);
      if (it == readers.end())
        continue;
      mcc::PaddedInput &p = padded[it->second.first];
      std::optional<int64_t> col =
          getConstantIntValue(it->second.second.getMixedOffsets()[4]);
      int64_t sw = intsOf(op.getStrides())[1];
      if (!col || *col > p.low[4] || (p.low[4] - *col + sw - 1) / sw > lanes)
        p.alloc = {};
    }
    for (linalg::Conv2DNgchwGfchwOp op : ops) {
      // The accumulator's fill (fused into the same tile) seeds the
      // accumulators: the output is written once. (Looked up before the
      // source's view goes in between.)
      auto fill = dyn_cast_or_null<linalg::FillOp>(op->getPrevNode());
      if (fill && (!fill.hasPureBufferSemantics() ||
                   fill.getDpsInits()[0] != op.getDpsInits()[0] ||
                   !fill.value().getType().isF32()))
        fill = {};
      OpBuilder b(op);
      Value x = op.getDpsInputs()[0], rowOffset;
      std::optional<int64_t> colOffset;
      if (auto it = readers.find(op);
          it != readers.end() && padded[it->second.first].alloc)
        x = mcc::sourceTileOf(b, op.getLoc(), padded[it->second.first],
                              it->second.second, rowOffset, colOffset);
      GroupedConvEmitter emitter(b, op.getLoc(), x, op.getDpsInputs()[1],
                                 op.getDpsInits()[0], intsOf(op.getStrides()),
                                 intsOf(op.getDilations()), rows, lanes,
                                 vectors);
      if (rowOffset)
        emitter.readInPlace(rowOffset, *colOffset);
      if (fill)
        emitter.initValue = fill.value();
      emitter.epilogue = mcc::matchConvEpilogue(op, x, fill, 3);
      emitter.emit();
      op->erase();
      if (emitter.initValue)
        fill->erase();
      if (emitter.epilogue)
        emitter.epilogue->op->erase();
    }
    for (mcc::PaddedInput &p : padded)
      if (p.alloc)
        mcc::erasePaddedInput(p);
  }
};

} // namespace
