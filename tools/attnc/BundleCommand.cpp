//===- BundleCommand.cpp - attnc bundle and attnc cache -------------------===//
#include "tools/attnc/Commands.h"

#include "attnc/runtime/BuildId.h"
#include "attnc/runtime/DiskCache.h"
#include "attnc/runtime/NvJitLink.h"
#include "attnc/runtime/Resolve.h"
#include "attnc/runtime/TuningDb.h"
#include "compiler/Driver/SpecCompiler.h"

#include <algorithm>
#include <chrono>
#include <fmt/core.h>

namespace attnc::cli {

void addBundleCommand(CLI::App &app, BundleOptions &o) {
  CLI::App *bundle = app.add_subcommand(
      "bundle", "Precompile the specs of a JSON file into a cache directory "
                "that the runtime alone can load (no LLVM/MLIR needed)");
  bundle
      ->add_option("--specs", o.specsFile,
                   "JSON file: {\"specs\": [{...}, ...]}")
      ->required()
      ->check(CLI::ExistingFile);
  bundle->add_option("-o,--output", o.outputDir, "Cache directory to fill")
      ->required();
  bundle->add_flag("!--no-cubin", o.cubin,
                   "Store PTX only (by default nvJitLink also stores a cubin "
                   "when it is available)");
}

int runBundle(const BundleOptions &o) {
  auto specs = readSpecFile(o.specsFile);
  if (!specs.isOk()) {
    fmt::print(stderr, "attnc: error: {}: {}\n", o.specsFile,
               specs.status().message());
    return 1;
  }
  DiskCache cache(o.outputDir);
  SpecCompiler compiler;
  ResolveOptions options;
  options.compiler = &compiler;
  if (o.cubin) {
    auto linker = CubinLinker::load();
    if (linker.isOk())
      options.cubinLinker = *linker;
    else
      fmt::print(stderr, "attnc: note: no cubins ({}); PTX only\n",
                 linker.status().message());
  }
  options.log = [](const std::string &m) {
    fmt::print(stderr, "attnc: {}\n", m);
  };
  // The variants the runtime's decode size rule may choose for a spec
  // without its own tuning go in too: a bundle holds every kernel the
  // runtime can ask for its specs.
  const size_t listed = specs->size();
  for (size_t i = 0; i < listed; ++i)
    for (KernelSpec &variant : sizeRuleVariantSpecs((*specs)[i]))
      if (std::find(specs->begin(), specs->end(), variant) == specs->end())
        specs->push_back(std::move(variant));
  if (specs->size() > listed)
    fmt::print(stderr,
               "attnc: bundle: {} listed specs and {} variants the decode "
               "size rule can choose for them\n",
               listed, specs->size() - listed);
  size_t n = specs->size(), failed = 0;
  for (size_t i = 0; i < n; ++i) {
    const KernelSpec &spec = (*specs)[i];
    auto start = std::chrono::steady_clock::now();
    auto r = resolveKernel(cache, spec, defaultBuildId(), options);
    double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    // A kernel compiled but not written (full disk, something in the
    // entry's place) is in no bundle: resolveKernel hands it back uncached,
    // with an empty entry directory.
    const bool written = r.isOk() && !r->entry.dir.empty();
    int filled = int(40.0 * (i + 1) / n);
    fmt::print(stderr, "[{}{}] {}/{} {:5.2f}s {}\n", std::string(filled, '#'),
               std::string(40 - filled, '.'), i + 1, n, secs,
               written ? (r->compiled ? "compiled" : "already cached")
                       : "FAILED");
    if (!r.isOk())
      fmt::print(stderr, "attnc: error: {}\n", r.status().message());
    else if (!written)
      fmt::print(stderr,
                 "attnc: error: spec {} compiled but could not be written "
                 "to {} (see the warning above)\n",
                 i, o.outputDir);
    if (!written)
      ++failed;
  }
  fmt::print("bundle: {} of {} specs in {} (build id {})\n", n - failed, n,
             o.outputDir, defaultBuildId());
  return failed ? 1 : 0;
}

void addCacheCommand(CLI::App &app, CacheOptions &o) {
  CLI::App *cache =
      app.add_subcommand("cache", "List, clear or prune the kernel cache");
  cache->add_option("action", o.action, "ls | clear | prune")
      ->required()
      ->check(CLI::IsMember({"ls", "clear", "prune"}));
  cache->add_option("--dir", o.dir,
                    "Cache directory (default: $ATTNC_CACHE_DIR, else "
                    "$XDG_CACHE_HOME/attnc, else ~/.cache/attnc)");
  cache->add_option("--max-size", o.maxSize,
                    "prune: evict least recently used entries until the "
                    "cache holds at most this many bytes");
}

int runCache(const CacheOptions &o) {
  std::string dir = o.dir;
  if (dir.empty()) {
    auto root = DiskCache::defaultRoot();
    if (!root.isOk()) {
      fmt::print(stderr, "attnc: error: {}\n", root.status().message());
      return 1;
    }
    dir = *root;
  }
  DiskCache cache(dir);
  if (o.action == "ls") {
    auto entries = cache.list();
    if (!entries.isOk()) {
      fmt::print(stderr, "attnc: error: {}\n", entries.status().message());
      return 1;
    }
    uint64_t total = 0;
    for (const CacheEntryInfo &e : *entries) {
      fmt::print("{}  {:>10} B  {}\n", e.key, e.sizeBytes,
                 e.foreign    ? "(not an attnc entry: clear and prune leave "
                                "it alone)"
                 : e.readable ? e.spec
                              : "(unreadable)");
      total += e.sizeBytes;
    }
    fmt::print("{} entries, {} bytes in {}\n", entries->size(), total, dir);
    return 0;
  }
  if (o.action == "clear") {
    auto n = cache.clear();
    if (!n.isOk()) {
      fmt::print(stderr, "attnc: error: {}\n", n.status().message());
      return 1;
    }
    fmt::print("removed {} entries from {}\n", *n, dir);
    return 0;
  }
  if (o.maxSize < 0) {
    fmt::print(stderr, "attnc: error: prune needs --max-size BYTES\n");
    return 1;
  }
  auto pruned = cache.prune(static_cast<uint64_t>(o.maxSize));
  if (!pruned.isOk()) {
    fmt::print(stderr, "attnc: error: {}\n", pruned.status().message());
    return 1;
  }
  fmt::print("pruned {} to at most {} bytes\n", dir, o.maxSize);
  return 0;
}

} // namespace attnc::cli
