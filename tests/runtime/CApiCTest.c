/*===- CApiCTest.c - attnc.h compiles as C and libattnc.so links ----------===//
 *
 * Built as C11 with -Wall -Wextra -Werror -pedantic against the shared
 * library, so the header stays valid C and the exported symbols are the
 * ones it declares. Needs no GPU: it checks the no-driver error path.
 *===----------------------------------------------------------------------===*/
#include "attnc/attnc.h"

#include <math.h>
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

  memset(&args, 0, sizeof(args));
  spec.heads = 8;
  spec.kv_heads = 2;
  spec.head_dim = 64;
  EXPECT(attnc_attention_validate(&spec, &args) ==
         ATTNC_ERROR_INVALID_ARGUMENT);
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

  if (failures == 0)
    printf("C ABI: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
