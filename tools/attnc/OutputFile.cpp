//===- OutputFile.cpp - the CLI's whole-or-nothing file I/O ---------------===//
#include "tools/attnc/OutputFile.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace attnc::cli {

namespace {

std::string quoted(const std::string &path) { return "'" + path + "'"; }

std::string errnoMessage(const std::string &path, int err) {
  return quoted(path) + ": " + std::strerror(err);
}

const char *kindOf(mode_t mode) {
  if (S_ISLNK(mode))
    return "a symbolic link";
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode))
    return "a device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

bool writeAll(int fd, std::string_view text) {
  while (!text.empty()) {
    ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    text.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

} // namespace

std::string writeOutputFile(const std::string &path, std::string_view text) {
  if (path == "-") {
    if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() ||
        std::fflush(stdout) != 0)
      return "standard output: " + std::string(std::strerror(errno));
    return "";
  }
  struct stat st;
  bool exists = ::lstat(path.c_str(), &st) == 0;
  if (!exists && errno != ENOENT)
    return errnoMessage(path, errno);
  if (exists && !S_ISREG(st.st_mode))
    return quoted(path) + " is " + kindOf(st.st_mode) +
           ", not a regular file; -o replaces regular files only (leave "
           "out -o to write to standard output)";
  mode_t mode;
  if (exists) {
    mode = st.st_mode & 07777;
  } else {
    mode_t mask = ::umask(0); // single-threaded here: read it, put it back
    ::umask(mask);
    mode = 0666 & ~mask;
  }

  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (dir.empty())
    dir = "/";
  std::string temp = dir + "/." + base + ".tmp-XXXXXX";
  int fd = ::mkstemp(temp.data());
  if (fd < 0)
    return errnoMessage(path, errno);
  int err = 0;
  if (!writeAll(fd, text))
    err = errno ? errno : EIO;
  // fsync reports what a full or remote file system defers past write().
  if (!err && (::fchmod(fd, mode) != 0 || ::fsync(fd) != 0))
    err = errno;
  if (::close(fd) != 0 && !err)
    err = errno;
  if (!err && ::rename(temp.c_str(), path.c_str()) != 0)
    err = errno;
  if (err) {
    ::unlink(temp.c_str());
    return errnoMessage(path, err) +
           (exists ? " (the old file is unchanged)" : " (nothing written)");
  }
  return "";
}

std::string readInputFile(const std::string &path, uint64_t maxBytes,
                          std::string &text) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return errnoMessage(path, errno);
  struct stat st;
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    int err = S_ISDIR(st.st_mode) ? EISDIR : errno;
    ::close(fd);
    return errnoMessage(path, err);
  }
  const std::string tooLarge = quoted(path) + " is larger than " +
                               std::to_string(maxBytes >> 20) +
                               " MiB, the most attnc reads";
  if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > maxBytes) {
    ::close(fd);
    return tooLarge;
  }
  // Pipes and devices have no size: read one byte past the limit to tell.
  text.clear();
  char buffer[65536];
  while (true) {
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return errnoMessage(path, err);
    }
    if (n == 0)
      break;
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > maxBytes) {
      ::close(fd);
      return tooLarge;
    }
  }
  ::close(fd);
  return "";
}

} // namespace attnc::cli
