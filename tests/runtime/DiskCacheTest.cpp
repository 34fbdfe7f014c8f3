//===- DiskCacheTest.cpp - Disk cache layout, verification, eviction ------===//

#include "TestSupport.h"

#include "attnc/runtime/DiskCache.h"
#include "attnc/runtime/Hash.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace attnc;
using namespace attnc::test;

namespace {

const std::string kKey = "0123456789abcdef0123456789abcdef";

CompiledKernel sampleKernel(const std::string &tag = "x") {
  FakeCompiler compiler;
  KernelSpec spec = sampleSpec();
  CompiledKernel kernel = *compiler.compile(spec);
  kernel.ptx += "// " + tag + "\n";
  kernel.meta.spec = spec.canonical();
  kernel.meta.buildId = "test-build";
  return kernel;
}

void setMtime(const std::string &path, int64_t seconds) {
  struct timespec times[2] = {{seconds, 0}, {seconds, 0}};
  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
}

// Keys that differ only in their last hex digit.
std::string keyN(int n) {
  std::string key = kKey;
  key.back() = "0123456789abcdef"[n];
  return key;
}

// Runs fn with an environment variable set (or unset when value is null),
// restoring it afterwards.
template <typename Fn>
void withEnv(const char *name, const char *value, Fn fn) {
  const char *old = std::getenv(name);
  std::string saved = old ? old : "";
  if (value)
    ::setenv(name, value, 1);
  else
    ::unsetenv(name);
  fn();
  if (old)
    ::setenv(name, saved.c_str(), 1);
  else
    ::unsetenv(name);
}

} // namespace

TEST_CASE("publish writes the documented layout and lookup reads it back",
          "[cache]") {
  TempDir dir;
  DiskCache cache(dir.path() + "/cache"); // created on first publish
  CompiledKernel kernel = sampleKernel();
  kernel.cubin = std::string("\x7f"
                             "ELF fake cubin\0bytes",
                             20);

  Result<CacheLookup> miss = cache.lookup(kKey);
  REQUIRE(miss.isOk());
  CHECK_FALSE(miss->entry);
  CHECK(miss->problem.empty());

  Result<CacheEntry> published = cache.publish(kKey, kernel);
  REQUIRE(published.isOk());
  const std::string entryDir = dir.path() + "/cache/" + kKey;
  CHECK(published->dir == entryDir);
  CHECK(listDir(dir.path() + "/cache") == std::vector<std::string>{kKey});
  CHECK(listDir(entryDir) ==
        std::vector<std::string>{"kernel.cubin", "kernel.ptx", "meta.json"});
  CHECK(readFile(entryDir + "/kernel.ptx") == kernel.ptx);
  CHECK(readFile(entryDir + "/kernel.cubin") == kernel.cubin);

  Result<KernelMetadata> meta =
      parseMetadata(readFile(entryDir + "/meta.json"));
  REQUIRE(meta.isOk());
  REQUIRE(meta->files.size() == 2);
  CHECK(meta->findFile("kernel.ptx")->size == kernel.ptx.size());
  CHECK(meta->findFile("kernel.ptx")->xxh3 == xxh3_128(kernel.ptx).hex());
  CHECK(meta->findFile("kernel.cubin")->xxh3 == xxh3_128(kernel.cubin).hex());

  Result<CacheLookup> hit = cache.lookup(kKey);
  REQUIRE(hit.isOk());
  REQUIRE(hit->entry);
  CHECK(hit->entry->ptx == kernel.ptx);
  CHECK(hit->entry->cubin == kernel.cubin);
  CHECK(hit->entry->meta.entry == kernel.meta.entry);
  CHECK(hit->entry->meta.spec == kernel.meta.spec);
}

TEST_CASE("publishing over an existing entry keeps the winner", "[cache]") {
  TempDir dir;
  DiskCache cache(dir.path());
  REQUIRE(cache.publish(kKey, sampleKernel("first")).isOk());
  Result<CacheEntry> second = cache.publish(kKey, sampleKernel("second"));
  REQUIRE(second.isOk());
  // The loser gets the winner's entry, and leaves no temporary behind.
  CHECK(second->ptx == sampleKernel("first").ptx);
  CHECK(listDir(dir.path()) == std::vector<std::string>{kKey});
}

TEST_CASE("keys are validated before touching the filesystem", "[cache]") {
  TempDir dir;
  DiskCache cache(dir.path());
  for (const char *bad :
       {"../etc", "ABCDEF0123456789ABCDEF0123456789", "", "0123456789abcdef"}) {
    Result<CacheLookup> lookup = cache.lookup(bad);
    REQUIRE_FALSE(lookup.isOk());
    CHECK(lookup.status().code() == ErrorCode::InvalidArgument);
    CHECK_FALSE(cache.publish(bad, sampleKernel()).isOk());
  }
}

