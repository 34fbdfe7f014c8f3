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

// Kills the test (SIGALRM) if it is still running after `seconds`.
struct AlarmGuard {
  explicit AlarmGuard(unsigned seconds) { ::alarm(seconds); }
  ~AlarmGuard() { ::alarm(0); }
};

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
      // Opening a FIFO for reading once blocked until a writer came: anyone
      // who could write the cache stalled every reader of it.
      {"FIFO as meta",
       [&] {
         ::unlink((entry + "/meta.json").c_str());
         REQUIRE(::mkfifo((entry + "/meta.json").c_str(), 0644) == 0);
       },
       "'meta.json' is not a regular file"},
      {"FIFO as PTX",
       [&] {
         ::unlink((entry + "/kernel.ptx").c_str());
         REQUIRE(::mkfifo((entry + "/kernel.ptx").c_str(), 0644) == 0);
       },
       "'kernel.ptx' is not a regular file"},
      {"symbolic link as meta",
       [&] {
         ::unlink((entry + "/meta.json").c_str());
         REQUIRE(::symlink("/etc/hostname", (entry + "/meta.json").c_str()) ==
                 0);
       },
       "cannot open 'meta.json'"},
  };

  // A hang is a failure, not a stuck test run (generous: fsyncs on a busy
  // machine and sanitizer builds are slow).
  AlarmGuard alarm(120);
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

TEST_CASE("ls, clear and prune do not hang on a FIFO in an entry", "[cache]") {
  TempDir dir;
  DiskCache cache(dir.path());
  REQUIRE(cache.publish(kKey, sampleKernel()).isOk());
  const std::string meta = dir.path() + "/" + kKey + "/meta.json";
  ::unlink(meta.c_str());
  REQUIRE(::mkfifo(meta.c_str(), 0644) == 0);
  AlarmGuard alarm(120);
  Result<std::vector<CacheEntryInfo>> infos = cache.list();
  REQUIRE(infos.isOk());
  REQUIRE(infos->size() == 1);
  CHECK_FALSE((*infos)[0].readable);
  CHECK_FALSE((*infos)[0].foreign);
  REQUIRE(cache.prune(1u << 30).isOk());
  Result<size_t> removed = cache.clear();
  REQUIRE(removed.isOk());
  CHECK(*removed == 1);
  CHECK(listDir(dir.path()).empty());
}

