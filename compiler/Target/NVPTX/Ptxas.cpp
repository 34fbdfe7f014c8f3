//===- Ptxas.cpp - assemble PTX with ptxas and read its report ------------===//
#include "compiler/Target/NVPTX/Ptxas.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <regex>
#include <sstream>

using namespace attnc;

std::vector<KernelResources> attnc::parsePtxasReport(const std::string &log) {
  static const std::regex entry(R"(Compiling entry function '([^']+)')");
  static const std::regex frame(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex regs(R"(Used (\d+) registers)");
  static const std::regex smem(R"((\d+) bytes smem)");
  std::vector<KernelResources> out;
  std::istringstream lines(log);
  std::string line;
  std::smatch m;
  while (std::getline(lines, line)) {
    if (std::regex_search(line, m, entry)) {
      out.push_back({});
      out.back().name = m[1];
      continue;
    }
    if (out.empty())
      continue;
    KernelResources &k = out.back();
    if (std::regex_search(line, m, frame)) {
      k.stackFrameBytes = std::stoll(m[1]);
      k.spillStoreBytes = std::stoll(m[2]);
      k.spillLoadBytes = std::stoll(m[3]);
    }
    if (std::regex_search(line, m, regs))
      k.registers = std::stoll(m[1]);
    if (std::regex_search(line, m, smem))
      k.sharedBytes = std::stoll(m[1]);
  }
  return out;
}

PtxasResult attnc::runPtxas(const std::string &ptx, const std::string &arch,
                            const std::string &ptxasPath) {
  PtxasResult result;
  if (!llvm::sys::fs::can_execute(ptxasPath)) {
    result.log = "ptxas not found at " + ptxasPath;
    return result;
  }
  llvm::SmallString<128> ptxFile, logFile;
  if (llvm::sys::fs::createTemporaryFile("attnc", "ptx", ptxFile) ||
      llvm::sys::fs::createTemporaryFile("attnc-ptxas", "log", logFile)) {
    result.log = "cannot create temporary files for ptxas";
    return result;
  }
  llvm::FileRemover removePtx(ptxFile), removeLog(logFile);
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(ptxFile, ec);
    if (ec) {
      result.log = "cannot write " + ptxFile.str().str() + ": " + ec.message();
      return result;
    }
    os << ptx;
  }
  std::string archFlag = "-arch=" + arch;
  llvm::StringRef args[] = {ptxasPath, archFlag,    "-v",
                            "-o",      "/dev/null", ptxFile};
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, logFile.str(),
                                                logFile.str()};
  std::string error;
  int rc = llvm::sys::ExecuteAndWait(ptxasPath, args, std::nullopt, redirects,
                                     /*SecondsToWait=*/120, 0, &error);
  if (auto buf = llvm::MemoryBuffer::getFile(logFile))
    result.log = (*buf)->getBuffer().str();
  if (!error.empty())
    result.log += error;
  result.ok = rc == 0;
  result.kernels = parsePtxasReport(result.log);
  return result;
}
