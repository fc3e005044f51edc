//===- OnnxImporter.h - ONNX protobuf to tensor-level MLIR ----------------===//
//
// Reads an ONNX model (with raw, typed or external initializers), pins its
// symbolic dims, folds every computation whose inputs are known at compile
// time (the exporters' shape subgraphs, weight transposes, ...), and emits
// the rest as linalg/tensor/arith/math on tensors in one function, @forward.
// Large constants become trailing function arguments ("weights") whose bytes
// are returned beside the module, so the codegen can keep them as data.
//
//===----------------------------------------------------------------------===//
#ifndef MCC_IMPORT_ONNXIMPORTER_H
#define MCC_IMPORT_ONNXIMPORTER_H

#include "mcc/Import/Literal.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mcc {

/// A graph input whose value is given at compile time (--const-input).
struct ConstantInput {
  int32_t dtype = 1; // onnx.TensorProto.DataType
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

struct ImportOptions {
  /// Shapes per graph input name (from --shape NAME=2x16): a dim >= 0 is
  /// pinned, -1 stays symbolic (bounded by inputDimBounds if listed there).
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// Bounds [lo, hi] of the symbolic dims in inputShapes (--shape
  /// NAME=1..64x?), per input and axis.
  std::map<std::string, std::map<int, std::pair<int64_t, int64_t>>>
      inputDimBounds;
  /// Graph inputs frozen to a value (from --const-input NAME=...): they
  /// become constants and leave the .so's input list. This is how a shape,
  /// axes or scales input that an exporter left as a graph input is fixed
  /// for static compilation.
  std::map<std::string, ConstantInput> constantInputs;
  /// Literals with more elements than this become weight arguments instead
  /// of inline constants.
  int64_t inlineConstantLimit = 16;
  /// 3x3 stride-1 convolutions as Winograd products of transformed tiles
  /// (the CPU target sets it; docs/design/0019).
  bool winogradConvolutions = false;
  /// The largest Winograd output tile: 4 takes F(4x4, 3x3) where the
  /// convolution has enough 4x4 tiles and F(2x2, 3x3) elsewhere; 2 keeps
  /// F(2x2, 3x3) throughout (docs/design/0026).
  int winogradTile = 4;
};

/// A symbolic dim of the graph inputs (docs/design/0010): `batch`,
/// `sequence`, ... with the bounds every run is checked against.
struct SymbolInfo {
  std::string name;
  int64_t lo = 1;
  int64_t hi = INT64_MAX;
};

/// One graph input or output as the model .so will describe it.
struct TensorSignature {
  std::string name;
  int32_t dtype = 1; // onnx.TensorProto.DataType
  /// -1 where the dim is dynamic.
  std::vector<int64_t> shape;
  /// Empty for a static tensor; else one entry per dim: "" where static,
  /// else the dim as an affine expression over the symbols in MLIR syntax
  /// ("s0", "s0 * 128", "s1 floordiv 2"; sK is symbols[K]).
  std::vector<std::string> dimExprs;
};

/// A weight argument of @forward: its bytes live at `offset` in the blob.
/// How a weight record is laid out as AMX tiles (WeightBlob::setAmxTiles).
enum class AmxTiles {
  None,
  /// B of a product, K x N: [N / 16][K / 32][2 parts][16][16 columns x 2
  /// steps of K] bf16, pairs of K interleaved.
  KPairs,
  /// A of a product, M x K (its first dim by the rest): [M / 16][K / 32][2
  /// parts][16 rows][32 steps of K] bf16.
  Rows,
  /// A of a batch of products, E x M x K: Rows of the weight seen as
  /// (E * M) x K (its last dim), each element's row tiles in turn.
  BatchRows,
};

struct WeightRecord {
  std::string name;
  int32_t dtype = 1;
  std::vector<int64_t> shape;
  uint64_t offset = 0;
  uint64_t size = 0;
  /// The ONNX initializer whose bytes these are, unchanged (empty when the
  /// weight was computed while compiling: a transpose, a folded constant).
  std::string source;
  /// Non-zero: the record holds this 2-D f32 weight as [N / panels][K]
  /// [panels], column panels with their K rows contiguous (what the CPU
  /// product kernels read in place); `source` names the bytes before.
  int64_t panels = 0;
  /// The record holds this f32 weight as bf16x3 tiles for AMX products
  /// (docs/design/0024); `source` names the bytes before.
  AmxTiles amxTiles = AmxTiles::None;
};

/// The weights of a model as one blob of 64-byte aligned records, without
/// copying them: each record keeps its literal (a slice of the mapped
/// external-data file, of the parsed model, or a buffer computed while
/// compiling), and the bytes are assembled only as they are written out.
class WeightBlob {
public:
  /// Appends `lit`'s bytes at the next 64-byte boundary; returns the offset.
  uint64_t append(const Literal &lit);
  uint64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  /// Copies bytes [offset, offset + n) of the blob (zeros between records).
  void read(uint64_t offset, uint64_t n, uint8_t *dst) const;
  /// Streams the whole blob.
  void write(llvm::raw_ostream &os) const;
  /// Bytes of record `i` (in append order), as the literal holds them
  /// (before any panel layout).
  const uint8_t *recordData(size_t i) const { return records_[i].data(); }
  /// Record `i`'s literal.
  const Literal &record(size_t i) const { return records_[i]; }
  /// Writes record `i` (a K x N 4-byte weight, N a multiple of `nr`) as
  /// [N / nr][K][nr] column panels. The layout is applied as the blob is
  /// read or written: no second copy of the weight is held.
  void setPanels(size_t i, int64_t nr);
  /// Writes record `i`, an f32 weight, as the tiles of AMX bf16x3
  /// products (`layout`): as B (K x N, K a multiple of 32 and N of 16),
  /// for each 16 columns and 32 steps of K the bf16 high parts then the
  /// low parts, 16 rows of (column, pair of K) interleaved; as A (its first
  /// dim M, a multiple of 16, by the rest K, a multiple of 32), for each 16
  /// rows and 32 steps of K the high parts then the low parts. Applied as
  /// the blob is read or written.
  void setAmxTiles(size_t i, AmxTiles layout);

private:
  /// Copies bytes [lo, hi) of record `i` as the blob holds them.
  void copyRecord(size_t i, uint64_t lo, uint64_t hi, uint8_t *dst) const;

