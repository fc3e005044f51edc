//===- OnnxImporter.cpp - ONNX protobuf to tensor-level MLIR --------------===//

#include "mcc/Import/OnnxImporter.h"
#include "mcc/Import/NodeLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Verifier.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "onnx/defs/parser.h"
#include "onnx/defs/schema.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>

using namespace mlir;

namespace mcc {

void registerImportDialects(DialectRegistry &registry) {
  registry.insert<arith::ArithDialect, func::FuncDialect, linalg::LinalgDialect,
                  math::MathDialect, scf::SCFDialect, tensor::TensorDialect>();
}

std::map<std::string, LowerFn> &opLowerings() {
  static std::map<std::string, LowerFn> table;
  return table;
}

static void ensureRegistered() {
  static bool done = [] {
    registerElementwiseLowerings();
    registerShapeLowerings();
    registerLinalgLowerings();
    registerNormalizationLowerings();
    registerResizeLowerings();
    registerLossLowerings();
    registerContractionLowerings();
    registerRecurrentLowerings();
    registerSignalLowerings();
    registerIndexingLowerings();
    registerQuantizeLowerings();
    registerAttentionLowerings();
    registerImageLowerings();
    registerFoldedLowerings();
    registerMatrixLowerings();
    registerControlFlowLowerings();
    return true;
  }();
  (void)done;
}

std::vector<std::string> supportedOnnxOps() {
  ensureRegistered();
  std::vector<std::string> ops;
  for (auto &kv : opLowerings())
    ops.push_back(kv.first);
  return ops;
}

//===----------------------------------------------------------------------===//
// WeightBlob
//===----------------------------------------------------------------------===//

uint64_t WeightBlob::append(const Literal &lit) {
  uint64_t offset = (size_ + 63) / 64 * 64;
  records_.push_back(lit);
  offsets_.push_back(offset);
  panels_.push_back(0);
  size_ = offset + lit.byteSize();
  return offset;
}

void WeightBlob::setPanels(size_t i, int64_t nr) {
  assert(records_[i].shape().size() == 2 && records_[i].shape()[1] % nr == 0 &&
         records_[i].byteSize() == 4 * records_[i].size() &&
         "panels need a K x N 4-byte weight with whole panels");
  panels_[i] = nr;
}

void WeightBlob::setAmxTiles(size_t i, AmxTiles layout) {
  const auto &shape = records_[i].shape();
  assert(records_[i].byteSize() == 4 * records_[i].size() && !shape.empty() &&
         "AMX tiles need an f32 weight");
  if (layout == AmxTiles::KPairs) {
    assert(shape.size() == 2 && shape[0] % 32 == 0 && shape[1] % 16 == 0 &&
           "AMX B tiles need a K x N weight of whole tiles");
    panels_[i] = kAmxKPairs;
  } else if (layout == AmxTiles::Rows) {
    assert(shape[0] % 16 == 0 && records_[i].size() / shape[0] % 32 == 0 &&
           "AMX A tiles need an M x K weight of whole tiles");
    panels_[i] = kAmxRows;
  } else {
    assert(shape.size() == 3 && shape[1] % 16 == 0 && shape[2] % 32 == 0 &&
           "AMX batch A tiles need an E x M x K weight of whole tiles");
    panels_[i] = kAmxBatchRows;
  }
}

int64_t WeightBlob::amxRows(size_t i) const {
  const auto &shape = records_[i].shape();
  return panels_[i] == kAmxBatchRows
             ? static_cast<int64_t>(records_[i].size()) / shape.back()
             : shape[0];
}

/// bf16 by round-to-nearest-even of f32's bits (a NaN stays a quiet NaN),
/// as vcvtneps2bf16 rounds; scripts/pack_weights.py computes the same.
static uint16_t toBf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((u >> 16) | 0x40);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

/// The high and low bf16 parts of x: x's bf16 rounding, and the rounding
/// of what it leaves (zero past the finite range).
static std::pair<uint16_t, uint16_t> splitBf16(float x) {
  uint16_t hi = toBf16(x);
  uint32_t back = static_cast<uint32_t>(hi) << 16;
  float h;
  std::memcpy(&h, &back, 4);
  if (!std::isfinite(h))
    return {hi, 0};
  return {hi, toBf16(x - h)};
}

void WeightBlob::copyRecord(size_t i, uint64_t lo, uint64_t hi,
                            uint8_t *dst) const {
  const uint8_t *data = records_[i].data();
  int64_t nr = panels_[i];
  if (!nr) {
    std::memcpy(dst, data + lo, hi - lo);
    return;
  }
  if (nr == kAmxKPairs || nr == kAmxRows || nr == kAmxBatchRows) {
    // bf16 v of the tiled record, from source element (row, column) of
    // the weight seen as 2-D.
    bool rows = nr != kAmxKPairs;
    int64_t dim0 = rows ? amxRows(i) : records_[i].shape()[0];
    int64_t dim1 = static_cast<int64_t>(records_[i].size()) / dim0;
    int64_t k = rows ? dim1 : dim0;
    const auto *src = reinterpret_cast<const float *>(data);
    for (uint64_t at = lo; at < hi;) {
      uint64_t v = at / 2, within = at % 2;
      uint64_t part = v / 512 % 2, step = v / 1024 % (k / 32),
               block = v / 1024 / (k / 32);
      uint64_t row, col;
      if (rows) { // [M/16][K/32][2][16 rows][32 steps]
        row = block * 16 + v / 32 % 16;
        col = step * 32 + v % 32;
      } else { // [N/16][K/32][2][16 pairs][16 columns][2]
        row = step * 32 + 2 * (v / 32 % 16) + v % 2;
        col = block * 16 + v / 2 % 16;
      }
      auto [h, l] = splitBf16(src[row * dim1 + col]);
      uint16_t value = part ? l : h;
      uint64_t count = std::min<uint64_t>(2 - within, hi - at);
      std::memcpy(dst + (at - lo), reinterpret_cast<uint8_t *>(&value) + within,
                  count);
      at += count;
    }
    return;
  }
  // Blob chunk c (nr floats) is row r = c % K of panel p = c / K: the
  // source row's columns [p * nr, p * nr + nr).
  int64_t k = records_[i].shape()[0], n = records_[i].shape()[1];
  uint64_t chunk = 4 * nr;
  for (uint64_t at = lo; at < hi;) {
    uint64_t c = at / chunk, within = at % chunk;
    uint64_t count = std::min(chunk - within, hi - at);
    uint64_t p = c / k, r = c % k;
    std::memcpy(dst + (at - lo), data + 4 * (r * n + p * nr) + within, count);
    at += count;
  }
}

void WeightBlob::read(uint64_t offset, uint64_t n, uint8_t *dst) const {
  std::memset(dst, 0, n);
  uint64_t end = offset + n;
  // Records are sorted by offset: start at the last one beginning <= offset.
  size_t i = std::upper_bound(offsets_.begin(), offsets_.end(), offset) -
             offsets_.begin();
  for (i = i ? i - 1 : 0; i < records_.size() && offsets_[i] < end; ++i) {
    uint64_t lo = std::max(offset, offsets_[i]);
    uint64_t hi = std::min(end, offsets_[i] + records_[i].byteSize());
    if (lo < hi)
      copyRecord(i, lo - offsets_[i], hi - offsets_[i], dst + (lo - offset));
  }
}

void WeightBlob::write(llvm::raw_ostream &os) const {
  static const char zeros[64] = {};
  uint64_t at = 0;
  std::vector<uint8_t> panel;
  for (size_t i = 0; i < records_.size(); ++i) {
    os.write(zeros, offsets_[i] - at);
    uint64_t bytes = records_[i].byteSize();
    if (!panels_[i]) {
      os.write(reinterpret_cast<const char *>(records_[i].data()), bytes);
    } else {
      // A panel at a time: K x nr floats (AMX tiles: 16 columns or rows
      // by all of the other dim).
      int64_t nr = panels_[i];
      uint64_t step =
          nr == kAmxRows || nr == kAmxBatchRows
              ? 4 * 16 * (records_[i].size() / amxRows(i))
              : 4 * (nr == kAmxKPairs ? 16 : nr) * records_[i].shape()[0];
      panel.resize(step);
      for (uint64_t lo = 0; lo < bytes; lo += step) {
        copyRecord(i, lo, lo + step, panel.data());
        os.write(reinterpret_cast<const char *>(panel.data()), step);
      }
    }
    at = offsets_[i] + bytes;
  }
}

//===----------------------------------------------------------------------===//
// GraphLowering
//===----------------------------------------------------------------------===//

class GraphLowering {
public:
  GraphLowering(MLIRContext &ctx, std::string displayName, std::string baseDir,
                const ImportOptions &options)
      : ctx(ctx), builder(&ctx), displayName(std::move(displayName)),
        baseDir(std::move(baseDir)), options(options) {}

