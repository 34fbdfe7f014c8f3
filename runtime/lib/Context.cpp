//===- Context.cpp - Runtime context, kernels and launches ----------------===//

#include "attnc/runtime/Context.h"

#include "attnc/runtime/Driver.h"
#include "attnc/runtime/NvJitLink.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace attnc {

namespace {

// Makes ctx current for the scope when it is not already; kernels and
// modules belong to one context and the caller's thread may have another.
class ScopedContext {
public:
  ScopedContext(const DriverApi &driver, CUcontext ctx) : driver_(driver) {
    CUcontext current = nullptr;
    driver_.cuCtxGetCurrent(&current);
    if (current != ctx) {
      result_ = driver_.cuCtxPushCurrent(ctx);
      pushed_ = result_ == CUDA_SUCCESS;
    }
  }
  ~ScopedContext() {
    if (pushed_) {
      CUcontext popped;
      driver_.cuCtxPopCurrent(&popped);
    }
  }
  CUresult result() const { return result_; }

private:
  const DriverApi &driver_;
  CUresult result_ = CUDA_SUCCESS;
  bool pushed_ = false;
};

struct ParsedArch {
  int major = 0;
  int minor = 0;
  bool archSpecific = false; // the "a" suffix: this exact device only
};

bool parseArch(const std::string &arch, ParsedArch &out) {
  if (arch.rfind("sm_", 0) != 0)
    return false;
  std::string digits = arch.substr(3);
  if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f')) {
    out.archSpecific = digits.back() == 'a';
    digits.pop_back();
  }
  if (digits.size() < 2)
    return false;
  for (char c : digits)
    if (c < '0' || c > '9')
      return false;
  out.major = std::stoi(digits.substr(0, digits.size() - 1));
  out.minor = digits.back() - '0';
  return true;
}

std::string ccText(int major, int minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

} // namespace

Status checkArchForDevice(const std::string &arch, int ccMajor, int ccMinor) {
  ParsedArch parsed;
  if (!parseArch(arch, parsed))
    return Status(ErrorCode::Unsupported, "cannot parse arch '" + arch + "'");
  if (parsed.archSpecific) {
    if (parsed.major != ccMajor || parsed.minor != ccMinor)
      return Status(ErrorCode::Unsupported,
                    "kernel built for " + arch +
                        " runs only on compute capability " +
                        ccText(parsed.major, parsed.minor) +
                        " devices; this device is " + ccText(ccMajor, ccMinor));
    return Status::ok();
  }
  if (ccMajor * 10 + ccMinor < parsed.major * 10 + parsed.minor)
    return Status(ErrorCode::Unsupported,
                  "kernel built for " + arch + " needs compute capability " +
                      ccText(parsed.major, parsed.minor) +
                      " or newer; this device is " + ccText(ccMajor, ccMinor));
  return Status::ok();
}

bool cubinRunsOn(const std::string &arch, int ccMajor, int ccMinor) {
  ParsedArch parsed;
  if (!parseArch(arch, parsed))
    return false;
  if (parsed.archSpecific)
    return parsed.major == ccMajor && parsed.minor == ccMinor;
  // SASS is compatible within a major version, with newer minors.
  return parsed.major == ccMajor && parsed.minor <= ccMinor;
}

Context::Context(ContextOptions options, const DriverApi *driver,
                 DiskCache cache)
    : options_(std::move(options)), driver_(driver), cache_(std::move(cache)) {
  buildId_ = options_.buildId.empty() ? defaultBuildId() : options_.buildId;
  compiler_ = defaultCompiler();
}

