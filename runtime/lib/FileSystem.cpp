//===- FileSystem.cpp - POSIX file helpers for the disk cache -------------===//

#include "FileSystem.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

namespace attnc::fs {

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

Status makeDirs(const std::string &path) {
  if (path.empty())
    return Status(ErrorCode::InvalidArgument, "empty directory path");
  std::string prefix;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    prefix = path.substr(0, pos);
    if (prefix.empty())
      continue;
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST)
      return ioError("cannot create directory '" + prefix + "'", errno);
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return ioError("cannot stat '" + path + "'", errno);
  if (!S_ISDIR(st.st_mode))
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
    struct timespec ts;
    ::clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (static_cast<uint64_t>(ts.tv_nsec) << 20) ^
                 (static_cast<uint64_t>(::getpid()) << 40) ^
                 (counter.fetch_add(1) * 0x9E3779B97F4A7C15ull);
    std::string path = parent + "/" + prefix;
    for (int i = 0; i < 6; ++i, x /= 36)
      path += digits[x % 36];
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
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0)
    return errno == ENOENT ? Status::ok()
                           : ioError("cannot stat '" + path + "'", errno);
  if (!S_ISDIR(st.st_mode)) {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
      return ioError("cannot remove '" + path + "'", errno);
    return Status::ok();
  }
  DIR *dir = ::opendir(path.c_str());
  if (!dir)
    return errno == ENOENT ? Status::ok()
                           : ioError("cannot open '" + path + "'", errno);
  Status status;
  while (struct dirent *ent = ::readdir(dir)) {
    std::string name = ent->d_name;
    if (name == "." || name == "..")
      continue;
    Status child = removeTree(path + "/" + name);
    if (!child.isOk() && status.isOk())
      status = child;
  }
  ::closedir(dir);
  if (::rmdir(path.c_str()) != 0 && errno != ENOENT && status.isOk())
    status = ioError("cannot remove directory '" + path + "'", errno);
  return status;
}

uint64_t directorySize(const std::string &dir) {
  DIR *d = ::opendir(dir.c_str());
  if (!d)
    return 0;
  uint64_t total = 0;
  while (struct dirent *ent = ::readdir(d)) {
    struct stat st;
    if (::fstatat(::dirfd(d), ent->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISREG(st.st_mode))
      total += static_cast<uint64_t>(st.st_size);
  }
  ::closedir(d);
  return total;
}

int64_t mtimeNs(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return -1;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 +
         st.st_mtim.tv_nsec;
}

} // namespace attnc::fs