  FailureOr<ImportedModel> run(const onnx::ModelProto &model);

  /// Keeps the parsed model alive while literals borrow its raw_data.
  std::shared_ptr<const onnx::ModelProto> modelOwner;

  Value materialize(GraphValue &v, Location loc);
  GraphValue *lookup(const std::string &name) {
    auto it = values.find(name);
    return it == values.end() ? nullptr : &it->second;
  }
  void define(const std::string &name, GraphValue v) {
    values[name] = std::move(v);
  }
  OpBuilder &getBuilder() { return builder; }
  const ImportOptions &importOptions() const { return options; }
  MLIRContext &context() { return ctx; }
  Location fileLoc() { return FileLineColLoc::get(&ctx, displayName, 0, 0); }

  Type elementType(int32_t dtype) {
    switch (dtype) {
    case kFloat:
      return builder.getF32Type();
    case kDouble:
      return builder.getF64Type();
    case kFloat16:
      return builder.getF16Type();
    case kBFloat16:
      return builder.getBF16Type();
    case kInt64:
    case kUInt64:
      return builder.getI64Type();
    case kInt32:
    case kUInt32:
      return builder.getI32Type();
    case kInt16:
    case kUInt16:
      return builder.getI16Type();
    case kInt8:
    case kUInt8:
      return builder.getI8Type();
    case kBool:
      return builder.getI1Type();
    }
    if (isSmallDType(dtype))
      return builder.getI8Type();
    return {};
  }

  FailureOr<Literal> literalFromTensorProto(const onnx::TensorProto &t,
                                            Location loc);

  /// A graph input or output as the .so describes it (design 0010).
  TensorSignature signature(const std::string &name, int32_t dtype,
                            const Shape &shape) {
    TensorSignature sig{name, dtype, shape, {}};
    if (!hasSymbolicDims(shape))
      return sig;
    for (int64_t &d : sig.shape) {
      sig.dimExprs.push_back(isSymbolicDim(d) ? symbolicDims.abiText(d) : "");
      if (isSymbolicDim(d))
        d = -1;
    }
    return sig;
  }
  SymbolicDims &symbolic() { return symbolicDims; }

  /// The graph inputs not known at compile time that `name` is computed
  /// from (itself, if it is one), in the order first reached.
  std::vector<std::string> inputsBehind(const std::string &name) {
    std::vector<std::string> found, stack = {name};
    std::set<std::string> seen;
    while (!stack.empty()) {
      std::string v = stack.back();
      stack.pop_back();
      if (!seen.insert(v).second || v.empty())
        continue;
      GraphValue *gv = lookup(v);
      if (gv && gv->literal)
        continue;
      auto p = producers.find(v);
      if (p == producers.end()) {
        if (gv)
          found.push_back(v);
        continue;
      }
      // Shapes are static: Shape and Size need no values.
      const std::string &op = p->second->op_type();
      if (op == "Shape" || op == "Size")
        continue;
      const auto &ins = p->second->input();
      for (auto it = ins.rbegin(); it != ins.rend(); ++it)
        stack.push_back(*it);
      // Subgraphs (If branches, loop bodies) read outer values by name.
      for (const auto &a : p->second->attribute())
        if (a.has_g())
          for (const auto &sub : a.g().node())
            for (const auto &in : sub.input())
              stack.push_back(in);
    }
    return found;
  }
  bool isProduced(const std::string &name) const {
    return producers.count(name) != 0;
  }

  /// Lowers a subgraph (an If branch, a Loop or Scan body) inline, in the
  /// current block: its inputs bound to `inputs`, outer values visible by
  /// name. Returns its outputs; the names it defined are then restored.
  FailureOr<std::vector<GraphValue>>
  lowerSubgraph(const onnx::GraphProto &g, int64_t opset,
                const std::vector<GraphValue> &inputs);

  /// A symbolic literal as a run-time tensor (its dims materialized).
  Value materializeSymbolicLiteral(const Literal &lit, Location loc);

private:
  LogicalResult importInputs(const onnx::GraphProto &graph);
  /// Symbolic dims reach only the ops that handle them (design 0010):
  /// folds shape arithmetic on symbolic literals, hands other ops their
  /// symbolic literals as run-time tensors, refuses the rest.
  LogicalResult prepareSymbolicInputs(NodeLowering &n);
  /// Elementwise integer arithmetic, comparisons and Where on literals
  /// holding symbolic dims; false when a result cannot be decided.
  bool foldSymbolicArithmetic(NodeLowering &n);
  LogicalResult importConstantInput(const onnx::ValueInfoProto &in,
                                    const ConstantInput &value, Location loc);
  LogicalResult lowerNode(const onnx::NodeProto &node, int64_t opset);
  struct ExternalSlice {
    const uint8_t *data;
    uint64_t size;
    std::shared_ptr<const void> owner;
  };
  FailureOr<ExternalSlice> readExternal(const onnx::TensorProto &t,
                                        Location loc);

