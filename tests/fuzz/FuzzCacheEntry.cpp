//===- FuzzCacheEntry.cpp - fuzz target: the disk cache's entry reader ----===//
//
// The input is one cache entry: meta.json, then a line "@@ptx@@", then
// kernel.ptx (optionally a line "@@cubin@@" and kernel.cubin). When its
// first byte is odd and meta.json parses, the recorded sizes and checksums
// are made to match the payload first, so inputs reach the accepting path
// too. The entry is written under a fresh key and looked up: a hit must
// return exactly the bytes written, a miss must remove the entry, and
// neither may hang (files are opened non-blocking) nor crash.
//
//===----------------------------------------------------------------------===//
#include "tests/fuzz/FuzzTarget.h"

#include "attnc/runtime/DiskCache.h"
#include "attnc/runtime/Hash.h"

#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

using namespace attnc;

namespace {

std::string root;
long hits = 0, misses = 0; // printed at exit

void writeAll(const std::string &path, const std::string &data) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    fuzzFail("cannot write the entry's files");
  if (::write(fd, data.data(), data.size()) != ssize_t(data.size()))
    fuzzFail("short write of the entry's files");
  ::close(fd);
}

void removeAll(const std::string &dir) {
  for (const char *name : {kMetaFileName, kPtxFileName, kCubinFileName})
    ::unlink((dir + "/" + name).c_str());
  ::rmdir(dir.c_str());
}

void cleanUp() {
  if (root.empty())
    return;
  DiskCache cache(root);
  (void)cache.clear();
  ::rmdir(root.c_str());
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  const char *tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp && *tmp ? tmp : "/tmp") + "/attnc-fuzz-cache-XXXXXX";
  if (!::mkdtemp(pattern.data()))
    fuzzFail("mkdtemp");
  root = pattern;
  std::atexit(cleanUp);
  std::atexit([] {
    std::printf("cache-entry: %ld hits, %ld damaged entries\n", hits, misses);
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (root.empty())
    LLVMFuzzerInitialize(nullptr, nullptr);
  std::string text(reinterpret_cast<const char *>(data), size);
  std::string meta = text, ptx, cubin;
  bool hasCubin = false;
  if (size_t at = text.find("\n@@ptx@@\n"); at != std::string::npos) {
    meta = text.substr(0, at);
    ptx = text.substr(at + 9);
    if (size_t c = ptx.find("\n@@cubin@@\n"); c != std::string::npos) {
      cubin = ptx.substr(c + 11);
      ptx.resize(c);
      hasCubin = true;
    }
  }
  if (size > 0 && (data[0] & 1)) {
    Result<KernelMetadata> parsed = parseMetadata(meta);
    if (parsed.isOk()) {
      parsed->files.clear();
      parsed->files.push_back({kPtxFileName, ptx.size(), xxh3_128(ptx).hex()});
      if (hasCubin)
        parsed->files.push_back(
            {kCubinFileName, cubin.size(), xxh3_128(cubin).hex()});
      meta = writeMetadata(*parsed);
    }
  }

  const std::string key = xxh3_128(text).hex();
  const std::string dir = root + "/" + key;
  removeAll(dir);
  if (::mkdir(dir.c_str(), 0755) != 0)
    fuzzFail("cannot create the entry directory");
  writeAll(dir + "/" + kMetaFileName, meta);
  writeAll(dir + "/" + kPtxFileName, ptx);
  if (hasCubin)
    writeAll(dir + "/" + kCubinFileName, cubin);

  DiskCache cache(root);
  Result<std::vector<CacheEntryInfo>> listed = cache.list();
  if (!listed.isOk() || listed->size() != 1 || (*listed)[0].foreign)
    fuzzFail("list() does not show the one entry as attnc's");
  Result<CacheLookup> found = cache.lookup(key);
  if (!found.isOk())
    fuzzFail("lookup of an attnc entry failed instead of hitting or missing");
  struct stat st;
  ++(found->entry ? hits : misses);
  if (found->entry) {
    // A cubin on disk that meta.json does not list is not read.
    const bool listed = found->entry->meta.findFile(kCubinFileName) != nullptr;
    if (found->entry->ptx != ptx ||
        found->entry->cubin != (listed ? cubin : std::string()))
      fuzzFail("a hit returned bytes other than those on disk");
    if (found->entry->ptx.empty())
      fuzzFail("a hit with empty PTX");
  } else if (::lstat(dir.c_str(), &st) == 0) {
    fuzzFail("a damaged entry was reported but not removed");
  }
  removeAll(dir);
  return 0;
}
