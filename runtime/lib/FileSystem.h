//===- FileSystem.h - File helpers for the disk cache -----------*- C++ -*-===//
//
// The file operations the cache needs, returning Status instead of errno or
// exceptions. Those that need exact semantics (fsync, O_EXCL, O_NOFOLLOW and
// O_NONBLOCK opens, openat on a held directory, rename, mkdir modes) are
// POSIX calls; the rest are std::filesystem's error_code overloads.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_LIB_FILESYSTEM_H
#define ATTNC_RUNTIME_LIB_FILESYSTEM_H

#include "attnc/runtime/Status.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace attnc::fs {

std::string errnoText(int err);

// A file descriptor closed on destruction.
class Fd {
public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd &&other) noexcept : fd_(other.release()) {}
  Fd &operator=(Fd &&other) noexcept;
  Fd(const Fd &) = delete;
  Fd &operator=(const Fd &) = delete;
  ~Fd();

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

private:
  int fd_ = -1;
};

// mkdir -p with mode 0755.
Status makeDirs(const std::string &path);

// Opens a directory for openat()-relative access. ENOENT gives NotFound.
// With noFollow, a symbolic link at `path` is an error (ELOOP), not followed.
Result<Fd> openDir(const std::string &path, bool noFollow = false);

// Reads a whole file relative to `dirFd`; files larger than maxSize are an
// error (a damaged entry must not make us allocate gigabytes), and so is
// anything but a regular file (checked on the descriptor, after an open
// that neither blocks on a FIFO nor, at `name`, follows a symbolic link).
// ENOENT gives NotFound. readFile follows symbolic links.
Result<std::string> readFileAt(int dirFd, const std::string &name,
                               uint64_t maxSize);
Result<std::string> readFile(const std::string &path, uint64_t maxSize);

// Creates `name` (which must not exist), writes all of `data`, fsyncs.
Status writeFileAt(int dirFd, const std::string &name, std::string_view data);

// Replaces the file at `path` with `data` atomically: written in full and
// fsynced to "<path>.tmp.<pid>", then renamed over `path` (readers see the
// old file or the new one, never a part). The temporary file is removed on
// failure.
Status replaceFile(const std::string &path, std::string_view data);

Status fsyncFd(int fd, const std::string &what);

// Creates a fresh directory "<parent>/<prefix>XXXXXX" (mode 0755 less the
// umask, as mkdir gives) and returns its path.
Result<std::string> makeTempDir(const std::string &parent,
                                const std::string &prefix);

// Removes a directory tree without following symbolic links; entries
// vanishing concurrently are not errors.
Status removeTree(const std::string &path);

// Total size of the regular files directly inside `dir`.
uint64_t directorySize(const std::string &dir);

// Modification time in nanoseconds since the epoch; -1 if stat fails.
int64_t mtimeNs(const std::string &path);

} // namespace attnc::fs

#endif // ATTNC_RUNTIME_LIB_FILESYSTEM_H
