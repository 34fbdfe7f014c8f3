/*===- attnc.h - C ABI of the attnc runtime ---------------------*- C -*-===//
 *
 * A C interface over the C++ runtime, for ctypes/cffi and other languages.
 * Every function that can fail returns an attnc_status; the message of the
 * last failure on the calling thread is attnc_last_error(). Nothing throws
 * across this boundary.
 *
 * Typical use:
 *   attnc_context *ctx;  attnc_context_create(NULL, &ctx);
 *   attnc_spec spec;     attnc_spec_init(&spec);
 *   spec.heads = 32; spec.kv_heads = 8; spec.head_dim = 128;
 *   const attnc_kernel *k;  attnc_get_kernel(ctx, &spec, &k);
 *   attnc_attention_args args;  attnc_attention_args_init(&args);
 *   args.q = ...;  ...
 *   attnc_attention_launch(ctx, k, &args, stream);
 *   attnc_context_destroy(ctx);
 *
 *===----------------------------------------------------------------------===*/
#ifndef ATTNC_ATTNC_H
#define ATTNC_ATTNC_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define ATTNC_API __attribute__((visibility("default")))
#else
#define ATTNC_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Same values as attnc::ErrorCode. */
typedef enum attnc_status {
  ATTNC_OK = 0,
  ATTNC_ERROR_INVALID_ARGUMENT = 1,
  ATTNC_ERROR_NOT_FOUND = 2,
  ATTNC_ERROR_DRIVER_NOT_FOUND = 3,
  ATTNC_ERROR_DRIVER = 4,
  ATTNC_ERROR_PARSE = 5,
  ATTNC_ERROR_IO = 6,
  ATTNC_ERROR_CACHE_CORRUPT = 7,
  ATTNC_ERROR_COMPILE = 8,
  ATTNC_ERROR_UNSUPPORTED = 9,
  ATTNC_ERROR_INTERNAL = 10
} attnc_status;

typedef struct attnc_context attnc_context;
typedef struct attnc_kernel attnc_kernel;

/* Call attnc_spec_init first: it sets struct_size and the defaults. */
typedef struct attnc_spec {
  size_t struct_size;
  const char *op;    /* "attention_fwd" */
  const char *dtype; /* "bf16" | "fp16" */
  int64_t heads;
  int64_t kv_heads;
  int64_t head_dim;
  int32_t causal;        /* 0 | 1 */
  int32_t has_lse;       /* 0 | 1 */
  int64_t window_left;   /* -1: unbounded */
  int64_t window_right;  /* -1: unbounded */
  double softcap;        /* 0: none */
  double scale;          /* NaN: 1/sqrt(head_dim) */
  const char *arch;      /* "sm_80" | "sm_90a" */
  const char *custom_ir; /* NULL or "" unless the spec came from MLIR */
  int64_t block_m;       /* tuning; 0: default */
  int64_t block_n;
  int64_t stages;
  int64_t warps;
  int32_t sinks; /* 0 | 1: attention sinks (op attention_fwd) */
  /* 0 | 1: varlen prefill (op attention_fwd): packed sequences with
   * cu_seqlens (attnc_attention_args.cu_seqlens_q...) */
  int32_t varlen;
  /* Varlen only: 0, or the page size of the paged KV cache the keys come
   * from (paged prefill: attnc_attention_args.block_table...). */
  int64_t page_size;
} attnc_spec;

/* A tensor in the logical [B, H, S, D] layout, strides in elements. LSE uses
 * [B, Hq, Sq] with shape[3] = stride[3] = 1. */
typedef struct attnc_tensor {
  const void *data;
  int64_t shape[4];
  int64_t stride[4];
} attnc_tensor;

/* A tensor a score or mask mod reads (attn.attention's captures: ALiBi
 * slopes, document ids, bias tables), in device memory. dtype is the
 * kernel's ("f32" | "f16" | "bf16" | "i32" | "i64" | "i8"), rank 1 to 4,
 * shape and stride in elements (entries past the rank ignored). The kernel
 * does not bounds-check its mods' indices. */
typedef struct attnc_capture {
  const void *data;
  const char *dtype;
  int32_t rank;
  int64_t shape[4];
  int64_t stride[4];
} attnc_capture;

/* Call attnc_attention_args_init first: it sets struct_size and zeroes the
 * rest (a caller built against an older header passes a smaller struct,
 * which is refused with the reason). */
