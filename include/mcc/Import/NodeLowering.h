//===- NodeLowering.h - per-node state while importing an ONNX graph ------===//
//
// The importer walks the graph in order. Each node either folds (all inputs
// literal) or emits tensor-level MLIR. Op lowerings are free functions
// registered by op type; they see the node through NodeLowering.
//
//===----------------------------------------------------------------------===//
#ifndef MCC_IMPORT_NODELOWERING_H
#define MCC_IMPORT_NODELOWERING_H

#include "mcc/Import/Literal.h"
#include "mcc/Import/OnnxImporter.h"
#include "mcc/Import/SymbolicDims.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"

#include "onnx/onnx_pb.h"

#include <functional>
#include <map>
#include <optional>

namespace mcc {

/// A value of the ONNX graph: always a dtype and a shape (static sizes, or
/// handles for symbolic dims: SymbolicDims.h); a literal if known at
/// compile time; an SSA tensor once something needed it in IR.
struct GraphValue {
  int32_t dtype = kFloat;
  Shape shape;
  std::optional<Literal> literal;
  mlir::Value tensor;
};

class GraphLowering;

class NodeLowering {
public:
  NodeLowering(GraphLowering &graph, const onnx::NodeProto &node, int64_t opset,
               mlir::Location loc);

  const onnx::NodeProto &node() const { return node_; }
  int64_t opset() const { return opset_; }
  mlir::Location loc() const { return loc_; }
  mlir::OpBuilder &builder();
  const ImportOptions &importOptions() const;

  size_t numInputs() const { return node_.input_size(); }
  bool hasInput(size_t i) const {
    return i < (size_t)node_.input_size() && !node_.input(i).empty();
  }
  const GraphValue &input(size_t i) const;
  const Shape &shape(size_t i) const { return input(i).shape; }
  int32_t dtype(size_t i) const { return input(i).dtype; }
  size_t rank(size_t i) const { return input(i).shape.size(); }
  bool isLiteral(size_t i) const { return input(i).literal.has_value(); }
  const Literal &literal(size_t i) const { return *input(i).literal; }
  bool allInputsLiteral() const;
  /// Fails unless each of `inputs` that is present is known at compile
  /// time, naming the first that is not ("<what>: input 1 ('shape') must be
  /// known at compile time ...") so the user can freeze it (--const-input).
  mlir::LogicalResult requireLiterals(std::initializer_list<size_t> inputs,
                                      llvm::StringRef what) const;
  /// The input as an SSA tensor, materializing a literal if needed.
  mlir::Value value(size_t i);
  /// Any graph value (a subgraph's result) as an SSA tensor.
  mlir::Value materialize(GraphValue &v);

  size_t numOutputs() const { return node_.output_size(); }
  bool hasOutput(size_t i) const {
    return i < (size_t)node_.output_size() && !node_.output(i).empty();
  }
  /// dtype: the ONNX dtype when the IR type alone is ambiguous (uint8).
  void setOutput(size_t i, mlir::Value tensor, int32_t dtype = 0);
  void setOutput(size_t i, Literal literal);
  /// Defines output i as `v` as it is (a subgraph's result).
  void setOutput(size_t i, const GraphValue &v);

  /// Lowers a subgraph inline (see GraphLowering::lowerSubgraph).
  mlir::FailureOr<std::vector<GraphValue>>
  lowerSubgraph(const onnx::GraphProto &g,
                const std::vector<GraphValue> &inputs);

  bool hasAttr(llvm::StringRef name) const;
  int64_t attrInt(llvm::StringRef name, int64_t def) const;
  float attrFloat(llvm::StringRef name, float def) const;
  std::vector<int64_t> attrInts(llvm::StringRef name,
                                std::vector<int64_t> def = {}) const;
  std::vector<float> attrFloats(llvm::StringRef name) const;
  std::string attrString(llvm::StringRef name, std::string def = "") const;
  const onnx::AttributeProto *attr(llvm::StringRef name) const;