Result<std::unique_ptr<Context>> Context::create(ContextOptions options) {
  ATTNC_ASSIGN_OR_RETURN(const DriverApi *driver,
                         loadDriver(options.driverLibrary));
  std::string root = options.cacheDir;
  if (root.empty()) {
    ATTNC_ASSIGN_OR_RETURN(root, DiskCache::defaultRoot());
  }
  std::unique_ptr<Context> context(
      new Context(std::move(options), driver, DiskCache(root)));
  Context &c = *context;

  CUcontext current = nullptr;
  ATTNC_RETURN_IF_ERROR(
      driver->check(driver->cuCtxGetCurrent(&current), "cuCtxGetCurrent"));
  CUdevice device = 0;
  if (current) {
    c.ctx_ = current;
    ATTNC_RETURN_IF_ERROR(
        driver->check(driver->cuCtxGetDevice(&device), "cuCtxGetDevice"));
  } else {
    int count = 0;
    ATTNC_RETURN_IF_ERROR(
        driver->check(driver->cuDeviceGetCount(&count), "cuDeviceGetCount"));
    if (count == 0)
      return Status(ErrorCode::DriverError, "no CUDA device found");
    if (c.options_.device < 0 || c.options_.device >= count)
      return Status(ErrorCode::InvalidArgument,
                    "device " + std::to_string(c.options_.device) +
                        " does not exist (" + std::to_string(count) +
                        " CUDA devices)");
    ATTNC_RETURN_IF_ERROR(driver->check(
        driver->cuDeviceGet(&device, c.options_.device), "cuDeviceGet"));
    ATTNC_RETURN_IF_ERROR(
        driver->check(driver->cuDevicePrimaryCtxRetain(&c.ctx_, device),
                      "cuDevicePrimaryCtxRetain"));
    c.ownsPrimaryContext_ = true;
  }
  c.device_ = device;
  ATTNC_RETURN_IF_ERROR(driver->check(
      driver->cuDeviceGetAttribute(
          &c.ccMajor_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device),
      "cuDeviceGetAttribute"));
  ATTNC_RETURN_IF_ERROR(driver->check(
      driver->cuDeviceGetAttribute(
          &c.ccMinor_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device),
      "cuDeviceGetAttribute"));
  // The tuning database and the name its records use for this device.
  std::string dbPath = c.options_.tuningDb;
  if (dbPath.empty())
    if (const char *env = std::getenv("ATTNC_TUNING_DB"))
      dbPath = env;
  if (!dbPath.empty()) {
    Result<TuningDb> db = TuningDb::load(dbPath);
    if (!db.isOk())
      return Status(db.status())
          .withContext("tuning database" +
                       std::string(c.options_.tuningDb.empty()
                                       ? " ($ATTNC_TUNING_DB)"
                                       : ""));
    c.tuningDb_ = std::move(db).value();
  }
  c.gpuName_ = c.options_.gpuName;
  if (c.gpuName_.empty() && driver->cuDeviceGetName) {
    char name[256] = {0};
    if (driver->cuDeviceGetName(name, sizeof(name) - 1, device) == CUDA_SUCCESS)
      c.gpuName_ = name;
  }
  const char *logEnv = std::getenv("ATTNC_LOG_TUNING");
  c.logTuning_ =
      c.options_.logTuning || (logEnv && *logEnv && std::string(logEnv) != "0");
  // Decode's split heuristic and the persistent attention grid read it; a
  // driver that does not say leaves their fallbacks (0: unknown).
  if (driver->cuDeviceGetAttribute(&c.smCount_,
                                   CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                   device) != CUDA_SUCCESS)
    c.smCount_ = 0;
  return context;
}

Context::~Context() {
  if (!byKey_.empty()) {
    ScopedContext scope(*driver_, ctx_);
    for (auto &[key, kernel] : byKey_)
      driver_->cuModuleUnload(kernel->module_);
  }
  if (ownsPrimaryContext_)
    driver_->cuDevicePrimaryCtxRelease(device_);
}

void Context::warn(const std::string &message) const {
  if (options_.log)
    options_.log(message);
  else
    std::fprintf(stderr, "%s\n", message.c_str());
}

void Context::warnOnce(const std::string &line) {
  bool first;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    first = loggedChoices_.insert(line).second;
  }
  if (first)
    warn(line);
}

void Context::setCompiler(std::shared_ptr<KernelCompiler> compiler) {
  std::lock_guard<std::mutex> lock(mutex_);
  compiler_ = std::move(compiler);
  missingVariants_.clear(); // compilable now
}