typedef struct attnc_attention_args {
  size_t struct_size;
  attnc_tensor q, k, v, o, lse; /* lse.data NULL unless has_lse */
  /* Optional (NULL: none): the stream-K tail's workspace of a persistent
   * kernel, attnc_attention_workspace_size bytes, 256-byte aligned, zeroed
   * once before its first use (launches leave it zeroed); one per stream
   * of concurrent launches. */
  void *workspace;
  size_t workspace_bytes;
  /* Attention sinks: one f32 logit per query head, 4-byte aligned, when the
   * spec has sinks; NULL otherwise. */
  const float *sinks;
  /* Varlen kernels (spec varlen = 1; FlashAttention's varlen contract):
   * q, k, v and o are the packed [total, H, D] tensors as [1, H, total, D]
   * views (shape[0] = 1), lse [Hq, total_q] f32 as [1, Hq, total_q];
   * cu_seqlens_q/k: B + 1 i32 sequence starts in device memory (first 0,
   * non-decreasing, last = total; not checked); varlen_batch = B;
   * max_seqlen_q/k: the longest sequence of each side (the grid covers
   * max_seqlen_q rows per sequence). All NULL / 0 for other kernels. */
  const int32_t *cu_seqlens_q;
  const int32_t *cu_seqlens_k;
  int64_t varlen_batch;
  int64_t max_seqlen_q;
  int64_t max_seqlen_k;
  /* The captured tensors of a kernel whose mods read some, in the order of
   * the IR's captures (checked at launch against the kernel's metadata);
   * NULL and 0 otherwise. */
  const attnc_capture *captures;
  int64_t num_captures;
  /* Key ranges of a kernel whose attention has kv_bounds: contiguous
   * [B, seq_q, 2] i32 in device memory, each query row's first and end key
   * (both non-decreasing along the rows; keys outside must be masked by
   * the kernel's masks anyway: the kernel skips the KV tiles outside a
   * query tile's range); NULL otherwise. */
  const int32_t *kv_bounds;
  /* Paged varlen kernels (spec page_size > 0; vLLM's flash_attn_varlen_func
   * with block_table and seqused_k): k and v are the caches [pages, Hkv,
   * page_size, D] (any strides: NHD pages as a permuted view), cu_seqlens_k
   * NULL, block_table the contiguous [varlen_batch, max_blocks] i32 page
   * indices and kv_lens the [varlen_batch] i32 key counts (each at most
   * max_seqlen_k <= max_blocks x page_size; not checked), in device memory.
   * Key j of sequence b is row j mod page_size of page
   * block_table[b, j / page_size]; a sequence's entries must be pages of
   * the caches (not checked). The rows of its last page past its length
   * are read and weighted 0: they must be finite. NULL / 0 for other
   * kernels. */
  const int32_t *block_table;
  int64_t max_blocks;
  const int32_t *kv_lens;
} attnc_attention_args;

ATTNC_API void attnc_attention_args_init(attnc_attention_args *args);

typedef struct attnc_context_options {
  size_t struct_size;
  const char *cache_dir;      /* NULL: $ATTNC_CACHE_DIR, XDG, ~/.cache */
  const char *driver_library; /* NULL: "libcuda.so.1" */
  const char *build_id;       /* NULL: the build id baked into the runtime */
  int32_t device;             /* used only when no CUDA context is current */
  int32_t link_cubin;         /* 1: cache a cubin made by nvJitLink */
} attnc_context_options;

ATTNC_API const char *attnc_version(void);
ATTNC_API const char *attnc_build_id(void);
ATTNC_API const char *attnc_status_string(attnc_status status);
/* Message of the last failed call on this thread ("" if none). Valid until
 * the next failing call on the same thread. */
ATTNC_API const char *attnc_last_error(void);

ATTNC_API void attnc_spec_init(attnc_spec *spec);
ATTNC_API void attnc_context_options_init(attnc_context_options *options);

/* The JIT compiler. libattnc.so holds no compiler: a kernel missing from
 * the cache is compiled by libattnc_jit.so once it is enabled, for every
 * context created afterwards. path NULL: $ATTNC_JIT_LIBRARY when set, else
 * libattnc_jit.so beside libattnc.so, else on the loader's path.
 * ATTNC_ERROR_NOT_FOUND when there is none; ATTNC_ERROR_INVALID_ARGUMENT
 * for a library that does not load or is another build's compiler. */
ATTNC_API attnc_status attnc_jit_enable(const char *path);
/* "" when no JIT compiler is enabled, else "<path>: <its description>". */
ATTNC_API const char *attnc_jit_info(void);
/* Compiles one spec (JSON as in spec files) into the cache at cache_dir
 * (NULL: the default) with the enabled JIT compiler, without a GPU or a
 * driver; a cached spec is not compiled again. A decode spec without
 * tuning brings the variants the runtime's size rule may pick for it (as
 * `attnc bundle` does). link_cubin 1: also store a cubin (ptxas, else
 * nvJitLink; none found is not an error). *compiled (may be NULL) says
 * whether this call ran the compiler. A kernel that could not be cached
 * is an error (ATTNC_ERROR_IO). */
