//===- Commands.h - the attnc CLI's subcommands -----------------*- C++ -*-===//
#ifndef ATTNC_TOOLS_ATTNC_COMMANDS_H
#define ATTNC_TOOLS_ATTNC_COMMANDS_H

#include "attnc/runtime/Spec.h"
#include "attnc/runtime/TuningDb.h"
#include "compiler/Frontend/AttentionConfig.h"
#include "tools/attnc-tune-run/TuneRunner.h"

#include "mlir/IR/BuiltinOps.h"

#include <CLI/CLI.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace attnc::cli {

struct EmitOptions {
  std::string op = "attention";
  std::string input; // .mlir file; empty: build from flags
  AttentionConfig attention;
  std::string window; // "L,R"
  std::string arch = "sm_90a";
  std::string stage = "ptx"; // attn | tile | llvm | ptx
  std::string output;        // empty: stdout
  bool printIrAfterAll = false;
  bool summary = false;
  int64_t seqLen = 8192;
  int64_t batch = 1;
  std::string mapping = "auto"; // auto | wgmma | mma | simt
  std::string kvSync;  // wgmma K/V loop: barrier | mbarrier | producer |
                       // pingpong | tma ("": the default)
  std::string rescale; // wgmma: threshold | exact ("": the default, threshold)
  std::string grid;    // wgmma: tiles | persistent (kv-sync tma; "": the
                       // default, heuristicTuning's: persistent for causal
                       // up to D192 and for D128)
  // wgmma: registers | tma (kv-sync tma; "": the default, tma on the tma
  // schedule)
  std::string epilogue;
  bool noStreamK = false;
  int64_t blockM = 0; // 0: the mapping's default for the head dim
  int64_t blockN = 0;
  int64_t warps = 0;  // 0: one warp per 16 query rows (mma)
  int64_t stages = 0; // K/V tiles in flight (0: the op's default)
  // --op decode / kv-append: the paged cache's page size (0: 16); --op
  // attention --varlen: a paged cache of this page size (0: contiguous).
  int64_t pageSize = 0;
  int64_t pageSizeOr16() const { return pageSize ? pageSize : 16; }
  int64_t maxQLen = 1; // --op decode: most query rows per sequence
  // Fused elementwise ops (--op add-rmsnorm | silu-mul | gelu-mul).
  int64_t hidden = 4096;
  double eps = 1e-6;
  int64_t minBlocksPerSm = 0; // row kernels: register cap for occupancy
  // --op rope (heads, kv heads, head size and dtype from the attention flags)
  int64_t rotaryDim = 0; // 0: the head size
  std::string ropeStyle = "neox";
  std::string positions = "i64";
};

void addEmitCommand(CLI::App &app, EmitOptions &opts);
/// Returns the process exit code.
int runEmit(EmitOptions &opts);

struct SummaryInput {
  const EmitOptions &opts;
  mlir::ModuleOp module;
  std::string ptxPath; // empty: no PTX was kept
  std::string ptxMissingReason;
  std::string ptx; // the PTX text, for ptxas
  // Per kernel: the dynamic shared memory and threads the mapping recorded
  // (ptxas sees only static shared memory).
  std::map<std::string, std::pair<int64_t, int64_t>> launch;
};
void printSummary(const SummaryInput &in);

struct BundleOptions {
  std::string specsFile;
  std::string outputDir;
  bool cubin = true;
};
void addBundleCommand(CLI::App &app, BundleOptions &opts);
int runBundle(const BundleOptions &opts);

struct CacheOptions {
  std::string action; // ls | clear | prune
  std::string dir;
  int64_t maxSize = -1;
};
void addCacheCommand(CLI::App &app, CacheOptions &opts);
int runCache(const CacheOptions &opts);

struct BenchOptions {
  KernelSpec spec = [] {
    KernelSpec s;
    s.heads = 32;
    s.kvHeads = 8;
    s.headDim = 128;
    return s;
  }();
  int64_t batch = 1, seqLen = 4096, reps = 20;
  std::string baseline, bundle;
};
void addBenchCommand(CLI::App &app, BenchOptions &opts);
int runBench(const BenchOptions &opts, const char *argv0);

struct TuneOptions {
  std::vector<std::string> inputs;
  std::string output, db, gpu = "NVIDIA H200";
  KernelSpec spec = [] {
    KernelSpec s;
    s.heads = 32;
    s.kvHeads = 8;
    s.headDim = 128;
    return s;
  }();
  ProblemSize size{1, 4096, 4096};
  // attnc tune plan
  struct Plan {
    std::string preset;   // "peers-d128", "peers"; empty: one group
    std::string problems; // "B:SQ:SKV,..."
    KernelSpec spec = [] {
      KernelSpec s;
      s.heads = 16;
      s.kvHeads = 16;
      s.headDim = 128;
      return s;
    }();
    std::string arch = "sm_90a";
    std::vector<std::string> knobs; // NAME=V1,V2
    std::string output;
    int jobs = 0; // 0: one per core
    bool dryRun = false, verbose = false, cubin = true, run = false;
    std::string ptxasPath = ATTNC_PTXAS_PATH;
  } plan;
  TuneRunOptions run;
};
using TunePlanOptions = TuneOptions::Plan;
int runTunePlan(const TunePlanOptions &opts);
void addTuneCommand(CLI::App &app, TuneOptions &opts);
int runTune(CLI::App &app, const TuneOptions &opts);

} // namespace attnc::cli

#endif