Result<CUmodule> Context::loadImage(const void *image, const char *what) const {
  ScopedContext scope(*driver_, ctx_);
  ATTNC_RETURN_IF_ERROR(driver_->check(scope.result(), "cuCtxPushCurrent"));
  // The JIT's error log is what tells a user why PTX did not assemble.
  char errorLog[16384] = {0};
  CUjit_option keys[] = {CU_JIT_ERROR_LOG_BUFFER,
                         CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {errorLog, reinterpret_cast<void *>(sizeof(errorLog))};
  CUmodule module = nullptr;
  CUresult result =
      driver_->cuModuleLoadDataEx(&module, image, 2, keys, values);
  if (result != CUDA_SUCCESS) {
    Status error = driver_->check(result, std::string("cuModuleLoadDataEx (") +
                                              what + ")");
    errorLog[sizeof(errorLog) - 1] = '\0';
    std::string log = errorLog;
    while (!log.empty() && (log.back() == '\n' || log.back() == ' '))
      log.pop_back();
    return Status(error.code(),
                  error.message() + (log.empty() ? "; the JIT left no log"
                                                 : "; JIT log:\n" + log));
  }
  return module;
}

Result<CUmodule> Context::loadPtx(std::string_view ptx) const {
  std::string text(ptx); // the driver needs a NUL-terminated image
  return loadImage(text.c_str(), "PTX");
}

Result<CUmodule> Context::loadCubin(std::string_view cubin) const {
  return loadImage(cubin.data(), "cubin");
}

void Context::unloadModule(CUmodule module) const {
  ScopedContext scope(*driver_, ctx_);
  driver_->cuModuleUnload(module);
}

Result<std::unique_ptr<Kernel>> Context::loadKernel(const KernelSpec &spec,
                                                    ResolvedKernel resolved) {
  CacheEntry &entry = resolved.entry;
  auto kernel = std::make_unique<Kernel>();
  kernel->spec_ = spec;
  kernel->key_ = entry.key;
  kernel->compiledHere_ = resolved.compiled;
  kernel->meta_ = std::move(entry.meta);
  const KernelMetadata &meta = kernel->meta_;
  auto context = [&](Status status) {
    return status.withContext("kernel '" + meta.entry + "' (cache entry " +
                              entry.dir + ")");
  };

  if (meta.arch != spec.arch)
    return context(Status(ErrorCode::CacheCorrupt,
                          "metadata arch " + meta.arch +
                              " differs from the spec's " + spec.arch));
  const bool decode = spec.op == "decode";
  if (isElementwiseOp(spec.op)) {
    if (meta.gridRule != abi::kGridRuleRowwise || meta.blockM < 1)
      return context(
          Status(ErrorCode::Unsupported,
                 "op " + spec.op + " needs grid rule " + abi::kGridRuleRowwise +
                     " with block_m >= 1; metadata has '" + meta.gridRule +
                     "', block_m " + std::to_string(meta.blockM)));
    Result<std::vector<RowParamSlot>> plan = planRowParams(spec, meta.params);
    if (!plan.isOk())
      return context(plan.status());
    kernel->rowPlan_ = std::move(plan).value();
  } else if (spec.op == "kv_append" || spec.op == "lse_merge") {
    // Fixed contracts (CacheOps.h), packed in order.
    const bool append = spec.op == "kv_append";
    const char *rule = append ? abi::kGridRuleKVAppend : abi::kGridRuleLseMerge;
    if (meta.gridRule != rule ||
        meta.params != (append ? kvAppendV1Params() : lseMergeV1Params()) ||
        meta.blockM < 1)
      return context(Status(ErrorCode::Unsupported,
                            "op " + spec.op + " needs grid rule " + rule +
                                ", its parameter list and block_m >= 1; "
                                "metadata has '" +
                                meta.gridRule + "'"));
  } else if (decode) {
    // Decode's parameters are a fixed contract (Decode.h), packed in order.
    if (meta.gridRule != abi::kGridRuleDecodeSplit ||
        meta.params != decodeSplitV1Params())
      return context(Status(ErrorCode::Unsupported,
                            "op decode needs grid rule " +
                                std::string(abi::kGridRuleDecodeSplit) +
                                " and its parameter list; metadata has '" +
                                meta.gridRule + "'"));
  } else {
    // One program per item or persistent programs: the same parameters.
    if (!abi::isAttentionFwdGridRule(meta.gridRule) || meta.blockM < 1)
      return context(Status(
          ErrorCode::Unsupported,
          "op " + spec.op + " needs grid rule " + abi::kGridRuleAttentionFwd +
              " or " + abi::kGridRuleAttentionFwdPersistent +
              " with block_m >= 1; metadata has '" + meta.gridRule +
              "', block_m " + std::to_string(meta.blockM)));
    Result<std::vector<ParamSlot>> plan = planAttentionParams(meta.params);
    if (!plan.isOk())
      return context(plan.status());
    kernel->plan_ = std::move(plan).value();
  }

  if (!entry.cubin.empty() && cubinRunsOn(meta.arch, ccMajor_, ccMinor_)) {
    Result<CUmodule> module = loadCubin(entry.cubin);
    if (module.isOk()) {
      kernel->module_ = *module;
      kernel->fromCubin_ = true;
    } else {
      warn("attnc: cached cubin of " + entry.key +
           " did not load, JIT-compiling the PTX instead: " +
           module.status().message());
    }
  }
  if (!kernel->module_) {
    Result<CUmodule> module = loadPtx(entry.ptx);
    if (!module.isOk())
      return context(module.status());
    kernel->module_ = *module;
  }

  auto fail = [&](Status status) {
    unloadModule(kernel->module_);
    return context(std::move(status));
  };
  ScopedContext scope(*driver_, ctx_);
  CUresult result = driver_->cuModuleGetFunction(
      &kernel->function_, kernel->module_, meta.entry.c_str());
  if (result != CUDA_SUCCESS)
    return fail(driver_->check(result, "cuModuleGetFunction"));
  if (decode) {
    result = driver_->cuModuleGetFunction(&kernel->combine_, kernel->module_,
                                          abi::kDecodeCombineEntry);
    if (result != CUDA_SUCCESS)
      return fail(driver_->check(
          result, "cuModuleGetFunction(" +
                      std::string(abi::kDecodeCombineEntry) + ")"));
  }
  // A kernel opts in to its dynamic shared memory, once: above 48 KiB it
  // must, and at exactly 48 KiB so must it when it has any static shared
  // memory too (the limit counts both).
  if (meta.dynamicSmem > 0) {
    result = driver_->cuFuncSetAttribute(
        kernel->function_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        static_cast<int>(meta.dynamicSmem));
    if (result != CUDA_SUCCESS)
      return fail(driver_->check(
          result, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, " +
                      std::to_string(meta.dynamicSmem) + ")"));
  }
  // Decode: many small programs per SM, each with its K/V tiles in shared
  // memory and read through cp.async.cg (L2 only, so L1 is not needed):
  // ask for the largest shared-memory carveout, which decodeResidentPerSm
  // assumes. Only a preference: a driver that declines it is no error.
  if (decode)
    (void)driver_->cuFuncSetAttribute(
        kernel->function_, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
        CU_SHAREDMEM_CARVEOUT_MAX_SHARED);
  if (decode && driver_->cuFuncGetAttribute) {
    int regs = 0, staticSmem = 0;
    if (driver_->cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS,
                                    kernel->function_) == CUDA_SUCCESS &&
        driver_->cuFuncGetAttribute(&staticSmem,
                                    CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                                    kernel->function_) == CUDA_SUCCESS)
      kernel->decodeResidentPerSm_ = attnc::decodeResidentPerSm(
          regs, int(meta.block[0]), meta.dynamicSmem + staticSmem);
  }
  return kernel;
}

