//===- ConvPadding.h - zero padding that a CPU kernel reads in place ------===//
//
// A depthwise convolution's padded input need not exist as a buffer: the
// CPU kernel (mcc-vectorize-depthwise-conv) can read the unpadded tensor and
// treat rows and columns outside it as zeros. The tensor-level passes that
// decide how a pad is built (mcc-pad-into-producer) and whether its source
// may be fused into a product (mcc-collapse-product-epilogues) ask here.
//
//===----------------------------------------------------------------------===//
#ifndef MCC_TRANSFORMS_CONVPADDING_H
#define MCC_TRANSFORMS_CONVPADDING_H

#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mcc {

/// The most columns a pad may add on the left for the depthwise kernel to
/// read it in place: its first output vector (8 or 16 lanes) must hold every
/// output whose window starts left of the row.
constexpr int64_t kMaxImplicitLeftPad = 8;

/// Whether `pad` is a static zero padding of H and W whose only reader is
/// an f32 linalg.depthwise_conv_2d_nchw_chw: the CPU kernel reads its source
/// in place, so the padded buffer is built from a copy that the kernel
/// later drops (and the source stays a plain tensor for its producer).
bool isDepthwisePadReadInPlace(mlir::tensor::PadOp pad);

} // namespace mcc

#endif // MCC_TRANSFORMS_CONVPADDING_H