  MLIRContext &ctx;
  OpBuilder builder;
  std::string displayName, baseDir;
  const ImportOptions &options;
  std::map<std::string, GraphValue> values;
  /// The node computing each value (graph inputs and initializers have none).
  std::map<std::string, const onnx::NodeProto *> producers;
  func::FuncOp func;
  ImportedModel result;
  std::vector<Type> weightTypes;
  std::map<const void *, std::string> initializerStorage;
  SymbolicDims symbolicDims{&ctx};
  ActiveSymbolicDims activeDims{&symbolicDims};
  struct SymbolAxis {
    std::string input;
    int axis;
    int64_t handle;
  };
  /// Where each symbolic input dim is, to read the symbols at run time.
  std::vector<SymbolAxis> inputSymbolAxes;
  std::map<std::string, std::shared_ptr<llvm::MemoryBuffer>> externalFiles;
};

FailureOr<GraphLowering::ExternalSlice>
GraphLowering::readExternal(const onnx::TensorProto &t, Location loc) {
  std::string location;
  uint64_t offset = 0;
  int64_t length = -1;
  for (const auto &kv : t.external_data()) {
    if (kv.key() == "location")
      location = kv.value();
    else if (kv.key() == "offset")
      offset = std::stoull(kv.value());
    else if (kv.key() == "length")
      length = std::stoll(kv.value());
  }
  auto err = [&](const Twine &why) {
    emitError(loc) << "initializer '" << t.name() << "': external data " << why;
    return failure();
  };
  if (location.empty())
    return err("has no location");
  if (baseDir.empty())
    return err("cannot be resolved: the model was not read from a file");
  if (llvm::sys::path::is_absolute(location))
    return err("location '" + location +
               "' is an absolute path; it must be relative to the model");
  SmallString<256> real, realBase;
  SmallString<256> joined(baseDir);
  llvm::sys::path::append(joined, location);
  if (llvm::sys::fs::real_path(baseDir, realBase))
    return err("base folder '" + baseDir + "' cannot be resolved");
  if (llvm::sys::fs::real_path(joined, real))
    return err("file '" + std::string(joined) + "' does not exist");
  std::string prefix = std::string(realBase) + "/";
  if (std::string(real).rfind(prefix, 0) != 0)
    return err("location '" + location +
               "' points outside the model's folder (" + std::string(realBase) +
               ")");
  if (llvm::sys::fs::is_directory(real))
    return err("location '" + location + "' is a directory");
  uint64_t fileSize = 0;
  if (llvm::sys::fs::file_size(real, fileSize))
    return err("file '" + location + "' cannot be read");
  uint64_t want = length >= 0 ? static_cast<uint64_t>(length)
                              : (offset <= fileSize ? fileSize - offset : 0);
  if (offset > fileSize || want > fileSize - offset)
    return err("range [" + std::to_string(offset) + ", " +
               std::to_string(offset + want) + ") exceeds file '" + location +
               "' of " + std::to_string(fileSize) + " bytes");
  // Each data file is mapped once, read-only; literals borrow slices of it,
  // so weights are never copied into the compiler's memory (their pages
  // are file-backed and only read when written out or folded).
  std::shared_ptr<llvm::MemoryBuffer> &file = externalFiles[std::string(real)];
  if (!file) {
    auto buffer = llvm::MemoryBuffer::getFile(real, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer)
      return err("file '" + location +
                 "' could not be read: " + buffer.getError().message());
    file = std::move(*buffer);
  }
  if (file->getBufferSize() < offset + want)
    return err("file '" + location + "' changed size while compiling");
  return ExternalSlice{
      reinterpret_cast<const uint8_t *>(file->getBufferStart()) + offset, want,
      file};
}

FailureOr<Literal>
GraphLowering::literalFromTensorProto(const onnx::TensorProto &t,
                                      Location loc) {
  int32_t dtype = t.data_type();
  if (!isSupportedDType(dtype)) {
    emitError(loc) << "tensor '" << t.name() << "' has unsupported data type "
                   << dtype;
    return failure();
  }
  Shape shape(t.dims().begin(), t.dims().end());
  for (int64_t d : shape)
    if (d < 0) {
      emitError(loc) << "tensor '" << t.name() << "' has negative dim " << d;
      return failure();
    }
  // Hostile dims must not overflow or allocate: 2^40 bytes is beyond any
  // model this compiler handles.
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n) || n > (int64_t(1) << 40)) {
      emitError(loc) << "tensor '" << t.name() << "' has an implausible shape "
                     << formatShape(shape);
      return failure();
    }
  size_t esize = dtypeSize(dtype);
  size_t want = static_cast<size_t>(n) * esize;
  int bits = dtypeBits(dtype);
  if (bits < 8 && t.data_location() != onnx::TensorProto::EXTERNAL) {
    // ONNX packs 4-bit and 2-bit elements into bytes, low bits first, in
    // raw_data or (one byte per entry) in int32_data.
    int perByte = 8 / bits;
    size_t packed = (static_cast<size_t>(n) + perByte - 1) / perByte;
    auto packedByte = [&](size_t j) -> uint8_t {
      return t.has_raw_data() ? static_cast<uint8_t>(t.raw_data()[j])
                              : static_cast<uint8_t>(t.int32_data(j));
    };
    size_t have = t.has_raw_data() ? t.raw_data().size()
                                   : static_cast<size_t>(t.int32_data_size());
    if (have != packed) {
      emitError(loc) << "tensor '" << t.name() << "' holds " << have
                     << " packed bytes, its shape " << formatShape(shape)
                     << " of " << dtypeName(dtype) << " needs " << packed;
      return failure();
    }
    Literal lit(dtype, shape);
    uint8_t mask = static_cast<uint8_t>((1u << bits) - 1);
    for (int64_t i = 0; i < n; ++i) {
      uint8_t e = (packedByte(i / perByte) >> (bits * (i % perByte))) & mask;
      if (dtype == kFloat4E2M1)
        lit.mutableData()[i] = e;
      else
        lit.setI(i, e); // wraps into the (signed) range
    }
    return lit;
  }
  auto shortErr = [&](size_t have) {
    emitError(loc) << "tensor '" << t.name() << "' holds " << have
                   << " bytes of data, its shape " << formatShape(shape)
                   << " of " << dtypeName(dtype) << " needs " << want;
    return failure();
  };
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    auto slice = readExternal(t, loc);
    if (failed(slice))
      return failure();
    if (slice->size != want)
      return shortErr(slice->size);
    return Literal(dtype, shape, slice->data, slice->owner);
  }
  if (t.has_raw_data()) {
    if (t.raw_data().size() != want)
      return shortErr(t.raw_data().size());
    const auto *data = reinterpret_cast<const uint8_t *>(t.raw_data().data());
    // Borrowed from the parsed model when it is kept alive (file imports);
    // copied otherwise.
    if (modelOwner)
      return Literal(dtype, shape, data, modelOwner);
    return Literal(dtype, shape, std::vector<uint8_t>(data, data + want));
  }
  auto typedCount = [&]() -> int64_t {
    switch (dtype) {
    case kFloat:
      return t.float_data_size();
    case kDouble:
      return t.double_data_size();
    case kInt64:
      return t.int64_data_size();
    case kUInt32:
    case kUInt64:
      return t.uint64_data_size();
    default:
      return t.int32_data_size();
    }
  };
  if (typedCount() != n)
    return shortErr(static_cast<size_t>(typedCount()) * esize);
  Literal lit(dtype, shape);
  auto check = [&](int have) -> LogicalResult {
    if (have != n)
      return shortErr(static_cast<size_t>(have) * esize);
    return success();
  };
  switch (dtype) {
  case kFloat:
    if (failed(check(t.float_data_size())))
      return failure();
    for (int64_t i = 0; i < n; ++i)
      lit.setF(i, t.float_data(i));
    break;
  case kDouble:
    if (failed(check(t.double_data_size())))
      return failure();
    for (int64_t i = 0; i < n; ++i)
      lit.setF(i, t.double_data(i));
    break;
  case kInt64:
    if (failed(check(t.int64_data_size())))
      return failure();
    for (int64_t i = 0; i < n; ++i)
      lit.setI(i, t.int64_data(i));
    break;
  case kUInt32:
  case kUInt64:
    if (failed(check(t.uint64_data_size())))
      return failure();
    for (int64_t i = 0; i < n; ++i)
      lit.setI(i, static_cast<int64_t>(t.uint64_data(i)));
    break;
  case kFloat16:
  case kBFloat16:
    // Both travel as their 16-bit patterns in int32_data.
    if (failed(check(t.int32_data_size())))
      return failure();
    for (int64_t i = 0; i < n; ++i) {
      uint16_t h = static_cast<uint16_t>(t.int32_data(i));
      std::memcpy(lit.mutableData() + 2 * i, &h, 2);
    }
    break;
  default:
    if (failed(check(t.int32_data_size())))
      return failure();
    for (int64_t i = 0; i < n; ++i) {
      if (isSmallFloatDType(dtype)) // float8 bit patterns
        lit.mutableData()[i] = static_cast<uint8_t>(t.int32_data(i));
      else
        lit.setI(i, t.int32_data(i));
    }
  }
  return lit;
}

Value GraphLowering::materialize(GraphValue &v, Location loc) {
  if (v.tensor)
    return v.tensor;
  assert(v.literal && "value has neither tensor nor literal");
  const Literal &lit = *v.literal;
  // Dims known only at run time: computed where they are needed, never
  // cached (a later use may sit where this one does not dominate).
  if (isSymbolicLiteral(lit))
    return materializeSymbolicLiteral(lit, loc);
  auto type = RankedTensorType::get(lit.shape(), elementType(lit.dtype()));
  OpBuilder::InsertionGuard guard(builder);
  Block &entry = func.getBody().front();
  if (lit.size() <= options.inlineConstantLimit) {
    builder.setInsertionPointToStart(&entry);
    Type et = type.getElementType();
    DenseElementsAttr attr;
    if (isSmallDType(lit.dtype())) {
      // Already the IR's bytes (bit patterns, extended integers).
      SmallVector<APInt> vals;
      for (int64_t i = 0; i < lit.size(); ++i)
        vals.push_back(APInt(8, lit.data()[i]));
      attr = DenseElementsAttr::get(type, vals);
    } else if (isFloatDType(lit.dtype())) {
      SmallVector<APFloat> vals;
      for (int64_t i = 0; i < lit.size(); ++i) {
        APFloat f(lit.getF(i));
        bool lost;
        f.convert(cast<FloatType>(et).getFloatSemantics(),
                  APFloat::rmNearestTiesToEven, &lost);
        vals.push_back(f);
      }
      attr = DenseElementsAttr::get(type, vals);
    } else {
      SmallVector<APInt> vals;
      unsigned width = et.getIntOrFloatBitWidth();
      for (int64_t i = 0; i < lit.size(); ++i)
        vals.push_back(APInt(width, static_cast<uint64_t>(lit.getI(i)),
                             /*isSigned=*/true, /*implicitTrunc=*/true));
      attr = DenseElementsAttr::get(type, vals);
    }
    v.tensor = arith::ConstantOp::create(builder, loc, attr);
    return v.tensor;
  }
  // Large literals stay data: a weight argument whose bytes go to the blob.
  WeightRecord w;
  w.name = "w" + std::to_string(result.weights.size());
  w.dtype = lit.dtype();
  w.shape = lit.shape();
  w.size = lit.byteSize();
  auto source = initializerStorage.find(lit.storageId());
  if (source != initializerStorage.end())
    w.source = source->second;
  w.offset = result.weightBlob.append(lit);
  result.weights.push_back(w);
  v.tensor = entry.addArgument(type, loc);
  return v.tensor;
}