Result<const Kernel *> Context::getKernel(const KernelSpec &requested) {
  const KernelSpec *spec = &requested;
  KernelSpec normalized;
  // NaN means "default scale"; keep it out of the map (NaN != NaN).
  if (requested.scale && std::isnan(*requested.scale)) {
    normalized = requested;
    normalized.scale.reset();
    spec = &normalized;
  }

  std::unique_lock<std::mutex> lock(mutex_);
  if (auto hit = bySpec_.find(*spec); hit != bySpec_.end())
    return hit->second;

  ATTNC_RETURN_IF_ERROR(validateSpec(*spec));
  ATTNC_RETURN_IF_ERROR(checkArchForDevice(spec->arch, ccMajor_, ccMinor_));
  std::string key = cacheKey(buildId_, spec->canonical());
  // Equivalent specs (an explicit default scale) share one loaded kernel;
  // a key another thread is resolving is waited for, not resolved twice
  // (when that thread fails, this one tries itself).
  for (;;) {
    if (auto loaded = byKey_.find(key); loaded != byKey_.end()) {
      bySpec_.emplace(*spec, loaded->second.get());
      return static_cast<const Kernel *>(loaded->second.get());
    }
    if (!loading_.count(key))
      break;
    loaded_.wait(lock);
  }
  loading_.insert(key);
  std::shared_ptr<KernelCompiler> compiler = compiler_; // kept alive
  lock.unlock();
  // However this ends (a result, an error, an exception from a compiler
  // or a log callback), the key stops loading and its waiters wake.
  struct LoadingDone {
    std::unique_lock<std::mutex> &lock;
    std::set<std::string> &loading;
    std::condition_variable &loaded;
    const std::string &key;
    ~LoadingDone() {
      if (!lock.owns_lock())
        lock.lock();
      loading.erase(key);
      loaded.notify_all();
    }
  } done{lock, loading_, loaded_, key};

  // Outside mutex_: the disk cache, the compiler (one call at a time) and
  // the driver's module load take milliseconds to seconds.
  struct SerialCompiler final : KernelCompiler {
    KernelCompiler *inner;
    std::mutex *calls;
    Result<CompiledKernel> compile(const KernelSpec &s) override {
      std::lock_guard<std::mutex> one(*calls);
      return inner->compile(s);
    }
  } serial;
  serial.inner = compiler.get();
  serial.calls = &compileMutex_;
  ResolveOptions resolveOptions;
  resolveOptions.compiler = compiler ? &serial : nullptr;
  if (options_.linkCubin) {
    Result<const CubinLinker *> linker = CubinLinker::load();
    if (linker.isOk())
      resolveOptions.cubinLinker = *linker;
  }
  resolveOptions.log = [this](const std::string &message) { warn(message); };
  Result<std::unique_ptr<Kernel>> kernel =
      [&]() -> Result<std::unique_ptr<Kernel>> {
    ATTNC_ASSIGN_OR_RETURN(
        ResolvedKernel resolved,
        resolveKernel(cache_, *spec, buildId_, resolveOptions));
    return loadKernel(*spec, std::move(resolved));
  }();

  lock.lock();
  if (!kernel.isOk())
    return kernel.status();
  const Kernel *result = kernel->get();
  byKey_.emplace(key, std::move(*kernel));
  bySpec_.emplace(*spec, result);
  return result;
}