  std::vector<Literal> records_;
  std::vector<uint64_t> offsets_;
  /// Per record: the panel width of setPanels, kAmxKPairs, kAmxRows,
  /// kAmxBatchRows, or 0.
  std::vector<int64_t> panels_;
  static constexpr int64_t kAmxKPairs = -1, kAmxRows = -2, kAmxBatchRows = -3;
  /// The rows of record i seen as 2-D for the AMX row tiles.
  int64_t amxRows(size_t i) const;
  uint64_t size_ = 0;
};

struct ImportedModel {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::vector<TensorSignature> inputs;
  std::vector<TensorSignature> outputs;
  /// The symbols that dynamic dims are expressions of, in sK order.
  std::vector<SymbolInfo> symbols;
  std::vector<WeightRecord> weights;
  WeightBlob weightBlob;
  int64_t opsetVersion = 0;
  std::string producer;
};

/// Imports the model at `path`. Failures are reported as MLIR diagnostics
/// (naming the file, node, op and domain where they apply).
mlir::FailureOr<ImportedModel> importOnnxFile(mlir::MLIRContext &context,
                                              llvm::StringRef path,
                                              const ImportOptions &options);

/// Imports from serialized bytes; external data is resolved against
/// `baseDir` (empty: external data is refused).
mlir::FailureOr<ImportedModel> importOnnxBytes(mlir::MLIRContext &context,
                                               llvm::StringRef bytes,
                                               llvm::StringRef baseDir,
                                               llvm::StringRef displayName,
                                               const ImportOptions &options);

/// Imports ONNX textual syntax (onnx/defs/parser.h), for tests.
mlir::FailureOr<ImportedModel> importOnnxText(mlir::MLIRContext &context,
                                              llvm::StringRef text,
                                              const ImportOptions &options);

/// Registers the dialects the importer emits.
void registerImportDialects(mlir::DialectRegistry &registry);

/// Ops the importer lowers, for the supported-ops table.
std::vector<std::string> supportedOnnxOps();

} // namespace mcc

#endif // MCC_IMPORT_ONNXIMPORTER_H
