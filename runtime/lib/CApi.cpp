//===- CApi.cpp - C ABI over the C++ runtime ------------------------------===//
//
// Thin adapters: convert C structs, call the C++ API, turn Status into a
// code plus a thread-local message, and catch anything thrown (bad_alloc)
// so no exception crosses into C.
//
//===----------------------------------------------------------------------===//

#include "attnc/attnc.h"

#include "attnc/runtime/BuildId.h"
#include "attnc/runtime/Context.h"
#include "attnc/runtime/DiskCache.h"
#include "attnc/runtime/JitLoader.h"
#include "attnc/runtime/Json.h"
#include "attnc/runtime/Resolve.h"
#include "attnc/runtime/TuningDb.h"

#include <cmath>
#include <cstdio>
#include <exception>
#include <mutex>
#include <string>

struct attnc_context {
  std::unique_ptr<attnc::Context> impl;
};

namespace {

thread_local std::string lastError;
thread_local std::string defaultDirText;
thread_local std::string jitInfoCopy;

std::mutex &jitInfoMutex() {
  static std::mutex mutex;
  return mutex;
}
// What attnc_jit_enable loaded last (process-wide, like the compiler).
std::string &jitInfo() {
  static std::string info;
  return info;
}

attnc_status fail(const attnc::Status &status) {
  lastError = status.message();
  return static_cast<attnc_status>(status.code());
}

attnc_status fail(attnc_status code, const std::string &message) {
  lastError = message;
  return code;
}

attnc_status report(const attnc::Status &status) {
  return status.isOk() ? ATTNC_OK : fail(status);
}

/// The spec of a C caller's JSON text (parse errors and spec errors alike).
attnc::Result<attnc::KernelSpec> specFromJsonText(const char *text) {
  ATTNC_ASSIGN_OR_RETURN(attnc::Json json, attnc::parseJson(text));
  return attnc::specFromJson(json);
}

// Runs body, mapping exceptions to ATTNC_ERROR_INTERNAL.
template <typename Body> attnc_status guarded(Body &&body) {
  try {
    return body();
  } catch (const std::exception &e) {
    return fail(ATTNC_ERROR_INTERNAL,
                std::string("internal error: ") + e.what());
  } catch (...) {
    return fail(ATTNC_ERROR_INTERNAL, "internal error: unknown exception");
  }
}

/// Every versioned argument struct of the C ABI starts with struct_size: a
/// caller built against an older header passes a smaller one.
attnc::Status checkStructSize(size_t got, size_t expected, const char *name) {
  if (got >= expected)
    return attnc::Status::ok();
  return attnc::Status(attnc::ErrorCode::InvalidArgument,
                       std::string(name) + ".struct_size is " +
                           std::to_string(got) + ", expected " +
                           std::to_string(expected) + " (call " + name +
                           "_init)");
}

attnc::Result<attnc::KernelSpec> specFromC(const attnc_spec *in) {
  if (!in)
    return attnc::Status(attnc::ErrorCode::InvalidArgument, "spec is NULL");
  if (attnc::Status s =
          checkStructSize(in->struct_size, sizeof(attnc_spec), "attnc_spec");
      !s.isOk())
    return s;
  attnc::KernelSpec spec;
  if (in->op)
    spec.op = in->op;
  if (in->dtype)
    spec.dtype = in->dtype;
  spec.heads = in->heads;
  spec.kvHeads = in->kv_heads;
  spec.headDim = in->head_dim;
  spec.causal = in->causal != 0;
  spec.hasLse = in->has_lse != 0;
  spec.windowLeft = in->window_left;
  spec.windowRight = in->window_right;
  spec.softcap = in->softcap;
  if (!std::isnan(in->scale))
    spec.scale = in->scale;
  if (in->arch)
    spec.arch = in->arch;
  if (in->custom_ir)
    spec.customIr = in->custom_ir;
  spec.tuning.blockM = in->block_m;
  spec.tuning.blockN = in->block_n;
  spec.tuning.stages = in->stages;
  spec.tuning.warps = in->warps;
  spec.sinks = in->sinks != 0;
  spec.varlen = in->varlen != 0;
  spec.pageSize = in->page_size;
  return spec;
}

attnc::TensorArg tensorFromC(const attnc_tensor &t) {
  attnc::TensorArg out;
  out.data = t.data;
  for (int i = 0; i < 4; ++i) {
    out.shape[i] = t.shape[i];
    out.stride[i] = t.stride[i];
  }
  return out;
}

/// The C captures as the runtime's, into `storage` (the launch's args point
/// at it); more than abi::kMaxCaptures, a negative count or a rank outside
/// 1 to 4 is an error.
using CaptureStorage = std::array<attnc::CaptureArg, attnc::abi::kMaxCaptures>;
attnc::Status capturesFromC(const attnc_attention_args &a,
                            CaptureStorage &storage,
                            attnc::AttentionArgs &args) {
  if (a.num_captures < 0 ||
      a.num_captures > int64_t(attnc::abi::kMaxCaptures) ||
      (a.num_captures > 0 && !a.captures))
    return attnc::Status(attnc::ErrorCode::InvalidArgument,
                         "num_captures is " + std::to_string(a.num_captures) +
                             " with captures " + (a.captures ? "set" : "NULL") +
                             "; expected 0 to " +
                             std::to_string(attnc::abi::kMaxCaptures) +
                             " captured tensors");
  for (int64_t i = 0; i < a.num_captures; ++i) {
    const attnc_capture &c = a.captures[i];
    attnc::CaptureArg &out = storage[i];
    if (c.rank < 1 || c.rank > 4 || !c.dtype)
      return attnc::Status(attnc::ErrorCode::InvalidArgument,
                           "capture " + std::to_string(i) + ": rank " +
                               std::to_string(c.rank) + " and dtype " +
                               (c.dtype ? c.dtype : "NULL") +
                               "; expected rank 1 to 4 and a dtype");
    out.data = c.data;
    out.dtype = c.dtype;
    out.rank = c.rank;
    for (int d = 0; d < 4; ++d) {
      out.shape[d] = c.shape[d];
      out.stride[d] = c.stride[d];
    }
  }
  args.captures = storage.data();
  args.numCaptures = static_cast<size_t>(a.num_captures);
  return attnc::Status::ok();
}

attnc::Result<attnc::AttentionArgs> argsFromC(const attnc_attention_args &a) {
  if (attnc::Status s = checkStructSize(
          a.struct_size, sizeof(attnc_attention_args), "attnc_attention_args");
      !s.isOk())
    return s;
  attnc::AttentionArgs args{tensorFromC(a.q), tensorFromC(a.k),
                            tensorFromC(a.v), tensorFromC(a.o),
                            tensorFromC(a.lse)};
  args.workspace = a.workspace;
  args.workspaceBytes = a.workspace_bytes;
  args.sinks = a.sinks;
  args.cuSeqlensQ = a.cu_seqlens_q;
  args.cuSeqlensK = a.cu_seqlens_k;
  args.varlenBatch = a.varlen_batch;
  args.maxSeqlenQ = a.max_seqlen_q;
  args.maxSeqlenK = a.max_seqlen_k;
  args.kvBounds = a.kv_bounds;
  args.blockTable = a.block_table;
  args.maxBlocks = a.max_blocks;
  args.kvLens = a.kv_lens;
  return args;
}

const attnc::Kernel *kernelFromC(const attnc_kernel *kernel) {
  return reinterpret_cast<const attnc::Kernel *>(kernel);
}

attnc_status storeKernel(attnc::Result<const attnc::Kernel *> kernel,
                         const attnc_kernel **out) {
  if (!kernel.isOk())
    return fail(kernel.status());
  *out = reinterpret_cast<const attnc_kernel *>(*kernel);
  return ATTNC_OK;
}

attnc::Result<std::string> cacheRoot(const char *dir) {
  if (dir && *dir)
    return std::string(dir);
  return attnc::DiskCache::defaultRoot();
}

} // namespace

