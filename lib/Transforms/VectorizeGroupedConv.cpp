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
// broadcasts one weight per row and issues rows x vectors fmas. The input
// is the padded buffer itself; nothing is copied.
//
//===----------------------------------------------------------------------===//

#include "mcc/Transforms/Passes.h"
#include "mcc/Transforms/VectorKernelUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"

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

  void emit() {
    Value N = dim(out, 0), G = dim(out, 1), F = dim(out, 2), OH = dim(out, 3),
          OW = dim(out, 4);
    C = dim(x, 2);
    inWidth = dim(x, 4);
    // Outputs whose `sw`-float input blocks all lie inside the row: their
    // wide loads need no mask.
    Value span = arith::SubIOp::create(b, loc, inWidth, idx((kw - 1) * dw));
    Value safe = arith::MaxSIOp::create(
        b, loc, arith::DivSIOp::create(b, loc, span, idx(sw)), idx(0));
    safe = arith::MinSIOp::create(b, loc, safe, OW);
    int64_t block = lanes * vectors;
    Value blockEnd = roundDown(safe, block);
    Value vecEnd = arith::AddIOp::create(
        b, loc, blockEnd,
        roundDown(arith::SubIOp::create(b, loc, safe, blockEnd), lanes));
    Value fFull = roundDown(F, rows);
    forLoop(idx(0), N, 1, [&](Value n) {
      forLoop(idx(0), G, 1, [&](Value g) {
        auto channels = [&](Value f0, int64_t count) {
          forLoop(idx(0), OH, 1, [&](Value oh) {
            Value ih = arith::MulIOp::create(b, loc, oh, idx(sh));
            Site at{n, g, f0, oh, ih};
            forLoop(idx(0), blockEnd, block,
                    [&](Value ow0) { tile(at, count, ow0, vectors, Value()); });
            forLoop(blockEnd, vecEnd, lanes,
                    [&](Value ow0) { tile(at, count, ow0, 1, Value()); });
            // The rest of the row, masked on the output and the input.
            forLoop(vecEnd, OW, lanes, [&](Value ow0) {
              tile(at, count, ow0, 1, arith::SubIOp::create(b, loc, OW, ow0));
            });
          });
        };
        forLoop(idx(0), fFull, rows, [&](Value f0) { channels(f0, rows); });
        forLoop(fFull, F, 1, [&](Value f0) { channels(f0, 1); });
      });
    });
  }

  /// The value a fill just before the op wrote to the whole output: the
  /// accumulators start from it and the output is not read.
  Value initValue;

private:
  struct Site {
    Value n, g, f0, oh, ih;
  };

  /// `lanes` inputs sw apart from x[n, g, c, ih, iw]; `masked` loads only
  /// the floats inside the row.
  Value loadInput(const Site &s, Value c, Value ih, Value iw, bool masked) {
    SmallVector<Value, 5> at{s.n, s.g, c, ih, iw};
    Value left = masked ? arith::SubIOp::create(b, loc, inWidth, iw).getResult()
                        : Value();
    return loadStrided(x, at, lanes, sw, left);
  }

  /// `count` output channels from f0 times `nv` vectors of row oh from ow0;
  /// `valid` (outputs left in the row) masks a partial vector.
  void tile(const Site &s, int64_t count, Value ow0, int64_t nv, Value valid) {
    SmallVector<Value> fs, ows, iws;
    for (int64_t i = 0; i < count; ++i)
      fs.push_back(i ? arith::AddIOp::create(b, loc, s.f0, idx(i)) : s.f0);
    for (int64_t v = 0; v < nv; ++v) {
      Value ow = v ? arith::AddIOp::create(b, loc, ow0, idx(v * lanes)) : ow0;
      ows.push_back(ow);
      iws.push_back(arith::MulIOp::create(b, loc, ow, idx(sw)));
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
    auto loop = scf::ForOp::create(
        b, loc, idx(0), C, idx(1), acc,
        [&](OpBuilder &, Location, Value c, ValueRange in) {
          // One window row: kw taps, unrolled.
          auto windowRow = [&](Value p, SmallVector<Value> sums) {
            Value row = arith::AddIOp::create(
                b, loc, s.ih, arith::MulIOp::create(b, loc, p, idx(dh)));
            for (int64_t q = 0; q < kw; ++q) {
              SmallVector<Value> inputs;
              for (int64_t v = 0; v < nv; ++v)
                inputs.push_back(loadInput(
                    s, c, row,
                    arith::AddIOp::create(b, loc, iws[v], idx(q * dw)),
                    bool(valid)));
              for (int64_t i = 0; i < count; ++i) {
                Value weight = memref::LoadOp::create(
                    b, loc, w, ValueRange{s.g, fs[i], c, p, idx(q)});
                Value splat =
                    vector::BroadcastOp::create(b, loc, vecType, weight);
                for (int64_t v = 0; v < nv; ++v)
                  sums[i * nv + v] = vector::FMAOp::create(
                      b, loc, inputs[v], splat, sums[i * nv + v]);
              }
            }
            return sums;
          };
          SmallVector<Value> sums(in.begin(), in.end());
          if (kh * kw <= kMaxUnrolledTaps) {
            for (int64_t p = 0; p < kh; ++p)
              sums = windowRow(idx(p), sums);
          } else {
            // A large window (resnet's 7 x 7 stem) fully unrolled kept
            // more values live than registers: LLVM hoisted loads and
            // spilled accumulators, 37 GFLOPS. Its rows become a loop.
            auto rows = scf::ForOp::create(
                b, loc, idx(0), idx(kh), idx(1), sums,
                [&](OpBuilder &, Location, Value p, ValueRange carried) {
                  scf::YieldOp::create(
                      b, loc,
                      windowRow(p, SmallVector<Value>(carried.begin(),
                                                      carried.end())));
                });
            sums = SmallVector<Value>(rows.getResults());
          }
          scf::YieldOp::create(b, loc, sums);
        });
    for (int64_t i = 0; i < count; ++i)
      for (int64_t v = 0; v < nv; ++v) {
        Value sum = loop.getResult(i * nv + v);
        if (valid)
          vector::MaskedStoreOp::create(b, loc, out, outAt(i, v),
                                        mask(vecType, valid), sum);
        else
          vector::StoreOp::create(b, loc, sum, out, outAt(i, v));
      }
  }

  Value x, w, out, C, inWidth;
  int64_t sh, sw, dh, dw, kh, kw, rows, lanes, vectors;
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
    for (linalg::Conv2DNgchwGfchwOp op : ops) {
      OpBuilder b(op);
      GroupedConvEmitter emitter(
          b, op.getLoc(), op.getDpsInputs()[0], op.getDpsInputs()[1],
          op.getDpsInits()[0], intsOf(op.getStrides()),
          intsOf(op.getDilations()), rows, lanes, vectors);
      // The accumulator's fill (fused into the same tile) seeds the
      // accumulators: the output is written once.
      auto fill = dyn_cast_or_null<linalg::FillOp>(op->getPrevNode());
      if (fill && fill.hasPureBufferSemantics() &&
          fill.getDpsInits()[0] == op.getDpsInits()[0] &&
          fill.value().getType().isF32())
        emitter.initValue = fill.value();
      emitter.emit();
      op->erase();
      if (emitter.initValue)
        fill->erase();
    }
  }
};

} // namespace
