//===- FileSystem.cpp - File helpers for the disk cache -------------------===//
//
// std::filesystem (error_code overloads only: the runtime never throws) for
// paths, listing, status, sizes, times and recursive removal. POSIX where the
// exact system call matters: opens with O_NONBLOCK/O_NOFOLLOW checked by
// fstat, O_EXCL creation, fsync, rename, mkdir with an explicit mode, and
// everything relative to a directory descriptor.
//
//===----------------------------------------------------------------------===//

#include "FileSystem.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

namespace attnc::fs {

namespace stdfs = std::filesystem;

std::string errnoText(int err) {
  char buf[256];
  // GNU strerror_r may return a static string instead of filling buf.
  const char *text = strerror_r(err, buf, sizeof(buf));
  return text;
}

Fd &Fd::operator=(Fd &&other) noexcept {
  if (this != &other) {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

Fd::~Fd() {
  if (fd_ >= 0)
    ::close(fd_);
}

static Status ioError(const std::string &what, int err) {
  return Status(err == ENOENT ? ErrorCode::NotFound : ErrorCode::IoError,
                what + ": " + errnoText(err));
}

// On POSIX, std::filesystem's error_code holds the failing call's errno.
static Status ioError(const std::string &what, const std::error_code &ec) {
  return ioError(what, ec.value());
}

Status makeDirs(const std::string &path) {
  if (path.empty())
    return Status(ErrorCode::InvalidArgument, "empty directory path");
  // Not create_directories: it creates with 0777 less the umask, and the
  // cache's directories are 0755 (less the umask) like its entries.
  stdfs::path prefix;
  for (const stdfs::path &part : stdfs::path(path)) {
    prefix /= part;
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST)
      return ioError("cannot create directory '" + prefix.string() + "'",
                     errno);
  }
  std::error_code ec;
  stdfs::file_status st = stdfs::status(path, ec);
  if (ec)
    return ioError("cannot stat '" + path + "'", ec);
  if (!stdfs::is_directory(st))
    return Status(ErrorCode::IoError, "'" + path + "' is not a directory");
  return Status::ok();
}

Result<Fd> openDir(const std::string &path, bool noFollow) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC |
                                    (noFollow ? O_NOFOLLOW : 0));
  if (fd < 0)
    return ioError("cannot open directory '" + path + "'", errno);
  return Fd(fd);
}

static Result<std::string> readAll(int fd, const std::string &what,
                                   uint64_t maxSize) {
  struct stat st;
  if (::fstat(fd, &st) != 0)
    return ioError("cannot stat '" + what + "'", errno);
  if (!S_ISREG(st.st_mode))
    return Status(ErrorCode::IoError, "'" + what + "' is not a regular file");
  if (static_cast<uint64_t>(st.st_size) > maxSize)
    return Status(ErrorCode::IoError, "'" + what + "' is larger than " +
                                          std::to_string(maxSize) + " bytes");
  std::string data;
  data.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::read(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return ioError("cannot read '" + what + "'", errno);
    if (n == 0)
      break; // shrank under us: the caller's size/checksum check reports it
    done += static_cast<size_t>(n);
  }
  data.resize(done);
  return data;
}

// O_NONBLOCK: opening a FIFO for reading blocks until a writer comes, so a
// FIFO planted in the cache would stall every reader before the fstat that
// rejects it. Reads of the regular files that pass the check ignore it.
constexpr int kReadFlags = O_RDONLY | O_CLOEXEC | O_NONBLOCK;

Result<std::string> readFileAt(int dirFd, const std::string &name,
                               uint64_t maxSize) {
  int fd = ::openat(dirFd, name.c_str(), kReadFlags | O_NOFOLLOW);
  if (fd < 0)
    return ioError("cannot open '" + name + "'", errno);
  Fd holder(fd);
  return readAll(fd, name, maxSize);
}

