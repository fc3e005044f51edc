//===- VectorizeWinograd.cpp - Winograd tile transforms as vector code ----===//
//
// The importer lowers 3x3 stride-1 convolutions on the CPU as Winograd
// F(4x4, 3x3) or F(2x2, 3x3) (lib/Import/WinogradConv.cpp): an input
// transform, (m + 2)^2 products, an output transform. Its transforms are
// reference loops, sums over a tile with constant coefficients, marked
// `mcc.winograd`; as scalar loops they took longer than the products they
// save. Here each becomes vector code along the tiles of an image row,
// `lanes` tiles per vector (the tile size, alpha = m + 2, is the transform
// buffer's leading dim):
//
//  * input: V = B^T d B of each alpha x alpha input tile. Row i of the
//    tiles is alpha vectors, the row's columns m tx + j, from two wide
//    loads (at m tx0 and m tx0 + m) split by stride-m shuffles; B^T d
//    combines rows and (B^T d) B columns, and the alpha^2 results are
//    stored to the products' operands. F(2x2)'s B holds only 0 and +-1
//    (additions); F(4x4)'s 4s, 5s and 2s are multiply-adds, with the sums
//    and differences its rows share computed once.
//  * output: Y = A^T M A of each tile's products, and the m columns of
//    each output row interleaved into m contiguous vector stores.
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
  using Values = SmallVector<Value, 6>;

public:
  WinogradEmitter(OpBuilder &b, Location loc, int64_t lanes)
      : VectorKernelBuilder(b, loc), lanes(lanes) {
    vecType = VectorType::get({lanes}, b.getF32Type());
  }

  /// x [N, C, H, W] (tiles alpha x alpha from rows m ty, columns m tx) ->
  /// v [alpha, alpha, C, N, TH, TW], alpha = m + 2.
  void input(Value x, Value v) {
    int64_t alpha = cast<MemRefType>(v.getType()).getDimSize(0), m = alpha - 2;
    auto wideType = VectorType::get({m * lanes}, b.getF32Type());
    Value width = dim(x, 3);
    forLoop(idx(0), dim(v, 2), 1, [&](Value c) {
      forLoop(idx(0), dim(v, 3), 1, [&](Value n) {
        forLoop(idx(0), dim(v, 4), 1, [&](Value ty) {
          Value tiles = dim(v, 5);
          forLoop(idx(0), tiles, lanes, [&](Value tx0) {
            Value col = arith::MulIOp::create(b, loc, tx0, idx(m));
            // d[i][j]: columns m tx + j of tile row i, one vector of tiles,
            // from wide loads at columns m tx0 and m tx0 + m.
            std::vector<Values> d(alpha, Values(alpha));
            for (int64_t i = 0; i < alpha; ++i) {
              Value row = arith::AddIOp::create(
                  b, loc, arith::MulIOp::create(b, loc, ty, idx(m)), idx(i));
              for (int64_t shift = 0; shift < alpha; shift += m) {
                Value at = arith::AddIOp::create(b, loc, col, idx(shift));
                Value left = arith::SubIOp::create(b, loc, width, at);
                Value wide = vector::MaskedLoadOp::create(
                    b, loc, wideType, x, ValueRange{n, c, row, at},
                    mask(wideType, left), zeros(wideType));
                for (int64_t k = 0; k < m && shift + k < alpha; ++k)
                  d[i][shift + k] = everyNth(wide, m, k);
              }
            }
            // t = B^T d (rows), then V = t B (columns).
            auto inputT = [&](ArrayRef<Value> v) { return inputTransform(v); };
            std::vector<Values> t = transformColumns(d, inputT), out;
            for (const Values &row : t)
              out.push_back(inputTransform(row));
            Value mk = mask(vecType, arith::SubIOp::create(b, loc, tiles, tx0));
            for (int64_t r = 0; r < alpha; ++r)
              for (int64_t s = 0; s < alpha; ++s)
                vector::MaskedStoreOp::create(
                    b, loc, v, ValueRange{idx(r), idx(s), c, n, ty, tx0}, mk,
                    out[r][s]);
          });
        });
      });
    });
  }

  /// p [alpha, alpha, F, N, TH, TW] -> y [N, F, TH, m, TW * m] (the
  /// output rows m ty + a, columns m tx + b).
  void output(Value p, Value y) {
    int64_t alpha = cast<MemRefType>(p.getType()).getDimSize(0), m = alpha - 2;
    forLoop(idx(0), dim(p, 2), 1, [&](Value f) {
      forLoop(idx(0), dim(p, 3), 1, [&](Value n) {
        forLoop(idx(0), dim(p, 4), 1, [&](Value ty) {
          Value tiles = dim(p, 5);
          forLoop(idx(0), tiles, lanes, [&](Value tx0) {
            Value count = arith::SubIOp::create(b, loc, tiles, tx0);
            Value inMask = mask(vecType, count);
            std::vector<Values> in(alpha);
            for (int64_t r = 0; r < alpha; ++r)
              for (int64_t s = 0; s < alpha; ++s)
                in[r].push_back(vector::MaskedLoadOp::create(
                    b, loc, vecType, p,
                    ValueRange{idx(r), idx(s), f, n, ty, tx0}, inMask,
                    zeros(vecType)));
            // s = A^T p (rows), then Y = s A (columns).
            std::vector<Values> s = transformColumns(
                in, [&](ArrayRef<Value> v) { return outputTransform(v); });
            Value col = arith::MulIOp::create(b, loc, tx0, idx(m));
            Value outputs = arith::MulIOp::create(b, loc, count, idx(m));
            for (int64_t a = 0; a < m; ++a)
              storeRow(y, ValueRange{n, f, ty, idx(a)}, col, outputs,
                       outputTransform(s[a]));
          });
        });
      });
    });
  }

