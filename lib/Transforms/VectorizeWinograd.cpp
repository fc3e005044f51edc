//===- VectorizeWinograd.cpp - Winograd tile transforms as vector code ----===//
//
// The importer lowers 3x3 stride-1 convolutions on the CPU as Winograd
// F(2x2, 3x3) (lib/Import/WinogradConv.cpp): an input transform, 16
// products, an output transform. Its transforms are reference loops, sums
// over a tile with constant coefficients, marked `mcc.winograd`; as scalar
// loops with the 0 and +-1 coefficients multiplied out they took longer
// than the products they save. Here each becomes vector code along the
// tiles of an image row, `lanes` tiles per vector:
//
//  * input: V = B^T d B of each 4x4 input tile. Row i of the tiles is four
//    vectors, the row's columns 2tx, 2tx+1, 2tx+2, 2tx+3 (two wide loads
//    and even/odd shuffles); B^T d combines rows and (B^T d) B columns with
//    16 subtractions or additions each, and the 16 results are stored to
//    the 16 products' operands.
//  * output: Y = A^T M A of each tile's 16 products, 24 additions, and the
//    two columns of each output row interleaved into one contiguous store.
//
// The fill that zeroes the transform's output for the reference loops goes
// too (the vector code writes every element without reading it).
//
//===----------------------------------------------------------------------===//

#include "mcc/Transforms/Passes.h"
#include "mcc/Transforms/VectorKernelUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mcc {
#define GEN_PASS_DEF_VECTORIZEWINOGRAD
#include "mcc/Transforms/Passes.h.inc"
} // namespace mcc

using namespace mlir;
using mcc::hasUnitInnerStride;

namespace {

class WinogradEmitter : mcc::VectorKernelBuilder {
public:
  WinogradEmitter(OpBuilder &b, Location loc, int64_t lanes)
      : VectorKernelBuilder(b, loc), lanes(lanes) {
    vecType = VectorType::get({lanes}, b.getF32Type());
  }

  /// x [N, C, H, W] (tiles 4x4 from rows 2ty, columns 2tx) -> v [4, 4, C,
  /// N, TH, TW].
  void input(Value x, Value v) {
    auto wideType = VectorType::get({2 * lanes}, b.getF32Type());
    Value width = dim(x, 3);
    forLoop(idx(0), dim(v, 2), 1, [&](Value c) {
      forLoop(idx(0), dim(v, 3), 1, [&](Value n) {
        forLoop(idx(0), dim(v, 4), 1, [&](Value ty) {
          Value tiles = dim(v, 5);
          forLoop(idx(0), tiles, lanes, [&](Value tx0) {
            Value col = arith::MulIOp::create(b, loc, tx0, idx(2));
            // d[i][j]: columns 2tx + j of tile row i, one vector of tiles.
            Value d[4][4];
            for (int64_t i = 0; i < 4; ++i) {
              Value row = arith::AddIOp::create(
                  b, loc, arith::MulIOp::create(b, loc, ty, idx(2)), idx(i));
              for (int64_t shift = 0; shift < 4; shift += 2) {
                Value at = arith::AddIOp::create(b, loc, col, idx(shift));
                Value left = arith::SubIOp::create(b, loc, width, at);
                Value wide = vector::MaskedLoadOp::create(
                    b, loc, wideType, x, ValueRange{n, c, row, at},
                    mask(wideType, left), zeros(wideType));
                d[i][shift] = every2(wide, 0);
                d[i][shift + 1] = every2(wide, 1);
              }
            }
            // t = B^T d (rows), then V = t B (columns).
            Value t[4][4], out[4][4];
            for (int64_t j = 0; j < 4; ++j) {
              t[0][j] = sub(d[0][j], d[2][j]);
              t[1][j] = add(d[1][j], d[2][j]);
              t[2][j] = sub(d[2][j], d[1][j]);
              t[3][j] = sub(d[1][j], d[3][j]);
            }
            for (int64_t r = 0; r < 4; ++r) {
              out[r][0] = sub(t[r][0], t[r][2]);
              out[r][1] = add(t[r][1], t[r][2]);
              out[r][2] = sub(t[r][2], t[r][1]);
              out[r][3] = sub(t[r][1], t[r][3]);
            }
            Value m = mask(vecType, arith::SubIOp::create(b, loc, tiles, tx0));
            for (int64_t r = 0; r < 4; ++r)
              for (int64_t s = 0; s < 4; ++s)
                vector::MaskedStoreOp::create(
                    b, loc, v, ValueRange{idx(r), idx(s), c, n, ty, tx0}, m,
                    out[r][s]);
          });
        });
      });
    });
  }

