//===- SharedLibraryWriter.cpp - LLVM dialect module to a model .so -------===//
//
// After translation to LLVM IR the module gets three things the runtime
// relies on (include/mcc/ModelABI.h): the weight blob as one aligned symbol
// (only declared in the IR: its bytes go to the linker in an ELF object of
// their own, or the runtime maps them from a file beside the .so),
// `mcc_model_run(void **buffers, const int64_t *dims)` which expands each
// buffer into the memref descriptor @forward takes (sizes and strides from
// `dims` where a dim is dynamic, constants elsewhere), and the exported
// descriptor. It is then optimized for the chosen CPU, emitted as an object
// and linked into a shared library next to the output, renamed into place
// last.
//
//===----------------------------------------------------------------------===//

#include "mcc/Target/CPU/SharedLibraryWriter.h"
#include "ShapeBinding.h"
#include "mcc/ModelABI.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SwapByteOrder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"

#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include <mutex>

#include <cstring>
#include <unistd.h>

#ifndef MCC_MODEL_SUPPORT_PATH
#define MCC_MODEL_SUPPORT_PATH ""
#endif

extern "C" uint64_t mcc_weights_checksum_ends(const unsigned char *head,
                                              const unsigned char *tail,
                                              uint64_t size);

namespace {
/// The load-time checksum of the blob, from its two ends only.
uint64_t weightsChecksum(const mcc::WeightBlob &blob) {
  uint64_t n = std::min<uint64_t>(blob.size(), 65536);
  std::vector<uint8_t> head(n), tail(n);
  blob.read(0, n, head.data());
  blob.read(blob.size() - n, n, tail.data());
  return mcc_weights_checksum_ends(head.data(), tail.data(), blob.size());
}
} // namespace

#ifndef MCC_CUDA_SHIM_PATH
#define MCC_CUDA_SHIM_PATH ""
#endif

#ifndef MCC_OPENMP_LIB_DIR
#define MCC_OPENMP_LIB_DIR "/usr/lib/llvm-22/lib"
#endif

using namespace mlir;

