//===- VectorizeDepthwiseConv.cpp - depthwise convolutions along W --------===//
//
// A buffer-level f32 linalg.depthwise_conv_2d_nchw_chw becomes loops over
// (n, c, oh) around a kernel that keeps a few vectors of one output row in
// registers while it walks the KH x KW window: each window step is one
// vector load of the input row (strided rows read `stride` times as many
// floats and keep every stride-th), one broadcast weight and one fma per
// vector. The channel's weights are broadcast once, outside the row loop.
// Without this, the op lowers to scalar loops whose inner loop either runs
// over the window or carries the output through memory.
//
// Max and sum pooling (linalg.pooling_nchw_max/sum) have the same loops
// with a maximumf or an add instead of the fma: resnet's 3x3 stride-2 max
// pool took 3.9 ms of a 100 ms run as scalar loops with the output carried
// through memory.
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
#define GEN_PASS_DEF_VECTORIZEDEPTHWISECONV
#include "mcc/Transforms/Passes.h.inc"
} // namespace mcc

using namespace mlir;
using mcc::hasUnitInnerStride;
using mcc::intsOf;

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

  void emit() {
    Value N = dim(out, 0), C = dim(out, 1), OH = dim(out, 2), OW = dim(out, 3);
    inWidth = dim(x, 3);
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
    forLoop(idx(0), N, 1, [&](Value n) {
      forLoop(idx(0), C, 1, [&](Value c) {
        weights.clear();
        for (int64_t i = 0; i < kh && combine == Combine::Fma; ++i)
          for (int64_t j = 0; j < kw; ++j) {
            Value s = memref::LoadOp::create(b, loc, w,
                                             ValueRange{c, idx(i), idx(j)});
            weights.push_back(vector::BroadcastOp::create(b, loc, vecType, s));
          }
        forLoop(idx(0), OH, 1, [&](Value oh) {
          Value ih = arith::MulIOp::create(b, loc, oh, idx(sh));
          auto row = [&](Value ow0, int64_t count, Value valid) {
            rowBlock(n, c, oh, ih, ow0, count, valid);
          };
          forLoop(idx(0), blockEnd, block,
                  [&](Value ow0) { row(ow0, vectors, Value()); });
          forLoop(blockEnd, vecEnd, lanes,
                  [&](Value ow0) { row(ow0, 1, Value()); });
          // The rest of the row, masked on both the output and the input.
          forLoop(vecEnd, OW, lanes, [&](Value ow0) {
            row(ow0, 1, arith::SubIOp::create(b, loc, OW, ow0));
          });
        });
      });
    });
  }

private:
  /// `lanes` inputs sw apart from x[n, c, ih, iw]; `masked` loads only the
  /// floats inside the row (the last vector of a row may overhang it).
  Value loadInput(Value n, Value c, Value ih, Value iw, bool masked) {
    SmallVector<Value, 4> at{n, c, ih, iw};
    Value left = masked ? arith::SubIOp::create(b, loc, inWidth, iw).getResult()
                        : Value();
    return loadStrided(x, at, lanes, sw, left);
  }

  /// `count` output vectors from ow0 of row (n, c, oh); `valid` (the
  /// outputs left in the row) masks a partial vector.
  void rowBlock(Value n, Value c, Value oh, Value ih, Value ow0, int64_t count,
                Value valid) {
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
      for (int64_t j = 0; j < kw; ++j)
        for (int64_t v = 0; v < count; ++v) {
          Value iw = arith::AddIOp::create(
              b, loc, arith::MulIOp::create(b, loc, ows[v], idx(sw)),
              idx(j * dw));
          Value in = loadInput(n, c, row, iw, bool(valid));
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
    }
    for (int64_t v = 0; v < count; ++v) {
      SmallVector<Value, 4> at{n, c, oh, ows[v]};
      if (valid)
        vector::MaskedStoreOp::create(b, loc, out, at, mask(vecType, valid),
                                      accs[v]);
      else
        vector::StoreOp::create(b, loc, accs[v], out, at);
    }
  }

  Combine combine;

public:
  /// The value a fill just before the op wrote to the whole output: the
  /// accumulators start from it and the output is not read.
  Value initValue;

private:
  Value x, w, out, inWidth;
  int64_t sh, sw, dh, dw, kh, kw, lanes, vectors;
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
    for (Candidate &c : ops) {
      linalg::LinalgOp op = c.op;
      OpBuilder b(op);
      DepthwiseEmitter emitter(b, op.getLoc(), c.combine, op.getDpsInputs()[0],
                               op.getDpsInputs()[1], op.getDpsInits()[0], c.kh,
                               c.kw, c.strides, c.dilations, lanes, vectors);
      // The accumulator's fill (fused into the same tile) is folded into
      // the kernel: one pass over the output instead of two.
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
