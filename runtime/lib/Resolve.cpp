//===- Resolve.cpp - From a spec to a verified cache entry ----------------===//

#include "attnc/runtime/Resolve.h"

#include <chrono>
#include <cstdlib>

namespace attnc {

namespace {

void warn(const ResolveOptions &options, const std::string &message) {
  if (options.log)
    options.log(message);
}

// How long a miss waits for another process's build of the same key:
// $ATTNC_BUILD_LOCK_TIMEOUT_S seconds, default 300.
std::chrono::milliseconds buildLockTimeout() {
  if (const char *env = std::getenv("ATTNC_BUILD_LOCK_TIMEOUT_S"))
    if (char *end = nullptr; *env) {
      double seconds = std::strtod(env, &end);
      if (*end == '\0' && seconds >= 0)
        return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1e3));
    }
  return std::chrono::minutes(5);
}

} // namespace

Result<ResolvedKernel> resolveKernel(DiskCache &cache, const KernelSpec &spec,
                                     const std::string &buildId,
                                     const ResolveOptions &options) {
  ATTNC_RETURN_IF_ERROR(validateSpec(spec));
  const std::string canonical = spec.canonical();
  const std::string key = cacheKey(buildId, canonical);

  Result<CacheLookup> lookup = cache.lookup(key);
  if (!lookup.isOk() &&
      !(options.compiler && lookup.status().code() == ErrorCode::IoError))
    return lookup.status();
  // An unreadable cache (IoError) with a compiler in hand is a miss.
  if (!lookup.isOk())
    warn(options, "attnc: cannot read cache entry " + key + " (" +
                      lookup.status().message() + "); compiling");
  // Same key, different contents: a foreign or hand-edited entry.
  auto ours = [&](const CacheEntry &entry) {
    return entry.meta.spec == canonical && entry.meta.buildId == buildId;
  };
  CacheLookup found = lookup.isOk() ? std::move(lookup).value() : CacheLookup{};
  if (!found.problem.empty())
    warn(options, "attnc: cache entry " + key + " was damaged (" +
                      found.problem + "); removed it, rebuilding");
  if (found.entry) {
    if (ours(*found.entry))
      return ResolvedKernel{std::move(*found.entry), false};
    warn(options, "attnc: cache entry " + key +
                      " holds another spec or build id; removed it, "
                      "rebuilding");
    ATTNC_RETURN_IF_ERROR(cache.remove(key));
  }

  if (!options.compiler)
    return Status(ErrorCode::NotFound,
                  "no compiled kernel for spec '" + canonical + "' (key " +
                      key + ", build id " + buildId + ") in cache directory '" +
                      cache.root() +
                      "', and no compiler in this process; precompile it "
                      "with `attnc bundle`, or enable the JIT compiler "
                      "(libattnc_jit.so: attnc_jit_enable; Python does on "
                      "import)");

  // One build per key at a time across threads and processes: wait for a
  // concurrent build of the same key, then take its entry. Without the lock
  // (a read-only cache, silently: its publish warns; a holder past the
  // timeout, with a warning) the cost is duplicate work, not the kernel.
  Result<BuildLock> lock = cache.lockForBuild(
      key, buildLockTimeout(), [&](const std::string &m) { warn(options, m); });
  if (!lock.isOk() && lock.status().code() == ErrorCode::Unsupported)
    warn(options, lock.status().message() + "; building " + key +
                      " without waiting longer");
  if (lock.isOk()) {
    Result<CacheLookup> again = cache.lookup(key);
    if (again.isOk() && again->entry && ours(*again->entry))
      return ResolvedKernel{std::move(*again->entry), false};
  }

  Result<CompiledKernel> compiled = options.compiler->compile(spec);
  if (!compiled.isOk()) {
    Status error = compiled.status();
    return error.withContext("compiling '" + canonical + "'");
  }
  CompiledKernel kernel = std::move(compiled).value();
  if (!kernel.meta.spec.empty() && kernel.meta.spec != canonical)
    return Status(ErrorCode::CompileError,
                  "the compiler returned metadata for spec '" +
                      kernel.meta.spec + "' when asked for '" + canonical +
                      "'");
  if (!kernel.meta.buildId.empty() && kernel.meta.buildId != buildId)
    return Status(ErrorCode::CompileError,
                  "the compiler reports build id '" + kernel.meta.buildId +
                      "' but the runtime keys on '" + buildId + "'");
  kernel.meta.spec = canonical;
  kernel.meta.buildId = buildId;
  if (kernel.cubin.empty() && options.cubinLinker) {
    Result<std::string> cubin =
        options.cubinLinker->link(kernel.ptx, kernel.meta.arch);
    if (cubin.isOk())
      kernel.cubin = std::move(cubin).value();
    else
      warn(options,
           "attnc: no cubin for " + key +
               ", the driver will JIT the PTX: " + cubin.status().message());
  }
  Result<CacheEntry> published = cache.publish(key, kernel);
  if (published.isOk())
    return ResolvedKernel{std::move(published).value(), true};
  if (published.status().code() != ErrorCode::IoError)
    return published.status(); // bad metadata or PTX: the compiler's fault
  // The kernel is compiled and in hand: a cache that cannot keep it (full
  // disk, a pruner racing every publish) costs the next process a rebuild,
  // not this caller its kernel.
  warn(options, "attnc: could not cache " + key + " (" +
                    published.status().message() +
                    "); using the kernel uncached");
  CacheEntry entry;
  entry.key = key;
  entry.meta = std::move(kernel.meta);
  entry.ptx = std::move(kernel.ptx);
  entry.cubin = std::move(kernel.cubin);
  return ResolvedKernel{std::move(entry), true};
}

} // namespace attnc