extern "C" {

const char *attnc_version(void) { return ATTNC_VERSION_STRING; }

const char *attnc_build_id(void) { return attnc::defaultBuildId().c_str(); }

const char *attnc_status_string(attnc_status status) {
  return attnc::errorCodeName(static_cast<attnc::ErrorCode>(status));
}

const char *attnc_last_error(void) { return lastError.c_str(); }

attnc_status attnc_jit_enable(const char *path) {
  return guarded([&]() -> attnc_status {
    auto library = attnc::loadJitCompiler(path ? path : "");
    if (!library.isOk())
      return fail(library.status());
    // One lock for both, so that jit_info describes the compiler in use.
    std::lock_guard<std::mutex> lock(jitInfoMutex());
    attnc::setDefaultCompiler(library->compiler);
    jitInfo() = library->path + ": " + library->description;
    return ATTNC_OK;
  });
}

const char *attnc_jit_info(void) {
  std::lock_guard<std::mutex> lock(jitInfoMutex());
  jitInfoCopy = jitInfo();
  return jitInfoCopy.c_str();
}

attnc_status attnc_precompile_json(const char *cache_dir, const char *spec_json,
                                   int32_t link_cubin, int32_t *compiled) {
  return guarded([&]() -> attnc_status {
    if (compiled)
      *compiled = 0;
    if (!spec_json)
      return fail(ATTNC_ERROR_INVALID_ARGUMENT, "spec_json is NULL");
    auto spec = specFromJsonText(spec_json);
    if (!spec.isOk())
      return fail(spec.status());
    std::shared_ptr<attnc::KernelCompiler> compiler = attnc::defaultCompiler();
    if (!compiler)
      return fail(ATTNC_ERROR_NOT_FOUND,
                  "no compiler: enable the JIT compiler first "
                  "(attnc_jit_enable)");
    auto root = cacheRoot(cache_dir);
    if (!root.isOk())
      return fail(root.status());
    attnc::DiskCache cache(*root);
    attnc::ResolveOptions options;
    options.compiler = compiler.get();
    if (link_cubin) {
      auto linker = attnc::CubinLinker::load();
      if (linker.isOk())
        options.cubinLinker = *linker;
    }
    std::string warnings; // also the reason a publish failed
    options.log = [&](const std::string &message) {
      std::fprintf(stderr, "%s\n", message.c_str());
      warnings += (warnings.empty() ? "" : "; ") + message;
    };
    // The spec, and for a decode spec without tuning the variants the
    // runtime's size rule may pick for it (as `attnc bundle` does), so that
    // no launch of a warmed cache compiles.
    std::vector<attnc::KernelSpec> all = attnc::sizeRuleVariantSpecs(*spec);
    all.insert(all.begin(), *spec);
    bool any = false;
    for (const attnc::KernelSpec &one : all) {
      auto resolved =
          attnc::resolveKernel(cache, one, attnc::defaultBuildId(), options);
      if (!resolved.isOk())
        return fail(resolved.status());
      // Compiled but not cached (an unwritable cache): the point of a
      // precompile is the cache entry, so that is a failure here.
      if (resolved->entry.dir.empty())
        return fail(ATTNC_ERROR_IO,
                    "compiled '" + one.canonical() +
                        "' but could not cache it in '" + *root + "'" +
                        (warnings.empty() ? "" : ": " + warnings));
      any |= resolved->compiled;
    }
    if (compiled)
      *compiled = any ? 1 : 0;
    return ATTNC_OK;
  });
}

void attnc_spec_init(attnc_spec *spec) {
  if (!spec)
    return;
  *spec = attnc_spec{};
  spec->struct_size = sizeof(attnc_spec);
  spec->op = "attention_fwd";
  spec->dtype = "bf16";
  spec->window_left = -1;
  spec->window_right = -1;
  spec->scale = NAN;
  spec->arch = "sm_90a";
}

void attnc_context_options_init(attnc_context_options *options) {
  if (!options)
    return;
  *options = attnc_context_options{};
  options->struct_size = sizeof(attnc_context_options);
  options->link_cubin = 1;
}

attnc_status attnc_context_create(const attnc_context_options *options,
                                  attnc_context **out) {
  return guarded([&]() -> attnc_status {
    if (!out)
      return fail(ATTNC_ERROR_INVALID_ARGUMENT, "out is NULL");
    *out = nullptr;
    attnc::ContextOptions cxx;
    if (options) {
      if (options->struct_size < sizeof(attnc_context_options))
        return fail(ATTNC_ERROR_INVALID_ARGUMENT,
                    "attnc_context_options.struct_size is too small (call "
                    "attnc_context_options_init)");
      if (options->cache_dir)
        cxx.cacheDir = options->cache_dir;
      if (options->driver_library)
        cxx.driverLibrary = options->driver_library;
      if (options->build_id)
        cxx.buildId = options->build_id;
      cxx.device = options->device;
      cxx.linkCubin = options->link_cubin != 0;
    }
    auto context = attnc::Context::create(std::move(cxx));
    if (!context.isOk())
      return fail(context.status());
    *out = new attnc_context{std::move(context).value()};
    return ATTNC_OK;
  });
}

void attnc_context_destroy(attnc_context *ctx) { delete ctx; }

const char *attnc_cache_dir(const attnc_context *ctx) {
  if (ctx)
    return ctx->impl->cacheDir().c_str();
  attnc::Result<std::string> root = attnc::DiskCache::defaultRoot();
  if (!root.isOk()) {
    fail(root.status());
    return nullptr;
  }
  defaultDirText = *root;
  return defaultDirText.c_str();
}

attnc_status attnc_get_kernel(attnc_context *ctx, const attnc_spec *spec,
                              const attnc_kernel **out) {
  return guarded([&]() -> attnc_status {
    if (!ctx || !out)
      return fail(ATTNC_ERROR_INVALID_ARGUMENT, "ctx or out is NULL");
    auto cxx = specFromC(spec);
    if (!cxx.isOk())
      return fail(cxx.status());
    return storeKernel(ctx->impl->getKernel(*cxx), out);
  });
}

namespace {
attnc_status kernelFor(attnc_context *ctx, const attnc::KernelSpec &spec,
                       int64_t batch, int64_t seqQ, int64_t seqKV,
                       const attnc_kernel **out, int64_t *splitsOut) {
  if (batch < 1 || seqQ < 1 || seqKV < 1)
    return fail(ATTNC_ERROR_INVALID_ARGUMENT,
                "problem size must be positive: batch " +
                    std::to_string(batch) + ", seq_q " + std::to_string(seqQ) +
                    ", seq_kv " + std::to_string(seqKV));
  attnc::TuningChoice choice;
  attnc_status status = storeKernel(
      ctx->impl->getKernelFor(spec, {batch, seqQ, seqKV}, &choice), out);
  if (splitsOut)
    *splitsOut = status == ATTNC_OK ? choice.decodeSplits : 0;
  return status;
}
} // namespace

attnc_status attnc_get_kernel_for(attnc_context *ctx, const attnc_spec *spec,
                                  int64_t batch, int64_t seq_q, int64_t seq_kv,
                                  const attnc_kernel **out) {
  return guarded([&]() -> attnc_status {
    if (!ctx || !out)
      return fail(ATTNC_ERROR_INVALID_ARGUMENT, "ctx or out is NULL");
    auto cxx = specFromC(spec);
    if (!cxx.isOk())
      return fail(cxx.status());
    return kernelFor(ctx, *cxx, batch, seq_q, seq_kv, out, nullptr);
  });
}

attnc_status attnc_get_kernel_for_json(attnc_context *ctx,
                                       const char *spec_json, int64_t batch,
                                       int64_t seq_q, int64_t seq_kv,
                                       const attnc_kernel **out,
                                       int64_t *splits_out) {
  return guarded([&]() -> attnc_status {
    if (!ctx || !spec_json || !out)
      return fail(ATTNC_ERROR_INVALID_ARGUMENT,
                  "ctx, spec_json or out is NULL");
    auto spec = specFromJsonText(spec_json);
    if (!spec.isOk())
      return fail(spec.status());
    return kernelFor(ctx, *spec, batch, seq_q, seq_kv, out, splits_out);
  });
}

attnc_status attnc_get_kernel_json(attnc_context *ctx, const char *spec_json,
                                   const attnc_kernel **out) {
  return guarded([&]() -> attnc_status {
    if (!ctx || !spec_json || !out)
      return fail(ATTNC_ERROR_INVALID_ARGUMENT,
                  "ctx, spec_json or out is NULL");
    auto spec = specFromJsonText(spec_json);
    if (!spec.isOk())
      return fail(spec.status());
    return storeKernel(ctx->impl->getKernel(*spec), out);
  });
}

const char *attnc_kernel_entry(const attnc_kernel *kernel) {
  return kernel ? kernelFromC(kernel)->metadata().entry.c_str() : "";
}

const char *attnc_kernel_key(const attnc_kernel *kernel) {
  return kernel ? kernelFromC(kernel)->key().c_str() : "";
}

attnc_status attnc_attention_validate(const attnc_spec *spec,
                                      const attnc_attention_args *args) {
  return guarded([&]() -> attnc_status {
    if (!args)
      return fail(ATTNC_ERROR_INVALID_ARGUMENT, "args is NULL");
    auto cxx = specFromC(spec);
    if (!cxx.isOk())
      return fail(cxx.status());
    // The spec first: arguments are only meaningful against a kernel that
    // can exist (a launch's spec was validated when its kernel was built).
    if (attnc::Status s = attnc::validateSpec(*cxx); !s.isOk())
      return fail(s);
    if (cxx->op != "attention_fwd")
      return fail(ATTNC_ERROR_INVALID_ARGUMENT,
                  "attnc_attention_validate checks attention_fwd arguments; "
                  "the spec's op is \"" +
                      cxx->op + "\"");
    // The captures' structure here; their dtypes and ranks need the
    // kernel's metadata (checked at launch).
    auto cxxArgs = argsFromC(*args);
    if (!cxxArgs.isOk())
      return fail(cxxArgs.status());
    CaptureStorage captures;
    if (attnc::Status s = capturesFromC(*args, captures, *cxxArgs); !s.isOk())
      return fail(s);
    return report(attnc::validateAttentionArgs(*cxx, *cxxArgs));
  });
}

attnc_status attnc_attention_workspace_size(attnc_context *ctx,
                                            const attnc_kernel *kernel,
                                            const attnc_attention_args *args,
                                            size_t *bytes) {
  return guarded([&]() -> attnc_status {
    if (!ctx || !kernel || !args || !bytes)
      return fail(ATTNC_ERROR_INVALID_ARGUMENT,
                  "ctx, kernel, args or bytes is NULL");
    auto cxx = argsFromC(*args);
    if (!cxx.isOk())
      return fail(cxx.status());
    auto size = ctx->impl->workspaceSize(*kernelFromC(kernel), *cxx);
    if (!size.isOk())
      return fail(size.status());
    *bytes = *size;
    return ATTNC_OK;
  });
}

attnc_status attnc_attention_launch(attnc_context *ctx,
                                    const attnc_kernel *kernel,
                                    const attnc_attention_args *args,
                                    void *stream) {
  return guarded([&]() -> attnc_status {
    if (!ctx || !kernel || !args)
      return fail(ATTNC_ERROR_INVALID_ARGUMENT, "ctx, kernel or args is NULL");
    auto cxx = argsFromC(*args);
    if (!cxx.isOk())
      return fail(cxx.status());
    CaptureStorage captures;
    if (attnc::Status s = capturesFromC(*args, captures, *cxx); !s.isOk())
      return fail(s);
    return report(ctx->impl->launch(*kernelFromC(kernel), *cxx,
                                    static_cast<CUstream>(stream)));
  });
}

namespace {

attnc::Result<attnc::DecodeArgs> decodeArgsFromC(const attnc_decode_args *in) {
  if (!in)
    return attnc::Status(attnc::ErrorCode::InvalidArgument, "args is NULL");
  if (attnc::Status s = checkStructSize(
          in->struct_size, sizeof(attnc_decode_args), "attnc_decode_args");
      !s.isOk())
    return s;
  attnc::DecodeArgs out;
  out.q = tensorFromC(in->q);
  out.kCache = tensorFromC(in->k_cache);
  out.vCache = tensorFromC(in->v_cache);
  out.blockTable = in->block_table;
  out.maxBlocks = in->max_blocks;
  out.kvLens = in->kv_lens;
  out.maxKvLen = in->max_kv_len;
  out.o = tensorFromC(in->o);
  out.lse = tensorFromC(in->lse);
  out.workspace = in->workspace;
  out.workspaceBytes = in->workspace_bytes;
  out.numSplits = in->num_splits;
  out.sinks = in->sinks;
  return out;
}

} // namespace

void attnc_attention_args_init(attnc_attention_args *args) {
  if (!args)
    return;
  *args = attnc_attention_args{};
  args->struct_size = sizeof(attnc_attention_args);
}

void attnc_decode_args_init(attnc_decode_args *args) {
  if (!args)
    return;
  *args = attnc_decode_args{};
  args->struct_size = sizeof(attnc_decode_args);
}

attnc_status attnc_decode_workspace_size(attnc_context *ctx,
                                         const attnc_kernel *kernel,
                                         const attnc_decode_args *args,
                                         size_t *bytes) {
  return guarded([&]() -> attnc_status {
    if (!ctx || !kernel || !bytes)
      return fail(ATTNC_ERROR_INVALID_ARGUMENT, "ctx, kernel or bytes is NULL");
    auto decode = decodeArgsFromC(args);
    if (!decode.isOk())
      return fail(decode.status());
    auto size = ctx->impl->decodeWorkspaceSize(*kernelFromC(kernel), *decode);
    if (!size.isOk())
      return fail(size.status());
    *bytes = *size;
    return ATTNC_OK;
  });
}

attnc_status attnc_decode_launch(attnc_context *ctx, const attnc_kernel *kernel,
                                 const attnc_decode_args *args, void *stream) {
  return guarded([&]() -> attnc_status {
    if (!ctx || !kernel)
      return fail(ATTNC_ERROR_INVALID_ARGUMENT, "ctx or kernel is NULL");
    auto decode = decodeArgsFromC(args);
    if (!decode.isOk())
      return fail(decode.status());
    return report(ctx->impl->launchDecode(*kernelFromC(kernel), *decode,
                                          static_cast<CUstream>(stream)));
  });
}

void attnc_kv_append_args_init(attnc_kv_append_args *args) {
  if (!args)
    return;
  *args = attnc_kv_append_args{};
  args->struct_size = sizeof(attnc_kv_append_args);
}

attnc_status attnc_kv_append_launch(attnc_context *ctx,
                                    const attnc_kernel *kernel,
                                    const attnc_kv_append_args *args,
                                    void *stream) {
  return guarded([&]() -> attnc_status {
    if (!ctx || !kernel || !args)
      return fail(ATTNC_ERROR_INVALID_ARGUMENT, "ctx, kernel or args is NULL");
    if (attnc::Status s =
            checkStructSize(args->struct_size, sizeof(attnc_kv_append_args),
                            "attnc_kv_append_args");
        !s.isOk())
      return fail(s);
    attnc::KVAppendArgs a;
    a.key = tensorFromC(args->key);
    a.value = tensorFromC(args->value);
    a.slotMapping = args->slot_mapping;
    a.kCache = tensorFromC(args->k_cache);
    a.vCache = tensorFromC(args->v_cache);
    return report(ctx->impl->launchKVAppend(*kernelFromC(kernel), a,
                                            static_cast<CUstream>(stream)));
  });
}

void attnc_merge_args_init(attnc_merge_args *args) {
  if (!args)
    return;
  *args = attnc_merge_args{};
  args->struct_size = sizeof(attnc_merge_args);
}

attnc_status attnc_merge_launch(attnc_context *ctx, const attnc_kernel *kernel,
                                const attnc_merge_args *args, void *stream) {
  return guarded([&]() -> attnc_status {
    if (!ctx || !kernel || !args)
      return fail(ATTNC_ERROR_INVALID_ARGUMENT, "ctx, kernel or args is NULL");
    if (attnc::Status s = checkStructSize(
            args->struct_size, sizeof(attnc_merge_args), "attnc_merge_args");
        !s.isOk())
      return fail(s);
    attnc::MergeArgs a;
    a.oA = tensorFromC(args->o_a);
    a.lseA = tensorFromC(args->lse_a);
    a.oB = tensorFromC(args->o_b);
    a.lseB = tensorFromC(args->lse_b);
    a.o = tensorFromC(args->o);
    a.lse = tensorFromC(args->lse);
    return report(ctx->impl->launchMerge(*kernelFromC(kernel), a,
                                         static_cast<CUstream>(stream)));
  });
}

namespace {

attnc::Result<attnc::RowArgs> rowArgsFromC(const attnc_row_args *in) {
  if (!in)
    return attnc::Status(attnc::ErrorCode::InvalidArgument, "args is NULL");
  if (in->count < 0 || in->count > 8)
    return attnc::Status(attnc::ErrorCode::InvalidArgument,
                         "attnc_row_args.count must be 0 to 8, got " +
                             std::to_string(in->count));
  attnc::RowArgs out;
  out.rows = in->rows;
  out.count = static_cast<size_t>(in->count);
  for (size_t i = 0; i < out.count; ++i)
    out.tensors[i] = {in->tensors[i].data, in->tensors[i].rows,
                      in->tensors[i].cols, in->tensors[i].stride};
  return out;
}

} // namespace

attnc_status attnc_row_validate_json(const char *spec_json,
                                     const attnc_row_args *args) {
  return guarded([&]() -> attnc_status {
    if (!spec_json)
      return fail(ATTNC_ERROR_INVALID_ARGUMENT, "spec_json is NULL");
    auto spec = specFromJsonText(spec_json);
    if (!spec.isOk())
      return fail(spec.status());
    auto cargs = rowArgsFromC(args);
    if (!cargs.isOk())
      return fail(cargs.status());
    return report(attnc::validateRowArgs(*spec, *cargs));
  });
}

attnc_status attnc_row_launch(attnc_context *ctx, const attnc_kernel *kernel,
                              const attnc_row_args *args, void *stream) {
  return guarded([&]() -> attnc_status {
    if (!ctx || !kernel)
      return fail(ATTNC_ERROR_INVALID_ARGUMENT, "ctx or kernel is NULL");
    auto cargs = rowArgsFromC(args);
    if (!cargs.isOk())
      return fail(cargs.status());
    return report(ctx->impl->launch(*kernelFromC(kernel), *cargs,
                                    static_cast<CUstream>(stream)));
  });
}

attnc_status attnc_cache_clear(const char *cache_dir, size_t *removed) {
  return guarded([&]() -> attnc_status {
    auto root = cacheRoot(cache_dir);
    if (!root.isOk())
      return fail(root.status());
    attnc::DiskCache cache(*root);
    auto count = cache.clear();
    if (!count.isOk())
      return fail(count.status());
    if (removed)
      *removed = *count;
    return ATTNC_OK;
  });
}

attnc_status attnc_cache_prune(const char *cache_dir, uint64_t max_bytes,
                               size_t *removed) {
  return guarded([&]() -> attnc_status {
    auto root = cacheRoot(cache_dir);
    if (!root.isOk())
      return fail(root.status());
    attnc::DiskCache cache(*root);
    auto result = cache.prune(max_bytes);
    if (!result.isOk())
      return fail(result.status());
    if (removed)
      *removed = result->removedEntries;
    return ATTNC_OK;
  });
}

} // extern "C"