TEST_CASE("damaged entries are detected, removed and reported as misses",
          "[cache]") {
  TempDir dir;
  DiskCache cache(dir.path());
  const std::string entry = dir.path() + "/" + kKey;
  const CompiledKernel kernel = sampleKernel();

  struct Damage {
    const char *what;
    std::function<void()> apply;
    const char *expected; // substring of the reported problem
  };
  const std::vector<Damage> damages = {
      {"truncated PTX",
       [&] {
         std::string ptx = readFile(entry + "/kernel.ptx");
         writeFile(entry + "/kernel.ptx", ptx.substr(0, ptx.size() / 2));
       },
       "kernel.ptx has"},
      {"flipped byte",
       [&] {
         std::string ptx = readFile(entry + "/kernel.ptx");
         ptx[ptx.size() / 3] ^= 0x20;
         writeFile(entry + "/kernel.ptx", ptx);
       },
       "kernel.ptx checksum"},
      {"garbage meta",
       [&] { writeFile(entry + "/meta.json", "\x01\x02 not json"); },
       "JSON parse error"},
      {"truncated meta",
       [&] {
         std::string meta = readFile(entry + "/meta.json");
         writeFile(entry + "/meta.json", meta.substr(0, meta.size() - 10));
       },
       "JSON parse error"},
      {"empty meta", [&] { writeFile(entry + "/meta.json", ""); },
       "JSON parse error"},
      {"missing PTX", [&] { ::unlink((entry + "/kernel.ptx").c_str()); },
       "cannot open 'kernel.ptx'"},
      {"missing meta", [&] { ::unlink((entry + "/meta.json").c_str()); },
       "cannot open 'meta.json'"},
      {"meta without checksums",
       [&] {
         KernelMetadata meta = *parseMetadata(readFile(entry + "/meta.json"));
         meta.files.clear();
         ::unlink((entry + "/meta.json").c_str());
         writeFile(entry + "/meta.json", writeMetadata(meta));
       },
       "has no checksum for kernel.ptx"},
  };

  for (const Damage &damage : damages) {
    INFO(damage.what);
    REQUIRE(cache.publish(kKey, kernel).isOk());
    damage.apply();
    Result<CacheLookup> lookup = cache.lookup(kKey);
    REQUIRE(lookup.isOk());
    CHECK_FALSE(lookup->entry);
    CHECK_THAT(lookup->problem, Catch::Contains(damage.expected));
    CHECK_FALSE(exists(entry));
    // Nothing left behind: neither the entry nor its trash.
    CHECK(listDir(dir.path()).empty());
    // And the next publish (the rebuild) succeeds and reads back.
    REQUIRE(cache.publish(kKey, kernel).isOk());
    Result<CacheLookup> again = cache.lookup(kKey);
    REQUIRE(again.isOk());
    REQUIRE(again->entry);
    CHECK(again->entry->ptx == kernel.ptx);
    REQUIRE(cache.remove(kKey).isOk());
  }
}

TEST_CASE("ls lists entries, most recently used first", "[cache]") {
  TempDir dir;
  DiskCache cache(dir.path());
  CHECK(cache.list()->empty());
  for (int i = 0; i < 3; ++i)
    REQUIRE(cache.publish(keyN(i), sampleKernel(std::to_string(i))).isOk());
  setMtime(dir.path() + "/" + keyN(0), 1000);
  setMtime(dir.path() + "/" + keyN(1), 3000);
  setMtime(dir.path() + "/" + keyN(2), 2000);
  // Foreign files and temporaries are not entries.
  writeFile(dir.path() + "/README", "not an entry");
  REQUIRE(::mkdir((dir.path() + "/.tmp-" + kKey + "-abc").c_str(), 0755) == 0);

  Result<std::vector<CacheEntryInfo>> infos = cache.list();
  REQUIRE(infos.isOk());
  REQUIRE(infos->size() == 3);
  CHECK((*infos)[0].key == keyN(1));
  CHECK((*infos)[1].key == keyN(2));
  CHECK((*infos)[2].key == keyN(0));
  CHECK((*infos)[0].lastUseNs == 3000ll * 1000000000);
  CHECK((*infos)[0].spec == sampleSpec().canonical());
  CHECK((*infos)[0].readable);
  const CompiledKernel k1 = sampleKernel("1");
  uint64_t expectedSize =
      k1.ptx.size() +
      readFile(dir.path() + "/" + keyN(1) + "/meta.json").size();
  CHECK((*infos)[0].sizeBytes == expectedSize);

  writeFile(dir.path() + "/" + keyN(0) + "/meta.json", "{");
  infos = cache.list();
  REQUIRE(infos.isOk());
  CHECK_FALSE(infos->back().readable);
  CHECK(infos->back().spec.empty());
}