namespace mcc {

void registerCpuTranslations(DialectRegistry &registry) {
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerOpenMPDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  // gpu.binary's #gpu.select_object embeds the fatbin at translation.
  gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
}

namespace {

/// Removes a file on scope exit unless released.
struct TempFile {
  std::string path;
  bool keep = false;
  ~TempFile() {
    if (!path.empty() && !keep)
      llvm::sys::fs::remove(path);
  }
};

/// The embedded blob's symbol: hidden, so it stays out of the .so's dynamic
/// symbol table and each loaded model binds its own.
constexpr const char *kWeightsSymbol = "mcc.weights";

/// Writes `blob` as an ELF relocatable object for the linker: one section,
/// .rodata.mcc_weights (64-byte aligned), holding the bytes, and
/// kWeightsSymbol (hidden) at its start. The blob goes from the importer's
/// records to the file without passing through LLVM or an assembler. The
/// ELF identity (machine, flags, OS ABI) is copied from `modelObject`, the
/// code LLVM emitted for the same host, which must be 64-bit little-endian
/// ELF.
LogicalResult writeWeightsObject(const WeightBlob &blob,
                                 llvm::StringRef modelObject,
                                 llvm::StringRef path, Location loc) {
  namespace elf = llvm::ELF;
  auto model = llvm::MemoryBuffer::getFile(modelObject, /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
  if (!model)
    return emitError(loc) << "cannot read " << modelObject << ": "
                          << model.getError().message();
  elf::Elf64_Ehdr modelHeader;
  llvm::StringRef bytes = (*model)->getBuffer();
  if (bytes.size() < sizeof(modelHeader) || !bytes.starts_with(elf::ElfMagic))
    return emitError(loc) << "the object LLVM emitted is not ELF";
  memcpy(&modelHeader, bytes.data(), sizeof(modelHeader));
  if (modelHeader.e_ident[elf::EI_CLASS] != elf::ELFCLASS64 ||
      modelHeader.e_ident[elf::EI_DATA] != elf::ELFDATA2LSB ||
      !llvm::sys::IsLittleEndianHost)
    return emitError(loc) << "embedded weights need a 64-bit little-endian "
                             "ELF host; use --weights external";

  // Sections: null, the weights, .note.GNU-stack (no executable stack),
  // .symtab, .strtab, .shstrtab.
  std::string shstrtab(1, '\0');
  auto name = [&](llvm::StringRef s) {
    uint32_t offset = shstrtab.size();
    shstrtab += s;
    shstrtab += '\0';
    return offset;
  };
  std::string strtab = std::string(1, '\0') + kWeightsSymbol;
  strtab += '\0';
  elf::Elf64_Sym syms[2] = {};
  syms[1].st_name = 1;
  syms[1].setBindingAndType(elf::STB_GLOBAL, elf::STT_OBJECT);
  syms[1].st_other = elf::STV_HIDDEN;
  syms[1].st_shndx = 1;
  syms[1].st_size = blob.size();

  uint64_t dataOffset = sizeof(elf::Elf64_Ehdr); // 64: already aligned
  uint64_t symOffset = llvm::alignTo(dataOffset + blob.size(), 8);
  uint64_t strOffset = symOffset + sizeof(syms);
  uint64_t shstrOffset = strOffset + strtab.size();
  elf::Elf64_Shdr sections[6] = {};
  auto section = [&](int i, llvm::StringRef s, uint32_t type, uint64_t flags,
                     uint64_t offset, uint64_t size, uint64_t align) {
    sections[i].sh_name = name(s);
    sections[i].sh_type = type;
    sections[i].sh_flags = flags;
    sections[i].sh_offset = offset;
    sections[i].sh_size = size;
    sections[i].sh_addralign = align;
  };
  section(1, ".rodata.mcc_weights", elf::SHT_PROGBITS, elf::SHF_ALLOC,
          dataOffset, blob.size(), 64);
  section(2, ".note.GNU-stack", elf::SHT_PROGBITS, 0, symOffset, 0, 1);
  section(3, ".symtab", elf::SHT_SYMTAB, 0, symOffset, sizeof(syms), 8);
  sections[3].sh_link = 4;
  sections[3].sh_info = 1; // the first non-local symbol
  sections[3].sh_entsize = sizeof(elf::Elf64_Sym);
  section(4, ".strtab", elf::SHT_STRTAB, 0, strOffset, strtab.size(), 1);
  section(5, ".shstrtab", elf::SHT_STRTAB, 0, shstrOffset, 0, 1);
  sections[5].sh_size = shstrtab.size();
  uint64_t shOffset = llvm::alignTo(shstrOffset + shstrtab.size(), 8);

  elf::Elf64_Ehdr header = {};
  memcpy(header.e_ident, modelHeader.e_ident, elf::EI_NIDENT);
  header.e_type = elf::ET_REL;
  header.e_machine = modelHeader.e_machine;
  header.e_version = elf::EV_CURRENT;
  header.e_flags = modelHeader.e_flags;
  header.e_shoff = shOffset;
  header.e_ehsize = sizeof(elf::Elf64_Ehdr);
  header.e_shentsize = sizeof(elf::Elf64_Shdr);
  header.e_shnum = 6;
  header.e_shstrndx = 5;

  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return emitError(loc) << "cannot write " << path << ": " << ec.message();
  os.write(reinterpret_cast<const char *>(&header), sizeof(header));
  blob.write(os);
  os.write_zeros(symOffset - dataOffset - blob.size());
  os.write(reinterpret_cast<const char *>(syms), sizeof(syms));
  os << strtab << shstrtab;
  os.write_zeros(shOffset - shstrOffset - shstrtab.size());
  os.write(reinterpret_cast<const char *>(sections), sizeof(sections));
  os.close();
  if (os.has_error())
    return emitError(loc) << "cannot write " << path << ": "
                          << os.error().message();
  return success();
}

llvm::GlobalVariable *constantGlobal(llvm::Module &m, llvm::Constant *init,
                                     const llvm::Twine &name,
                                     unsigned align = 8) {
  auto *g =
      new llvm::GlobalVariable(m, init->getType(), /*isConstant=*/true,
                               llvm::GlobalValue::PrivateLinkage, init, name);
  g->setAlignment(llvm::Align(align));
  return g;
}

llvm::Constant *stringGlobal(llvm::Module &m, llvm::StringRef s,
                             const llvm::Twine &name) {
  auto *init = llvm::ConstantDataArray::getString(m.getContext(), s, true);
  return constantGlobal(m, init, name, 1);
}

/// An array of MccTensorDesc for `tensors`.
llvm::Constant *tensorDescs(llvm::Module &m,
                            const std::vector<TensorSignature> &tensors,
                            llvm::StringRef prefix) {
  llvm::LLVMContext &ctx = m.getContext();
  auto *ptrTy = llvm::PointerType::getUnqual(ctx);
  auto *i64 = llvm::Type::getInt64Ty(ctx);
  auto *descTy = llvm::StructType::get(ctx, {ptrTy, i64, i64, ptrTy, ptrTy});
  auto *null = llvm::ConstantPointerNull::get(ptrTy);
  std::vector<llvm::Constant *> descs;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorSignature &t = tensors[i];
    std::vector<uint64_t> dims(t.shape.begin(), t.shape.end());
    llvm::Constant *shape =
        dims.empty()
            ? static_cast<llvm::Constant *>(null)
            : constantGlobal(m, llvm::ConstantDataArray::get(ctx, dims),
                             prefix + ".shape." + llvm::Twine(i));
    // dim_exprs: NULL for a static tensor, else one string (or NULL) a dim.
    llvm::Constant *exprs = null;
    if (!t.dimExprs.empty()) {
      std::vector<llvm::Constant *> strs;
      for (size_t d = 0; d < t.dimExprs.size(); ++d)
        strs.push_back(t.dimExprs[d].empty()
                           ? static_cast<llvm::Constant *>(null)
                           : stringGlobal(m, t.dimExprs[d],
                                          prefix + ".dim." + llvm::Twine(i) +
                                              "." + llvm::Twine(d)));
      auto *arrTy = llvm::ArrayType::get(ptrTy, strs.size());
      exprs = constantGlobal(m, llvm::ConstantArray::get(arrTy, strs),
                             prefix + ".dims." + llvm::Twine(i));
    }
    descs.push_back(llvm::ConstantStruct::get(
        descTy, {stringGlobal(m, t.name, prefix + ".name." + llvm::Twine(i)),
                 llvm::ConstantInt::get(i64, t.dtype),
                 llvm::ConstantInt::get(i64, t.shape.size()), shape, exprs}));
  }
  if (descs.empty())
    return llvm::ConstantPointerNull::get(ptrTy);
  auto *arrTy = llvm::ArrayType::get(descTy, descs.size());
  return constantGlobal(m, llvm::ConstantArray::get(arrTy, descs), prefix);
}

LogicalResult addEntryPoints(llvm::Module &m, const ImportedModel &model,
                             llvm::StringRef target, llvm::StringRef arch,
                             llvm::StringRef externalWeightsFile, bool amx,
                             Location loc) {
  bool cuda = target == "cuda";
  bool external = !externalWeightsFile.empty();
  llvm::LLVMContext &ctx = m.getContext();
  llvm::Function *forward = m.getFunction("forward");
  if (!forward || forward->isDeclaration())
    return emitError(loc) << "lowered module has no @forward";
  forward->setLinkage(llvm::GlobalValue::InternalLinkage);
  auto *ptrTy = llvm::PointerType::getUnqual(ctx);
  auto *i64 = llvm::Type::getInt64Ty(ctx);
  auto *i32 = llvm::Type::getInt32Ty(ctx);

  // Weights: one blob, 64-byte aligned like the records inside it, either
  // inside the library or mapped from the file beside it.
  llvm::Constant *blob = nullptr;
  llvm::FunctionCallee openWeights, residentWeights;
  llvm::Constant *weightsName = nullptr;
  uint64_t checksum = 0;
  if (external) {
    openWeights = m.getOrInsertFunction(
        "mcc_weights_open",
        llvm::FunctionType::get(ptrTy, {ptrTy, i64, i64}, false));
    weightsName = stringGlobal(m, externalWeightsFile, "mcc.weights_file");
    checksum = weightsChecksum(model.weightBlob);
  } else if (!model.weightBlob.empty()) {
    // Embedded weights never enter the IR: the global is only declared
    // here and defined by an object written straight from the blob
    // (writeWeightsObject) that is linked beside the code.
    auto *g = new llvm::GlobalVariable(
        m,
        llvm::ArrayType::get(llvm::Type::getInt8Ty(ctx),
                             model.weightBlob.size()),
        /*isConstant=*/true, llvm::GlobalValue::ExternalLinkage, nullptr,
        kWeightsSymbol);
    g->setAlignment(llvm::Align(64));
    g->setVisibility(llvm::GlobalValue::HiddenVisibility);
    g->setDSOLocal(true);
    blob = g;
    // Kernels read the copy of the blob on huge pages (HugePages.c).
    if (!cuda)
      residentWeights = m.getOrInsertFunction(
          "mcc_weights_resident",
          llvm::FunctionType::get(ptrTy, {ptrTy, i64, i32}, false));
  }
  // Products on AMX tiles need the OS to grant the process AMX state.
  llvm::FunctionCallee requestAmx;
  if (amx)
    requestAmx = m.getOrInsertFunction("mcc_amx_request",
                                       llvm::FunctionType::get(i32, {}, false));

  // mcc_model_init, which the runtime calls when it loads the model: an
  // external weights file is checked and mapped, weights are copied onto
  // huge pages, AMX is requested, so that what fails is a load error.
  if (external || residentWeights || amx) {
    auto *init = llvm::Function::Create(llvm::FunctionType::get(i32, {}, false),
                                        llvm::GlobalValue::ExternalLinkage,
                                        "mcc_model_init", m);
    llvm::IRBuilder<> ib(llvm::BasicBlock::Create(ctx, "entry", init));
    llvm::Value *failed = ib.getFalse();
    if (amx)
      failed = ib.CreateICmpNE(ib.CreateCall(requestAmx), ib.getInt32(0));
    if (external) {
      llvm::Value *p = ib.CreateCall(
          openWeights, {weightsName, ib.getInt64(model.weightBlob.size()),
                        ib.getInt64(checksum)});
      failed = ib.CreateOr(failed, ib.CreateIsNull(p));
    } else if (residentWeights) {
      ib.CreateCall(
          residentWeights,
          {blob, ib.getInt64(model.weightBlob.size()), ib.getInt32(0)});
    }
    ib.CreateRet(ib.CreateSelect(failed, ib.getInt32(1), ib.getInt32(0)));
  }

  // mcc_model_run(void **buffers, const int64_t *dims): inputs, then
  // outputs. On CUDA the body runs on device buffers (forward_entry, which
  // reads the same dims) inside mcc_cuda_run, which stages host buffers,
  // uploads the weights once and replays a CUDA graph per shape.
  auto isDynamic = [](const TensorSignature &t) {
    return llvm::any_of(t.shape, [](int64_t d) { return d < 0; });
  };
  bool dynamic = llvm::any_of(model.inputs, isDynamic) ||
                 llvm::any_of(model.outputs, isDynamic);
  auto *runTy = llvm::FunctionType::get(i32, {ptrTy, ptrTy}, false);
  auto *run = llvm::Function::Create(runTy, llvm::GlobalValue::InternalLinkage,
                                     "mcc_model_run", m);
  llvm::Function *bodyFn = run;
  llvm::Value *deviceWeights = nullptr;
  if (cuda) {
    auto *bodyTy = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx),
                                           {ptrTy, ptrTy, ptrTy}, false);
    bodyFn = llvm::Function::Create(bodyTy, llvm::GlobalValue::InternalLinkage,
                                    "mcc_forward_entry", m);
    deviceWeights = bodyFn->getArg(1);
  }
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", bodyFn));
  llvm::Value *buffers = bodyFn->getArg(0);
  // The host-side weights: the embedded blob or the mapped file (whose
  // absence mcc_model_init has reported; a run without it returns 6).
  auto hostWeights = [&](llvm::IRBuilder<> &ib,
                         llvm::Function *fn) -> llvm::Value * {
    if (!external && residentWeights)
      return ib.CreateCall(
          residentWeights,
          {blob, ib.getInt64(model.weightBlob.size()), ib.getInt32(0)});
    if (!external)
      return blob ? static_cast<llvm::Value *>(blob)
                  : llvm::ConstantPointerNull::get(ptrTy);
    llvm::Value *p = ib.CreateCall(
        openWeights, {weightsName, ib.getInt64(model.weightBlob.size()),
                      ib.getInt64(checksum)});
    auto *ok = llvm::BasicBlock::Create(ctx, "weights_ok", fn);
    auto *missing = llvm::BasicBlock::Create(ctx, "weights_missing", fn);
    ib.CreateCondBr(ib.CreateIsNull(p), missing, ok);
    llvm::IRBuilder<> mb(missing);
    mb.CreateRet(mb.getInt32(6));
    ib.SetInsertPoint(ok);
    return p;
  };
  if (amx) {
    // A run without AMX state would die of SIGILL: return 7 instead
    // (mcc_model_last_error says why).
    auto *granted = llvm::BasicBlock::Create(ctx, "amx_granted", run);
    auto *refused = llvm::BasicBlock::Create(ctx, "amx_refused", run);
    b.CreateCondBr(b.CreateICmpNE(b.CreateCall(requestAmx), b.getInt32(0)),
                   refused, granted);
    llvm::IRBuilder<> rb(refused);
    rb.CreateRet(rb.getInt32(7));
    b.SetInsertPoint(granted);
  }
  llvm::Value *cpuWeights = cuda ? nullptr : hostWeights(b, run);
  std::vector<llvm::Value *> args;
  // A dynamic dim is read from dims[dimsIndex + axis]; static dims and the
  // strides they make stay constants (IRBuilder folds them), so a static
  // model's code is what it was before dims existed.
  llvm::Value *dimsArg = cuda ? bodyFn->getArg(2) : run->getArg(1);
  auto pushMemref = [&](llvm::Value *ptr, const std::vector<int64_t> &shape,
                        int64_t dimsIndex) {
    args.push_back(ptr);
    args.push_back(ptr);
    args.push_back(b.getInt64(0));
    std::vector<llvm::Value *> sizes;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] >= 0) {
        sizes.push_back(b.getInt64(shape[d]));
        continue;
      }
      llvm::Value *slot = b.CreateConstGEP1_64(i64, dimsArg, dimsIndex + d);
      sizes.push_back(b.CreateLoad(i64, slot, "dim"));
    }
    args.insert(args.end(), sizes.begin(), sizes.end());
    llvm::Value *stride = b.getInt64(1);
    std::vector<llvm::Value *> strides(shape.size());
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      strides[d] = stride;
      stride = b.CreateMul(stride, sizes[d], "", /*HasNUW=*/true,
                           /*HasNSW=*/true);
    }
    args.insert(args.end(), strides.begin(), strides.end());
  };
  size_t nin = model.inputs.size();
  int64_t dimsIndex = 0;
  for (size_t i = 0; i < nin; ++i) {
    llvm::Value *slot = b.CreateConstGEP1_64(ptrTy, buffers, i);
    pushMemref(b.CreateLoad(ptrTy, slot), model.inputs[i].shape, dimsIndex);
    dimsIndex += model.inputs[i].shape.size();
  }
  for (const WeightRecord &w : model.weights) {
    llvm::Value *base = cuda ? deviceWeights : cpuWeights;
    llvm::Value *p = b.CreateConstGEP1_64(b.getInt8Ty(), base, w.offset);
    if (llvm::any_of(w.shape, [](int64_t d) { return d < 0; }))
      return emitError(loc)
             << "internal error: weight '" << w.name << "' has a dynamic dim";
    pushMemref(p, w.shape, 0);
  }
  for (size_t i = 0; i < model.outputs.size(); ++i) {
    llvm::Value *slot = b.CreateConstGEP1_64(ptrTy, buffers, nin + i);
    pushMemref(b.CreateLoad(ptrTy, slot), model.outputs[i].shape, dimsIndex);
    dimsIndex += model.outputs[i].shape.size();
  }
  if (args.size() != forward->arg_size())
    return emitError(loc) << "internal error: @forward takes "
                          << forward->arg_size() << " values, the signature "
                          << "implies " << args.size();
  b.CreateCall(forward, args);
  if (!cuda) {
    b.CreateRet(b.getInt32(0));
  } else {
    b.CreateRetVoid();
    auto elementBytes = [](const TensorSignature &t) -> uint64_t {
      switch (t.dtype) {
      case 7:  // int64
      case 11: // double
      case 13: // uint64
        return 8;
      case 1:  // float
      case 6:  // int32
      case 12: // uint32
        return 4;
      case 4:  // uint16
      case 5:  // int16
      case 10: // float16
      case 16: // bfloat16
        return 2;
      default:
        return 1;
      }
    };
    std::vector<const TensorSignature *> tensors;
    for (const auto &t : model.inputs)
      tensors.push_back(&t);
    for (const auto &t : model.outputs)
      tensors.push_back(&t);
    llvm::IRBuilder<> rb(llvm::BasicBlock::Create(ctx, "entry", run));
    llvm::Value *hw = hostWeights(rb, run);
    // Each buffer's byte size: a constant table for a static model (the
    // shim's fast path), else computed per call from the dims, which also
    // key the shim's graph cache.
    llvm::Value *bytesArr = llvm::ConstantPointerNull::get(ptrTy);
    int64_t numDims = 0;
    if (!dynamic && !tensors.empty()) {
      std::vector<uint64_t> bytes;
      for (const TensorSignature *t : tensors) {
        uint64_t n = elementBytes(*t);
        for (int64_t d : t->shape)
          n *= d;
        bytes.push_back(n);
      }
      bytesArr = constantGlobal(m, llvm::ConstantDataArray::get(ctx, bytes),
                                "mcc.buffer_bytes");
    } else if (dynamic) {
      auto *arrTy = llvm::ArrayType::get(i64, tensors.size());
      bytesArr = rb.CreateAlloca(arrTy, nullptr, "buffer_bytes");
      for (size_t i = 0; i < tensors.size(); ++i) {
        llvm::Value *n = rb.getInt64(elementBytes(*tensors[i]));
        for (int64_t d : tensors[i]->shape) {
          llvm::Value *size =
              d >= 0 ? static_cast<llvm::Value *>(rb.getInt64(d))
                     : rb.CreateLoad(
                           i64,
                           rb.CreateConstGEP1_64(i64, run->getArg(1), numDims),
                           "dim");
          n = rb.CreateMul(n, size);
          ++numDims;
        }
        rb.CreateStore(n, rb.CreateConstGEP2_64(arrTy, bytesArr, 0, i));
      }
    }
    auto *shimTy = llvm::FunctionType::get(
        i32, {ptrTy, i64, i64, ptrTy, ptrTy, i64, ptrTy, ptrTy, i64}, false);
    llvm::FunctionCallee shim = m.getOrInsertFunction("mcc_cuda_run", shimTy);
    llvm::Value *rc =
        rb.CreateCall(shim, {run->getArg(0), rb.getInt64(model.inputs.size()),
                             rb.getInt64(model.outputs.size()), bytesArr, hw,
                             rb.getInt64(model.weightBlob.size()), bodyFn,
                             run->getArg(1), rb.getInt64(numDims)});
    rb.CreateRet(rc);
  }

  // The symbols (MccSymbolDesc {name, lo, hi}).
  llvm::Constant *symbols = llvm::ConstantPointerNull::get(ptrTy);
  if (!model.symbols.empty()) {
    auto *symTy = llvm::StructType::get(ctx, {ptrTy, i64, i64});
    std::vector<llvm::Constant *> syms;
    for (size_t k = 0; k < model.symbols.size(); ++k) {
      const SymbolInfo &s = model.symbols[k];
      syms.push_back(llvm::ConstantStruct::get(
          symTy, {stringGlobal(m, s.name, "mcc.symbol.name." + llvm::Twine(k)),
                  llvm::ConstantInt::get(i64, s.lo),
                  llvm::ConstantInt::get(i64, s.hi)}));
    }
    symbols =
        constantGlobal(m,
                       llvm::ConstantArray::get(
                           llvm::ArrayType::get(symTy, syms.size()), syms),
                       "mcc.symbols");
  }

  // The descriptor (field order fixed by MccModelDescriptor).
  auto *descTy = llvm::StructType::get(
      ctx, {i64, ptrTy, ptrTy, i64, ptrTy, i64, ptrTy, i64, ptrTy, i64, ptrTy});
  llvm::Constant *desc = llvm::ConstantStruct::get(
      descTy,
      {llvm::ConstantInt::get(i64, MCC_ABI_VERSION),
       stringGlobal(m, target, "mcc.target"), stringGlobal(m, arch, "mcc.arch"),
       llvm::ConstantInt::get(i64, model.inputs.size()),
       tensorDescs(m, model.inputs, "mcc.inputs"),
       llvm::ConstantInt::get(i64, model.outputs.size()),
       tensorDescs(m, model.outputs, "mcc.outputs"),
       llvm::ConstantInt::get(i64, model.weightBlob.size()), run,
       llvm::ConstantInt::get(i64, model.symbols.size()), symbols});
  auto *descGlobal = constantGlobal(m, desc, "mcc.descriptor");
  auto *getTy = llvm::FunctionType::get(ptrTy, {}, false);
  auto *get = llvm::Function::Create(getTy, llvm::GlobalValue::ExternalLinkage,
                                     MCC_DESCRIPTOR_SYMBOL, m);
  get->setVisibility(llvm::GlobalValue::DefaultVisibility);
  llvm::IRBuilder<> gb(llvm::BasicBlock::Create(ctx, "entry", get));
  gb.CreateRet(descGlobal);
  return success();
}

} // namespace