  /// An integer list given by input `i` (newer opsets) or attribute `name`
  /// (older ones); nullopt when neither is present. Fails if the input is
  /// not known at compile time.
  mlir::FailureOr<std::optional<std::vector<int64_t>>>
  intsFromInputOrAttr(size_t i, llvm::StringRef name);

  /// Replaces input i as this node's lowering sees it (a symbolic literal
  /// handed over as a run-time tensor).
  void overrideInput(size_t i, GraphValue v) { overrides_[i] = std::move(v); }
  /// Set when the node was folded before its lowering ran.
  bool folded() const { return folded_; }
  void setFolded() { folded_ = true; }

  /// Reports an error at this node: "node 'n' (Op): <message>".
  mlir::InFlightDiagnostic emitError() const;
  mlir::LogicalResult fail(const llvm::Twine &message) const;

  mlir::Type elementType(int32_t dtype) const;
  mlir::RankedTensorType tensorType(const Shape &shape, int32_t dtype) const;

  /// A TensorProto attribute (Constant's value, ...) as a literal.
  mlir::FailureOr<Literal> literalFromProto(const onnx::TensorProto &t);

private:
  GraphLowering &graph_;
  const onnx::NodeProto &node_;
  int64_t opset_;
  mlir::Location loc_;
  std::map<size_t, GraphValue> overrides_;
  bool folded_ = false;
};

using LowerFn = std::function<mlir::LogicalResult(NodeLowering &)>;

/// Registry of op lowerings by ONNX op type (default domain).
std::map<std::string, LowerFn> &opLowerings();

void registerElementwiseLowerings();
void registerShapeLowerings();
void registerLinalgLowerings();
void registerNormalizationLowerings();
void registerResizeLowerings();
void registerLossLowerings();
void registerContractionLowerings();
void registerRecurrentLowerings();
void registerSignalLowerings();
void registerIndexingLowerings();
void registerQuantizeLowerings();
void registerAttentionLowerings();
void registerImageLowerings();
void registerFoldedLowerings();
void registerMatrixLowerings();
void registerControlFlowLowerings();

//===--- IR helpers shared by op lowerings
//---------------------------------===//

/// dtype of an MLIR element type.
int32_t dtypeOf(mlir::Type type);
/// The tensor's shape, with handles for its symbolic dims.
Shape shapeOf(mlir::Value tensor);

/// Elementwise op over broadcast inputs: body gets the scalar operands.
using ScalarBody = std::function<mlir::Value(mlir::OpBuilder &, mlir::Location,
                                             mlir::ValueRange)>;
mlir::Value emitElementwise(mlir::OpBuilder &b, mlir::Location loc,
                            mlir::ValueRange inputs, mlir::Type resultElement,
                            const Shape &resultShape, const ScalarBody &body);

/// Reduction over `axes` (kept as size-1 dims when keepDims), with `init`
/// as the identity and `combine(acc, x)`; `mapInput` transforms elements.
mlir::Value emitReduction(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::Value input, const std::vector<int64_t> &axes,
                          bool keepDims, mlir::TypedAttr init,
                          const ScalarBody &combine,
                          const ScalarBody &mapInput = nullptr);

mlir::Value emitReshape(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::Value input, const Shape &shape);
mlir::Value emitTranspose(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::Value input, const std::vector<int64_t> &perm);
mlir::Value emitBroadcastTo(mlir::OpBuilder &b, mlir::Location loc,
                            mlir::Value input, const Shape &shape);
mlir::Value emitFilled(mlir::OpBuilder &b, mlir::Location loc,
                       const Shape &shape, mlir::TypedAttr value);
/// A constant tensor of `elementType` (a float type) holding `values`.
mlir::Value floatConstantTensor(mlir::OpBuilder &b, mlir::Location loc,
                                const Shape &shape, mlir::Type elementType,
                                llvm::ArrayRef<double> values);
mlir::Value scalarConstant(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Type type, double value);
/// Cast's attributes for the small float types (docs/design/0009).
struct CastOptions {
  bool saturate = true;
  RoundMode round = RoundMode::Up;
};
mlir::Value emitScalarCast(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Value v, int32_t from, int32_t to,
                           mlir::Type toType, const CastOptions &opts = {});

/// The small element types, i8 in IR (lib/Import/SmallTypes.cpp): a
/// float8/float4/e8m0 bit pattern to f32, a float to one (ONNX's rounding
/// and saturation), float to int4/uint4/int2/uint2 (ml_dtypes: truncation,
/// 0 out of range), and an i8 wrapped into a sub-byte integer's range.
mlir::Value emitSmallFloatToF32(mlir::OpBuilder &b, mlir::Location loc,
                                mlir::Value v, int32_t dtype);
mlir::Value emitFloatToSmallFloat(mlir::OpBuilder &b, mlir::Location loc,
                                  mlir::Value v, int32_t dtype, bool saturate,
                                  RoundMode round);
mlir::Value emitFloatToSubByteInt(mlir::OpBuilder &b, mlir::Location loc,
                                  mlir::Value v, int32_t dtype);
mlir::Value emitWrapSubByteInt(mlir::OpBuilder &b, mlir::Location loc,
                               mlir::Value v, int32_t dtype);
/// emitScalarCast where `from` or `to` is a small type.
mlir::Value emitSmallCast(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                          int32_t from, int32_t to, mlir::Type toType,
                          const CastOptions &opts);

int64_t normalizeAxis(int64_t axis, int64_t rank);

/// ONNX Conv (cross-correlation) of an already padded [N, C, d...] input
/// with an [M, C/group, k...] weight, 1-D to 3-D; no bias. float16 and
/// bfloat16 accumulate in f32, rounded once.
mlir::Value emitConvolution(mlir::OpBuilder &b, mlir::Location loc,
                            mlir::Value x, mlir::Value w, int64_t group,
                            llvm::ArrayRef<int64_t> strides,
                            llvm::ArrayRef<int64_t> dilations);
/// y[n, c, ...] + bias[c].
mlir::Value emitChannelBias(mlir::OpBuilder &b, mlir::Location loc,
                            mlir::Value y, mlir::Value bias);
/// ONNX MatMul (NumPy broadcasting of batch dims) of two tensors of one
/// element type; integer types accumulate in that type, float16 and
/// bfloat16 in f32 (rounded once, as NumPy does).
mlir::FailureOr<mlir::Value> emitOnnxMatMul(NodeLowering &n, mlir::Value a,
                                            mlir::Value b);
/// ONNX Conv without bias of x [N, C, spatial...] and w [M, C/group, k...]
/// (1-D to 3-D), geometry from the node's attributes; zero padding; the
/// element type of x (integers accumulate in it; float16 and bfloat16 in
/// f32, rounded once).
/// A conv/pool window's geometry: output sizes and the pads that give them.
struct WindowGeometry {
  std::vector<int64_t> kernel, strides, dilations, padLo, padHi, out;
  /// The trailing pads the model asked for (explicit or auto_pad), before
  /// ceil mode extends padHi to fit the last window.
  std::vector<int64_t> declaredHi;
};

/// Output sizes and pads of a conv/pool window over `spatial` dims.
mlir::LogicalResult windowGeometry(NodeLowering &n, const Shape &spatial,
                                   const std::vector<int64_t> &kernel,
                                   bool ceilMode, WindowGeometry &g);
/// `input` [N, C, spatial...] padded by `g`'s pads with `value`.
mlir::Value padSpatial(mlir::OpBuilder &b, mlir::Location loc,
                       mlir::Value input, const WindowGeometry &g,
                       double value);

/// Conv node `n` as a Winograd F(4x4, 3x3) or F(2x2, 3x3) convolution
/// (ImportOptions::winogradTile) when the import
/// options ask for it and it fits (3x3, stride and dilation 1, one group,
/// f32 weights known at compile time, static shapes, enough channels);
/// a null value when it does not (lib/Import/WinogradConv.cpp).
mlir::FailureOr<mlir::Value> emitWinogradConv(NodeLowering &n);

mlir::FailureOr<mlir::Value> emitOnnxConv(NodeLowering &n, mlir::Value x,
                                          mlir::Value w);

} // namespace mcc

#endif // MCC_IMPORT_NODELOWERING_H
