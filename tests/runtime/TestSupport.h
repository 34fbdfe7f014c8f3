//===- TestSupport.h - Shared helpers for the runtime tests -----*- C++ -*-===//
#ifndef ATTNC_TESTS_RUNTIME_TESTSUPPORT_H
#define ATTNC_TESTS_RUNTIME_TESTSUPPORT_H

#include "attnc/runtime/Compiler.h"
#include "attnc/runtime/Launch.h"
#include "attnc/runtime/Metadata.h"
#include "attnc/runtime/Spec.h"

#include <atomic>
#include <string>
#include <vector>

namespace attnc::test {

// A fresh directory under $TMPDIR (or /tmp), removed with its contents.
class TempDir {
public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  const std::string &path() const { return path_; }

private:
  std::string path_;
};

std::string readFile(const std::string &path);
void writeFile(const std::string &path, const std::string &data);
bool exists(const std::string &path);
// Names in a directory, without "." and "..", sorted.
std::vector<std::string> listDir(const std::string &path);

// bf16, 8 heads over 2 KV heads, d = 64, sm_90a.
KernelSpec sampleSpec();

// PTX text declaring one .entry with a .param per KernelParam (the fake
// driver reads the parameter sizes from it).
std::string fakePtx(const std::string &entry,
                    const std::vector<KernelParam> &params,
                    size_t paddingBytes = 0);

// Compiles by writing fake PTX for the attention_fwd_v1 contract; counts
// calls, and can fail or add cubin bytes on request.
class FakeCompiler : public KernelCompiler {
public:
  Result<CompiledKernel> compile(const KernelSpec &spec) override;

  std::atomic<int> calls{0};
  std::string entry = "attnc_fake_attention";
  std::vector<KernelParam> params = attentionFwdV1Params();
  int64_t blockM = 64;
  std::array<int64_t, 3> block{128, 1, 1};
  int64_t dynamicSmem = 0;
  std::string gridRule = abi::kGridRuleAttentionFwd;
  size_t paddingBytes = 0; // grow the PTX (for slow, racy writes)
  std::string cubin;       // non-empty: returned as the cubin
  bool fail = false;
};

// Contiguous [B, H, S, D] tensors at fake, 256-byte aligned addresses that
// do not overlap.
AttentionArgs contiguousArgs(const KernelSpec &spec, int64_t batch,
                             int64_t seqQ, int64_t seqKv);

} // namespace attnc::test

#endif // ATTNC_TESTS_RUNTIME_TESTSUPPORT_H
