//===- Context.h - Runtime context, kernels and launches --------*- C++ -*-===//
//
// A Context binds the runtime to one CUDA context (the caller's current one,
// else the device's primary context), one disk cache and an optional
// compiler. getKernel(spec) returns a loaded kernel: from memory (a repeated
// lookup costs well under a microsecond), else from the disk cache, else
// compiled. launch() validates and enqueues on the caller's stream without
// allocating or synchronising, so it can be captured into a CUDA graph.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_CONTEXT_H
#define ATTNC_RUNTIME_CONTEXT_H

#include "attnc/runtime/CacheOps.h"
#include "attnc/runtime/Compiler.h"
#include "attnc/runtime/Decode.h"
#include "attnc/runtime/DiskCache.h"
#include "attnc/runtime/Launch.h"
#include "attnc/runtime/Resolve.h"
#include "attnc/runtime/RowLaunch.h"
#include "attnc/runtime/Spec.h"
#include "attnc/runtime/Status.h"
#include "attnc/runtime/TuningDb.h"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

// Opaque driver handles, declared as cuda.h does, so this header does not
// need the CUDA toolkit.
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;

namespace attnc {

struct DriverApi;

struct ContextOptions {
  std::string cacheDir;                       // empty: DiskCache::defaultRoot()
  std::string driverLibrary = "libcuda.so.1"; // tests point this elsewhere
  int device = 0;      // used only when no CUDA context is current
  std::string buildId; // empty: defaultBuildId()
  // On a compile, also produce a cubin with nvJitLink (when it loads) and
  // cache it beside the PTX.
  bool linkCubin = true;
  // Warnings; empty: write them to stderr. Called from the thread that
  // met the warning, so from several threads at once where the Context is
  // shared (kernels load outside its lock).
  LogFn log;
  // Tuning database (TuningDb.h) that getKernelFor consults: a path; empty:
  // $ATTNC_TUNING_DB when set, else none. A file that does not load is an
  // error of create().
  std::string tuningDb;
  // The device name database records are matched on; empty: the driver's
  // (e.g. "NVIDIA H200").
  std::string gpuName;
  // Log each tuning choice (once per spec and problem bucket) through `log`;
  // also on when $ATTNC_LOG_TUNING is set to anything but "0".
  bool logTuning = false;
  // Persistent attention kernels (grid rule attention_fwd_persistent_v1):
  // launch at most this many blocks (0: the SM count). Any count is
  // correct; tests launch a few so that each block loops over many items.
  int persistentBlocks = 0;
};

class Kernel {
public:
  const KernelSpec &spec() const { return spec_; }
  const KernelMetadata &metadata() const { return meta_; }
  const std::string &key() const { return key_; }
  CUfunction function() const { return function_; }
  // Op "decode": the combine kernel of the same module (else null).
  CUfunction combineFunction() const { return combine_; }
  // Op "decode": split-kernel programs resident per SM (from its registers
  // and shared memory at load time; 0 when the driver could not say), the
  // slots the automatic split count fills.
  int decodeResidentPerSm() const { return decodeResidentPerSm_; }
  CUmodule module() const { return module_; }
  // True when the cached cubin was loaded, false when the driver JIT-ed PTX.
  bool loadedFromCubin() const { return fromCubin_; }
  // True when this process compiled it (a disk-cache miss).
  bool compiledHere() const { return compiledHere_; }

private:
  friend class Context;
  KernelSpec spec_;
  KernelMetadata meta_;
  std::string key_;
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
  CUfunction combine_ = nullptr;
  int decodeResidentPerSm_ = 0;
  bool fromCubin_ = false;
  bool compiledHere_ = false;
  std::vector<ParamSlot> plan_;
  std::vector<RowParamSlot> rowPlan_; // row kernels (rowwise_v1)
  bool takesKVBounds_ = false;        // plan_ has the kv_bounds slot
};

class Context {
public:
  // When a CUDA context is current on the calling thread it is used (and
  // must outlive this Context); otherwise the device's primary context is
  // retained until destruction. Without a driver: DriverNotFound "CUDA
  // driver not found (libcuda.so.1): ...".
  static Result<std::unique_ptr<Context>> create(ContextOptions options = {});
  ~Context();
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;

  // The compiler used on a miss; defaults to defaultCompiler() at creation.
  void setCompiler(std::shared_ptr<KernelCompiler> compiler);

  // Thread-safe; a miss compiles under the context's lock, so concurrent
  // misses are serialised. The kernel lives as long as the Context.
  Result<const Kernel *> getKernel(const KernelSpec &spec);

  // The configuration a launch of `spec` on a problem of `size` takes: the
  // spec's own tuning when it names one; else the tuning database's entry
  // for this GPU, arch, spec and size bucket; else the compiler's default
  // (heuristicTuning), with the reason in `why`.
  TuningChoice chooseTuning(const KernelSpec &spec,
                            const ProblemSize &size) const;

  // getKernel for that choice: a database entry becomes the spec's tuning
  // (so it is part of the cache key); the default leaves the spec as it is.
  // `choice` (optional) receives the choice; pass its decodeSplits on as
  // DecodeArgs::numSplits.
  Result<const Kernel *> getKernelFor(const KernelSpec &spec,
                                      const ProblemSize &size,
                                      TuningChoice *choice = nullptr);