Result<std::string> readFile(const std::string &path, uint64_t maxSize) {
  int fd = ::open(path.c_str(), kReadFlags);
  if (fd < 0)
    return ioError("cannot open '" + path + "'", errno);
  Fd holder(fd);
  return readAll(fd, path, maxSize);
}

Status replaceFile(const std::string &path, std::string_view data) {
  const std::string temp = path + ".tmp." + std::to_string(::getpid());
  ::unlink(temp.c_str()); // a leftover of a crashed process with our pid
  Status written = writeFileAt(AT_FDCWD, temp, data);
  if (!written.isOk()) {
    ::unlink(temp.c_str());
    return written;
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(temp.c_str());
    return ioError("cannot rename '" + temp + "' to '" + path + "'", err);
  }
  return Status::ok();
}

Status fsyncFd(int fd, const std::string &what) {
  while (::fsync(fd) != 0) {
    if (errno != EINTR)
      return ioError("fsync of '" + what + "' failed", errno);
  }
  return Status::ok();
}

Status writeFileAt(int dirFd, const std::string &name, std::string_view data) {
  int fd = ::openat(dirFd, name.c_str(),
                    O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return ioError("cannot create '" + name + "'", errno);
  Fd holder(fd);
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return ioError("cannot write '" + name + "'", errno);
    done += static_cast<size_t>(n);
  }
  ATTNC_RETURN_IF_ERROR(fsyncFd(fd, name));
  if (::close(holder.release()) != 0)
    return ioError("cannot close '" + name + "'", errno);
  return Status::ok();
}

Result<std::string> makeTempDir(const std::string &parent,
                                const std::string &prefix) {
  // Not mkdtemp: its 0700 would survive the rename into place, and a cache
  // filled by one user (a bundle built as root) must be readable by others.
  // mkdir's 0755 is subject to the umask, like the files' 0644.
  static std::atomic<uint64_t> counter{0};
  const char *digits = "0123456789abcdefghijklmnopqrstuvwxyz";
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto now = std::chrono::system_clock::now().time_since_epoch();
    uint64_t x =
        (static_cast<uint64_t>(
             std::chrono::duration_cast<std::chrono::nanoseconds>(now).count())
         << 20) ^
        (static_cast<uint64_t>(::getpid()) << 40) ^
        (counter.fetch_add(1) * 0x9E3779B97F4A7C15ull);
    std::string name = prefix;
    for (int i = 0; i < 6; ++i, x /= 36)
      name += digits[x % 36];
    std::string path = (stdfs::path(parent) / name).string();
    if (::mkdir(path.c_str(), 0755) == 0)
      return path;
    if (errno != EEXIST)
      return ioError("cannot create a temporary directory in '" + parent + "'",
                     errno);
  }
  return Status(ErrorCode::IoError, "cannot create a temporary directory in '" +
                                        parent + "': every name tried exists");
}

Status removeTree(const std::string &path) {
  // remove_all follows no symbolic link. It stops at the first error; an
  // entry removed concurrently shows as ENOENT, so walk again what is left.
  std::error_code ec;
  for (int attempt = 0; attempt < 4; ++attempt) {
    stdfs::remove_all(path, ec);
    if (ec != std::errc::no_such_file_or_directory)
      break;
  }
  if (ec && ec != std::errc::no_such_file_or_directory)
    return ioError("cannot remove '" + path + "'", ec);
  return Status::ok();
}

uint64_t directorySize(const std::string &dir) {
  std::error_code ec;
  uint64_t total = 0;
  for (stdfs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::error_code statEc;
    if (!stdfs::is_regular_file(it->symlink_status(statEc)))
      continue;
    uint64_t size = it->file_size(statEc);
    if (!statEc)
      total += size;
  }
  return total;
}

int64_t mtimeNs(const std::string &path) {
  std::error_code ec;
  stdfs::file_time_type mtime = stdfs::last_write_time(path, ec);
  if (ec)
    return -1;
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             stdfs::file_time_type::clock::to_sys(mtime).time_since_epoch())
      .count();
}

} // namespace attnc::fs