  /// m [4, 4, F, N, TH, TW] -> y [N, F, TH, 2, TW * 2] (the output rows
  /// 2ty + a, columns 2tx + b).
  void output(Value m, Value y) {
    forLoop(idx(0), dim(m, 2), 1, [&](Value f) {
      forLoop(idx(0), dim(m, 3), 1, [&](Value n) {
        forLoop(idx(0), dim(m, 4), 1, [&](Value ty) {
          Value tiles = dim(m, 5);
          forLoop(idx(0), tiles, lanes, [&](Value tx0) {
            Value count = arith::SubIOp::create(b, loc, tiles, tx0);
            Value inMask = mask(vecType, count);
            Value p[4][4];
            for (int64_t r = 0; r < 4; ++r)
              for (int64_t s = 0; s < 4; ++s)
                p[r][s] = vector::MaskedLoadOp::create(
                    b, loc, vecType, m,
                    ValueRange{idx(r), idx(s), f, n, ty, tx0}, inMask,
                    zeros(vecType));
            // s = A^T p (rows), then Y = s A (columns).
            Value s[2][4];
            for (int64_t j = 0; j < 4; ++j) {
              s[0][j] = add(add(p[0][j], p[1][j]), p[2][j]);
              s[1][j] = sub(sub(p[1][j], p[2][j]), p[3][j]);
            }
            Value col = arith::MulIOp::create(b, loc, tx0, idx(2));
            Value colHi = arith::AddIOp::create(b, loc, col, idx(lanes));
            Value pairs = arith::MulIOp::create(b, loc, count, idx(2));
            Value pairsHi = arith::SubIOp::create(b, loc, pairs, idx(lanes));
            for (int64_t a = 0; a < 2; ++a) {
              Value even = add(add(s[a][0], s[a][1]), s[a][2]);
              Value odd = sub(sub(s[a][1], s[a][2]), s[a][3]);
              SmallVector<int64_t> lo, hi;
              for (int64_t l = 0; l < lanes / 2; ++l) {
                lo.append({l, lanes + l});
                hi.append({lanes / 2 + l, lanes + lanes / 2 + l});
              }
              Value rowLo = vector::ShuffleOp::create(b, loc, even, odd, lo);
              Value rowHi = vector::ShuffleOp::create(b, loc, even, odd, hi);
              vector::MaskedStoreOp::create(b, loc, y,
                                            ValueRange{n, f, ty, idx(a), col},
                                            mask(vecType, pairs), rowLo);
              vector::MaskedStoreOp::create(b, loc, y,
                                            ValueRange{n, f, ty, idx(a), colHi},
                                            mask(vecType, pairsHi), rowHi);
            }
          });
        });
      });
    });
  }

private:
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  /// Lanes first, first + 2, ... of a vector twice as wide.
  Value every2(Value wide, int64_t first) {
    SmallVector<int64_t> picks;
    for (int64_t l = 0; l < lanes; ++l)
      picks.push_back(first + 2 * l);
    return vector::ShuffleOp::create(b, loc, wide, wide, picks);
  }

  int64_t lanes;
  VectorType vecType;
};

/// The fill right before `op` (views may sit between) that zeroes its
/// output for the reference loops, or null.
linalg::FillOp zeroingFill(linalg::GenericOp op) {
  Operation *prev = op->getPrevNode();
  while (prev && isa<ViewLikeOpInterface>(prev) && isPure(prev))
    prev = prev->getPrevNode();
  auto fill = dyn_cast_or_null<linalg::FillOp>(prev);
  if (fill && fill.getDpsInits()[0] == op.getDpsInits()[0])
    return fill;
  return {};
}

/// Whether `v` is an f32 memref of `rank` with unit-stride rows.
bool isF32Rows(Value v, int64_t rank) {
  auto t = dyn_cast<MemRefType>(v.getType());
  return t && t.getRank() == rank && t.getElementType().isF32() &&
         hasUnitInnerStride(v);
}

struct VectorizeWinogradPass
    : mcc::impl::VectorizeWinogradBase<VectorizeWinogradPass> {
  using VectorizeWinogradBase::VectorizeWinogradBase;

  void runOnOperation() override {
    SmallVector<linalg::GenericOp> ops;
    getOperation().walk([&](linalg::GenericOp op) {
      if (op->hasAttr("mcc.winograd") && op.hasPureBufferSemantics() &&
          op.getNumDpsInputs() == 2 && op.getNumDpsInits() == 1)
        ops.push_back(op);
    });
    for (linalg::GenericOp op : ops) {
      auto kind = op->getAttrOfType<StringAttr>("mcc.winograd");
      Value in = op.getDpsInputs()[0], out = op.getDpsInits()[0];
      linalg::FillOp fill = zeroingFill(op);
      OpBuilder b(op);
      Location loc = op.getLoc();
      WinogradEmitter emit(b, loc, lanes);
      if (kind && kind.getValue() == "input" && isF32Rows(in, 4) &&
          isF32Rows(out, 6)) {
        emit.input(in, out);
      } else if (kind && kind.getValue() == "output" && isF32Rows(in, 6) &&
                 isF32Rows(out, 6)) {
        // The output's (tx, b) dims as one row of 2 * TW columns.
        auto outType = cast<MemRefType>(out.getType());
        SmallVector<ReassociationIndices> rows = {{0}, {1}, {2}, {3}, {4, 5}};
        if (!memref::CollapseShapeOp::isGuaranteedCollapsible(outType, rows))
          continue;
        Value y = memref::CollapseShapeOp::create(b, loc, out, rows);
        emit.output(in, y);
      } else {
        continue;
      }
      if (fill)
        fill->erase();
      op->erase();
    }
  }
};

} // namespace
