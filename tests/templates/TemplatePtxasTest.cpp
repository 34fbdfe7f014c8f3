//===- TemplatePtxasTest.cpp - Templates compile and assemble -------------===//
//
// For each template, target (sm_80, sm_90a), dtype (bf16, fp16) and head dim
// (64, 128, 256): NVRTC compiles it to PTX (no GPU needed), ptxas -v
// assembles the PTX, and the registers / spills / shared memory of every
// entry are parsed, printed and checked:
//  * every documented entry is present;
//  * the reference kernel does not spill at D <= 128 (it holds 2*ceil(D/32)
//    floats per lane, so it should not spill at 256 either; a spill there is
//    reported as a warning);
//  * static shared memory matches what Templates.h documents.
//
//===----------------------------------------------------------------------===//

#include "templates/Templates.h"

#include <catch2/catch.hpp>

#include <array>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <unistd.h>

using namespace attnc::templates;

namespace {
const Nvrtc &nvrtc() {
  static std::unique_ptr<Nvrtc> instance = [] {
    std::string error;
    auto loaded = Nvrtc::load(&error);
    if (!loaded)
      FAIL(error);
    return loaded;
  }();
  return *instance;
}

struct EntryStats {
  int registers = -1;
  long stackBytes = 0, spillStores = 0, spillLoads = 0, sharedBytes = 0;
};

struct PtxasResult {
  int exitCode = -1;
  std::string output;
  std::map<std::string, EntryStats> entries;
};

/// Parses `ptxas -v` output:
///   ptxas info    : Compiling entry function 'NAME' for 'sm_90a'
///   ptxas info    : Function properties for NAME
///       S bytes stack frame, A bytes spill stores, B bytes spill loads
///   ptxas info    : Used R registers, used 1 barriers, N bytes smem, ...
std::map<std::string, EntryStats> parsePtxasVerbose(const std::string &text) {
  std::map<std::string, EntryStats> entries;
  static const std::regex compiling(R"(Compiling entry function '([^']+)')");
  static const std::regex frame(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex used(R"(Used (\d+) registers)");
  static const std::regex smem(R"((\d+) bytes smem)");
  std::istringstream lines(text);
  std::string line, current;
  std::smatch m;
  while (std::getline(lines, line)) {
    if (std::regex_search(line, m, compiling)) {
      current = m[1];
      entries[current];
    } else if (!current.empty() && std::regex_search(line, m, frame)) {
      EntryStats &e = entries[current];
      e.stackBytes = std::stol(m[1]);
      e.spillStores = std::stol(m[2]);
      e.spillLoads = std::stol(m[3]);
    } else if (!current.empty() && std::regex_search(line, m, used)) {
      EntryStats &e = entries[current];
      e.registers = std::stoi(m[1]);
      if (std::regex_search(line, m, smem))
        e.sharedBytes = std::stol(m[1]);
    }
  }
  return entries;
}

PtxasResult runPtxas(const std::string &ptx, const std::string &arch) {
  static std::atomic<int> counter{0};
  const std::filesystem::path dir = std::filesystem::temp_directory_path();
  const std::string stem = (dir / ("attnc-tpl-" + std::to_string(::getpid()) +
                                   "-" + std::to_string(counter++)))
                               .string();
  {
    std::ofstream out(stem + ".ptx", std::ios::binary);
    out << ptx;
  }
  const std::string command = std::string(ATTNC_TEST_PTXAS) + " -arch=" + arch +
                              " -v " + stem + ".ptx -o " + stem + ".cubin 2>&1";
  PtxasResult result;
  FILE *pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    result.output.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::filesystem::remove(stem + ".ptx");
  std::filesystem::remove(stem + ".cubin");
  result.entries = parsePtxasVerbose(result.output);
  return result;
}

long expectedStaticShared(const std::string &entry, int headDim) {
  if (entry == "attnc_std_scores")
    return 2L * kStdScoresTileM * (kStdScoresTileK + 1) * 4; // 16896
  if (entry == "attnc_std_softmax")
    return 2L * (kStdThreads / 32) * 4; // 64
  if (entry == "attnc_std_pv")
    return (long(kStdPvTileM) * kStdPvTileK +
            long(kStdPvTileK) * 32 * ((headDim + 31) / 32)) *
           4;
  return 0; // attnc_reference_attention
}

void checkTemplate(TemplateKind kind, const std::string &arch,
                   bool scoresF32 = false) {
  for (DType dtype : {DType::BF16, DType::FP16}) {
    for (int headDim : {64, 128, 256}) {
      TemplateConfig config;
      config.kind = kind;
      config.dtype = dtype;
      config.headDim = headDim;
      config.arch = arch;
      config.scoresF32 = scoresF32;
      const std::string label = std::string(templateKindName(kind)) + " " +
                                arch + " " + dtypeName(dtype) +
                                " D=" + std::to_string(headDim) +
                                (scoresF32 ? " S/P=f32" : "");
      INFO(label);
      NvrtcCompileResult compiled = compileTemplate(nvrtc(), config);
      INFO(compiled.message());
      REQUIRE(compiled.ok);
      CHECK(compiled.log.find("warning") == std::string::npos);
      CHECK(compiled.ptx.find(".target " + arch) != std::string::npos);

      PtxasResult assembled = runPtxas(compiled.ptx, arch);
      INFO(assembled.output);
      REQUIRE(assembled.exitCode == 0);
      for (const std::string &entry : templateEntryNames(kind)) {
        INFO(entry);
        REQUIRE(assembled.entries.count(entry) == 1);
        const EntryStats &e = assembled.entries.at(entry);
        std::printf("%-44s %-18s regs %3d  spill st/ld %4ld/%-4ld  stack %4ld  "
                    "smem %6ld\n",
                    label.c_str(), entry.c_str(), e.registers, e.spillStores,
                    e.spillLoads, e.stackBytes, e.sharedBytes);
        CHECK(e.registers > 0);
        CHECK(e.sharedBytes == expectedStaticShared(entry, headDim));
        const bool spills = e.spillStores > 0 || e.spillLoads > 0;
        if (kind == TemplateKind::ReferenceAttention && headDim <= 128)
          CHECK_FALSE(spills);
        else if (spills)
          WARN(label << " " << entry << " spills " << e.spillStores << "/"
                     << e.spillLoads << " bytes");
      }
      REQUIRE(assembled.entries.size() == templateEntryNames(kind).size());
    }
  }
  std::fflush(stdout);
}
} // namespace

TEST_CASE("ptxas -v output is parsed", "[ptxas-parse]") {
  const std::string sample =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'k1' for 'sm_90a'\n"
      "ptxas info    : Function properties for k1\n"
      "    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 1 barriers, 16896 bytes smem, "
      "592 bytes cmem[0]\n"
      "ptxas info    : Compiling entry function 'k2' for 'sm_90a'\n"
      "ptxas info    : Function properties for k2\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 18 registers, used 0 barriers, 400 bytes cmem[0]\n";
  auto entries = parsePtxasVerbose(sample);
  REQUIRE(entries.size() == 2);
  CHECK(entries["k1"].registers == 40);
  CHECK(entries["k1"].stackBytes == 8);
  CHECK(entries["k1"].spillStores == 4);
  CHECK(entries["k1"].spillLoads == 12);
  CHECK(entries["k1"].sharedBytes == 16896);
  CHECK(entries["k2"].registers == 18);
  CHECK(entries["k2"].sharedBytes == 0);
}

TEST_CASE("reference attention, sm_80", "[ptxas][reference][sm_80]") {
  checkTemplate(TemplateKind::ReferenceAttention, "sm_80");
}
TEST_CASE("reference attention, sm_90a", "[ptxas][reference][sm_90a]") {
  checkTemplate(TemplateKind::ReferenceAttention, "sm_90a");
}
TEST_CASE("standard attention, sm_80", "[ptxas][standard][sm_80]") {
  checkTemplate(TemplateKind::StandardAttention, "sm_80");
}
TEST_CASE("standard attention, sm_90a", "[ptxas][standard][sm_90a]") {
  checkTemplate(TemplateKind::StandardAttention, "sm_90a");
}
TEST_CASE("standard attention with fp32 S/P, sm_90a",
          "[ptxas][standard-f32][sm_90a]") {
  checkTemplate(TemplateKind::StandardAttention, "sm_90a", /*scoresF32=*/true);
}
