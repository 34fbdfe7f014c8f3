/*===- CApiCTest.c - attnc.h compiles as C and libattnc.so links ----------===//
 *
 * Built as C11 with -Wall -Wextra -Werror -pedantic against the shared
 * library, so the header stays valid C and the exported symbols are the
 * ones it declares. Needs no GPU: it checks the no-driver error path.
 *===----------------------------------------------------------------------===*/
#include "attnc/attnc.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;

#define EXPECT(cond)                                                           \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);      \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

int main(void) {
  attnc_spec spec;
  attnc_context_options options;
  attnc_context *ctx = NULL;
  attnc_attention_args args;

  EXPECT(strcmp(attnc_version(), "0.1.0") == 0);
  EXPECT(strlen(attnc_build_id()) > 0);

  attnc_spec_init(&spec);
  EXPECT(spec.struct_size == sizeof(attnc_spec));
  EXPECT(isnan(spec.scale));
  EXPECT(spec.window_left == -1 && spec.window_right == -1);
  EXPECT(strcmp(spec.dtype, "bf16") == 0);

  attnc_context_options_init(&options);
  options.driver_library = "libattnc-no-such-driver.so.1";
  EXPECT(attnc_context_create(&options, &ctx) == ATTNC_ERROR_DRIVER_NOT_FOUND);
  EXPECT(ctx == NULL);
  EXPECT(strncmp(attnc_last_error(), "CUDA driver not found (", 23) == 0);

  /* Arguments without struct_size (an older header's struct, or no init)
   * are refused with the reason; initialised ones get to the checks. */
  memset(&args, 0, sizeof(args));
  spec.heads = 8;
  spec.kv_heads = 2;
  spec.head_dim = 64;
  EXPECT(attnc_attention_validate(&spec, &args) ==
         ATTNC_ERROR_INVALID_ARGUMENT);
  EXPECT(strstr(attnc_last_error(), "attnc_attention_args.struct_size is 0") !=
         NULL);
  attnc_attention_args_init(&args);
  EXPECT(args.struct_size == sizeof(args) && args.q.data == NULL &&
         args.kv_bounds == NULL);
  EXPECT(attnc_attention_validate(&spec, &args) ==
         ATTNC_ERROR_INVALID_ARGUMENT);
  EXPECT(strstr(attnc_last_error(), "struct_size") == NULL);
  EXPECT(strcmp(attnc_status_string(ATTNC_ERROR_INVALID_ARGUMENT),
                "InvalidArgument") == 0);

  /* No JIT compiler enabled: none loaded, a precompile says so. */
  EXPECT(strcmp(attnc_jit_info(), "") == 0);
  EXPECT(attnc_jit_enable("/nonexistent/libattnc_jit.so") ==
         ATTNC_ERROR_NOT_FOUND);
  EXPECT(strstr(attnc_last_error(), "/nonexistent/libattnc_jit.so") != NULL);
  EXPECT(attnc_precompile_json(
             NULL,
             "{\"op\": \"attention_fwd\", \"dtype\": \"bf16\", \"heads\": 8, "
             "\"kv_heads\": 2, \"head_dim\": 64, \"arch\": \"sm_90a\"}",
             0, NULL) == ATTNC_ERROR_NOT_FOUND);
  EXPECT(strstr(attnc_last_error(), "attnc_jit_enable") != NULL);

  /* Varlen through the C structs: packed [total, H, D] tensors as
   * [1, H, total, D] views and the cu_seqlens fields pass validation; a
   * missing cu_seqlens_k is a clear error. Addresses only (never read). */
  {
    const int64_t tq = 100, tk = 140, d = 64;
    attnc_tensor *views[4] = {&args.q, &args.k, &args.v, &args.o};
    const int64_t heads[4] = {8, 2, 2, 8}, rows[4] = {tq, tk, tk, tq};
    int i;
    attnc_attention_args_init(&args);
    spec.varlen = 1;
    for (i = 0; i < 4; ++i) {
      views[i]->data = (const void *)(uintptr_t)(0x100000u * (unsigned)(i + 1));
      views[i]->shape[0] = 1;
      views[i]->shape[1] = heads[i];
      views[i]->shape[2] = rows[i];
      views[i]->shape[3] = d;
      views[i]->stride[0] = 0;
      views[i]->stride[1] = d;
      views[i]->stride[2] = heads[i] * d;
      views[i]->stride[3] = 1;
    }
    args.cu_seqlens_q = (const int32_t *)(uintptr_t)0x700000u;
    args.cu_seqlens_k = (const int32_t *)(uintptr_t)0x701000u;
    args.varlen_batch = 3;
    args.max_seqlen_q = 60;
    args.max_seqlen_k = 80;
    EXPECT(attnc_attention_validate(&spec, &args) == ATTNC_OK);
    args.cu_seqlens_k = NULL;
    EXPECT(attnc_attention_validate(&spec, &args) ==
           ATTNC_ERROR_INVALID_ARGUMENT);
    EXPECT(strstr(attnc_last_error(), "cu_seqlens_k: data pointer is null") !=
           NULL);

    /* Paged: spec page_size, K/V as [pages, Hkv, page_size, D] views of NHD
     * pages, the block table and kv_lens instead of cu_seqlens_k. */
    spec.page_size = 16;
    for (i = 1; i < 3; ++i) {
      views[i]->shape[0] = 40;
      views[i]->shape[2] = 16;
      views[i]->stride[0] = 16 * 2 * d;
      views[i]->stride[2] = 2 * d;
    }
    args.k.data = (const void *)(uintptr_t)0x1000000u;
    args.v.data = (const void *)(uintptr_t)0x2000000u;
    args.block_table = (const int32_t *)(uintptr_t)0x702000u;
    args.max_blocks = 8;
    args.kv_lens = (const int32_t *)(uintptr_t)0x703000u;
    args.max_seqlen_k = 128;
    EXPECT(attnc_attention_validate(&spec, &args) == ATTNC_OK);
    args.max_seqlen_k = 129;
    EXPECT(attnc_attention_validate(&spec, &args) ==
           ATTNC_ERROR_INVALID_ARGUMENT);
    EXPECT(strstr(attnc_last_error(), "max_blocks x page_size = 128") != NULL);
    spec.page_size = 0;
  }

  if (failures == 0)
    printf("C ABI: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