LogicalResult GraphLowering::importConstantInput(const onnx::ValueInfoProto &in,
                                                 const ConstantInput &value,
                                                 Location loc) {
  const auto &tt = in.type().tensor_type();
  auto fail = [&](const Twine &why) {
    emitError(loc) << "--const-input " << in.name() << ": " << why;
    return failure();
  };
  if (options.inputShapes.count(in.name()))
    return fail("the input also has a --shape; give one or the other");
  if (tt.elem_type() != value.dtype)
    return fail("the value has element type " + Twine(value.dtype) +
                ", the input " + Twine(tt.elem_type()));
  if (!isSupportedDType(value.dtype))
    return fail("unsupported element type " + Twine(value.dtype));
  std::vector<int64_t> shape = value.shape;
  if (tt.has_shape() && tt.shape().dim_size() == 0 && shape.size() == 1 &&
      shape[0] == 1)
    shape.clear(); // one listed integer fills a scalar input
  if (tt.has_shape()) {
    if (tt.shape().dim_size() != static_cast<int>(shape.size()))
      return fail("the value has rank " + Twine(shape.size()) + ", the input " +
                  Twine(tt.shape().dim_size()));
    for (int i = 0; i < tt.shape().dim_size(); ++i) {
      const auto &d = tt.shape().dim(i);
      if (d.has_dim_value() && d.dim_value() != shape[i])
        return fail("axis " + Twine(i) + " is " + Twine(shape[i]) +
                    ", the input fixes it to " + Twine(d.dim_value()));
    }
  }
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  if (static_cast<uint64_t>(count) * dtypeSize(value.dtype) !=
      value.bytes.size())
    return fail("the value holds " + Twine(value.bytes.size()) +
                " bytes, its shape needs " +
                Twine(count * dtypeSize(value.dtype)));
  GraphValue v;
  v.dtype = value.dtype;
  v.shape = shape;
  v.literal = Literal(value.dtype, shape, value.bytes);
  // Sub-byte values arrive as the ABI has them (low bits); literals hold
  // them extended like the IR.
  if (isSubByteIntDType(value.dtype))
    for (int64_t i = 0; i < count; ++i)
      v.literal->setI(i, v.literal->data()[i]);
  values[in.name()] = std::move(v);
  return success();
}

LogicalResult GraphLowering::importInputs(const onnx::GraphProto &graph) {
  std::set<std::string> initializerNames;
  for (const auto &init : graph.initializer())
    initializerNames.insert(init.name());
  std::set<std::string> known, frozen;
  for (const auto &in : graph.input()) {
    if (initializerNames.count(in.name()))
      continue; // an initializer listed as input (IR < 4 style): a constant
    Location loc = NameLoc::get(builder.getStringAttr(in.name()));
    if (!in.type().has_tensor_type()) {
      emitError(loc) << "graph input '" << in.name()
                     << "' is not a tensor (sequence and map inputs are not "
                        "supported)";
      return failure();
    }
    const auto &tt = in.type().tensor_type();
    auto constant = options.constantInputs.find(in.name());
    if (constant != options.constantInputs.end()) {
      if (failed(importConstantInput(in, constant->second, loc)))
        return failure();
      frozen.insert(in.name());
      continue;
    }
    if (!isSupportedDType(tt.elem_type())) {
      emitError(loc) << "graph input '" << in.name()
                     << "' has unsupported element type " << tt.elem_type();
      return failure();
    }
    Shape shape;
    auto pinned = options.inputShapes.find(in.name());
    int rank = tt.shape().dim_size();
    if (pinned != options.inputShapes.end()) {
      known.insert(in.name());
      if (static_cast<int>(pinned->second.size()) != rank) {
        emitError(loc) << "--shape " << in.name() << " gives "
                       << pinned->second.size() << " dims, the input has rank "
                       << rank;
        return failure();
      }
    }
    for (int i = 0; i < rank; ++i) {
      const auto &d = tt.shape().dim(i);
      bool fixed = d.has_dim_value() && d.dim_value() >= 0;
      int64_t given =
          pinned != options.inputShapes.end() ? pinned->second[i] : int64_t(-1);
      if (fixed && given >= 0 && d.dim_value() != given) {
        emitError(loc) << "--shape " << in.name() << ": axis " << i
                       << " is fixed to " << d.dim_value()
                       << " in the model, not " << given;
        return failure();
      }
      if (given >= 0 || fixed) {
        shape.push_back(given >= 0 ? given : d.dim_value());
        continue;
      }
      // A symbolic dim: shared by name across inputs (docs/design/0010).
      std::string name = d.has_dim_param() && !d.dim_param().empty()
                             ? d.dim_param()
                             : in.name() + "." + std::to_string(i);
      int64_t lo = 1, hi = INT64_MAX;
      auto bounds = options.inputDimBounds.find(in.name());
      if (bounds != options.inputDimBounds.end()) {
        auto b = bounds->second.find(i);
        if (b != bounds->second.end())
          std::tie(lo, hi) = b->second;
      }
      size_t before = symbolicDims.numSymbols();
      int64_t handle = symbolicDims.addSymbol(name, lo, hi);
      if (symbolicDims.numSymbols() == before) {
        // Shared: bounds given twice must agree.
        size_t k = 0;
        while (symbolicDims.symbolName(k) != name)
          ++k;
        if ((lo != 1 || hi != INT64_MAX) && (symbolicDims.symbolLo(k) != lo ||
                                             symbolicDims.symbolHi(k) != hi)) {
          emitError(loc) << "--shape " << in.name() << ": axis " << i
                         << " is the symbol '" << name
                         << "', bounded differently by another --shape";
          return failure();
        }
      }
      shape.push_back(handle);
      inputSymbolAxes.push_back({in.name(), i, handle});
    }
    GraphValue v;
    v.dtype = tt.elem_type();
    v.shape = shape;
    result.inputs.push_back(signature(in.name(), v.dtype, shape));
    values[in.name()] = v;
  }
  for (auto &kv : options.constantInputs)
    if (!frozen.count(kv.first)) {
      emitError(fileLoc()) << "--const-input names '" << kv.first
                           << "', which is not a graph input"
                           << (initializerNames.count(kv.first)
                                   ? " (it is an initializer)"
                                   : "");
      return failure();
    }
  for (auto &kv : options.inputShapes)
    if (!known.count(kv.first)) {
      std::string names;
      for (auto &i : result.inputs)
        names += (names.empty() ? "" : ", ") + i.name;
      emitError(fileLoc()) << "--shape names '" << kv.first
                           << "', which is not a graph input (inputs: " << names
                           << ")";
      return failure();
    }
  for (const auto &init : graph.initializer()) {
    auto lit = literalFromTensorProto(
        init, NameLoc::get(builder.getStringAttr(init.name())));
    if (failed(lit))
      return failure();
    GraphValue v;
    v.dtype = lit->dtype();
    v.shape = lit->shape();
    initializerStorage[lit->storageId()] = init.name();
    v.literal = std::move(*lit);
    values[init.name()] = std::move(v);
  }
  return success();
}

FailureOr<std::vector<GraphValue>>
GraphLowering::lowerSubgraph(const onnx::GraphProto &g, int64_t opset,
                             const std::vector<GraphValue> &inputs) {
  if ((size_t)g.input_size() != inputs.size()) {
    emitError(fileLoc()) << "subgraph '" << g.name() << "' takes "
                         << g.input_size() << " inputs, given "
                         << inputs.size();
    return failure();
  }
  // Subgraph names may shadow outer ones: keep what they hid.
  std::map<std::string, std::optional<GraphValue>> hidden;
  auto shadow = [&](const std::string &name) {
    if (name.empty() || hidden.count(name))
      return;
    GraphValue *old = lookup(name);
    hidden[name] = old ? std::optional<GraphValue>(*old) : std::nullopt;
  };
  for (const auto &in : g.input())
    shadow(in.name());
  for (const auto &init : g.initializer())
    shadow(init.name());
  for (const auto &node : g.node())
    for (const auto &out : node.output())
      shadow(out);
  auto restore = [&] {
    for (auto &[name, old] : hidden) {
      if (old)
        values[name] = *old;
      else
        values.erase(name);
    }
  };
  for (int i = 0; i < g.input_size(); ++i)
    values[g.input(i).name()] = inputs[i];
  for (const auto &init : g.initializer()) {
    auto lit = literalFromTensorProto(
        init, NameLoc::get(builder.getStringAttr(init.name())));
    if (failed(lit)) {
      restore();
      return failure();
    }
    GraphValue v;
    v.dtype = lit->dtype();
    v.shape = lit->shape();
    v.literal = std::move(*lit);
    values[init.name()] = std::move(v);
  }
  std::vector<GraphValue> outs;
  for (const auto &node : g.node()) {
    for (const auto &out : node.output())
      producers[out] = &node;
    if (failed(lowerNode(node, opset))) {
      restore();
      return failure();
    }
  }
  for (const auto &out : g.output()) {
    GraphValue *v = lookup(out.name());
    if (!v) {
      emitError(fileLoc()) << "subgraph output '" << out.name()
                           << "' is not produced by any node";
      restore();
      return failure();
    }
    outs.push_back(*v);
  }
  restore();
  return outs;
}