LogicalResult checkModelSignature(const ImportedModel &model, Location loc) {
  for (const SymbolInfo &s : model.symbols)
    if (s.lo < 0 || s.hi < s.lo)
      return emitError(loc) << "symbol '" << s.name << "' has empty bounds "
                            << s.lo << ".." << s.hi;
  auto check = [&](const TensorSignature &t, bool input) -> LogicalResult {
    const char *role = input ? "input" : "output";
    if (!t.dimExprs.empty() && t.dimExprs.size() != t.shape.size())
      return emitError(loc) << "internal error: " << role << " '" << t.name
                            << "' has " << t.dimExprs.size()
                            << " dim expressions for rank " << t.shape.size();
    for (size_t d = 0; d < t.shape.size(); ++d) {
      llvm::StringRef expr = t.dimExprs.empty() ? "" : t.dimExprs[d];
      if ((t.shape[d] == -1) != !expr.empty() || t.shape[d] < -1)
        return emitError(loc)
               << "internal error: " << role << " '" << t.name << "' axis " << d
               << " is " << t.shape[d] << " with expression '" << expr << "'";
      if (expr.empty())
        continue;
      rt::DimExpr parsed;
      std::string error;
      if (!rt::DimExpr::parse(expr, model.symbols.size(), parsed, error))
        return emitError(loc) << "internal error: " << role << " '" << t.name
                              << "' axis " << d << ": " << error;
      if (input && parsed.singleSymbol() < 0)
        return emitError(loc)
               << "internal error: input '" << t.name << "' axis " << d
               << " is '" << expr << "', not a single symbol";
    }
    return success();
  };
  for (const TensorSignature &t : model.inputs)
    if (failed(check(t, true)))
      return failure();
  for (const TensorSignature &t : model.outputs)
    if (failed(check(t, false)))
      return failure();
  return success();
}

