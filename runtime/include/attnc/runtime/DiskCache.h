//===- DiskCache.h - Content-addressed on-disk kernel cache -----*- C++ -*-===//
//
// Layout: <root>/<key>/{kernel.ptx, kernel.cubin (optional), meta.json},
// key = 32 hex digits (see cacheKey). An entry appears atomically: it is
// written and fsynced in a temporary directory inside <root> and renamed
// into place; published entries are never modified, only removed (by
// renaming them away first), so readers see a whole entry or none. Every
// read verifies meta.json and the payload checksums; a damaged entry is
// removed and reported as a miss so that it gets rebuilt.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_DISKCACHE_H
#define ATTNC_RUNTIME_DISKCACHE_H

#include "attnc/runtime/Compiler.h"
#include "attnc/runtime/Metadata.h"
#include "attnc/runtime/Status.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attnc {

inline constexpr const char *kPtxFileName = "kernel.ptx";
inline constexpr const char *kCubinFileName = "kernel.cubin";
inline constexpr const char *kMetaFileName = "meta.json";

struct CacheEntry {
  std::string key;
  std::string dir; // absolute or as given by the root; empty when the
                   // kernel was compiled but could not be cached
  KernelMetadata meta;
  std::string ptx;
  std::string cubin; // empty when the entry has none
};

struct CacheLookup {
  std::optional<CacheEntry> entry; // set on a hit
  // Set when a damaged entry was found (and removed): why it was rejected.
  std::string problem;
};

struct CacheEntryInfo {
  std::string key;
  std::string spec; // canonical spec from meta.json; empty if unreadable
  uint64_t sizeBytes = 0;
  int64_t lastUseNs = 0; // nanoseconds since the epoch
  bool readable = true;  // false when meta.json is missing or unparsable
  // Named like a key but not a directory of attnc's files: listed so that
  // `attnc cache ls` shows it, never removed by clear or prune.
  bool foreign = false;
};

struct PruneResult {
  size_t removedEntries = 0;
  uint64_t removedBytes = 0;
  size_t keptEntries = 0;
  uint64_t keptBytes = 0;
};

// Held by the one process (or thread) compiling a key, so that concurrent
// misses of one spec compile once: the others wait, then find its entry.
// An advisory flock on <root>/.locks/<first two hex digits of the key>
// (256 files at most; keys that share one wait for each other, rarely).
class BuildLock {
public:
  BuildLock() = default;
  explicit BuildLock(int fd) : fd_(fd) {}
  BuildLock(BuildLock &&other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  BuildLock &operator=(BuildLock &&other) noexcept;
  BuildLock(const BuildLock &) = delete;
  BuildLock &operator=(const BuildLock &) = delete;
  ~BuildLock();

private:
  int fd_ = -1;
};

class DiskCache {
public:
  // Does not touch the filesystem; the root is created on first publish.
  explicit DiskCache(std::string root);

  // $ATTNC_CACHE_DIR, else $XDG_CACHE_HOME/attnc, else ~/.cache/attnc.
  static Result<std::string> defaultRoot();

  const std::string &root() const { return root_; }
  std::string entryDir(std::string_view key) const;

  // Verified read. Miss: entry empty. Damaged entry: removed, entry empty,
  // problem says why. A hit refreshes the entry's last-use time.
  Result<CacheLookup> lookup(std::string_view key);

  // Atomically publishes `kernel` under `key` and returns the entry now in
  // place: ours, or, when another process published first, theirs.
  Result<CacheEntry> publish(std::string_view key,
                             const CompiledKernel &kernel);

  // Waits until this caller is the only one building `key` (see
  // BuildLock); creates the root when needed. After `timeout` gives up with
  // Unsupported (the caller may build unlocked); `waiting`, when set, is
  // told once after 2 s that it waits.
  Result<BuildLock>
  lockForBuild(std::string_view key,
               std::chrono::milliseconds timeout = std::chrono::minutes(5),
               const std::function<void(const std::string &)> &waiting = {});

  // Removes one entry (no error if absent). Anything at the key's path that
  // is not a directory of attnc's entry files is an error, left in place.
  Status remove(std::string_view key);

  // Entries, most recently used first. Does not verify checksums.
  Result<std::vector<CacheEntryInfo>> list() const;
  // Removes every entry and leftover temporary directory; returns the
  // number of entries removed. Only attnc's: key-named directories and
  // .tmp-* / .trash-* directories holding nothing but entry files; other
  // files are left alone. A root of "/" is refused.
  Result<size_t> clear();
  // Removes least recently used entries (attnc's, as clear) until their
  // total size is at most maxBytes.
  Result<PruneResult> prune(uint64_t maxBytes);

private:
  Status checkRemovableRoot() const;
  Status moveAwayAndRemove(const std::string &path);
  void removeStaleTemporaries(int64_t olderThanNs);

  std::string root_;
};

// True for 32 lowercase hex digits (the only names the cache reads or
// deletes, so a bad key can never reach outside the root).
bool isCacheKey(std::string_view name);

} // namespace attnc

#endif // ATTNC_RUNTIME_DISKCACHE_H