private:
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  /// c * x + y.
  Value fma(double c, Value x, Value y) {
    Value k = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(vecType, b.getF32FloatAttr(c)));
    return vector::FMAOp::create(b, loc, k, x, y);
  }

  /// `transform` applied to each column of `rows`: result[r][j] is element
  /// r of the transformed column j.
  template <typename Transform>
  std::vector<Values> transformColumns(ArrayRef<Values> rows,
                                       Transform transform) {
    std::vector<Values> result;
    for (size_t j = 0; j < rows.front().size(); ++j) {
      Values column;
      for (const Values &row : rows)
        column.push_back(row[j]);
      Values transformed = transform(column);
      result.resize(transformed.size());
      for (size_t r = 0; r < transformed.size(); ++r)
        result[r].push_back(transformed[r]);
    }
    return result;
  }

  /// B^T applied to one column (or row) of a tile.
  Values inputTransform(ArrayRef<Value> d) {
    if (d.size() == 4)
      return {sub(d[0], d[2]), add(d[1], d[2]), sub(d[2], d[1]),
              sub(d[1], d[3])};
    // F(4x4): rows 1-4 share their sums and differences.
    Value d12 = add(d[1], d[2]), d34 = add(d[3], d[4]);
    Value e12 = sub(d[1], d[2]), e43 = sub(d[4], d[3]);
    Value e31 = sub(d[3], d[1]), e42 = sub(d[4], d[2]);
    return {fma(4, d[0], fma(-5, d[2], d[4])),
            fma(-4, d12, d34),
            fma(4, e12, e43),
            fma(2, e31, e42),
            fma(-2, e31, e42),
            fma(4, d[1], fma(-5, d[3], d[5]))};
  }

  /// A^T applied to one column (or row) of the products.
  Values outputTransform(ArrayRef<Value> p) {
    if (p.size() == 4)
      return {add(add(p[0], p[1]), p[2]), sub(sub(p[1], p[2]), p[3])};
    Value s12 = add(p[1], p[2]), s34 = add(p[3], p[4]);
    Value d12 = sub(p[1], p[2]), d34 = sub(p[3], p[4]);
    return {add(add(p[0], s12), s34), fma(2, d34, d12), fma(4, s34, s12),
            add(fma(8, d34, d12), p[5])};
  }

  /// Stores the m columns of an output row, `cols[b]` holding column m tx +
  /// b of `lanes` tiles, interleaved into m contiguous vectors at column
  /// `col`; `outputs` is the number of columns left in the row.
  void storeRow(Value y, ValueRange rowIndices, Value col, Value outputs,
                ArrayRef<Value> cols) {
    int64_t m = cols.size();
    // Pairs of columns (b, b + 1) interleaved first when m is 4: element
    // (tile l, column b) is then at (b / 2) * 2 lanes + 2 l + b % 2 of the
    // two pairs, as at b * lanes + l of the two columns when m is 2.
    Value lo = cols[0], hi = cols[1];
    if (m == 4) {
      SmallVector<int64_t> zip;
      for (int64_t l = 0; l < lanes; ++l)
        zip.append({l, lanes + l});
      lo = vector::ShuffleOp::create(b, loc, cols[0], cols[1], zip);
      hi = vector::ShuffleOp::create(b, loc, cols[2], cols[3], zip);
    }
    Values chunks;
    for (int64_t q = 0; q < m; ++q) {
      SmallVector<int64_t> picks;
      for (int64_t at = q * lanes; at < (q + 1) * lanes; ++at) {
        int64_t l = at / m, bcol = at % m;
        picks.push_back(m == 4 ? (bcol / 2) * 2 * lanes + 2 * l + bcol % 2
                               : bcol * lanes + l);
      }
      chunks.push_back(vector::ShuffleOp::create(b, loc, lo, hi, picks));
    }
    for (int64_t q = 0; q < m; ++q) {
      Value offset = idx(q * lanes);
      SmallVector<Value> indices(rowIndices);
      indices.push_back(
          q ? arith::AddIOp::create(b, loc, col, offset).getResult() : col);
      Value left =
          q ? arith::SubIOp::create(b, loc, outputs, offset).getResult()
            : outputs;
      vector::MaskedStoreOp::create(b, loc, y, indices, mask(vecType, left),
                                    chunks[q]);
    }
  }

  /// Lanes first, first + n, ... of a vector n times as wide.
  Value everyNth(Value wide, int64_t n, int64_t first) {
    SmallVector<int64_t> picks;
    for (int64_t l = 0; l < lanes; ++l)
      picks.push_back(first + n * l);
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

/// Whether `v`'s two leading dims are a whole tile of F(2x2, 3x3) (4 x 4)
/// or F(4x4, 3x3) (6 x 6), the tiles the emitter has transforms for.
bool isWholeTile(Value v) {
  auto t = cast<MemRefType>(v.getType());
  int64_t alpha = t.getDimSize(0);
  return (alpha == 4 || alpha == 6) && t.getDimSize(1) == alpha;
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
          isF32Rows(out, 6) && isWholeTile(out)) {
        emit.input(in, out);
      } else if (kind && kind.getValue() == "output" && isF32Rows(in, 6) &&
                 isF32Rows(out, 6) && isWholeTile(in)) {
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