/// Inputs that the op's schema binds to one type parameter (MatMul's A and
/// B are both T) must have one element type: ONNX Runtime refuses such a
/// model at load, and a lowering would otherwise mix f32 with f64.
static LogicalResult checkTypeConstraints(NodeLowering &nl,
                                          const onnx::NodeProto &node,
                                          const std::string &nodeName,
                                          int64_t opset, Location loc) {
  const auto *schema = onnx::OpSchemaRegistry::Schema(node.op_type(), opset);
  if (!schema || schema->inputs().empty())
    return success();
  const auto &formals = schema->inputs();
  std::map<std::string, std::pair<size_t, int32_t>> bound;
  for (size_t i = 0; i < nl.numInputs(); ++i) {
    if (node.input(i).empty())
      continue;
    const auto &formal = formals[std::min(i, formals.size() - 1)];
    // A variadic formal (Concat's inputs) binds all of its actuals.
    if (i >= formals.size() &&
        formal.GetOption() != onnx::OpSchema::FormalParameterOption::Variadic)
      break;
    bool isParameter = false;
    for (const auto &c : schema->typeConstraintParams())
      isParameter |= c.type_param_str == formal.GetTypeStr();
    if (!isParameter || (i >= formals.size() && !formal.GetIsHomogeneous()))
      continue;
    int32_t dtype = nl.dtype(i);
    auto [it, fresh] =
        bound.try_emplace(formal.GetTypeStr(), std::make_pair(i, dtype));
    if (!fresh && it->second.second != dtype) {
      emitError(loc) << "node '" << nodeName << "' (" << node.op_type()
                     << ", opset " << opset << "): input '"
                     << node.input(it->second.first) << "' is "
                     << dtypeName(it->second.second) << " and input '"
                     << node.input(i) << "' is " << dtypeName(dtype)
                     << ", but both must have the same type ('"
                     << formal.GetTypeStr() << "')";
      return failure();
    }
  }
  return success();
}

LogicalResult GraphLowering::lowerNode(const onnx::NodeProto &node,
                                       int64_t opset) {
  std::string nodeName = node.name().empty()
                             ? (node.output_size() ? node.output(0) : "")
                             : node.name();
  Location loc = NameLoc::get(builder.getStringAttr(nodeName));
  std::string domain = node.domain().empty() ? "ai.onnx" : node.domain();
  if (domain != "ai.onnx") {
    emitError(loc) << "node '" << nodeName << "': op '" << node.op_type()
                   << "' of domain '" << domain
                   << "' is not supported (only the default ai.onnx domain "
                      "is)";
    return failure();
  }
  auto it = opLowerings().find(node.op_type());
  if (it == opLowerings().end()) {
    emitError(loc) << "node '" << nodeName << "': unsupported op '"
                   << node.op_type() << "' (domain '" << domain << "', opset "
                   << opset << ")";
    return failure();
  }
  for (int i = 0; i < node.input_size(); ++i)
    if (!node.input(i).empty() && !values.count(node.input(i))) {
      emitError(loc) << "node '" << nodeName << "' (" << node.op_type()
                     << "): input '" << node.input(i)
                     << "' is not defined before it";
      return failure();
    }
  // Before opset 7 (Debian's oldest node tests use 1 and 6), accept an op
  // only where the model's opset resolves to the same schema version as
  // opset 7 does: the lowerings implement the schemas from 7 on.
  if (opset < 7) {
    const auto *old = onnx::OpSchemaRegistry::Schema(node.op_type(), opset);
    const auto *at7 = onnx::OpSchemaRegistry::Schema(node.op_type(), 7);
    if (!old || !at7 || old->SinceVersion() != at7->SinceVersion()) {
      emitError(loc) << "node '" << nodeName << "': " << node.op_type()
                     << " at opset " << opset << " is version "
                     << (old ? old->SinceVersion() : 0)
                     << ", older than the one mcc implements (version "
                     << (at7 ? at7->SinceVersion() : 0) << ", opset 7 on)";
      return failure();
    }
  }
  // Opsets 24-28 gave these ops an attribute that selects behaviour mcc
  // does not implement; without it they mean what they meant in opset 23.
  if (opset > 23) {
    static const std::pair<const char *, const char *> newAttributes[] = {
        {"Range", "stash_type"}};
    for (auto [op, attr] : newAttributes)
      for (const auto &a : node.attribute())
        if (node.op_type() == op && a.name() == attr) {
          emitError(loc) << "node '" << nodeName << "': attribute '" << attr
                         << "' of " << op << " (opset " << opset
                         << ") is not supported";
          return failure();
        }
  }
  NodeLowering nl(*this, node, opset, loc);
  if (failed(checkTypeConstraints(nl, node, nodeName, opset, loc)))
    return failure();
  if (failed(prepareSymbolicInputs(nl)))
    return failure();
  if (nl.folded())
    return success();
  if (failed(it->second(nl)))
    return failure();
  for (int i = 0; i < node.output_size(); ++i)
    if (!node.output(i).empty() && !values.count(node.output(i)))
      return nl.fail("output " + Twine(i) + " ('" + node.output(i) +
                     "') is not supported");
  return success();
}

static bool isSplat(const Literal &l) {
  size_t es = dtypeSize(l.dtype());
  for (int64_t i = 1; i < l.size(); ++i)
    if (std::memcmp(l.data(), l.data() + i * es, es) != 0)
      return false;
  return l.size() > 0;
}

/// Newest default-domain opset accepted. Versions 24-28 of the ops mcc
/// lowers changed type constraints only (new float8/4-bit and int types,
/// bfloat16), except the attributes checked in lowerNode; new ops
/// (Attention 24, Swish, TensorScatter, BitCast, CumProd, SwiGLU, ...) are
/// reported as unsupported ops like any other. See docs/design/0007.
static constexpr int64_t kMaxOpset = 28;