TuningChoice Context::chooseTuning(const KernelSpec &spec,
                                   const ProblemSize &size) const {
  return attnc::chooseTuning(tuningDb(), gpuName_, spec, size, smCount_);
}

Result<const Kernel *> Context::getKernelFor(const KernelSpec &spec,
                                             const ProblemSize &size,
                                             TuningChoice *out) {
  TuningChoice choice = chooseTuning(spec, size);
  KernelSpec tuned = spec;
  if (choice.fromDatabase || choice.fromSizeRule)
    tuned.tuning = choice.tuning;
  if (logTuning_) {
    std::string line = "attnc: tuning of " + untunedSpecKey(spec) + " for " +
                       problemBucket(size) + ": " +
                       writeJson(tuningToJson(choice.tuning), -1) +
                       (choice.decodeSplits > 0
                            ? " splits " + std::to_string(choice.decodeSplits)
                            : "") +
                       " (" + choice.why + ")";
    warnOnce(line);
  }
  // A chosen variant that is neither cached nor compilable (a bundle made
  // without it, no compiler in this process, or a compiler that refuses or
  // fails on it): the spec's own kernel, which is correct for every size,
  // rather than no kernel. Found missing once, it is not looked up again.
  bool knownMissing = false;
  if (!(tuned == spec)) {
    std::lock_guard<std::mutex> lock(mutex_);
    knownMissing = missingVariants_.count(tuned) != 0;
  }
  Result<const Kernel *> kernel =
      knownMissing ? getKernel(spec) : getKernel(tuned);
  const bool notBuildable =
      !kernel.isOk() && (kernel.status().code() == ErrorCode::NotFound ||
                         kernel.status().code() == ErrorCode::CompileError ||
                         kernel.status().code() == ErrorCode::Unsupported);
  if (!knownMissing && notBuildable && !(tuned == spec)) {
    Result<const Kernel *> own = getKernel(spec);
    if (own.isOk()) {
      warnOnce("attnc: the tuned variant of " + untunedSpecKey(spec) +
               " is not compiled (" + kernel.status().message() +
               "); using the spec's own kernel");
      {
        std::lock_guard<std::mutex> lock(mutex_);
        missingVariants_.insert(tuned);
      }
      knownMissing = true;
      kernel = own;
    }
  }
  if (knownMissing) {
    choice.tuning = spec.tuning;
    choice.fromDatabase = choice.fromSizeRule = false;
    choice.decodeSplits = 0;
    choice.why += "; that variant is not compiled: the spec's own kernel";
  }
  if (out)
    *out = choice;
  return kernel;
}