ATTNC_API attnc_status attnc_precompile_json(const char *cache_dir,
                                             const char *spec_json,
                                             int32_t link_cubin,
                                             int32_t *compiled);

/* options may be NULL. Without a CUDA driver this fails with
 * ATTNC_ERROR_DRIVER_NOT_FOUND. */
ATTNC_API attnc_status
attnc_context_create(const attnc_context_options *options, attnc_context **out);
ATTNC_API void attnc_context_destroy(attnc_context *ctx);

/* The context's cache directory, or with ctx NULL the default one (NULL on
 * error). The string lives as long as ctx, or until the next call with NULL
 * on this thread. */
ATTNC_API const char *attnc_cache_dir(const attnc_context *ctx);

/* The kernel is owned by ctx. */
ATTNC_API attnc_status attnc_get_kernel(attnc_context *ctx,
                                        const attnc_spec *spec,
                                        const attnc_kernel **out);
/* spec_json: one spec object as in spec files. */
ATTNC_API attnc_status attnc_get_kernel_json(attnc_context *ctx,
                                             const char *spec_json,
                                             const attnc_kernel **out);
/* The kernel for a spec at one problem size (batch, seq_q, seq_kv >= 1;
 * for decode seq_kv is the longest sequence): the tuning database's choice
 * for this GPU and size bucket when the context has a database
 * ($ATTNC_TUNING_DB when the context was created), else the kernel
 * attnc_get_kernel gives. A spec that names its own tuning keeps it.
 * splits_out (may be NULL): the database's decode split count, 0 when it
 * names none (then the launch chooses). */
ATTNC_API attnc_status attnc_get_kernel_for(attnc_context *ctx,
                                            const attnc_spec *spec,
                                            int64_t batch, int64_t seq_q,
                                            int64_t seq_kv,
                                            const attnc_kernel **out);
ATTNC_API attnc_status attnc_get_kernel_for_json(
    attnc_context *ctx, const char *spec_json, int64_t batch, int64_t seq_q,
    int64_t seq_kv, const attnc_kernel **out, int64_t *splits_out);
ATTNC_API const char *attnc_kernel_entry(const attnc_kernel *kernel);
ATTNC_API const char *attnc_kernel_key(const attnc_kernel *kernel);

/* Checks the spec (as attnc_get_kernel would; op attention_fwd) and the
 * launch arguments against it, aliasing outputs included; needs no GPU.
 * Of the captured tensors only the count and ranks are checked here: their
 * dtypes, ranks and memory are checked at launch, against the kernel's
 * metadata. */
ATTNC_API attnc_status attnc_attention_validate(
    const attnc_spec *spec, const attnc_attention_args *args);
/* The workspace a launch with these arguments can take (0: none; see
 * attnc_attention_args.workspace). */
ATTNC_API attnc_status
attnc_attention_workspace_size(attnc_context *ctx, const attnc_kernel *kernel,
                               const attnc_attention_args *args, size_t *bytes);
/* stream: a CUstream (NULL: the legacy default stream). Never allocates or
 * synchronises. */
ATTNC_API attnc_status attnc_attention_launch(attnc_context *ctx,
                                              const attnc_kernel *kernel,
                                              const attnc_attention_args *args,
                                              void *stream);

/* Paged split-KV decode (op "decode"; get the kernel with
 * attnc_get_kernel_json, e.g. {"op": "decode", "dtype": "bf16", "heads": 32,
 * "kv_heads": 8, "head_dim": 128, "page_size": 16, "max_q_len": 1}). The
 * contract is in attnc/runtime/Decode.h. Call attnc_decode_args_init first. */
typedef struct attnc_decode_args {
  size_t struct_size;
  attnc_tensor q;       /* [B, Hq, Sq, D]; Sq > 1: stride[1] = Sq * stride[2] */
  attnc_tensor k_cache; /* [pages, Hkv, page_size, D] */
  attnc_tensor v_cache;
  const int32_t
      *block_table; /* [B, max_blocks] page indices, rows contiguous */
  int64_t max_blocks;
  const int32_t *kv_lens; /* [B] sequence lengths (device memory) */
  int64_t max_kv_len;     /* host-side bound of kv_lens: picks the splits */
  attnc_tensor o;         /* [B, Hq, Sq, D] */
  attnc_tensor lse;       /* [B, Hq, Sq]; data NULL unless has_lse */
  void *workspace;        /* 256-byte aligned, attnc_decode_workspace_size */
  size_t workspace_bytes;
  int64_t num_splits; /* 0: chosen from SM count, batch, heads, max_kv_len */
  /* Attention sinks: one f32 logit per query head, 4-byte aligned, when the
   * spec has sinks; NULL otherwise. */
  const float *sinks;
} attnc_decode_args;

ATTNC_API void attnc_decode_args_init(attnc_decode_args *args);
/* The workspace a launch with these arguments needs (it depends on the split
 * count: keep max_kv_len and num_splits the same for the launch). */