FailureOr<ImportedModel> GraphLowering::run(const onnx::ModelProto &model) {
  ensureRegistered();
  int64_t opset = -1;
  for (const auto &os : model.opset_import())
    if (os.domain().empty() || os.domain() == "ai.onnx")
      opset = os.version();
  if (opset < 0) {
    emitError(fileLoc()) << "model imports no default-domain opset";
    return failure();
  }
  if (opset < 1 || opset > kMaxOpset) {
    emitError(fileLoc()) << "default-domain opset " << opset
                         << " is not supported (supported: 1 to " << kMaxOpset
                         << "; before 7, only ops unchanged since)";
    return failure();
  }
  result.opsetVersion = opset;
  result.producer = model.producer_name() + " " + model.producer_version();
  if (!model.has_graph()) {
    emitError(fileLoc()) << "model has no graph";
    return failure();
  }
  const onnx::GraphProto &graph = model.graph();

  result.module = ModuleOp::create(fileLoc());
  builder.setInsertionPointToEnd(result.module->getBody());
  func = func::FuncOp::create(builder, fileLoc(), "forward",
                              builder.getFunctionType({}, {}));
  Block *entry = func.addEntryBlock();
  if (failed(importInputs(graph)))
    return failure();
  for (const auto &in : result.inputs) {
    GraphValue &v = values[in.name];
    v.tensor = entry->addArgument(tensorTypeOf(v.shape, elementType(v.dtype)),
                                  NameLoc::get(builder.getStringAttr(in.name)));
    symbolicDims.setShape(v.tensor, v.shape);
  }
  builder.setInsertionPointToEnd(entry);
  // Each symbol's value, read once from the first input that has it.
  for (size_t k = 0; k < symbolicDims.numSymbols(); ++k)
    for (const SymbolAxis &sa : inputSymbolAxes)
      if (symbolicDims.expr(sa.handle) ==
          getAffineSymbolExpr(k, builder.getContext())) {
        Location loc = NameLoc::get(builder.getStringAttr(sa.input));
        symbolicDims.setSymbolValue(
            k, tensor::DimOp::create(builder, loc, values[sa.input].tensor,
                                     sa.axis));
        break;
      }

  // Sub-byte inputs come as ml_dtypes has them, the value in the low bits
  // of a byte (docs/design/0009); the IR extends it.
  for (const auto &in : result.inputs) {
    GraphValue &v = values[in.name];
    if (dtypeBits(v.dtype) >= 8)
      continue;
    Location loc = NameLoc::get(builder.getStringAttr(in.name));
    int32_t dtype = v.dtype;
    v.tensor =
        emitElementwise(builder, loc, v.tensor, builder.getI8Type(), v.shape,
                        [&](OpBuilder &b, Location l, ValueRange a) {
                          return emitWrapSubByteInt(b, l, a[0], dtype);
                        });
  }
  for (const auto &node : graph.node()) {
    for (const auto &out : node.output())
      producers[out] = &node;
    if (failed(lowerNode(node, opset)))
      return failure();
  }

  SmallVector<Value> results;
  for (const auto &out : graph.output()) {
    GraphValue *v = lookup(out.name());
    if (!v) {
      emitError(fileLoc()) << "graph output '" << out.name()
                           << "' is not produced by any node";
      return failure();
    }
    Location loc = NameLoc::get(builder.getStringAttr(out.name()));
    Value t;
    if (!hasSymbolicDims(v->shape) && numElements(v->shape) == 0) {
      // Nothing to compute or copy (and no element to splat).
      t = createEmpty(builder, loc, v->shape, elementType(v->dtype));
    } else if (v->literal && !v->tensor && isSplat(*v->literal)) {
      // A constant output is a fill: no copy out of a constant tensor.
      GraphValue scalar;
      scalar.dtype = v->dtype;
      scalar.literal =
          v->literal->gather({}, [](const int64_t *) { return 0; });
      Value c = materialize(scalar, loc);
      Value elem = tensor::ExtractOp::create(builder, loc, c, ValueRange{});
      Value empty = createEmpty(builder, loc, v->shape, elementType(v->dtype));
      t = linalg::FillOp::create(builder, loc, elem, empty).getResult(0);
    } else {
      t = materialize(*v, loc);
    }
    if (v->dtype == kInt4 || v->dtype == kInt2) {
      // Back to the ABI's low bits, upper bits zero.
      int64_t mask = (1 << dtypeBits(v->dtype)) - 1;
      t = emitElementwise(builder, loc, t, builder.getI8Type(), v->shape,
                          [&](OpBuilder &b, Location l, ValueRange a) {
                            return arith::AndIOp::create(
                                b, l, a[0],
                                scalarConstant(b, l, b.getI8Type(), mask));
                          });
    }
    // A graph output may alias an input or weight; the function must return
    // a fresh tensor so the caller's output buffer is written.
    if (isa<BlockArgument>(t) || t.getDefiningOp<arith::ConstantOp>()) {
      auto type = cast<RankedTensorType>(t.getType());
      Value empty =
          createEmpty(builder, loc, shapeOf(t), type.getElementType());
      t = linalg::CopyOp::create(builder, loc, t, empty).getResult(0);
    }
    results.push_back(t);
    result.outputs.push_back(signature(out.name(), v->dtype, v->shape));
    for (const std::string &e : result.outputs.back().dimExprs)
      if (e.empty() && !result.outputs.back().dimExprs.empty() &&
          hasSymbolicDims(v->shape)) {
        for (size_t i = 0; i < v->shape.size(); ++i)
          if (isSymbolicDim(v->shape[i]) &&
              result.outputs.back().dimExprs[i].empty()) {
            emitError(loc) << "graph output '" << out.name() << "' has shape "
                           << symbolicDims.describe(v->shape) << ": axis " << i
                           << " depends on the data, not only on the input "
                              "shapes (not supported)";
            return failure();
          }
      }
  }
  // Bounds are final now (lowerings may have tightened them).
  for (size_t k = 0; k < symbolicDims.numGraphSymbols(); ++k)
    result.symbols.push_back({symbolicDims.symbolName(k),
                              symbolicDims.symbolLo(k),
                              symbolicDims.symbolHi(k)});
  func::ReturnOp::create(builder, fileLoc(), results);
  func.setFunctionType(builder.getFunctionType(entry->getArgumentTypes(),
                                               ValueRange(results).getTypes()));
  func->setAttr("mcc.num_inputs",
                builder.getI64IntegerAttr(result.inputs.size()));
  // Inputs belong to the caller and weights may be mapped read-only: ops
  // that update a tensor in place (scatters) must bufferize into a copy.
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    func.setArgAttr(i, "bufferization.writable", builder.getBoolAttr(false));
  if (failed(verify(*result.module)))
    return failure();
  return std::move(result);
}

//===----------------------------------------------------------------------===//
// Symbolic dims at op boundaries (docs/design/0010)
//===----------------------------------------------------------------------===//

namespace {
/// Ops whose lowerings handle symbolic dims in their data inputs.
const std::set<std::string> &symbolicAwareOps() {
  static const std::set<std::string> ops = {
      // elementwise
      "Abs", "Add", "And", "Cast", "CastLike", "Ceil", "Clip", "Cos", "Div",
      "Elu", "Equal", "Erf", "Exp", "Floor", "Gelu", "Greater",
      "GreaterOrEqual", "HardSigmoid", "HardSwish", "Identity", "IsInf",
      "IsNaN", "LeakyRelu", "Less", "LessOrEqual", "Log", "Max", "Min", "Mod",
      "Mul", "Neg", "Not", "Or", "Pow", "PRelu", "Reciprocal", "Relu", "Round",
      "Sigmoid", "Sign", "Sin", "Softplus", "Sqrt", "Sub", "Tanh", "Where",
      "Xor",
      // shapes and data movement
      "Concat", "ConstantOfShape", "Expand", "Flatten", "Gather", "GatherND",
      "Range", "Reshape", "Shape", "Size", "Slice", "Split", "Squeeze",
      "Transpose", "Unsqueeze", "Trilu",
      // compute
      "AveragePool", "Conv", "Gemm", "GlobalAveragePool", "GlobalMaxPool",
      "LayerNormalization", "MatMul", "MaxPool", "ReduceMax", "ReduceMean",
      "ReduceMin", "ReduceSum", "Softmax", "LogSoftmax", "BatchNormalization",
      "SimplifiedLayerNormalization", "RMSNormalization"};
  return ops;
}

/// Ops that fold symbolic literals by moving their elements (never
/// computing with them), so handles pass through unchanged.
const std::set<std::string> &structuralFoldOps() {
  static const std::set<std::string> ops = {
      "Concat", "Flatten", "Gather",          "Identity", "Reshape",
      "Shape",  "Size",    "Slice",           "Squeeze",  "Unsqueeze",
      "Split",  "Expand",  "ConstantOfShape", "Transpose"};
  return ops;
}

const std::set<std::string> &arithmeticFoldOps() {
  static const std::set<std::string> ops = {"Add",         "Sub",
                                            "Mul",         "Div",
                                            "Max",         "Min",
                                            "Mod",         "Neg",
                                            "Abs",         "Equal",
                                            "Less",        "Greater",
                                            "LessOrEqual", "GreaterOrEqual",
                                            "Where",       "Not",
                                            "And",         "Or"};
  return ops;
}
} // namespace

Value GraphLowering::materializeSymbolicLiteral(const Literal &lit,
                                                Location loc) {
  Type et = elementType(lit.dtype());
  SmallVector<Value> elems;
  for (int64_t i = 0; i < lit.size(); ++i) {
    int64_t v = lit.getI(i);
    if (isSymbolicDim(v))
      elems.push_back(arith::IndexCastOp::create(
          builder, loc, et, symbolicDims.materialize(builder, loc, v)));
    else
      elems.push_back(arith::ConstantOp::create(builder, loc,
                                                builder.getIntegerAttr(et, v)));
  }
  auto type = RankedTensorType::get(lit.shape(), et);
  return tensor::FromElementsOp::create(builder, loc, type, elems);
}