// The persistent grid's cap: the options' block count when set (tests
// with a few blocks), else the device's SMs.
static int persistentGridCap(int persistentBlocks, int smCount) {
  return persistentBlocks > 0 ? persistentBlocks : smCount;
}

Status Context::launch(const Kernel &kernel, const AttentionArgs &args,
                       CUstream stream) const {
  if (kernel.combine_)
    return Status(ErrorCode::InvalidArgument,
                  "kernel " + kernel.meta_.entry +
                      " is a decode kernel: launch it with launchDecode");
  if (isElementwiseOp(kernel.spec_.op))
    return Status(ErrorCode::InvalidArgument,
                  "kernel of op " + kernel.spec_.op +
                      " takes row arguments, not attention arguments");
  if (kernel.spec_.op == "kv_append" || kernel.spec_.op == "lse_merge")
    return Status(ErrorCode::InvalidArgument,
                  "kernel of op " + kernel.spec_.op + " is launched with " +
                      (kernel.spec_.op == "kv_append" ? "launchKVAppend"
                                                      : "launchMerge"));
  ATTNC_RETURN_IF_ERROR(validateAttentionArgs(kernel.spec_, args));
  ATTNC_RETURN_IF_ERROR(
      validateCaptures(kernel.meta_.captures, kernel.spec_, args));
  ATTNC_RETURN_IF_ERROR(
      validateKVBounds(std::any_of(kernel.plan_.begin(), kernel.plan_.end(),
                                   [](const ParamSlot &s) {
                                     return s.source == ParamSource::KvBounds;
                                   }),
                       kernel.spec_, args));
  // A varlen batch without sequences or query rows writes nothing.
  if (kernel.spec_.varlen && (args.varlenBatch == 0 || args.maxSeqlenQ == 0))
    return Status::ok();
  ATTNC_ASSIGN_OR_RETURN(
      LaunchGeometry geometry,
      attentionGeometry(
          kernel.meta_, args,
          persistentGridCap(options_.persistentBlocks, smCount_)));
  ATTNC_RETURN_IF_ERROR(checkAttentionWorkspace(
      args, attentionWorkspaceBytes(kernel.plan_, kernel.meta_, kernel.spec_,
                                    geometry)));
  PackedParams packed;
  ATTNC_RETURN_IF_ERROR(packAttentionParams(
      kernel.plan_, kernel.spec_, args, packed, driver_,
      attentionStreamKSchedule(kernel.plan_, kernel.meta_, args, geometry)));
  ScopedContext scope(*driver_, ctx_);
  if (scope.result() != CUDA_SUCCESS)
    return driver_->check(scope.result(), "cuCtxPushCurrent");
  CUresult result = driver_->cuLaunchKernel(
      kernel.function_, geometry.grid[0], geometry.grid[1], geometry.grid[2],
      geometry.block[0], geometry.block[1], geometry.block[2],
      geometry.dynamicSmem, stream, packed.pointers, nullptr);
  if (result != CUDA_SUCCESS) // build the message only on failure
    return driver_->check(result, "cuLaunchKernel(" + kernel.meta_.entry + ")");
  return Status::ok();
}

