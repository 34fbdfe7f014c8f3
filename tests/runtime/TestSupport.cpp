//===- TestSupport.cpp - Shared helpers for the runtime tests -------------===//

#include "TestSupport.h"

#include <algorithm>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

namespace attnc::test {

namespace {
void removeAll(const std::string &path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0)
    return;
  if (S_ISDIR(st.st_mode)) {
    for (const std::string &name : listDir(path))
      removeAll(path + "/" + name);
    ::rmdir(path.c_str());
  } else {
    ::unlink(path.c_str());
  }
}
} // namespace

TempDir::TempDir() {
  const char *base = std::getenv("TMPDIR");
  std::string pattern =
      std::string(base && *base ? base : "/tmp") + "/attnc-test-XXXXXX";
  if (!::mkdtemp(pattern.data()))
    throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() { removeAll(path_); }

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

void writeFile(const std::string &path, const std::string &data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
}

bool exists(const std::string &path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

std::vector<std::string> listDir(const std::string &path) {
  std::vector<std::string> names;
  DIR *dir = ::opendir(path.c_str());
  if (!dir)
    return names;
  while (struct dirent *ent = ::readdir(dir)) {
    std::string name = ent->d_name;
    if (name != "." && name != "..")
      names.push_back(name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

KernelSpec sampleSpec() {
  KernelSpec spec;
  spec.dtype = "bf16";
  spec.heads = 8;
  spec.kvHeads = 2;
  spec.headDim = 64;
  spec.arch = "sm_90a";
  return spec;
}

std::string fakePtx(const std::string &entry,
                    const std::vector<KernelParam> &params,
                    size_t paddingBytes) {
  std::string ptx = "//\n// fake PTX for tests\n//\n.version 8.0\n"
                    ".target sm_90a\n.address_size 64\n\n";
  ptx += ".visible .entry " + entry + "(\n";
  for (size_t i = 0; i < params.size(); ++i) {
    const char *type = params[i].kind == ParamKind::F32   ? ".f32"
                       : params[i].kind == ParamKind::I32 ? ".u32"
                       : params[i].kind == ParamKind::TensorMap
                           ? ".align 64 .b8"
                           : ".u64";
    ptx += std::string("\t.param ") + type + " " + entry + "_param_" +
           std::to_string(i) +
           (params[i].kind == ParamKind::TensorMap ? "[128]" : "") +
           (i + 1 < params.size() ? ",\n" : "\n");
  }
  ptx += ")\n{\n\tret;\n}\n";
  // Comment padding keeps the PTX valid while making files large.
  for (size_t i = 0; i < paddingBytes / 64; ++i)
    ptx += "// padding padding padding padding padding padding padding pad\n";
  return ptx;
}

Result<CompiledKernel> FakeCompiler::compile(const KernelSpec &spec) {
  ++calls;
  if (fail)
    return Status(ErrorCode::CompileError, "fake compiler asked to fail");
  CompiledKernel kernel;
  kernel.ptx =
      fakePtx(entry, params, paddingBytes) + "// " + spec.canonical() + "\n";
  kernel.cubin = cubin;
  kernel.meta.entry = entry;
  kernel.meta.arch = spec.arch;
  kernel.meta.block = block;
  kernel.meta.gridRule = gridRule;
  kernel.meta.blockM = blockM;
  kernel.meta.dynamicSmem = dynamicSmem;
  kernel.meta.params = params;
  return kernel;
}

AttentionArgs contiguousArgs(const KernelSpec &spec, int64_t batch,
                             int64_t seqQ, int64_t seqKv) {
  auto tensor = [](uintptr_t address, int64_t b, int64_t h, int64_t s,
                   int64_t d) {
    TensorArg t;
    t.data = reinterpret_cast<const void *>(address);
    t.shape = {b, h, s, d};
    t.stride = {h * s * d, s * d, d, 1};
    return t;
  };
  // 0x100000, 0x200000, ... while each tensor fits in 1 MiB; further apart
  // when not, so that no two overlap (outputs may not alias).
  uintptr_t next = 0x100000;
  auto place = [&](int64_t elements, int64_t elementBytes) {
    uintptr_t at = next;
    uintptr_t end = at + uintptr_t(elements * elementBytes);
    next = std::max(at + 0x100000, (end + 0xFFFFF) & ~uintptr_t(0xFFFFF));
    return at;
  };
  const int64_t qElems = batch * spec.heads * seqQ * spec.headDim;
  const int64_t kvElems = batch * spec.kvHeads * seqKv * spec.headDim;
  AttentionArgs args;
  args.q = tensor(place(qElems, 2), batch, spec.heads, seqQ, spec.headDim);
  args.k = tensor(place(kvElems, 2), batch, spec.kvHeads, seqKv, spec.headDim);
  args.v = tensor(place(kvElems, 2), batch, spec.kvHeads, seqKv, spec.headDim);
  args.o = tensor(place(qElems, 2), batch, spec.heads, seqQ, spec.headDim);
  if (spec.hasLse) {
    args.lse.data =
        reinterpret_cast<const void *>(place(batch * spec.heads * seqQ, 4));
    args.lse.shape = {batch, spec.heads, seqQ, 1};
    args.lse.stride = {spec.heads * seqQ, seqQ, 1, 1};
  }
  return args;
}

} // namespace attnc::test