/// LLVM's loop vectorizer leaves a loop with a constant trip count below
/// `vectorizer-min-trip-count` (16) scalar unless it needs no scalar
/// remainder. A 14-wide row of a 14x14 feature map (the activation after
/// each 1x1 convolution of a CNN's later stages, written into a padded
/// buffer) then ran one float at a time: mobilenetv3's HardSwish maps.
/// Lowered to 4, such rows run as a vector of 8, then 4, then scalars.
void tuneLoopVectorizer() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto &registered = llvm::cl::getRegisteredOptions();
    auto it = registered.find("vectorizer-min-trip-count");
    if (it != registered.end())
      it->second->addOccurrence(0, "vectorizer-min-trip-count", "4");
  });
}

LogicalResult checkCpuName(llvm::StringRef cpu, Location loc) {
  if (cpu.empty())
    return success();
  llvm::InitializeNativeTarget();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return emitError(loc) << "no LLVM target for " << triple.str() << ": "
                          << error;
  std::unique_ptr<llvm::MCSubtargetInfo> sti(
      target->createMCSubtargetInfo(triple, "", ""));
  if (!sti || !sti->isCPUStringValid(cpu))
    return emitError(loc) << "--cpu '" << cpu
                          << "' is not a CPU LLVM knows for " << triple.str()
                          << " (e.g. x86-64-v3, x86-64-v4, skylake-avx512, "
                             "znver4)";
  return success();
}