bool GraphLowering::foldSymbolicArithmetic(NodeLowering &n) {
  const std::string &op = n.node().op_type();
  std::vector<Shape> shapes;
  for (size_t i = 0; i < n.numInputs(); ++i)
    if (n.hasInput(i))
      shapes.push_back(n.literal(i).shape());
  Shape out;
  if (!broadcastShapes(shapes, out))
    return false;
  bool compare = op == "Equal" || op == "Less" || op == "Greater" ||
                 op == "LessOrEqual" || op == "GreaterOrEqual";
  int32_t dtype = compare ? kBool : n.dtype(op == "Where" ? 1 : 0);
  if (isFloatDType(dtype))
    return false;
  Literal result(dtype, out);
  std::vector<int64_t> strides = stridesOf(out);
  auto element = [&](size_t i, int64_t flat) {
    const Literal &l = n.literal(i);
    const Shape &s = l.shape();
    int64_t idx = 0, stride = 1;
    for (int64_t d = static_cast<int64_t>(s.size()) - 1; d >= 0; --d) {
      int64_t od = d + static_cast<int64_t>(out.size() - s.size());
      int64_t coord = (flat / strides[od]) % out[od];
      idx += (s[d] == 1 ? 0 : coord) * stride;
      stride *= s[d];
    }
    return l.getI(idx);
  };
  SymbolicDims &sd = symbolicDims;
  // -1: unknown; 0/1: decided.
  auto less = [&](int64_t a, int64_t b) -> int {
    if (a == b)
      return 0;
    if (sd.upperBound(a) < sd.lowerBound(b))
      return 1;
    if (sd.lowerBound(a) >= sd.upperBound(b))
      return 0;
    return -1;
  };
  for (int64_t k = 0; k < numElements(out); ++k) {
    int64_t a = element(0, k);
    int64_t b = n.numInputs() > 1 && n.hasInput(1) ? element(1, k) : 0;
    std::optional<int64_t> r;
    if (op == "Add")
      r = sd.add(a, b);
    else if (op == "Sub")
      r = sd.sub(a, b);
    else if (op == "Mul")
      r = sd.mul(a, b);
    else if (op == "Div") {
      // Integer Div truncates; dims and positive divisors floor alike.
      if (sd.lowerBound(a) >= 0)
        r = sd.floorDiv(a, b);
    } else if (op == "Mod") {
      if (sd.lowerBound(a) >= 0)
        r = sd.mod(a, b);
    } else if (op == "Neg")
      r = sd.sub(0, a);
    else if (op == "Abs") {
      if (sd.lowerBound(a) >= 0)
        r = a;
    } else if (op == "Max" || op == "Min") {
      int64_t acc = a;
      bool decided = true;
      for (size_t i = 1; i < n.numInputs() && decided; ++i) {
        if (!n.hasInput(i))
          continue;
        int64_t x = element(i, k);
        int pick = op == "Max" ? less(acc, x) : less(x, acc);
        if (pick < 0)
          decided = false;
        else if (pick == 1)
          acc = x;
      }
      if (decided)
        r = acc;
    } else if (op == "Equal") {
      if (a == b)
        r = 1;
      else if (!isSymbolicDim(a) && !isSymbolicDim(b))
        r = 0;
      else if (less(a, b) == 1 || less(b, a) == 1)
        r = 0;
    } else if (op == "Less" || op == "GreaterOrEqual") {
      int lt = less(a, b);
      if (lt >= 0)
        r = op == "Less" ? lt : 1 - lt;
    } else if (op == "Greater" || op == "LessOrEqual") {
      int gt = less(b, a);
      if (gt >= 0)
        r = op == "Greater" ? gt : 1 - gt;
    } else if (op == "Where") {
      if (!isSymbolicDim(a))
        r = a ? b : element(2, k);
    } else if (op == "Not") {
      if (!isSymbolicDim(a))
        r = !a;
    } else if (op == "And" || op == "Or") {
      if (!isSymbolicDim(a) && !isSymbolicDim(b))
        r = op == "And" ? (a && b) : (a || b);
    }
    if (!r)
      return false;
    result.setI(k, *r);
  }
  n.setOutput(0, std::move(result));
  return true;
}

LogicalResult GraphLowering::prepareSymbolicInputs(NodeLowering &n) {
  const std::string &op = n.node().op_type();
  int firstSymbolic = -1;
  bool allLiteral = true;
  for (size_t i = 0; i < n.numInputs(); ++i) {
    if (!n.hasInput(i))
      continue;
    const GraphValue &v = n.input(i);
    allLiteral &= v.literal.has_value();
    bool symbolic =
        v.literal ? isSymbolicLiteral(*v.literal) : hasSymbolicDims(v.shape);
    if (symbolic && firstSymbolic < 0)
      firstSymbolic = static_cast<int>(i);
  }
  if (firstSymbolic < 0)
    return success();
  if (allLiteral && arithmeticFoldOps().count(op) &&
      foldSymbolicArithmetic(n)) {
    n.setFolded();
    return success();
  }
  if (!symbolicAwareOps().count(op)) {
    const GraphValue &v = n.input(firstSymbolic);
    std::string what = v.literal
                           ? "holds dims computed from symbolic input dims"
                           : "has shape " + symbolicDims.describe(v.shape);
    return n.fail("input " + Twine(firstSymbolic) + " ('" +
                  n.node().input(firstSymbolic) + "') " + what + "; " + op +
                  " does not support symbolic dims yet: pin them with --shape "
                  "NAME=DIMxDIM...");
  }
  // Symbolic literals that this op would compute with become run-time
  // tensors; the structural ops fold them as they are.
  bool structural = structuralFoldOps().count(op) ||
                    (op == "Cast" && !isFloatDType(n.attrInt("to", kFloat)));
  if (structural)
    return success();
  for (size_t i = 0; i < n.numInputs(); ++i) {
    if (!n.hasInput(i) || !n.isLiteral(i) || !isSymbolicLiteral(n.literal(i)))
      continue;
    // Range reads its bounds as literals itself.
    if (op == "Range")
      continue;
    GraphValue runtime;
    runtime.dtype = n.dtype(i);
    runtime.shape = n.literal(i).shape();
    runtime.tensor = materializeSymbolicLiteral(n.literal(i), n.loc());
    n.overrideInput(i, std::move(runtime));
  }
  return success();
}

//===----------------------------------------------------------------------===//
// NodeLowering
//===----------------------------------------------------------------------===//

NodeLowering::NodeLowering(GraphLowering &graph, const onnx::NodeProto &node,
                           int64_t opset, Location loc)
    : graph_(graph), node_(node), opset_(opset), loc_(loc) {}

OpBuilder &NodeLowering::builder() { return graph_.getBuilder(); }

const ImportOptions &NodeLowering::importOptions() const {
  return graph_.importOptions();
}

const GraphValue &NodeLowering::input(size_t i) const {
  auto o = overrides_.find(i);
  if (o != overrides_.end())
    return o->second;
  return *graph_.lookup(node_.input(i));
}

bool NodeLowering::allInputsLiteral() const {
  for (size_t i = 0; i < numInputs(); ++i)
    if (hasInput(i) && !isLiteral(i))
      return false;
  return true;
}

LogicalResult
NodeLowering::requireLiterals(std::initializer_list<size_t> inputs,
                              StringRef what) const {
  for (size_t i : inputs)
    if (hasInput(i) && !isLiteral(i)) {
      // A value computed inside the graph (an expanded function body) is
      // known once the graph inputs it comes from are: name them.
      std::string behind;
      if (graph_.isProduced(node_.input(i))) {
        std::vector<std::string> names = graph_.inputsBehind(node_.input(i));
        for (size_t k = 0; k < names.size(); ++k)
          behind += (k ? ", '" : "'") + names[k] + "'";
        if (!names.empty())
          behind = "; it is computed from graph input" +
                   std::string(names.size() > 1 ? "s " : " ") + behind;
      }
      return fail(what + ": input " + Twine(i) + " ('" + node_.input(i) +
                  "') must be known at compile time (mcc compiles static "
                  "shapes; a graph input can be frozen with --const-input)" +
                  behind);
    }
  return success();
}

Value NodeLowering::materialize(GraphValue &v) {
  return graph_.materialize(v, loc_);
}