TEST_CASE("entries are readable by other users (mode 0755 and 0644 under "
          "umask 022)",
          "[cache]") {
  TempDir dir;
  DiskCache cache(dir.path());
  mode_t old = ::umask(022);
  Result<CacheEntry> published = cache.publish(kKey, sampleKernel());
  ::umask(old);
  REQUIRE(published.isOk());
  struct stat st;
  REQUIRE(::stat(published->dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0755); // mkdtemp's 0700 once survived
  for (const char *name : {"kernel.ptx", "meta.json"}) {
    INFO(name);
    REQUIRE(::stat((published->dir + "/" + name).c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0644);
  }
}

TEST_CASE("clear and prune remove attnc's entries only", "[cache]") {
  TempDir dir;
  DiskCache cache(dir.path());
  REQUIRE(cache.publish(keyN(0), sampleKernel("0")).isOk());
  REQUIRE(cache.publish(keyN(1), sampleKernel("1")).isOk());
  // Named like attnc's, but not attnc's: a user's directory, a plain file,
  // a symbolic link to a directory, stale-looking temporaries and trash
  // holding other files.
  const std::string userDir = dir.path() + "/" + keyN(2);
  REQUIRE(::mkdir(userDir.c_str(), 0755) == 0);
  writeFile(userDir + "/thesis.tex", "precious");
  writeFile(dir.path() + "/" + keyN(3), "a plain file");
  TempDir elsewhere;
  writeFile(elsewhere.path() + "/meta.json", "{}");
  REQUIRE(::symlink(elsewhere.path().c_str(),
                    (dir.path() + "/" + keyN(4)).c_str()) == 0);
  const std::string trash = dir.path() + "/.trash-mine";
  REQUIRE(::mkdir(trash.c_str(), 0755) == 0);
  writeFile(trash + "/notes", "mine");
  const std::string temp = dir.path() + "/.tmp-" + kKey + "-mine";
  REQUIRE(::mkdir(temp.c_str(), 0755) == 0);
  writeFile(temp + "/data", "mine");
  setMtime(temp, 1000);

  Result<std::vector<CacheEntryInfo>> infos = cache.list();
  REQUIRE(infos.isOk());
  int foreign = 0;
  for (const CacheEntryInfo &info : *infos)
    foreign += info.foreign;
  CHECK(foreign == 3);

  REQUIRE(cache.prune(0).isOk());
  Result<size_t> removed = cache.clear();
  REQUIRE(removed.isOk());
  CHECK(*removed == 0); // prune took both
  CHECK(listDir(dir.path()) ==
        std::vector<std::string>{".tmp-" + kKey + "-mine", ".trash-mine",
                                 keyN(2), keyN(3), keyN(4)});
  CHECK(readFile(userDir + "/thesis.tex") == "precious");
  CHECK(readFile(elsewhere.path() + "/meta.json") == "{}");

  // A damaged-looking user directory is not removed by a lookup either.
  Result<CacheLookup> lookup = cache.lookup(keyN(2));
  REQUIRE_FALSE(lookup.isOk());
  CHECK_THAT(lookup.status().message(),
             Catch::Contains("is not one attnc wrote"));
  CHECK(exists(userDir + "/thesis.tex"));
  // A plain file in an entry's place: a clear error, not a key blocked in
  // silence (nor clear aborting with a wrong message, as once).
  lookup = cache.lookup(keyN(3));
  REQUIRE_FALSE(lookup.isOk());
  CHECK_THAT(lookup.status().message(),
             Catch::Contains("is not one attnc wrote"));
  CHECK_FALSE(cache.remove(keyN(3)).isOk());
  CHECK(exists(dir.path() + "/" + keyN(3)));
}

TEST_CASE("removing an entry does not follow symbolic links in it", "[cache]") {
  TempDir dir;
  DiskCache cache(dir.path());
  const std::string entry = dir.path() + "/" + kKey;
  TempDir elsewhere;
  writeFile(elsewhere.path() + "/kernel.ptx", "someone else's");
  auto plantLink = [&] {
    REQUIRE(cache.publish(kKey, sampleKernel()).isOk());
    ::unlink((entry + "/kernel.ptx").c_str());
    REQUIRE(::symlink(elsewhere.path().c_str(),
                      (entry + "/kernel.ptx").c_str()) == 0);
  };

  // By a lookup that finds the entry damaged...
  plantLink();
  Result<CacheLookup> lookup = cache.lookup(kKey);
  REQUIRE(lookup.isOk());
  CHECK_FALSE(lookup->entry);
  CHECK_THAT(lookup->problem, Catch::Contains("cannot open 'kernel.ptx'"));
  CHECK(listDir(dir.path()).empty());
  CHECK(readFile(elsewhere.path() + "/kernel.ptx") == "someone else's");

  // ...and by clear.
  plantLink();
  Result<size_t> removed = cache.clear();
  REQUIRE(removed.isOk());
  CHECK(*removed == 1);
  CHECK(listDir(dir.path()).empty());
  CHECK(readFile(elsewhere.path() + "/kernel.ptx") == "someone else's");
}

TEST_CASE("a cache root of / or a relative ATTNC_CACHE_DIR is refused",
          "[cache]") {
  for (const char *bad : {"/", "//", "relative/cache", "."}) {
    INFO(bad);
    withEnv("ATTNC_CACHE_DIR", bad, [] {
      Result<std::string> root = DiskCache::defaultRoot();
      REQUIRE_FALSE(root.isOk());
      CHECK_THAT(root.status().message(),
                 Catch::Contains("must be an absolute path other than /"));
    });
  }
  DiskCache root("/");
  CHECK_FALSE(root.clear().isOk());
  CHECK_FALSE(root.prune(0).isOk());
}

TEST_CASE("spec files are read with a size cap and never block", "[cache]") {
  AlarmGuard alarm(120);
  Result<std::vector<KernelSpec>> zero = readSpecFile("/dev/zero");
  REQUIRE_FALSE(zero.isOk());
  CHECK_THAT(zero.status().message(), Catch::Contains("not a regular file"));
  TempDir dir;
  const std::string fifo = dir.path() + "/specs.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  Result<std::vector<KernelSpec>> blocked = readSpecFile(fifo);
  REQUIRE_FALSE(blocked.isOk());
  CHECK_THAT(blocked.status().message(), Catch::Contains("not a regular file"));
  const std::string big = dir.path() + "/big.json";
  writeFile(big, std::string(kMaxSpecFileBytes + 1, ' '));
  CHECK_THAT(readSpecFile(big).status().message(),
             Catch::Contains("is larger than"));
}