ATTNC_API attnc_status
attnc_decode_workspace_size(attnc_context *ctx, const attnc_kernel *kernel,
                            const attnc_decode_args *args, size_t *bytes);
/* Enqueues the split kernel and the combine on stream; never allocates or
 * synchronises. */
ATTNC_API attnc_status attnc_decode_launch(attnc_context *ctx,
                                           const attnc_kernel *kernel,
                                           const attnc_decode_args *args,
                                           void *stream);
/* KV append (op "kv_append"; e.g. {"op": "kv_append", "dtype": "bf16",
 * "heads": 8, "kv_heads": 8, "head_dim": 128, "page_size": 16}: heads are
 * the cache's KV heads): writes key/value rows [tokens, Hkv, D] into the
 * paged caches [pages, Hkv, page_size, D] in place at slot_mapping[t] =
 * page * page_size + offset (int64, device memory; negative = padding,
 * skipped). Contract in attnc/runtime/CacheOps.h. Call
 * attnc_kv_append_args_init first. */
typedef struct attnc_kv_append_args {
  size_t struct_size;
  attnc_tensor key;            /* [tokens, Hkv, D] in shape[0..2] */
  attnc_tensor value;          /* same shape */
  const int64_t *slot_mapping; /* [tokens], contiguous */
  attnc_tensor k_cache;        /* [pages, Hkv, page_size, D] */
  attnc_tensor v_cache;
} attnc_kv_append_args;

ATTNC_API void attnc_kv_append_args_init(attnc_kv_append_args *args);
/* Enqueues the copy on stream (tokens == 0: nothing); never allocates or
 * synchronises. */
ATTNC_API attnc_status attnc_kv_append_launch(attnc_context *ctx,
                                              const attnc_kernel *kernel,
                                              const attnc_kv_append_args *args,
                                              void *stream);

/* Merge of two attention states over disjoint keys (op "lse_merge"; e.g.
 * {"op": "lse_merge", "dtype": "bf16", "heads": 32, "head_dim": 128,
 * "has_lse": true}): o = (e^lse_a o_a + e^lse_b o_b) / (e^lse_a + e^lse_b),
 * lse = log(e^lse_a + e^lse_b); -inf on one side weighs it 0, on both gives
 * o = 0, lse = -inf. O tensors [B, H, S, D], LSE [B, H, S] f32. Call
 * attnc_merge_args_init first. */
typedef struct attnc_merge_args {
  size_t struct_size;
  attnc_tensor o_a, lse_a, o_b, lse_b;
  attnc_tensor o, lse; /* lse.data NULL unless has_lse */
} attnc_merge_args;

ATTNC_API void attnc_merge_args_init(attnc_merge_args *args);
ATTNC_API attnc_status attnc_merge_launch(attnc_context *ctx,
                                          const attnc_kernel *kernel,
                                          const attnc_merge_args *args,
                                          void *stream);

/* Fused elementwise kernels (ops "silu_mul", "gelu_mul", "add_rmsnorm";
 * get the kernel with attnc_get_kernel_json, e.g.
 * {"op": "silu_mul", "dtype": "bf16", "hidden": 14336}). Tensors in the
 * order of attnc/runtime/RowLaunch.h: silu_mul/gelu_mul: x [rows, 2d],
 * out [rows, d]; add_rmsnorm: x, residual, weight [d], out, residual_out;
 * rope: positions [rows] (i64/i32, contiguous; cols 1), query, key (rotated
 * in place), cos_sin_cache [max_position, rotary_dim] (its own rows).
 * Strides in elements between rows; a [d] tensor ignores rows and stride. */
typedef struct attnc_row_tensor {
  const void *data;
  int64_t rows;
  int64_t cols;
  int64_t stride;
} attnc_row_tensor;

typedef struct attnc_row_args {
  int64_t rows;
  int64_t count; /* tensors used, at most 8 */
  attnc_row_tensor tensors[8];
} attnc_row_args;

/* Checks row-kernel arguments against a spec (JSON); needs no GPU. */
ATTNC_API attnc_status attnc_row_validate_json(const char *spec_json,
                                               const attnc_row_args *args);
/* Like attnc_attention_launch; rows == 0 launches nothing. */
ATTNC_API attnc_status attnc_row_launch(attnc_context *ctx,
                                        const attnc_kernel *kernel,
                                        const attnc_row_args *args,
                                        void *stream);

/* Cache maintenance; cache_dir NULL means the default directory. */
ATTNC_API attnc_status attnc_cache_clear(const char *cache_dir,
                                         size_t *removed);
ATTNC_API attnc_status attnc_cache_prune(const char *cache_dir,
                                         uint64_t max_bytes, size_t *removed);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ATTNC_ATTNC_H */
