//===- Passes.td - mcc transformation passes -------------------*- tablegen -*-===//

#ifndef MCC_TRANSFORMS_PASSES
#define MCC_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def FuseElementwiseWithoutRecompute
    : Pass<"mcc-fuse-elementwise", "mlir::func::FuncOp"> {
  let summary = "Fuse elementwise producers where no element is computed twice";
  let description = [{
    Upstream's linalg-fuse-elementwise-ops fuses any single-use producer,
    also into a consumer that reads each producer element many times (the
    A operand of a matmul reads row m once per column n): GELU before a
    matmul was then evaluated N times per element. Here a producer is fused
    only when the consumer's indexing map for it is a permutation of all the
    consumer's loops. Reshapes are folded by expansion only around
    linalg.generic ops, so named contractions (matmul, batch_matmul, conv)
    stay named for the tiling and interchange passes.
  }];
  let options = [
    Option<"keepConvEpilogues", "keep-conv-epilogues", "bool", "false",
           "Keep an elementwise op after a depthwise convolution whole when "
           "it has several consumers (the CPU kernel applies it) instead of "
           "recomputing it in each">,
  ];
  let dependentDialects = ["mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect",
                           "mlir::affine::AffineDialect"];
}

def FoldChannelScale : Pass<"mcc-fold-channel-scale", "mlir::func::FuncOp"> {
  let summary = "A per-channel scale before a 1x1 convolution scales its weights";
  let description = [{
    A 2-D linalg.matmul W[M, C] . X[C, H*W] whose X is the collapsed result
    of a 4-D elementwise linalg.generic (batch 1) yielding x * s, where s is
    computed from per-channel inputs only (squeeze-excite's gate), reads x
    instead, and W becomes a generic computing W[m, c] * s(c): the
    activation is not rewritten, the weights (M x C) are scaled each run.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect",
                           "mlir::arith::ArithDialect"];
}

def CollapseProductEpilogues
    : Pass<"mcc-collapse-product-epilogues", "mlir::func::FuncOp"> {
  let summary = "Elementwise ops after a reshaped 2-D product run on its 2-D shape";
  let description = [{
    An all-parallel linalg.generic that reads the result of a static 2-D
    linalg.matmul through single-use reshapes (a 1x1 convolution's
    [F, H*W] -> [1, F, H, W], a linear layer's [S, C] -> [1, S, C]) is
    rewritten on the product's 2-D iteration space: operands read at the
    same indices are collapsed to 2-D, operands that broadcast over all but
    the rows or the columns become vectors read per row or per column, and
    the reshape moves after the generic. mcc-tile-for-cpu can then fuse the
    product into the generic's tiles and mcc-register-tile-matmul apply the
    generic to the product's register block. Generics whose result is
    padded are left 4-D (mcc-pad-into-producer writes them into the padded
    buffer's interior).
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect"];
}

def TileForCpu : Pass<"mcc-tile-for-cpu", "mlir::func::FuncOp"> {
  let summary = "Tile linalg ops' parallel loops into scf.forall for threads";
  let description = [{
    Every linalg op at the top level of a function gets its leading parallel
    loops tiled into one scf.forall with about `target-tiles` tiles, which
    later becomes an OpenMP worksharing loop. linalg.fill producers of the
    tiled op are fused into the same tile, so an accumulator is initialised
    by the thread that uses it. Reduction loops are left whole: a tile owns
    complete outputs.
  }];
  let options = [
    Option<"targetTiles", "target-tiles", "int64_t", "64",
           "Number of tiles to aim for per op (a few per core)">,
    Option<"minTileElements", "min-tile-elements", "int64_t", "4096",
           "Ops with fewer output elements than this stay untiled">,
    Option<"amxTiles", "amx-tiles", "bool", "false",
           "Matrix products will run on AMX tiles where mcc-amx-matmul "
           "takes them: choose tile shapes it takes">,
  ];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::tensor::TensorDialect",
                           "mlir::linalg::LinalgDialect", "mlir::affine::AffineDialect"];
}

def PadIntoProducer : Pass<"mcc-pad-into-producer", "mlir::func::FuncOp"> {
  let summary = "Padded tensors: fill the border only, produce the interior in place";
  let description = [{
    A static tensor.pad with a constant padding value becomes linalg.fill
    ops on its border strips of a fresh tensor and a tensor.insert_slice of
    the source into the interior. When the source is the only result of a
    linalg op that writes a tensor.empty without reading it, that op's init
    becomes the interior slice, so after bufferization the producer writes
    into the padded buffer and no copy or full fill remains.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::bufferization::BufferizationDialect"];
}

def InterchangeContractionLoops
    : Pass<"mcc-interchange-contraction-loops", "mlir::func::FuncOp"> {
  let summary = "Move reduction loops of matmuls and convolutions outward";
  let description = [{
    Generalizes linalg.matmul, linalg.batch_matmul and the NCHW
    convolutions and permutes their loops so that the innermost loop runs
    over a contiguous output dimension instead of the reduction. After
    lowering to loops, the inner loop is then a unit-stride multiply-add
    that LLVM vectorizes for the target's AVX2/AVX-512 width.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def StridedCopyToLinalg
    : Pass<"mcc-strided-copy-to-linalg", "mlir::func::FuncOp"> {
  let summary = "Turn memref.copy between strided views into linalg.copy";
  let description = [{
    The LLVM lowering of memref.copy calls `memrefCopy` from MLIR's C
    runner utilities unless both sides are contiguous. A model .so must not
    depend on that library, so such copies become linalg.copy, which
    lowers to plain loops. With `all-copies` every copy is converted: on
    the GPU a copy out of a constant global must run as a kernel, which
    sees the global in device memory.
  }];
  let options = [
    Option<"allCopies", "all-copies", "bool", "false",
           "Convert contiguous copies too">,
  ];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def DeallocAfterLastUse
    : Pass<"mcc-dealloc-after-last-use", "mlir::func::FuncOp"> {
  let summary = "Free each buffer right after its last use";
  let description = [{
    Ownership-based buffer deallocation places the memref.dealloc of a
    buffer at the end of its block, so every intermediate of a model stays
    allocated until the forward function returns. Each dealloc of a
    memref.alloc in the same block moves to just after the last op of the
    block that uses the buffer or a view of it (ops inside loops count as
    their outermost op in the block). Buffers used by an op that yields a
    memref other than a view of them, or by a return, stay where they are.
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

def DistinctResults : Pass<"mcc-distinct-results", "mlir::func::FuncOp"> {
  let summary = "A returned tensor that repeats an earlier one becomes a copy";
  let description = [{
    After CSE two graph outputs can be the same SSA value (identical nodes,
    an output listed twice, several empty outputs); each must be written
    into its own caller buffer, and buffer-results-to-out-params cannot
    return one buffer twice. Every repeat is replaced by
    bufferization.alloc_tensor() copy(%v), which CSE leaves alone.
  }];
  let dependentDialects = ["mlir::bufferization::BufferizationDialect"];
}

def GpuDeviceMemory : Pass<"mcc-gpu-device-memory", "mlir::func::FuncOp"> {
  let summary = "Host code of a CUDA model: device allocations and copies";
  let description = [{
    After bufferization the host function allocates with memref.alloc and
    copies with memref.copy; on the GPU target every buffer lives in device
    memory, so these become gpu.alloc, gpu.dealloc and gpu.memcpy. Constant
    globals (memref.get_global) are re-materialized next to each use, so
    that kernel outlining moves them into the GPU module instead of passing
    a host pointer to a kernel.
  }];
  let dependentDialects = ["mlir::gpu::GPUDialect"];
}

def GpuFoldPadReads : Pass<"mcc-gpu-fold-pad-reads", "mlir::func::FuncOp"> {
  let summary = "Read padded buffers from their source with a bounds guard";
  let description = [{
    A pad reaches the GPU loops as three passes over memory: a nest that
    fills a buffer with the pad value, a nest that copies the source into a
    window of it, and the readers (im2col, pooling). This pass rewrites every
    read of such a buffer into a read of the source at the shifted, clamped
    index, selected against the pad value where the index lies outside the
    window, and erases the fill, the copy and the buffer. It applies when
    the buffer is static, the fill covers it all with a constant, one copy
    fills a unit-stride window from a source read with the same indices, and
    every read comes after the copy and before anything writes the source
    again.
  }];
}

def GpuDistributeLoops : Pass<"mcc-gpu-distribute", "mlir::func::FuncOp"> {
  let summary = "Map each top-level loop nest onto GPU blocks and threads";
  let description = [{
    Each top-level scf.parallel is collapsed to one dimension and tiled by
    `block-size`; the tile loop maps to block x and the loop inside it to
    thread x. Top-level code that touches memory outside any parallel loop
    (sequential reductions to a scalar, single loads and stores) is wrapped
    in a one-thread parallel loop, so that nothing on the host dereferences
    device memory. The result is ready for convert-parallel-loops-to-gpu.
    A large static nest whose body is loads, pure ops and one store (an
    im2col copy, a bias + ReLU pass) gives each thread `coarsen-factor`
    elements a grid apart and issues all their loads before any store:
    with one 4-byte load per thread too few bytes are in flight to use the
    memory bandwidth.
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", "256", "Threads per block">,
    Option<"coarsenFactor", "coarsen-factor", "int64_t", "1",
           "Elements per thread in large memory-bound nests (1: off; the "
           "cuda pipeline uses 4)">,
    Option<"coarsenMinIterations", "coarsen-min-iterations", "int64_t",
           "1048576", "Smallest static nest that gets several elements per "
           "thread">,
  ];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::scf::SCFDialect",
                           "mlir::affine::AffineDialect"];
}

def GpuLibraryCalls : Pass<"mcc-gpu-library-calls", "mlir::ModuleOp"> {
  let summary = "Matrix products on the GPU through cuBLAS";
  let description = [{
    On bufferized IR, every f32 linalg.matmul and linalg.batch_matmul whose
    operands are unit-stride in their last dimension becomes a call to the
    CUDA runtime shim (mcc_gpu_sgemm / mcc_gpu_sgemm_batched), which runs
    cuBLAS on the run's stream with C = alpha A B + beta C (beta = 1 keeps
    linalg's accumulate semantics, 0 when the output was zeroed just before;
    TF32 stays off). Operands are cast to fully dynamic strided memrefs so
    one declaration serves every shape; an operand contiguous in its second
    to last dimension reaches cuBLAS transposed.

    A copy through a permutation of dimensions (times a constant or not)
    that only feeds one product, or only reads one product's overwritten
    output, is folded away: the product reads the copy's source, or writes
    the copy's target, through a strided view, and the constant becomes
    alpha. This removes attention's head transposes (Q, K^T, the context).

    A bias vector added along the columns of a product's overwritten output,
    as the first step of the generic that alone reads it, moves into the
    product (mcc_gpu_sgemm_bias: cuBLASLt's bias epilogue); what is left of
    the generic is often a plain or permuted copy that then folds away.
  }];
  let options = [
    Option<"foldTransposes", "fold-transposes", "bool", /*default=*/"true",
           "Fold permuted copies around products into their strides">,
    Option<"fuseBias", "fuse-bias", "bool", /*default=*/"true",
           "Move bias additions after products into the products">,
  ];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::func::FuncDialect", "mlir::memref::MemRefDialect"];
}

def ConvToMatmul : Pass<"mcc-conv-to-matmul", "mlir::func::FuncOp"> {
  let summary = "NCHW convolutions as an im2col copy and a matrix product";
  let description = [{
    linalg.conv_2d_nchw_fchw and linalg.conv_2d_ngchw_gfchw (static shapes,
    accumulator from linalg.fill) become col = im2col(x) of shape
    [(G,) C*KH*KW, N*OH*OW] and W[(G,) F, C*KH*KW] x col as linalg.matmul
    (linalg.batch_matmul over groups), reshaped (N = 1) or transposed back to
    NCHW. A 1x1, stride-1 convolution of one image needs no copy. The
    product then runs through the register-tiled CPU kernel or cuBLAS.
    Depthwise convolutions are left alone: their products have K = KH*KW.
  }];
  let options = [
    Option<"directConvs", "direct-convs", "bool", "false",
           "Leave f32 convolutions with a window larger than 1x1 and at least "
           "12 output columns to mcc-vectorize-grouped-conv (CPU): grouped "
           "ones, and ungrouped ones of at most 64 input channels as one group">,
  ];
  let dependentDialects = ["mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect"];
}

def AmxMatmul : Pass<"mcc-amx-matmul", "mlir::func::FuncOp"> {
  let summary = "f32 matmuls on buffers as bf16x3 products on AMX tiles";
  let description = [{
    Each buffer-level f32 linalg.matmul (and each element of a
    linalg.batch_matmul) with static shapes, at least 16 rows and columns,
    default indexing maps, a unit-stride C and at most an eighth of its
    tiles' work in padding becomes
    bf16x3 products on AMX tiles (amx.tile_mulf): A and B are split into a
    bf16 high part and the bf16 rounding of the rest and packed on the heap
    (A as [2][M'][K'] rows, B as [2][K' / 2][2 N'] with pairs of K
    interleaved, the padding to whole tiles zero), and each 32 x 16 block of
    C accumulates Ahi*Bhi + Ahi*Blo + Alo*Bhi in f32 tiles over K blocks of
    256. C is read and written in place where it holds whole blocks, else
    through a padded copy. Weights read only as B (or as A, through a
    collapse) in whole tiles are read from records the compiler lays out as
    tiles (the function is marked `mcc.amx_weights` = [weight index, 1 (B)
    or 2 (A), ...]); an A defined outside a tile loop is packed once before
    it. Runs for `mcc compile --precision bf16x3` on CPUs
    with AMX-BF16; the products it leaves go to mcc-register-tile-matmul.
  }];
  let dependentDialects = ["mlir::amx::AMXDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::linalg::LinalgDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect",
                           "mlir::vector::VectorDialect"];
}

def RegisterTileMatmul
    : Pass<"mcc-register-tile-matmul", "mlir::func::FuncOp"> {
  let summary = "f32 matmuls on buffers as register-blocked vector kernels";
  let description = [{
    Each buffer-level f32 linalg.matmul and linalg.batch_matmul whose B and
    C are unit-stride in their last dim becomes scf loops around a
    microkernel: `rows` x (`vectors` * `lanes`) accumulators of C stay in
    vector registers (scf.for iter_args) while the kernel walks a block of
    `k-block` steps of K, each step one vector load of B per vector and one
    broadcast of A per row into vector.fma. Leftover rows run in smaller
    blocks (with a static M, the last full block shares its rows with a
    short leftover); leftover columns use masked loads and stores, one
    vector wide when a static N leaves at most one vector. B is packed for
    `panels` register blocks of columns at a time, walking B row by row. A
    fill of C right before the product (static, non-empty K) becomes the
    accumulators' start. An elementwise linalg.generic right after a 2-D
    product that reads C at the same indices (its other inputs read at C's
    index, per row or per column) is applied to the accumulators in the
    last K block and erased: its results are stored there, and C only if
    something else reads it. A weight argument (past `mcc.num_inputs`) read
    only as such products' B, in whole panels of `vectors` * `lanes`
    columns, is read in place as [N / nr][K][nr] panels instead of being
    copied, and the function is marked `mcc.packed_weights` = [weight
    index, nr, ...]: whoever writes the weights must write those records in
    that layout. With a static M and K of at least a K block
    (`fuse-packs`), the first row block of each panel packs it as it
    computes. A weight streaming as B (pre-packed) or A (unit stride along
    K) is fetched into L2 one row block ahead, and an epilogue's residual
    and output lines (or C's, from a fill) before the K loop that precedes
    their use. Defaults fit AVX-512 (32 registers of 16
    floats); the AVX-512 pipeline adds weight-rows=12 (24 accumulators
    for linear layers, whose B streams from pre-packed weights), AVX2 uses
    rows=6 lanes=8.
  }];
  let options = [
    Option<"rows", "rows", "int64_t", "8", "Rows of C per register block">,
    Option<"weightRows", "weight-rows", "int64_t", "0",
           "Rows of C per register block of a 2-D product whose B is a "
           "pre-packed weight (0: rows); more than 8 only where A's rows "
           "are not a multiple of 4 KiB apart">,
    Option<"vectors", "vectors", "int64_t", "2",
           "Vectors of C per row in a register block">,
    Option<"weightAVectors", "weight-a-vectors", "int64_t", "0",
           "Vectors of C per row in a register block of a product whose A "
           "is a weight and B is not a pre-packed one (0: vectors)">,
    Option<"lanes", "lanes", "int64_t", "16", "f32 lanes per vector">,
    Option<"fuseEpilogues", "fuse-epilogues", "bool", "true",
           "Apply an elementwise generic right after a 2-D product to its "
           "register block (and erase it)">,
    Option<"kBlock", "k-block", "int64_t", "256",
           "Steps of K per pass over a block of C">,
    Option<"panels", "panels", "int64_t", "8",
           "Register-block columns of B packed together, row by row">,
    Option<"prepackWeights", "prepack-weights", "bool", "true",
           "Read weights that are only ever B of the kernel's products as "
           "[N / nr][K][nr] panels, and mark the function "
           "mcc.packed_weights so their records are written that way">,
    Option<"fusePacks", "fuse-packs", "bool", "true",
           "With a static M, the first row block of each B panel packs it "
           "while it computes, instead of a copy loop before the kernels">,
    Option<"shareBPacks", "share-b-packs", "bool", "true",
           "Pack a B that several tiles of a tile loop read (a tall "
           "product's activation) once, before the loop, into a heap "
           "buffer of [N / nr][K][nr] panels that those tiles read">,
    Option<"prefetchRowsOfA", "prefetch-a", "bool", "true",
           "While a row block's K loop runs, fetch the rows of A that the "
           "next row block reads into L2 (a convolution's weight streams "
           "from memory in rows kilobytes apart)">,
  ];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::vector::VectorDialect",
                           "mlir::arith::ArithDialect", "mlir::memref::MemRefDialect"];
}

def VectorizeWinograd
    : Pass<"mcc-vectorize-winograd", "mlir::func::FuncOp"> {
  let summary = "Winograd F(4x4, 3x3) and F(2x2, 3x3) tile transforms on buffers as vector code";
  let description = [{
    Each buffer-level linalg.generic marked `mcc.winograd` = "input" (x [N,
    C, H, W] -> v [a, a, C, N, TH, TW], v = B^T d B of the a x a tile of x
    at rows m ty, columns m tx, a = m + 2) or "output" (p [a, a, F, N, TH,
    TW] -> y [N, F, TH, m, TW, m], y = A^T p A), as
    lib/Import/WinogradConv.cpp emits them for m = 2 or 4, becomes scf
    loops over the other dims around vector code along a row of tiles,
    `lanes` tiles per vector: the input's tile columns by two wide masked
    loads and stride-m shuffles, the transforms as vector additions,
    subtractions and multiply-adds, the output's m columns interleaved into
    contiguous row stores. A linalg.fill right before the op that zeroes its
    output (the reference loops accumulate into it) is erased. Ops whose
    operands are not f32 with unit-stride rows, or whose tiles are not 4 x 4
    or 6 x 6, are left as they are.
  }];
  let options = [
    Option<"lanes", "lanes", "int64_t", "16", "f32 lanes per vector">,
  ];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::vector::VectorDialect",
                           "mlir::arith::ArithDialect", "mlir::memref::MemRefDialect"];
}

def VectorizeDepthwiseConv
    : Pass<"mcc-vectorize-depthwise-conv", "mlir::func::FuncOp"> {
  let summary = "f32 depthwise convolutions and poolings on buffers as vector loops along W";
  let description = [{
    Each buffer-level f32 linalg.depthwise_conv_2d_nchw_chw whose input and
    output rows are unit-stride becomes scf loops over (n, c, oh) around a
    kernel that keeps `vectors` vectors of `lanes` outputs of one row in
    registers across the KH x KW window (unrolled): one input vector load
    (a wider load and a shuffle for a strided convolution), one broadcast
    weight, one vector.fma per vector and step. The channel's weights are
    broadcast outside the row loop. The end of a row uses masked loads and
    stores. linalg.pooling_nchw_max and pooling_nchw_sum on f32 buffers get
    the same loops with arith.maximumf or arith.addf in place of the fma.
  }];
  let options = [
    Option<"lanes", "lanes", "int64_t", "16", "f32 lanes per vector">,
    Option<"vectors", "vectors", "int64_t", "4",
           "Output vectors per register block (independent fma chains)">,
  ];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::vector::VectorDialect",
                           "mlir::arith::ArithDialect", "mlir::memref::MemRefDialect"];
}

def VectorizeGroupedConv
    : Pass<"mcc-vectorize-grouped-conv", "mlir::func::FuncOp"> {
  let summary = "f32 grouped convolutions on buffers as register blocks, no im2col";
  let description = [{
    Each buffer-level f32 linalg.conv_2d_ngchw_gfchw whose input and output
    rows are unit-stride becomes scf loops over (n, g, blocks of `rows`
    output channels, oh) around a register block of rows x `vectors`
    vectors of `lanes` outputs along one output row. The block walks the
    group's input channels in an scf.for (accumulators as iter_args) and
    the KH x KW window unrolled: per step one input vector load per vector
    (a wider load and a shuffle for stride 2) straight from the padded
    input, one broadcast weight per row, rows x vectors fmas. The end of a
    row uses masked loads and stores; a fill of the output just before the
    op seeds the accumulators.
  }];
  let options = [
    Option<"rows", "rows", "int64_t", "8", "Output channels per register block">,
    Option<"lanes", "lanes", "int64_t", "16", "f32 lanes per vector">,
    Option<"vectors", "vectors", "int64_t", "2",
           "Vectors of one output row per register block">,
  ];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::vector::VectorDialect",
                           "mlir::arith::ArithDialect", "mlir::memref::MemRefDialect"];
}

def GpuRowReductions : Pass<"mcc-gpu-row-reductions", "mlir::func::FuncOp"> {
  let summary = "Reductions on the GPU: one thread block per reduced row";
  let description = [{
    A buffer-level f32 linalg.generic whose last loop is its only reduction
    and whose body ends in `out = combine(out, term)` (addf, mulf, maximumf,
    minimumf, maxnumf, minnumf) becomes a gpu.launch with one block per
    output element. The block's threads stride over the row (adjacent
    threads read adjacent elements), each folding its share into a partial
    that starts from the combiner's identity; gpu.all_reduce combines the
    partials and thread 0 folds the total into the output. Rows shorter than
    `min-row-length` keep the generic one-thread-per-output lowering.
    With `fuse-rows`, the reductions and elementwise maps over the same
    static rows that follow a reduction join its kernel (layer norm's
    mean, variance and normalization; softmax's max, sum and division),
    separated by barriers, where every block touches only its own row of
    the buffers they write.
  }];
  let options = [
    Option<"minRowLength", "min-row-length", "int64_t", "32",
           "Shortest reduction that gets a block per row">,
    Option<"maxThreads", "max-threads", "int64_t", "256",
           "Threads per block (a power of two, at least 32)">,
    Option<"fuseRows", "fuse-rows", "bool", "true",
           "Lower a reduction together with the reductions and elementwise "
           "maps over the same rows that follow it, one kernel">,
  ];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::scf::SCFDialect",
                           "mlir::affine::AffineDialect", "mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect"];
}

def ApproximateMath : Pass<"mcc-approximate-math", "mlir::func::FuncOp"> {
  let summary = "f32 exp, erf and tanh as polynomial approximations";
  let description = [{
    Rewrites math.exp, math.erf and math.tanh with upstream's polynomial
    approximations (arith only, a few ulp in f32), so that the loops around
    them (GELU, softmax, SiLU) vectorize instead of calling libm per element.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::math::MathDialect",
                           "mlir::vector::VectorDialect"];
}

def CollapseContiguousLoops : Pass<"mcc-collapse-contiguous-loops", "mlir::func::FuncOp"> {
  let summary = "Trailing loops over contiguous memory collapsed into one";
  let description = [{
    A linalg.generic on buffers whose trailing reduction loops (two or
    more), or trailing parallel loops when it has no reduction, index
    memory that is contiguous in every operand gets them collapsed into one
    loop (memref.collapse_shape of its operands), so that LLVM vectorizes
    the innermost loop whole: a 7 x 7 image plane is one loop of 49.
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect",
                           "mlir::linalg::LinalgDialect"];
}

def ReductionLoops : Pass<"mcc-reduction-loops", "mlir::func::FuncOp"> {
  let summary = "Innermost reductions as loops with a register accumulator";
  let description = [{
    A linalg.generic on buffers whose only reduction is its innermost loop
    becomes scf.for loops whose accumulator is an iter_arg (loaded and
    stored once per output element, not every iteration), with a float sum
    marked reassoc so that LLVM vectorizes it. Other generics are left to
    convert-linalg-to-loops.
  }];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::affine::AffineDialect",
                           "mlir::memref::MemRefDialect", "mlir::arith::ArithDialect"];
}

def GpuLibdeviceCalls : Pass<"mcc-gpu-libdevice-calls", "mlir::ModuleOp"> {
  let summary = "Float remainders in kernels call libdevice's fmod";
  let description = [{
    The NVVM pipeline lowers arith to LLVM before its GPU-specific patterns
    run, so arith.remf would reach the NVPTX backend as llvm.frem, which it
    cannot select. Each arith.remf inside a gpu.module becomes a call to
    __nv_fmodf (f32, and f16/bf16 widened to f32) or __nv_fmod (f64).
  }];
  let dependentDialects = ["mlir::func::FuncDialect", "mlir::arith::ArithDialect"];
}

def GpuGatherKernels : Pass<"mcc-gpu-gather-kernels", "mlir::ModuleOp"> {
  let summary = "All kernels in one gpu.module, named for profiles";
  let description = [{
    After gpu-kernel-outlining every kernel has a gpu.module of its own and
    is called forward_kernel. All of them move into one gpu.module
    @mcc_kernels, so ptxas runs once and the runtime loads one CUDA module;
    each gpu.func is renamed mcc_<n>_<what> (n: order of first launch in the
    host code; what: rowreduce, map or loop plus the math ops it calls, or
    copy) and its gpu.launch_func ops follow. Helper symbols that collide
    are dropped when identical and renamed otherwise.
  }];
  let dependentDialects = ["mlir::gpu::GPUDialect"];
}

def ExpandBFloat16 : Pass<"mcc-expand-bf16", "mlir::func::FuncOp"> {
  let summary = "bf16 <-> f32 conversions as integer bit operations";
  let description = [{
    arith.extf bf16->f32 becomes a shift, arith.truncf f32->bf16 integer
    round-to-nearest-even (NaN stays a quiet NaN), with upstream's patterns.
    LLVM would otherwise lower the truncation to a __truncsfbf2 libcall on
    CPUs without AVX512-BF16, which models cannot rely on. Other arith and
    math ops on bf16 are first rewritten to f32 (arith-emulate-unsupported-
    floats, math-extend-to-supported-types); only these two conversions
    remain. Nothing else is expanded, unlike arith-expand. The `contract`
    flag those passes put on their conversions is dropped first, so that
    extf(truncf(x)) does not fold: every bf16 op rounds its result.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def DynamicExpandShape
    : Pass<"mcc-dynamic-expand-shape", "mlir::func::FuncOp"> {
  let summary = "memref.expand_shape with several dynamic dims per group as "
                "a reinterpret_cast";
  let description = [{
    expand-strided-metadata derives each expanded size from the source size
    divided by the group's static sizes, so it supports one dynamic size per
    reassociation group and computes garbage (or crashes) with more: a
    `tensor<?xf32>` expanded to `[%batch, %seq, 64]` is common once the
    importer leaves batch and sequence dynamic. The op already carries its
    output sizes; this pass builds the view from them and the source's
    strides with memref.reinterpret_cast. Other expand_shapes are left to
    expand-strided-metadata.
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect",
                           "mlir::arith::ArithDialect"];
}

def CpuProfileMarks : Pass<"mcc-cpu-profile-marks", "mlir::ModuleOp"> {
  let summary = "Per-op profile marks in a CPU model's forward function";
  let description = [{
    Before each op of `forward`'s body that does work (a tiled loop nest, a
    product, a copy, a call; not allocations, views or constants) inserts
    `call @mcc_profile_mark(i)`, and `call @mcc_profile_end()` before each
    return. The ops' labels (what the op is, its output shape, the ONNX
    nodes in its location) go into the module as one string table, the
    public constant `memref.global @mcc_profile_labels`, in mark order.
    The model support library (Profile.c) times the marks while profiling
    is on (`mcc bench --kernels`, mcc_model_set_kernel_profiling) and
    returns at once while it is off.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::func::FuncDialect",
                           "mlir::memref::MemRefDialect"];
}

#endif // MCC_TRANSFORMS_PASSES
