//===- HostJIT.cpp - run tile-level kernels on the host CPU ---------------===//
//
// LLVM's ORC JIT straight from libLLVM: MLIR's ExecutionEngine would pull in
// the shared libMLIR beside the static MLIR libraries attnc links.
//
//===----------------------------------------------------------------------===//
#include "compiler/Target/Host/HostJIT.h"

#include "compiler/Pipelines/Pipelines.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ExecutionEngine/Orc/AbsoluteSymbols.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/ThreadSafeModule.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/TargetSelect.h"

#include <array>
#include <cstdint>
#include <cstring>
#include <utility>

using namespace mlir;
using namespace attnc;

namespace {

/// The soft-float helper LLVM's x86 back end calls to round f32 to bf16 on
/// CPUs without AVX512-BF16 (bf16 values that pass through phis and selects
/// are legalised as f32 and truncated at their stores). GCC 12's libgcc has
/// no __truncsfbf2, so the JIT gets this one. Round to nearest even, NaN
/// stays a (quiet) NaN. bf16 is returned like half, in the low 16 bits of
/// the first FP return register: a float whose low bits hold it.
float truncSfBf2(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof(u));
  uint32_t h = (u & 0x7fffffffu) > 0x7f800000u
                   ? (u >> 16) | 0x40u
                   : (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  float out;
  std::memcpy(&out, &h, sizeof(out));
  return out;
}

} // namespace

HostKernel::~HostKernel() = default;

llvm::Expected<std::unique_ptr<HostKernel>>
HostKernel::compile(ModuleOp module, const std::string &entry) {
  static const bool nativeReady = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    return true;
  }();
  (void)nativeReady;

  PassManager pm(module.getContext());
  buildHostPipeline(pm);
  if (failed(pm.run(module)))
    return llvm::createStringError("the host pipeline failed (see the "
                                   "diagnostics above)");

  auto llvmContext = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, *llvmContext, "attnc_host");
  if (!llvmModule)
    return llvm::createStringError("translation to LLVM IR failed");

  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb)
    return jtmb.takeError();
  jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Default);
  auto jit = llvm::orc::LLJITBuilder()
                 .setJITTargetMachineBuilder(std::move(*jtmb))
                 .create();
  if (!jit)
    return jit.takeError();
  // malloc/free of the kernel's temporaries and libm's tanhf (softcap).
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!process)
    return process.takeError();
  (*jit)->getMainJITDylib().addGenerator(std::move(*process));
  if (auto err = (*jit)->getMainJITDylib().define(llvm::orc::absoluteSymbols(
          {{(*jit)->mangleAndIntern("__truncsfbf2"),
            {llvm::orc::ExecutorAddr::fromPtr(&truncSfBf2),
             llvm::JITSymbolFlags::Exported |
                 llvm::JITSymbolFlags::Callable}}})))
    return std::move(err);
  llvmModule->setDataLayout((*jit)->getDataLayout());
  if (auto err = (*jit)->addIRModule(llvm::orc::ThreadSafeModule(
          std::move(llvmModule), std::move(llvmContext))))
    return std::move(err);
  auto symbol = (*jit)->lookup(entry);
  if (!symbol)
    return symbol.takeError();

  std::unique_ptr<HostKernel> kernel(new HostKernel());
  kernel->address = symbol->getValue();
  kernel->jit = std::move(*jit);
  return kernel;
}

// Each rank-0 memref parameter arrives as (allocated, aligned, offset).
#define ATTNC_MEMREF void *, void *, int64_t
using HostAttentionFwd = void (*)(ATTNC_MEMREF, ATTNC_MEMREF, ATTNC_MEMREF,
                                  ATTNC_MEMREF, ATTNC_MEMREF, int64_t, int64_t,
                                  int64_t, int64_t, int64_t, int64_t, int64_t,
                                  int64_t, int64_t, int64_t, int64_t, int64_t,
                                  int64_t, int64_t, int64_t, int64_t, int64_t);
#undef ATTNC_MEMREF

void HostKernel::runAttentionFwd(void *q, void *k, void *v, void *o, void *lse,
                                 const int64_t (&s)[17]) const {
  auto fn = reinterpret_cast<HostAttentionFwd>(address);
  fn(q, q, 0, k, k, 0, v, v, 0, o, o, 0, lse, lse, 0, s[0], s[1], s[2], s[3],
     s[4], s[5], s[6], s[7], s[8], s[9], s[10], s[11], s[12], s[13], s[14],
     s[15], s[16]);
}

llvm::Expected<uint64_t> HostKernel::lookup(const std::string &name) const {
  auto symbol = jit->lookup(name);
  if (!symbol)
    return symbol.takeError();
  return symbol->getValue();
}

namespace {

/// Calls `address` as a function of N uint64_t arguments (pointers and
/// i64 values are passed alike on the host ABIs attnc runs on).
template <size_t... I>
void callWords(uint64_t address, const uint64_t *w, std::index_sequence<I...>) {
  using Fn = void (*)(decltype(I, uint64_t{})...);
  reinterpret_cast<Fn>(address)(w[I]...);
}

template <size_t... N> constexpr auto makeCallTable(std::index_sequence<N...>) {
  using Caller = void (*)(uint64_t, const uint64_t *);
  return std::array<Caller, sizeof...(N)>{[](uint64_t a, const uint64_t *w) {
    callWords(a, w, std::make_index_sequence<N>());
  }...};
}

constexpr size_t kMaxWords = 64;

} // namespace

void HostKernel::pointerWords(std::vector<uint64_t> &words, const void *p) {
  uint64_t v = reinterpret_cast<uintptr_t>(p);
  words.insert(words.end(), {v, v, 0});
}

void HostKernel::runWords(const std::vector<uint64_t> &words,
                          uint64_t at) const {
  static constexpr auto table =
      makeCallTable(std::make_index_sequence<kMaxWords + 1>());
  if (words.size() > kMaxWords)
    llvm::report_fatal_error("HostKernel::runWords: too many parameters");
  table[words.size()](at ? at : address, words.data());
}