  // The device name tuning records are matched on, and the database (null
  // when none was given).
  const std::string &gpuName() const { return gpuName_; }
  const TuningDb *tuningDb() const { return tuningDb_ ? &*tuningDb_ : nullptr; }

  // Validates `args` against the kernel's spec, then enqueues the kernel on
  // `stream`. Thread-safe; no allocation, no synchronisation.
  Status launch(const Kernel &kernel, const AttentionArgs &args,
                CUstream stream) const;

  // The same for a fused elementwise kernel (RowLaunch.h). rows == 0
  // launches nothing.
  Status launch(const Kernel &kernel, const RowArgs &args,
                CUstream stream) const;

  // Bytes of workspace a launch with these arguments can take: the stream-K
  // tail's of a persistent kernel over items of equal KV length (Launch.h,
  // abi::streamKWorkspaceLayout; it depends on the grid, so on the sizes and
  // this device's SMs), 0 for every other kernel. The workspace is optional:
  // without one the kernel runs its last round as whole items. It must be
  // zeroed once before its first use; launches leave it zeroed. Launches
  // that may run at the same time need workspaces of their own.
  Result<size_t> workspaceSize(const Kernel &kernel,
                               const AttentionArgs &args) const;

  // Op "decode" (Decode.h): validates, then enqueues the split kernel and
  // the combine back to back on `stream`; no allocation, no
  // synchronisation. The workspace comes from the caller: its size for
  // these arguments (and the split count they give) is
  // decodeWorkspaceSize.
  Status launchDecode(const Kernel &kernel, const DecodeArgs &args,
                      CUstream stream) const;
  Result<size_t> decodeWorkspaceSize(const Kernel &kernel,
                                     const DecodeArgs &args) const;
  // Op "kv_append" (CacheOps.h): validates, then writes the new K/V rows
  // into the paged cache in place on `stream` (tokens == 0: nothing).
  Status launchKVAppend(const Kernel &kernel, const KVAppendArgs &args,
                        CUstream stream) const;
  // Op "lse_merge" (CacheOps.h): validates, then merges two (O, LSE)
  // results over disjoint keys on `stream`.
  Status launchMerge(const Kernel &kernel, const MergeArgs &args,
                     CUstream stream) const;
  // Streaming multiprocessors of the device (0 if the driver did not say).
  int smCount() const { return smCount_; }

  // Low-level module loading (tests, tools). The error of a failed PTX JIT
  // includes the driver's log. Unload with unloadModule.
  Result<CUmodule> loadPtx(std::string_view ptx) const;
  Result<CUmodule> loadCubin(std::string_view cubin) const;
  void unloadModule(CUmodule module) const;

  const DriverApi &driver() const { return *driver_; }
  CUcontext cuContext() const { return ctx_; }
  int device() const { return device_; }
  // e.g. 90 for an sm_90 device.
  int computeCapability() const { return ccMajor_ * 10 + ccMinor_; }
  const std::string &buildId() const { return buildId_; }
  DiskCache &diskCache() { return cache_; }
  const std::string &cacheDir() const { return cache_.root(); }

private:
  Context(ContextOptions options, const DriverApi *driver, DiskCache cache);
  Result<CUmodule> loadImage(const void *image, const char *what) const;
  Result<std::unique_ptr<Kernel>> loadKernel(const KernelSpec &spec,
                                             ResolvedKernel resolved);
  void warn(const std::string &message) const;
  /// warn(line) the first time this context sees `line`.
  void warnOnce(const std::string &line);

  ContextOptions options_;
  const DriverApi *driver_;
  DiskCache cache_;
  std::string buildId_;
  CUcontext ctx_ = nullptr;
  int device_ = 0;
  bool ownsPrimaryContext_ = false;
  int ccMajor_ = 0;
  int ccMinor_ = 0;
  int smCount_ = 0;

  std::mutex mutex_; // guards the maps and the compiler
  std::shared_ptr<KernelCompiler> compiler_;
  std::unordered_map<std::string, std::unique_ptr<Kernel>> byKey_;
  std::unordered_map<KernelSpec, const Kernel *, KernelSpecHash> bySpec_;
  // Cache keys being resolved (read from disk or compiled) and loaded
  // outside mutex_, so that lookups of loaded kernels never wait behind a
  // compile; a second caller of such a key waits on `loaded_` (one compile
  // per key). Guarded by mutex_.
  std::set<std::string> loading_;
  std::condition_variable loaded_;
  // Serialises the compiler's calls (KernelCompiler's contract), not held
  // with mutex_.
  std::mutex compileMutex_;

  std::optional<TuningDb> tuningDb_;
  std::string gpuName_;
  bool logTuning_ = false;
  std::set<std::string> loggedChoices_; // guarded by mutex_
  // Tuned variants getKernelFor found neither cached nor compilable (it
  // loads the spec's own kernel instead, without another cache lookup);
  // guarded by mutex_, forgotten when a compiler is set.
  std::unordered_set<KernelSpec, KernelSpecHash> missingVariants_;
};

// Whether a kernel built for `arch` ("sm_80", "sm_90a") can run on a device
// of compute capability major.minor: from PTX (JIT) or from a cubin.
Status checkArchForDevice(const std::string &arch, int ccMajor, int ccMinor);
bool cubinRunsOn(const std::string &arch, int ccMajor, int ccMinor);

} // namespace attnc

#endif // ATTNC_RUNTIME_CONTEXT_H