TEST_CASE("a hit refreshes the last-use time", "[cache]") {
  TempDir dir;
  DiskCache cache(dir.path());
  REQUIRE(cache.publish(kKey, sampleKernel()).isOk());
  setMtime(dir.path() + "/" + kKey, 1000);
  REQUIRE(cache.lookup(kKey)->entry);
  CHECK(cache.list()->front().lastUseNs > 1000ll * 1000000000);
}

TEST_CASE("prune evicts least recently used entries down to the limit",
          "[cache]") {
  TempDir dir;
  DiskCache cache(dir.path());
  for (int i = 0; i < 4; ++i)
    REQUIRE(cache.publish(keyN(i), sampleKernel(std::to_string(i))).isOk());
  // Use order, oldest first: 2, 0, 3, 1.
  setMtime(dir.path() + "/" + keyN(2), 1000);
  setMtime(dir.path() + "/" + keyN(0), 2000);
  setMtime(dir.path() + "/" + keyN(3), 3000);
  setMtime(dir.path() + "/" + keyN(1), 4000);
  // Touch entry 2 through a hit: it becomes the most recent.
  REQUIRE(cache.lookup(keyN(2))->entry);

  std::vector<CacheEntryInfo> infos = *cache.list();
  uint64_t total = 0;
  for (const CacheEntryInfo &info : infos)
    total += info.sizeBytes;
  uint64_t one = infos[0].sizeBytes;

  Result<PruneResult> none = cache.prune(total);
  REQUIRE(none.isOk());
  CHECK(none->removedEntries == 0);
  CHECK(none->keptBytes == total);

  // Room for two entries (sizes differ by a byte at most).
  Result<PruneResult> pruned = cache.prune(2 * one + 2);
  REQUIRE(pruned.isOk());
  CHECK(pruned->removedEntries == 2);
  CHECK(pruned->keptEntries == 2);
  CHECK(pruned->keptBytes + pruned->removedBytes == total);
  CHECK(listDir(dir.path()) == std::vector<std::string>{keyN(1), keyN(2)});

  Result<PruneResult> all = cache.prune(0);
  REQUIRE(all.isOk());
  CHECK(all->removedEntries == 2);
  CHECK(listDir(dir.path()).empty());
}

TEST_CASE("clear removes entries and stale temporaries only", "[cache]") {
  TempDir dir;
  DiskCache cache(dir.path());
  for (int i = 0; i < 3; ++i)
    REQUIRE(cache.publish(keyN(i), sampleKernel(std::to_string(i))).isOk());
  const std::string staleTemp = dir.path() + "/.tmp-" + kKey + "-old";
  const std::string freshTemp = dir.path() + "/.tmp-" + kKey + "-new";
  const std::string trash = dir.path() + "/.trash-abc";
  REQUIRE(::mkdir(staleTemp.c_str(), 0755) == 0);
  REQUIRE(::mkdir(freshTemp.c_str(), 0755) == 0);
  REQUIRE(::mkdir(trash.c_str(), 0755) == 0);
  setMtime(staleTemp, 1000);
  writeFile(dir.path() + "/notes.txt", "user file");

  Result<size_t> removed = cache.clear();
  REQUIRE(removed.isOk());
  CHECK(*removed == 3);
  // A fresh temporary may be a publish in progress elsewhere.
  CHECK(listDir(dir.path()) ==
        std::vector<std::string>{".tmp-" + kKey + "-new", "notes.txt"});
}

TEST_CASE("the cache directory comes from the environment", "[cache]") {
  withEnv("ATTNC_CACHE_DIR", "/some/where",
          [] { CHECK(*DiskCache::defaultRoot() == "/some/where"); });
  withEnv("ATTNC_CACHE_DIR", nullptr, [] {
    withEnv("XDG_CACHE_HOME", "/xdg",
            [] { CHECK(*DiskCache::defaultRoot() == "/xdg/attnc"); });
    // Relative XDG values are invalid per the spec and ignored.
    withEnv("XDG_CACHE_HOME", "relative", [] {
      withEnv("HOME", "/home/me", [] {
        CHECK(*DiskCache::defaultRoot() == "/home/me/.cache/attnc");
      });
    });
    withEnv("XDG_CACHE_HOME", "", [] {
      withEnv("HOME", "/home/me", [] {
        CHECK(*DiskCache::defaultRoot() == "/home/me/.cache/attnc");
      });
    });
  });
}

TEST_CASE("an unusable cache root is an I/O error, not a crash", "[cache]") {
  TempDir dir;
  writeFile(dir.path() + "/file", "x");
  DiskCache cache(dir.path() + "/file/sub");
  Result<CacheEntry> published = cache.publish(kKey, sampleKernel());
  REQUIRE_FALSE(published.isOk());
  CHECK(published.status().code() == ErrorCode::IoError);
  CHECK_THAT(published.status().message(),
             Catch::Contains("cannot create directory"));
}
