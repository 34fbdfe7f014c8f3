//===- JitPlugin.h - The C boundary between libattnc and libattnc_jit ----===//
//
// libattnc.so has no LLVM; libattnc_jit.so holds the MLIR compiler. The
// runtime loads the JIT library with dlopen and talks to it through this one
// C table, so that neither library depends on the other's C++ ABI or
// allocator. Specs and kernel metadata cross as the JSON the cache already
// stores (specToJson / metadataToJson), PTX as bytes.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_ABI_JITPLUGIN_H
#define ATTNC_ABI_JITPLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on any change of the table or of what its strings hold. */
#define ATTNC_JIT_PLUGIN_VERSION 2

/* What one compile returns. All strings are NUL-terminated and owned by the
   plugin until free_output. On failure (ok == 0) only error is set. */
typedef struct attnc_jit_output {
  int32_t ok;
  int32_t code;    /* on failure: the attnc_status (InvalidArgument,
                      Unsupported, CompileError, ...) */
  char *ptx;       /* PTX text */
  size_t ptx_size; /* bytes, without the NUL */
  char *meta_json; /* the kernel's meta.json (files: {}) */
  char *error;     /* why it failed, for the user */
} attnc_jit_output;

typedef struct attnc_jit_plugin {
  uint32_t version;     /* ATTNC_JIT_PLUGIN_VERSION */
  const char *build_id; /* must equal the runtime's: kernels are keyed on it */
  const char *description; /* e.g. "attnc 0.1 compiler (LLVM 22.1)" */
  /* Compiles one spec (specToJson's object, as text). Safe to call from
     several threads at once. */
  void (*compile)(const char *spec_json, attnc_jit_output *out);
  void (*free_output)(attnc_jit_output *out);
} attnc_jit_plugin;

/* The one symbol libattnc_jit.so exports. */
#define ATTNC_JIT_PLUGIN_ENTRY "attnc_jit_plugin_v1"
typedef const attnc_jit_plugin *(*attnc_jit_plugin_entry_fn)(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ATTNC_ABI_JITPLUGIN_H */