Value NodeLowering::value(size_t i) {
  auto o = overrides_.find(i);
  if (o != overrides_.end())
    return graph_.materialize(o->second, loc_);
  return graph_.materialize(*graph_.lookup(node_.input(i)), loc_);
}

void NodeLowering::setOutput(size_t i, Value tensor, int32_t dtype) {
  if (!hasOutput(i))
    return;
  GraphValue v;
  auto type = cast<RankedTensorType>(tensor.getType());
  v.dtype = dtypeOf(type.getElementType());
  // The element type alone can't tell unsigned from signed: an output of
  // input 0's IR type keeps input 0's unsigned or small (i8) dtype.
  if (numInputs() > 0 && hasInput(0) &&
      (isUnsignedDType(this->dtype(0)) || isSmallDType(this->dtype(0))) &&
      elementType(this->dtype(0)) == type.getElementType())
    v.dtype = this->dtype(0);
  else if (type.getElementType().isInteger(8))
    // Where(cond, a, b) and the like: a small type passed through.
    for (size_t k = 1; k < numInputs(); ++k)
      if (hasInput(k) && isSmallDType(this->dtype(k))) {
        v.dtype = this->dtype(k);
        break;
      }
  if (dtype)
    v.dtype = dtype;
  v.shape = shapeOf(tensor);
  v.tensor = tensor;
  graph_.define(node_.output(i), std::move(v));
}

FailureOr<std::vector<GraphValue>>
NodeLowering::lowerSubgraph(const onnx::GraphProto &g,
                            const std::vector<GraphValue> &inputs) {
  return graph_.lowerSubgraph(g, opset_, inputs);
}

void NodeLowering::setOutput(size_t i, const GraphValue &v) {
  if (!hasOutput(i))
    return;
  graph_.define(node_.output(i), v);
}

void NodeLowering::setOutput(size_t i, Literal literal) {
  if (!hasOutput(i))
    return;
  GraphValue v;
  v.dtype = literal.dtype();
  v.shape = literal.shape();
  v.literal = std::move(literal);
  graph_.define(node_.output(i), std::move(v));
}

const onnx::AttributeProto *NodeLowering::attr(llvm::StringRef name) const {
  for (const auto &a : node_.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

bool NodeLowering::hasAttr(llvm::StringRef name) const {
  return attr(name) != nullptr;
}

int64_t NodeLowering::attrInt(llvm::StringRef name, int64_t def) const {
  const auto *a = attr(name);
  return a ? a->i() : def;
}

float NodeLowering::attrFloat(llvm::StringRef name, float def) const {
  const auto *a = attr(name);
  return a ? a->f() : def;
}

std::vector<int64_t> NodeLowering::attrInts(llvm::StringRef name,
                                            std::vector<int64_t> def) const {
  const auto *a = attr(name);
  if (!a)
    return def;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::vector<float> NodeLowering::attrFloats(llvm::StringRef name) const {
  const auto *a = attr(name);
  if (!a)
    return {};
  return std::vector<float>(a->floats().begin(), a->floats().end());
}

std::string NodeLowering::attrString(llvm::StringRef name,
                                     std::string def) const {
  const auto *a = attr(name);
  return a ? a->s() : def;
}

FailureOr<std::optional<std::vector<int64_t>>>
NodeLowering::intsFromInputOrAttr(size_t i, llvm::StringRef name) {
  if (hasInput(i)) {
    if (failed(requireLiterals({i}, name)))
      return failure();
    return std::optional<std::vector<int64_t>>(literal(i).toInts());
  }
  if (hasAttr(name))
    return std::optional<std::vector<int64_t>>(attrInts(name));
  return std::optional<std::vector<int64_t>>();
}

InFlightDiagnostic NodeLowering::emitError() const {
  std::string name = node_.name().empty()
                         ? (node_.output_size() ? node_.output(0) : "")
                         : node_.name();
  return mlir::emitError(loc_)
         << "node '" << name << "' (" << node_.op_type() << "): ";
}

LogicalResult NodeLowering::fail(const Twine &message) const {
  emitError() << message;
  return failure();
}

FailureOr<Literal> NodeLowering::literalFromProto(const onnx::TensorProto &t) {
  return graph_.literalFromTensorProto(t, loc_);
}

Type NodeLowering::elementType(int32_t dtype) const {
  return graph_.elementType(dtype);
}

RankedTensorType NodeLowering::tensorType(const Shape &shape,
                                          int32_t dtype) const {
  return tensorTypeOf(shape, elementType(dtype));
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

/// Imports a parsed model; literals borrow its raw_data, so it lives as
/// long as the returned model's weights.
static FailureOr<ImportedModel>
importParsed(MLIRContext &context,
             std::shared_ptr<const onnx::ModelProto> model, StringRef baseDir,
             StringRef displayName, const ImportOptions &options) {
  DialectRegistry registry;
  registerImportDialects(registry);
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();
  GraphLowering lowering(context, displayName.str(), baseDir.str(), options);
  lowering.modelOwner = model;
  return lowering.run(*model);
}

/// Parses a ModelProto from `stream`, refusing truncated or hostile input.
static FailureOr<std::shared_ptr<onnx::ModelProto>>
parseModel(MLIRContext &context, google::protobuf::io::CodedInputStream &stream,
           bool empty, StringRef displayName) {
  auto model = std::make_shared<onnx::ModelProto>();
  stream.SetTotalBytesLimit(INT32_MAX);
  if (empty || !model->ParseFromCodedStream(&stream) ||
      !stream.ConsumedEntireMessage()) {
    emitError(FileLineColLoc::get(&context, displayName, 0, 0))
        << "not a valid ONNX model: the protobuf cannot be parsed (empty, "
           "truncated or not an ONNX file)";
    return failure();
  }
  if (!model->has_graph() || model->opset_import_size() == 0) {
    emitError(FileLineColLoc::get(&context, displayName, 0, 0))
        << "not a valid ONNX model: no graph or no opset import";
    return failure();
  }
  return model;
}

FailureOr<ImportedModel> importOnnxBytes(MLIRContext &context, StringRef bytes,
                                         StringRef baseDir,
                                         StringRef displayName,
                                         const ImportOptions &options) {
  google::protobuf::io::CodedInputStream stream(
      reinterpret_cast<const uint8_t *>(bytes.data()),
      static_cast<int>(bytes.size()));
  auto model = parseModel(context, stream, bytes.empty(), displayName);
  if (failed(model))
    return failure();
  return importParsed(context, *model, baseDir, displayName, options);
}

FailureOr<ImportedModel> importOnnxFile(MLIRContext &context, StringRef path,
                                        const ImportOptions &options) {
  Location loc = FileLineColLoc::get(&context, path, 0, 0);
  if (llvm::sys::fs::is_directory(path)) {
    emitError(loc) << "is a directory, not an ONNX model file";
    return failure();
  }
  // Read through a stream, not a mapping: the parsed model then holds the
  // only copy of embedded initializers, which the weights borrow.
  int fd = -1;
  if (std::error_code ec = llvm::sys::fs::openFileForRead(path, fd)) {
    emitError(loc) << "cannot open: " << ec.message();
    return failure();
  }
  uint64_t size = 0;
  llvm::sys::fs::file_size(path, size);
  if (size > static_cast<uint64_t>(INT32_MAX)) {
    ::close(fd);
    emitError(loc) << "the .onnx file is over 2 GB; keep weights as external "
                      "data";
    return failure();
  }
  FailureOr<std::shared_ptr<onnx::ModelProto>> model = failure();
  {
    google::protobuf::io::FileInputStream file(fd);
    file.SetCloseOnDelete(true);
    google::protobuf::io::CodedInputStream stream(&file);
    model = parseModel(context, stream, size == 0, path);
  }
  if (failed(model))
    return failure();
  SmallString<256> dir(path);
  llvm::sys::path::remove_filename(dir);
  if (dir.empty())
    dir = ".";
  return importParsed(context, *model, dir, path, options);
}

FailureOr<ImportedModel> importOnnxText(MLIRContext &context, StringRef text,
                                        const ImportOptions &options) {
  onnx::ModelProto model;
  std::string owned = text.str();
  onnx::OnnxParser parser(owned.c_str());
  auto status = parser.Parse(model);
  if (!status.IsOK()) {
    emitError(UnknownLoc::get(&context))
        << "cannot parse ONNX text: " << status.ErrorMessage();
    return failure();
  }
  return importParsed(context,
                      std::make_shared<onnx::ModelProto>(std::move(model)), "",
                      "<text>", options);
}

} // namespace mcc