Status Context::launch(const Kernel &kernel, const RowArgs &args,
                       CUstream stream) const {
  if (!isElementwiseOp(kernel.spec_.op))
    return Status(ErrorCode::InvalidArgument,
                  "kernel of op " + kernel.spec_.op +
                      " takes attention arguments, not row arguments");
  ATTNC_RETURN_IF_ERROR(validateRowArgs(kernel.spec_, args));
  if (args.rows == 0)
    return Status::ok();
  ATTNC_ASSIGN_OR_RETURN(LaunchGeometry geometry,
                         rowGeometry(kernel.meta_, args));
  PackedParams packed;
  ATTNC_RETURN_IF_ERROR(packRowParams(kernel.rowPlan_, args, packed));
  ScopedContext scope(*driver_, ctx_);
  if (scope.result() != CUDA_SUCCESS)
    return driver_->check(scope.result(), "cuCtxPushCurrent");
  CUresult result = driver_->cuLaunchKernel(
      kernel.function_, geometry.grid[0], geometry.grid[1], geometry.grid[2],
      geometry.block[0], geometry.block[1], geometry.block[2],
      geometry.dynamicSmem, stream, packed.pointers, nullptr);
  if (result != CUDA_SUCCESS)
    return driver_->check(result, "cuLaunchKernel(" + kernel.meta_.entry + ")");
  return Status::ok();
}

Result<size_t> Context::workspaceSize(const Kernel &kernel,
                                      const AttentionArgs &args) const {
  if (kernel.combine_ || !abi::isAttentionFwdGridRule(kernel.meta_.gridRule))
    return size_t(0);
  ATTNC_RETURN_IF_ERROR(validateAttentionArgs(kernel.spec_, args));
  if (kernel.spec_.varlen) // varlen kernels have no stream-K tail
    return size_t(0);
  ATTNC_ASSIGN_OR_RETURN(
      LaunchGeometry geometry,
      attentionGeometry(
          kernel.meta_, args,
          persistentGridCap(options_.persistentBlocks, smCount_)));
  return attentionWorkspaceBytes(kernel.plan_, kernel.meta_, kernel.spec_,
                                 geometry);
}

Result<size_t> Context::decodeWorkspaceSize(const Kernel &kernel,
                                            const DecodeArgs &args) const {
  if (!kernel.combine_)
    return Status(ErrorCode::InvalidArgument,
                  "kernel " + kernel.meta_.entry + " is not a decode kernel");
  if (args.q.shape[0] < 1 || args.q.shape[2] < 1)
    return Status(ErrorCode::InvalidArgument,
                  "decode workspace size: q's batch and seq_q must be >= 1");
  int64_t splits = decodeSplitsFor(kernel.spec_, kernel.meta_, args, smCount_,
                                   kernel.decodeResidentPerSm_);
  return decodeWorkspaceBytes(kernel.spec_, args.q.shape[0], args.q.shape[2],
                              splits);
}