/// Whether `cpu` (empty: this host) has every LLVM feature of `features`
/// ("+avx2", "+amx-tile,+amx-bf16"): the host's from cpuid, a named CPU's
/// from LLVM's tables.
static bool cpuHas(llvm::StringRef cpu, llvm::StringRef features) {
  if (cpu.empty()) {
    llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
    llvm::SmallVector<llvm::StringRef> names;
    features.split(names, ',');
    return llvm::all_of(
        names, [&](llvm::StringRef f) { return host.lookup(f.drop_front()); });
  }
  llvm::InitializeNativeTarget();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return false;
  std::unique_ptr<llvm::MCSubtargetInfo> sti(
      target->createMCSubtargetInfo(triple, cpu, ""));
  return sti && sti->checkFeatures(features);
}

unsigned cpuVectorBits(llvm::StringRef cpu) {
  return cpuHas(cpu, "+avx512f") ? 512 : cpuHas(cpu, "+avx2") ? 256 : 128;
}

bool cpuHasAmxBf16(llvm::StringRef cpu) {
  return cpuHas(cpu, "+amx-tile,+amx-bf16");
}

LogicalResult writeCpuSharedLibrary(ModuleOp module, const ImportedModel &model,
                                    const CpuTargetOptions &options,
                                    llvm::StringRef outputPath) {
  Location loc = module.getLoc();
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();

  DialectRegistry registry;
  registerCpuTranslations(registry);
  module->getContext()->appendDialectRegistry(registry);

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext, "mcc_model");
  if (!llvmModule)
    return emitError(loc) << "translation to LLVM IR failed";
  markStep(options.timer, "translate to LLVM IR");

  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return emitError(loc) << "no LLVM target for " << triple.str() << ": "
                          << error;
  std::string cpu =
      options.cpu.empty() ? llvm::sys::getHostCPUName().str() : options.cpu;
  std::string features;
  if (options.cpu.empty()) {
    llvm::StringMap<bool> hostFeatures = llvm::sys::getHostCPUFeatures();
    for (auto &f : hostFeatures)
      features += (features.empty() ? "" : ",") +
                  std::string(f.second ? "+" : "-") + f.first().str();
  }
  // No AVX-512 scatters: Zen 4 runs them microcoded, a few elements per
  // ten-odd cycles, and the loop vectorizer picked them for strided stores
  // of a constant (the column borders of padded activations): 56 scatter
  // loops in full-size mobilenetv3, the hottest code outside its parallel
  // regions.
  if (triple.isX86())
    features += std::string(features.empty() ? "" : ",") + "+prefer-no-scatter";
  llvm::TargetOptions targetOptions;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, cpu, features, targetOptions, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  if (!tm)
    return emitError(loc) << "cannot create a target machine for cpu '" << cpu
                          << "'";
  llvmModule->setDataLayout(tm->createDataLayout());
  llvmModule->setTargetTriple(triple);

  std::string weightsFile =
      options.externalWeights
          ? llvm::sys::path::filename(outputPath).str() + ".weights"
          : "";
  bool amx = !options.cuda && options.precision == "bf16x3";
  if (failed(addEntryPoints(*llvmModule, model, options.cuda ? "cuda" : "cpu",
                            options.cuda ? options.gpuArch : cpu, weightsFile,
                            amx, loc)))
    return failure();
  if (options.cuda || amx) {
    // Read by the CUDA runtime shim (its GEMM choice) and by
    // mcc_model_precision, hence exported.
    llvm::Constant *text = llvm::ConstantDataArray::getString(
        llvmModule->getContext(), options.precision);
    auto *precision = new llvm::GlobalVariable(
        *llvmModule, text->getType(), /*isConstant=*/true,
        llvm::GlobalValue::ExternalLinkage, text, "mcc_precision");
    precision->setVisibility(llvm::GlobalValue::DefaultVisibility);
    // The shim's own (hidden) name for it, which no other library can
    // interpose.
    auto *local = llvm::GlobalAlias::create(
        text->getType(), 0, llvm::GlobalValue::ExternalLinkage,
        "mcc_precision_local", precision, llvmModule.get());
    local->setVisibility(llvm::GlobalValue::HiddenVisibility);
  }
  for (llvm::Function &f : *llvmModule) {
    if (f.isDeclaration())
      continue;
    f.addFnAttr("target-cpu", cpu);
    if (!features.empty())
      f.addFnAttr("target-features", features);
  }
  if (llvm::verifyModule(*llvmModule, &llvm::errs()))
    return emitError(loc) << "generated LLVM IR does not verify";
  markStep(options.timer, "entry points, descriptor, weights");

  {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    // Full unrolling of short constant-trip inner loops runs before the
    // loop vectorizer and leaves it the next loop out, which is strided
    // (gathers). Unroll only what vectorization leaves.
    tuneLoopVectorizer();
    llvm::PipelineTuningOptions tuning;
    tuning.LoopUnrolling = false;
    tuning.LoopVectorization = true;
    tuning.SLPVectorization = true;
    llvm::PassBuilder pb(tm.get(), tuning);
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::ModulePassManager mpm =
        pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
    mpm.run(*llvmModule, mam);
    markStep(options.timer, "LLVM optimization");
  }
  if (!options.dumpLlvmIrPath.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream os(options.dumpLlvmIrPath, ec);
    if (!ec)
      llvmModule->print(os, nullptr);
  }

  std::string pid = std::to_string(getpid());
  TempFile object{(outputPath + ".o.tmp." + pid).str()};
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(object.path, ec, llvm::sys::fs::OF_None);
    if (ec)
      return emitError(loc)
             << "cannot write " << object.path << ": " << ec.message();
    llvm::legacy::PassManager pm;
    if (tm->addPassesToEmitFile(pm, os, nullptr,
                                llvm::CodeGenFileType::ObjectFile))
      return emitError(loc) << "the target cannot emit object files";
    pm.run(*llvmModule);
    markStep(options.timer, "code generation (object file)");
  }

  // Embedded weights: an object of their own, linked beside the code.
  TempFile weightsObject;
  if (!options.externalWeights && !model.weightBlob.empty()) {
    weightsObject.path = (outputPath + ".weights.o.tmp." + pid).str();
    if (failed(writeWeightsObject(model.weightBlob, object.path,
                                  weightsObject.path, loc)))
      return failure();
    markStep(options.timer, "weights object file");
  }

  TempFile library{(outputPath + ".tmp." + pid).str()};
  // The CUDA shim is C++: link with the C++ driver.
  auto linker = llvm::sys::findProgramByName(options.cuda ? "c++" : "cc");
  if (!linker)
    linker = llvm::sys::findProgramByName(options.cuda ? "g++" : "gcc");
  if (!linker)
    linker = llvm::sys::findProgramByName("clang-22");
  if (!linker)
    return emitError(loc) << "no linker driver (cc/c++, gcc/g++ or clang-22) "
                             "on PATH";
  std::string libDir = MCC_OPENMP_LIB_DIR;
  std::vector<std::string> argStore = {*linker,     "-shared",
                                       "-o",        library.path,
                                       object.path, MCC_MODEL_SUPPORT_PATH};
  if (!weightsObject.path.empty())
    argStore.push_back(weightsObject.path);
  if (options.cuda) {
    std::string shim = MCC_CUDA_SHIM_PATH;
    if (shim.empty() || !llvm::sys::fs::exists(shim))
      return emitError(loc) << "the CUDA runtime shim (libmcc_cuda_shim.a) "
                               "was not built: mcc was configured without "
                               "CUDA headers";
    argStore.insert(argStore.end(), {shim, "-ldl", "-Wl,-z,noexecstack"});
  } else {
    argStore.insert(argStore.end(), {"-L" + libDir, "-Wl,-rpath," + libDir,
                                     "-lomp", "-lm", "-Wl,-z,noexecstack"});
  }
  std::vector<llvm::StringRef> argv(argStore.begin(), argStore.end());
  std::string linkError;
  int rc = llvm::sys::ExecuteAndWait(*linker, argv, std::nullopt, {}, 0, 0,
                                     &linkError);
  if (rc != 0)
    return emitError(loc) << "linking " << outputPath << " failed (" << *linker
                          << " exited with " << rc << ")"
                          << (linkError.empty() ? "" : ": " + linkError);
  markStep(options.timer, "link");
  // External weights go in place first: a .so never exists without them.
  if (options.externalWeights) {
    std::string finalWeights = (outputPath + ".weights").str();
    TempFile weights{finalWeights + ".tmp." + pid};
    {
      std::error_code ec;
      llvm::raw_fd_ostream os(weights.path, ec, llvm::sys::fs::OF_None);
      if (ec)
        return emitError(loc)
               << "cannot write " << weights.path << ": " << ec.message();
      model.weightBlob.write(os);
      os.close();
      if (os.has_error())
        return emitError(loc) << "cannot write " << weights.path;
    }
    // A plan to rebuild the file from the ONNX model where only the model
    // travels: which initializer each record is, plus the bytes of the
    // records computed while compiling (scripts/pack_weights.py).
    std::string planPath = finalWeights + ".json";
    std::string derivedPath = finalWeights + ".derived";
    {
      std::error_code ec;
      llvm::raw_fd_ostream plan(planPath, ec);
      llvm::raw_fd_ostream derived(derivedPath, ec, llvm::sys::fs::OF_None);
      if (ec)
        return emitError(loc) << "cannot write " << planPath;
      plan << "{\n  \"bytes\": " << model.weightBlob.size()
           << ",\n  \"checksum\": " << weightsChecksum(model.weightBlob)
           << ",\n  \"records\": [";
      uint64_t derivedOffset = 0;
      for (size_t i = 0; i < model.weights.size(); ++i) {
        const WeightRecord &w = model.weights[i];
        plan << (i ? "," : "") << "\n    {\"offset\": " << w.offset
             << ", \"size\": " << w.size << ", ";
        // Bytes from the source below, laid out as column panels.
        if (w.panels)
          plan << "\"panels\": " << w.panels << ", \"shape\": [" << w.shape[0]
               << ", " << w.shape[1] << "], ";
        // ... or as AMX bf16x3 tiles of the weight seen as 2-D (its first
        // dim by the rest; a batch's, all but its last dim by the last).
        if (w.amxTiles != AmxTiles::None) {
          int64_t count = 1;
          for (int64_t d : w.shape)
            count *= d;
          int64_t cols = w.amxTiles == AmxTiles::BatchRows ? w.shape.back()
                                                           : count / w.shape[0];
          plan << "\"amx_tiles\": \""
               << (w.amxTiles == AmxTiles::KPairs ? "k_pairs" : "rows")
               << "\", \"shape\": [" << count / cols << ", " << cols << "], ";
        }
        if (!w.source.empty()) {
          plan << "\"initializer\": \"";
          plan.write_escaped(w.source);
          // First and last 16 bytes: lets pack_weights.py find the record
          // in a re-export whose exporter numbered initializers differently.
          const auto *data = reinterpret_cast<const unsigned char *>(
              model.weightBlob.recordData(i));
          size_t edge = std::min<uint64_t>(16, w.size);
          plan << "\", \"fingerprint\": \""
               << llvm::toHex(llvm::ArrayRef<uint8_t>(data, edge), true)
               << llvm::toHex(
                      llvm::ArrayRef<uint8_t>(data + w.size - edge, edge), true)
               << "\"}";
        } else {
          plan << "\"derived_offset\": " << derivedOffset << "}";
          derived.write(
              reinterpret_cast<const char *>(model.weightBlob.recordData(i)),
              w.size);
          derivedOffset += w.size;
        }
      }
      plan << "\n  ]\n}\n";
    }
    if (auto ec = llvm::sys::fs::rename(weights.path, finalWeights))
      return emitError(loc) << "cannot move the weights to " << finalWeights
                            << ": " << ec.message();
    weights.keep = true;
  }
  if (auto ec = llvm::sys::fs::rename(library.path, outputPath))
    return emitError(loc) << "cannot move the library to " << outputPath << ": "
                          << ec.message();
  library.keep = true;
  markStep(options.timer, "weights file, move into place");
  return success();
}

} // namespace mcc
