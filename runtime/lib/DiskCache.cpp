//===- DiskCache.cpp - Content-addressed on-disk kernel cache -------------===//

#include "attnc/runtime/DiskCache.h"

#include "FileSystem.h"
#include "attnc/runtime/Hash.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <system_error>
#include <thread>
#include <unistd.h>

namespace attnc {

namespace {

namespace stdfs = std::filesystem;

constexpr uint64_t kMaxMetaBytes = 16ull << 20;
constexpr uint64_t kMaxPayloadBytes = 1ull << 30;
// Temporary directories younger than this may belong to a publish in
// progress in another process, so clear/prune leave them alone.
constexpr int64_t kStaleTempNs = 10ll * 60 * 1000000000;
constexpr const char *kTempPrefix = ".tmp-";
constexpr const char *kTrashPrefix = ".trash-";

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool startsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

std::string nonEmptyEnv(const char *name) {
  const char *value = std::getenv(name);
  return value && *value ? value : "";
}

Status badKey(std::string_view key) {
  std::string message = "'";
  message += key;
  message += "' is not a cache key (expected 32 lowercase hex digits)";
  return Status(ErrorCode::InvalidArgument, std::move(message));
}

FileChecksum checksum(const char *name, std::string_view data) {
  return {name, data.size(), xxh3_128(data).hex()};
}

// Whether `path` is a directory (not a symbolic link) holding nothing but
// files attnc writes into an entry: a published entry, a temporary one or
// one renamed away for removal, complete or partly written or removed.
// clear, prune and the removal of a damaged entry touch nothing else, so
// a cache root pointed at the wrong place loses no one's files.
bool isAttncDirectory(const std::string &path) {
  std::error_code ec;
  if (!stdfs::is_directory(stdfs::symlink_status(path, ec)))
    return false;
  stdfs::directory_iterator it(path, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    std::error_code statEc;
    if ((name != kMetaFileName && name != kPtxFileName &&
         name != kCubinFileName) ||
        stdfs::is_directory(it->symlink_status(statEc)))
      return false;
  }
  return !ec;
}

Status notOurs(const std::string &path) {
  return Status(ErrorCode::IoError,
                "'" + path +
                    "' is named like a cache entry but is not one attnc "
                    "wrote (not a directory of kernel.ptx, kernel.cubin and "
                    "meta.json); left it alone: move it out of the cache "
                    "directory");
}

// Reads and verifies one entry through its directory descriptor, so every
// file comes from the same directory even if it is renamed away meanwhile.
// Returns CacheCorrupt with the reason when anything does not match.
Result<CacheEntry> readEntry(int dirFd, std::string_view key,
                             const std::string &dir) {
  auto corrupt = [](const std::string &why) {
    return Status(ErrorCode::CacheCorrupt, why);
  };
  Result<std::string> metaText =
      fs::readFileAt(dirFd, kMetaFileName, kMaxMetaBytes);
  if (!metaText.isOk())
    return corrupt(metaText.status().message());
  Result<KernelMetadata> meta = parseMetadata(*metaText, kMetaFileName);
  if (!meta.isOk())
    return corrupt(meta.status().message());

  CacheEntry entry;
  entry.key = std::string(key);
  entry.dir = dir;
  entry.meta = std::move(meta).value();
  if (!entry.meta.findFile(kPtxFileName))
    return corrupt(std::string(kMetaFileName) + " has no checksum for " +
                   kPtxFileName);
  for (const FileChecksum &file : entry.meta.files) {
    std::string *target = nullptr;
    if (file.name == kPtxFileName)
      target = &entry.ptx;
    else if (file.name == kCubinFileName)
      target = &entry.cubin;
    else
      return corrupt(std::string(kMetaFileName) + " lists unknown file '" +
                     file.name + "'");
    Result<std::string> data =
        fs::readFileAt(dirFd, file.name, kMaxPayloadBytes);
    if (!data.isOk())
      return corrupt(data.status().message());
    if (data->size() != file.size)
      return corrupt(file.name + " has " + std::to_string(data->size()) +
                     " bytes but meta.json records " +
                     std::to_string(file.size));
    std::string actual = xxh3_128(*data).hex();
    if (actual != file.xxh3)
      return corrupt(file.name + " checksum " + actual +
                     " does not match meta.json (" + file.xxh3 + ")");
    *target = std::move(data).value();
  }
  // What publish refuses to write: the driver could not load it.
  if (entry.ptx.empty() || entry.ptx.find('\0') != std::string::npos)
    return corrupt(std::string(kPtxFileName) + " is empty or holds a NUL byte");
  return entry;
}

} // namespace

bool isCacheKey(std::string_view name) {
  if (name.size() != 32)
    return false;
  for (char c : name)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return false;
  return true;
}

DiskCache::DiskCache(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/')
    root_.pop_back();
}

Result<std::string> DiskCache::defaultRoot() {
  std::string dir = nonEmptyEnv("ATTNC_CACHE_DIR");
  if (!dir.empty()) {
    // A relative path would name a different cache in every working
    // directory; "/" would make clear and prune walk the root.
    if (dir[0] != '/' || dir.find_first_not_of('/') == std::string::npos)
      return Status(ErrorCode::InvalidArgument,
                    "ATTNC_CACHE_DIR must be an absolute path other than / "
                    "(got '" +
                        dir + "')");
    return dir;
  }
  // The XDG spec says relative values are invalid and must be ignored.
  std::string xdg = nonEmptyEnv("XDG_CACHE_HOME");
  if (!xdg.empty() && xdg[0] == '/')
    return xdg + "/attnc";
  std::string home = nonEmptyEnv("HOME");
  if (home.empty())
    if (struct passwd *pw = ::getpwuid(::getuid()); pw && pw->pw_dir)
      home = pw->pw_dir;
  if (home.empty())
    return Status(ErrorCode::NotFound,
                  "cannot find a cache directory: set ATTNC_CACHE_DIR "
                  "(XDG_CACHE_HOME and HOME are unset)");
  return home + "/.cache/attnc";
}

std::string DiskCache::entryDir(std::string_view key) const {
  return (stdfs::path(root_) / key).string();
}

Result<CacheLookup> DiskCache::lookup(std::string_view key) {
  if (!isCacheKey(key))
    return badKey(key);
  std::string dir = entryDir(key);
  Result<fs::Fd> dirFd = fs::openDir(dir, /*noFollow=*/true);
  if (!dirFd.isOk()) {
    if (dirFd.status().code() == ErrorCode::NotFound)
      return CacheLookup{};
    std::error_code ec;
    stdfs::file_status st = stdfs::symlink_status(dir, ec);
    if (!ec && !stdfs::is_directory(st))
      return notOurs(dir); // a file or a symbolic link in the entry's place
    return dirFd.status();
  }
  Result<CacheEntry> entry = readEntry(dirFd->get(), key, dir);
  if (!entry.isOk()) {
    if (!isAttncDirectory(dir))
      return notOurs(dir);
    CacheLookup miss;
    miss.problem = entry.status().message();
    Status removed = remove(key);
    if (!removed.isOk())
      miss.problem += " (and removing it failed: " + removed.message() + ")";
    return miss;
  }
  // Last-use time for LRU pruning. A read-only cache (a shipped bundle)
  // cannot record it, which is fine.
  (void)::futimens(dirFd->get(), nullptr);
  CacheLookup hit;
  hit.entry = std::move(entry).value();
  return hit;
}

Result<CacheEntry> DiskCache::publish(std::string_view key,
                                      const CompiledKernel &kernel) {
  if (!isCacheKey(key))
    return badKey(key);
  if (kernel.ptx.empty())
    return Status(ErrorCode::InvalidArgument,
                  "refusing to cache a kernel with empty PTX");
  if (kernel.ptx.find('\0') != std::string::npos)
    return Status(ErrorCode::InvalidArgument, "PTX text contains a NUL byte");

  CacheEntry entry;
  entry.key = std::string(key);
  entry.dir = entryDir(key);
  entry.meta = kernel.meta;
  entry.meta.files.clear();
  entry.meta.files.push_back(checksum(kPtxFileName, kernel.ptx));
  if (!kernel.cubin.empty())
    entry.meta.files.push_back(checksum(kCubinFileName, kernel.cubin));
  entry.ptx = kernel.ptx;
  entry.cubin = kernel.cubin;
  ATTNC_RETURN_IF_ERROR(validateMetadata(entry.meta));
  std::string metaText = writeMetadata(entry.meta);

  ATTNC_RETURN_IF_ERROR(fs::makeDirs(root_));
  // A few rounds: if the winner's entry turns out damaged (lookup removes
  // it) or is pruned before we read it, try to put ours in place again.
  for (int attempt = 0; attempt < 4; ++attempt) {
    ATTNC_ASSIGN_OR_RETURN(
        std::string temp,
        fs::makeTempDir(root_, kTempPrefix + std::string(key) + "-"));
    auto write = [&]() -> Status {
      ATTNC_ASSIGN_OR_RETURN(fs::Fd tempFd, fs::openDir(temp));
      ATTNC_RETURN_IF_ERROR(
          fs::writeFileAt(tempFd.get(), kPtxFileName, kernel.ptx));
      if (!kernel.cubin.empty())
        ATTNC_RETURN_IF_ERROR(
            fs::writeFileAt(tempFd.get(), kCubinFileName, kernel.cubin));
      ATTNC_RETURN_IF_ERROR(
          fs::writeFileAt(tempFd.get(), kMetaFileName, metaText));
      return fs::fsyncFd(tempFd.get(), temp);
    };
    Status written = write();
    if (!written.isOk()) {
      (void)fs::removeTree(temp);
      return written.withContext("publishing cache entry " + entry.key);
    }
    if (::rename(temp.c_str(), entry.dir.c_str()) == 0) {
      // Make the rename itself durable.
      if (Result<fs::Fd> rootFd = fs::openDir(root_); rootFd.isOk())
        ATTNC_RETURN_IF_ERROR(fs::fsyncFd(rootFd->get(), root_));
      return entry;
    }
    int err = errno;
    (void)fs::removeTree(temp);
    if (err != EEXIST && err != ENOTEMPTY)
      return Status(ErrorCode::IoError, "cannot rename '" + temp + "' to '" +
                                            entry.dir +
                                            "': " + fs::errnoText(err));
    // Another process won the race: use its entry.
    ATTNC_ASSIGN_OR_RETURN(CacheLookup theirs, lookup(key));
    if (theirs.entry)
      return std::move(*theirs.entry);
  }
  return Status(ErrorCode::IoError,
                "could not publish cache entry " + entry.key +
                    " after 4 attempts: the entry in place kept turning out "
                    "damaged or being removed by another process");
}

Status DiskCache::moveAwayAndRemove(const std::string &path) {
  // Rename first so no reader ever sees a half-deleted entry.
  ATTNC_ASSIGN_OR_RETURN(std::string trash,
                         fs::makeTempDir(root_, kTrashPrefix));
  if (::rename(path.c_str(), trash.c_str()) != 0) {
    int err = errno;
    std::error_code ignored;
    stdfs::remove(trash, ignored);
    if (err == ENOENT)
      return Status::ok(); // someone else removed it
    return Status(ErrorCode::IoError,
                  "cannot remove '" + path + "': " + fs::errnoText(err));
  }
  return fs::removeTree(trash);
}

Status DiskCache::remove(std::string_view key) {
  if (!isCacheKey(key))
    return badKey(key);
  std::error_code ec;
  if (!stdfs::exists(stdfs::symlink_status(entryDir(key), ec)))
    return Status::ok();
  if (!isAttncDirectory(entryDir(key)))
    return notOurs(entryDir(key));
  return moveAwayAndRemove(entryDir(key));
}

Status DiskCache::checkRemovableRoot() const {
  if (root_.empty() || root_ == "/")
    return Status(ErrorCode::InvalidArgument, "refusing to clear or prune '" +
                                                  root_ +
                                                  "': not a cache directory");
  return Status::ok();
}

Result<std::vector<CacheEntryInfo>> DiskCache::list() const {
  std::vector<CacheEntryInfo> infos;
  std::error_code ec;
  stdfs::directory_iterator it(root_, ec), end;
  if (ec == std::errc::no_such_file_or_directory)
    return infos; // nothing cached yet
  for (; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (!isCacheKey(name))
      continue;
    std::string path = it->path().string();
    CacheEntryInfo info;
    info.key = name;
    info.lastUseNs = fs::mtimeNs(path);
    if (info.lastUseNs < 0)
      continue; // removed meanwhile
    info.sizeBytes = fs::directorySize(path);
    if (!isAttncDirectory(path)) {
      info.readable = false;
      info.foreign = true;
      infos.push_back(std::move(info));
      continue;
    }
    Result<fs::Fd> entryFd = fs::openDir(path, /*noFollow=*/true);
    Result<std::string> metaText =
        entryFd.isOk()
            ? fs::readFileAt(entryFd->get(), kMetaFileName, kMaxMetaBytes)
            : Result<std::string>(entryFd.status());
    Result<KernelMetadata> meta =
        metaText.isOk() ? parseMetadata(*metaText)
                        : Result<KernelMetadata>(metaText.status());
    if (meta.isOk())
      info.spec = meta->spec;
    else
      info.readable = false;
    infos.push_back(std::move(info));
  }
  if (ec)
    return Status(ErrorCode::IoError, "cannot list cache directory '" + root_ +
                                          "': " + fs::errnoText(ec.value()));
  std::sort(infos.begin(), infos.end(),
            [](const CacheEntryInfo &a, const CacheEntryInfo &b) {
              if (a.lastUseNs != b.lastUseNs)
                return a.lastUseNs > b.lastUseNs;
              return a.key < b.key;
            });
  return infos;
}

void DiskCache::removeStaleTemporaries(int64_t olderThanNs) {
  std::vector<std::string> doomed;
  int64_t now = nowNs();
  std::error_code ec;
  for (stdfs::directory_iterator it(root_, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::string name = it->path().filename().string();
    std::string path = it->path().string();
    if (!startsWith(name, kTrashPrefix) && !startsWith(name, kTempPrefix))
      continue;
    if (startsWith(name, kTempPrefix) && now - fs::mtimeNs(path) <= olderThanNs)
      continue;
    if (isAttncDirectory(path))
      doomed.push_back(path);
  }
  for (const std::string &path : doomed)
    (void)fs::removeTree(path);
}

Result<size_t> DiskCache::clear() {
  ATTNC_RETURN_IF_ERROR(checkRemovableRoot());
  ATTNC_ASSIGN_OR_RETURN(std::vector<CacheEntryInfo> infos, list());
  size_t removed = 0;
  for (const CacheEntryInfo &info : infos) {
    if (info.foreign)
      continue;
    ATTNC_RETURN_IF_ERROR(remove(info.key));
    ++removed;
  }
  removeStaleTemporaries(kStaleTempNs);
  return removed;
}

Result<PruneResult> DiskCache::prune(uint64_t maxBytes) {
  ATTNC_RETURN_IF_ERROR(checkRemovableRoot());
  ATTNC_ASSIGN_OR_RETURN(std::vector<CacheEntryInfo> all, list());
  std::vector<CacheEntryInfo> infos;
  for (CacheEntryInfo &info : all)
    if (!info.foreign)
      infos.push_back(std::move(info));
  PruneResult result;
  uint64_t total = 0;
  for (const CacheEntryInfo &info : infos)
    total += info.sizeBytes;
  // list() is most recent first: evict from the back.
  size_t keep = infos.size();
  while (keep > 0 && total > maxBytes) {
    const CacheEntryInfo &victim = infos[keep - 1];
    ATTNC_RETURN_IF_ERROR(remove(victim.key));
    total -= victim.sizeBytes;
    result.removedBytes += victim.sizeBytes;
    ++result.removedEntries;
    --keep;
  }
  result.keptEntries = keep;
  result.keptBytes = total;
  removeStaleTemporaries(kStaleTempNs);
  return result;
}

// Unlock before closing: a child forked meanwhile shares the open file
// description, and closing our descriptor alone would leave it holding the
// lock for its whole life.
static void releaseBuildLock(int fd) {
  if (fd >= 0) {
    ::flock(fd, LOCK_UN);
    ::close(fd);
  }
}

BuildLock &BuildLock::operator=(BuildLock &&other) noexcept {
  if (this != &other) {
    releaseBuildLock(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

BuildLock::~BuildLock() { releaseBuildLock(fd_); }

Result<BuildLock> DiskCache::lockForBuild(
    std::string_view key, std::chrono::milliseconds timeout,
    const std::function<void(const std::string &)> &waiting) {
  if (!isCacheKey(key))
    return Status(ErrorCode::InvalidArgument,
                  "invalid cache key '" + std::string(key) + "'");
  const std::string dir = root_ + "/.locks";
  ATTNC_RETURN_IF_ERROR(fs::makeDirs(dir));
  const std::string path = dir + "/" + std::string(key.substr(0, 2));
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return Status(ErrorCode::IoError, "cannot open lock file '" + path +
                                          "': " + fs::errnoText(errno));
  BuildLock lock(fd);
  // Polled, so that a holder that never lets go (a stopped process, a hung
  // ptxas) costs a bounded wait: after `timeout` the caller builds without
  // the lock (Timeout), and `waiting` hears once that it is waiting.
  const auto start = std::chrono::steady_clock::now();
  bool told = false;
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR)
      return Status(ErrorCode::IoError,
                    "cannot lock '" + path + "': " + fs::errnoText(errno));
    const auto waited = std::chrono::steady_clock::now() - start;
    if (waited >= timeout)
      return Status(
          ErrorCode::Unsupported,
          "another process has been building in '" + path + "' for " +
              std::to_string(
                  std::chrono::duration_cast<std::chrono::seconds>(waited)
                      .count()) +
              " s");
    if (!told && waiting && waited >= std::chrono::seconds(2)) {
      waiting("attnc: waiting for another process's build of " +
              std::string(key) + " (lock " + path + ")");
      told = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return lock;
}

} // namespace attnc