Status Context::launchKVAppend(const Kernel &kernel, const KVAppendArgs &args,
                               CUstream stream) const {
  if (kernel.spec_.op != "kv_append")
    return Status(ErrorCode::InvalidArgument, "kernel of op " +
                                                  kernel.spec_.op +
                                                  " is not a kv_append kernel");
  ATTNC_RETURN_IF_ERROR(validateKVAppendArgs(kernel.spec_, args));
  if (args.key.shape[0] == 0)
    return Status::ok();
  PackedParams packed;
  LaunchGeometry g;
  ATTNC_RETURN_IF_ERROR(
      planKVAppendLaunch(kernel.spec_, kernel.meta_, args, packed, g));
  ScopedContext scope(*driver_, ctx_);
  if (scope.result() != CUDA_SUCCESS)
    return driver_->check(scope.result(), "cuCtxPushCurrent");
  CUresult result = driver_->cuLaunchKernel(
      kernel.function_, g.grid[0], g.grid[1], g.grid[2], g.block[0], g.block[1],
      g.block[2], g.dynamicSmem, stream, packed.pointers, nullptr);
  if (result != CUDA_SUCCESS)
    return driver_->check(result, "cuLaunchKernel(" + kernel.meta_.entry + ")");
  return Status::ok();
}

Status Context::launchMerge(const Kernel &kernel, const MergeArgs &args,
                            CUstream stream) const {
  if (kernel.spec_.op != "lse_merge")
    return Status(ErrorCode::InvalidArgument,
                  "kernel of op " + kernel.spec_.op +
                      " is not an lse_merge kernel");
  ATTNC_RETURN_IF_ERROR(validateMergeArgs(kernel.spec_, args));
  PackedParams packed;
  LaunchGeometry g;
  ATTNC_RETURN_IF_ERROR(
      planMergeLaunch(kernel.spec_, kernel.meta_, args, packed, g));
  ScopedContext scope(*driver_, ctx_);
  if (scope.result() != CUDA_SUCCESS)
    return driver_->check(scope.result(), "cuCtxPushCurrent");
  CUresult result = driver_->cuLaunchKernel(
      kernel.function_, g.grid[0], g.grid[1], g.grid[2], g.block[0], g.block[1],
      g.block[2], g.dynamicSmem, stream, packed.pointers, nullptr);
  if (result != CUDA_SUCCESS)
    return driver_->check(result, "cuLaunchKernel(" + kernel.meta_.entry + ")");
  return Status::ok();
}

Status Context::launchDecode(const Kernel &kernel, const DecodeArgs &args,
                             CUstream stream) const {
  if (!kernel.combine_)
    return Status(ErrorCode::InvalidArgument,
                  "kernel " + kernel.meta_.entry +
                      " is not a decode kernel: launch it with launch()");
  ATTNC_RETURN_IF_ERROR(validateDecodeArgs(kernel.spec_, args));
  DecodeLaunchPlan plan;
  ATTNC_RETURN_IF_ERROR(
      planDecodeLaunch(kernel.spec_, kernel.meta_, args, smCount_, plan,
                       kernel.decodeResidentPerSm_, nextDecodeMergeTicket()));
  ScopedContext scope(*driver_, ctx_);
  if (scope.result() != CUDA_SUCCESS)
    return driver_->check(scope.result(), "cuCtxPushCurrent");
  const LaunchGeometry &g = plan.splitGeometry;
  CUresult result = driver_->cuLaunchKernel(
      kernel.function_, g.grid[0], g.grid[1], g.grid[2], g.block[0], g.block[1],
      g.block[2], g.dynamicSmem, stream, plan.split.pointers, nullptr);
  if (result != CUDA_SUCCESS)
    return driver_->check(result, "cuLaunchKernel(" + kernel.meta_.entry + ")");
  if (!plan.runCombine())
    return Status::ok();
  const LaunchGeometry &c = plan.combineGeometry;
  result = driver_->cuLaunchKernel(
      kernel.combine_, c.grid[0], c.grid[1], c.grid[2], c.block[0], c.block[1],
      c.block[2], 0, stream, plan.combine.pointers, nullptr);
  if (result != CUDA_SUCCESS)
    return driver_->check(result, "cuLaunchKernel(decode_combine)");
  return Status::ok();
}

} // namespace attnc
