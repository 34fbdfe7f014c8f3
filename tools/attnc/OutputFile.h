//===- OutputFile.h - the CLI's whole-or-nothing file I/O -------*- C++ -*-===//
#ifndef ATTNC_TOOLS_ATTNC_OUTPUTFILE_H
#define ATTNC_TOOLS_ATTNC_OUTPUTFILE_H

#include <cstdint>
#include <string>
#include <string_view>

namespace attnc::cli {

/// Writes `text` to `path` ("-": standard output) whole or not at all: into
/// a temporary file beside it, checked, fsynced and renamed over `path`, so
/// that a full disk or a signal leaves the old file (or none), never a part.
/// Anything at `path` but a regular file (a FIFO, a device, a directory, a
/// symbolic link) is refused rather than replaced. An existing file keeps its
/// permissions. Returns the error message, empty on success.
std::string writeOutputFile(const std::string &path, std::string_view text);

/// Reads an input file (a regular file or a pipe) of at most maxBytes into
/// `text`. Returns the error message, empty on success.
std::string readInputFile(const std::string &path, uint64_t maxBytes,
                          std::string &text);

} // namespace attnc::cli

#endif
