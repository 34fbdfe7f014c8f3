//===- BenchCommand.cpp - attnc bench -------------------------------------===//
//
// Makes sure the fused kernel is in the cache (compiling it on a miss), then
// runs attnc-bench, the runtime-only timing tool that sits next to attnc
// (and alone on machines without LLVM/MLIR), with the same arguments.
//
//===----------------------------------------------------------------------===//
#include "tools/attnc/Commands.h"

#include "attnc/runtime/BuildId.h"
#include "attnc/runtime/DiskCache.h"
#include "attnc/runtime/Resolve.h"
#include "compiler/Driver/SpecCompiler.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <fmt/core.h>

namespace attnc::cli {

void addBenchCommand(CLI::App &app, BenchOptions &o) {
  CLI::App *bench = app.add_subcommand(
      "bench", "Time the fused attention kernel on the GPU, optionally beside "
               "standard (unfused) attention: --baseline unfused");
  bench->add_option("--heads", o.spec.heads)->check(CLI::PositiveNumber);
  bench->add_option("--kv-heads", o.spec.kvHeads)->check(CLI::PositiveNumber);
  bench->add_option("--head-dim", o.spec.headDim)->check(CLI::PositiveNumber);
  bench->add_option("--dtype", o.spec.dtype)
      ->check(CLI::IsMember({"bf16", "fp16"}));
  bench->add_option("--arch", o.spec.arch)
      ->check(CLI::IsMember({"sm_80", "sm_90a"}));
  bench->add_flag("--causal", o.spec.causal);
  bench->add_option("--batch", o.batch)->check(CLI::PositiveNumber);
  bench->add_option("--seq-len", o.seqLen)->check(CLI::PositiveNumber);
  bench->add_option("--reps", o.reps)->check(CLI::PositiveNumber);
  bench
      ->add_option("--baseline", o.baseline,
                   "unfused: the three-kernel "
                   "standard attention")
      ->check(CLI::IsMember({"unfused"}));
  bench->add_option("--bundle", o.bundle,
                    "Cache directory (default: the kernel cache)");
}

int runBench(const BenchOptions &o, const char *argv0) {
  KernelSpec spec = o.spec;
  spec.hasLse = false;
  std::string dir = o.bundle;
  if (dir.empty()) {
    auto root = DiskCache::defaultRoot();
    if (!root.isOk()) {
      fmt::print(stderr, "attnc: error: {}\n", root.status().message());
      return 1;
    }
    dir = *root;
  }
  DiskCache cache(dir);
  SpecCompiler compiler;
  ResolveOptions options;
  options.compiler = &compiler;
  auto r = resolveKernel(cache, spec, defaultBuildId(), options);
  if (!r.isOk()) {
    fmt::print(stderr, "attnc: error: {}\n", r.status().message());
    return 1;
  }
  std::string self = llvm::sys::fs::getMainExecutable(
      argv0, reinterpret_cast<void *>(&runBench));
  llvm::SmallString<256> tool(llvm::sys::path::parent_path(self));
  llvm::sys::path::append(tool, "attnc-bench");
  std::vector<std::string> args{std::string(tool),
                                "--bundle",
                                dir,
                                "--heads",
                                std::to_string(spec.heads),
                                "--kv-heads",
                                std::to_string(spec.kvHeads),
                                "--head-dim",
                                std::to_string(spec.headDim),
                                "--dtype",
                                spec.dtype,
                                "--arch",
                                spec.arch,
                                "--batch",
                                std::to_string(o.batch),
                                "--seq-len",
                                std::to_string(o.seqLen),
                                "--reps",
                                std::to_string(o.reps)};
  if (spec.causal)
    args.push_back("--causal");
  if (!o.baseline.empty()) {
    args.push_back("--baseline");
    args.push_back(o.baseline);
  }
  std::vector<llvm::StringRef> refs(args.begin(), args.end());
  std::string error;
  int rc =
      llvm::sys::ExecuteAndWait(tool, refs, std::nullopt, {}, 0, 0, &error);
  if (!error.empty())
    fmt::print(stderr, "attnc: error: running {}: {}\n", tool.str(), error);
  return rc < 0 ? 1 : rc;
}

} // namespace attnc::cli
