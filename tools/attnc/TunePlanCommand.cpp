//===- TunePlanCommand.cpp - attnc tune plan: the sweep's compile half ----===//
//
// Enumerates the candidates of each group (TuneSpace.h), compiles the
// distinct kernels on a thread pool into a bundle (a cache directory the
// runtime alone can load), reads each module's resources from ptxas -v and
// the kernel metadata (dynamic shared memory), drops candidates that spill,
// exceed the shared-memory limit, fail to compile or produce the same PTX
// as the default, and writes the sweep plan beside the bundle.
//
//===----------------------------------------------------------------------===//
#include "tools/attnc/Commands.h"
#include "tools/attnc/TunePresets.h"

#include "attnc/runtime/BuildId.h"
#include "attnc/runtime/DiskCache.h"
#include "attnc/runtime/NvJitLink.h"
#include "attnc/runtime/Resolve.h"
#include "compiler/Driver/SpecCompiler.h"
#include "compiler/Driver/TuneSpace.h"
#include "compiler/Target/NVPTX/Ptxas.h"
#include "llvm/Support/ThreadPool.h"

#include <chrono>
#include <filesystem>
#include <fmt/core.h>
#include <map>
#include <mutex>

namespace attnc::cli {

namespace {

struct CompileResult {
  bool ok = false;
  std::string error; // first line of the failure
  std::string ptx;
  std::string mapping;
  std::string gridRule; // the same PTX on another grid is another launch
  int64_t registers = -1, spillBytes = 0, smemBytes = 0;
  std::string key;
};

std::string firstLine(const std::string &text) {
  size_t nl = text.find('\n');
  std::string line = text.substr(0, nl);
  // The compile error's second line is the first diagnostic: say it too.
  if (nl != std::string::npos) {
    size_t next = text.find('\n', nl + 1);
    std::string diag = text.substr(nl + 1, next - nl - 1);
    if (!diag.empty())
      line += ": " + diag;
  }
  return line.size() > 300 ? line.substr(0, 300) + "..." : line;
}

CompileResult compileOne(DiskCache &cache, const KernelSpec &spec,
                         const ResolveOptions &options,
                         const std::string &ptxas) {
  CompileResult r;
  SpecCompiler compiler; // one per task: nothing shared between threads
  ResolveOptions mine = options;
  mine.compiler = &compiler;
  auto resolved = resolveKernel(cache, spec, defaultBuildId(), mine);
  if (!resolved.isOk()) {
    r.error = "compile failed: " + firstLine(resolved.status().message());
    return r;
  }
  const CacheEntry &entry = resolved->entry;
  r.key = entry.key;
  r.ptx = entry.ptx;
  r.mapping = entry.meta.mapping;
  r.gridRule = entry.meta.gridRule;
  PtxasResult p = runPtxas(entry.ptx, spec.arch, ptxas);
  if (!p.ok) {
    r.error = "ptxas failed: " + firstLine(p.log);
    return r;
  }
  int64_t staticSmem = 0;
  for (const KernelResources &k : p.kernels) {
    r.registers = std::max(r.registers, k.registers);
    r.spillBytes += k.spillStoreBytes + k.spillLoadBytes;
    staticSmem = std::max(staticSmem, k.sharedBytes);
  }
  r.smemBytes = staticSmem + entry.meta.dynamicSmem;
  r.ok = true;
  return r;
}

} // namespace

int runTunePlan(const TunePlanOptions &o) {
  // Groups: a preset, or one group from the flags.
  std::vector<TuneGroup> groups;
  if (!o.preset.empty()) {
    auto preset = tunePreset(o.preset, o.arch);
    if (!preset.isOk()) {
      fmt::print(stderr, "attnc: error: {}\n", preset.status().message());
      return 1;
    }
    groups = std::move(preset).value();
  } else {
    TuneGroup g;
    g.spec = o.spec;
    g.spec.arch = o.arch;
    if (g.spec.op == "decode" && g.spec.pageSize == 0)
      g.spec.pageSize = 16;
    if (g.spec.op == "decode" && g.spec.maxQLen == 0)
      g.spec.maxQLen = 1;
    auto problems = parseProblems(o.problems);
    if (!problems.isOk()) {
      fmt::print(stderr, "attnc: error: {}\n", problems.status().message());
      return 1;
    }
    g.problems = std::move(problems).value();
    g.name = groupName(g.spec);
    groups.push_back(std::move(g));
  }
  std::map<std::string, std::vector<std::string>> overrides;
  for (const std::string &k : o.knobs) {
    size_t eq = k.find('=');
    if (eq == std::string::npos || eq == 0) {
      fmt::print(stderr,
                 "attnc: error: --knob expects NAME=V1,V2,... (got "
                 "'{}')\n",
                 k);
      return 1;
    }
    std::vector<std::string> values;
    std::string rest = k.substr(eq + 1);
    for (size_t start = 0;;) {
      size_t comma = rest.find(',', start);
      values.push_back(rest.substr(start, comma - start));
      if (comma == std::string::npos)
        break;
      start = comma + 1;
    }
    overrides[k.substr(0, eq)] = values;
  }
  SweepPlan plan;
  plan.buildId = defaultBuildId();
  for (TuneGroup &g : groups) {
    if (Status s = validateSpec(g.spec); !s.isOk()) {
      fmt::print(stderr, "attnc: error: group {}: {}\n", g.name, s.message());
      return 1;
    }
    auto cands = enumerateCandidates(g.spec, overrides);
    if (!cands.isOk()) {
      fmt::print(stderr, "attnc: error: {}\n", cands.status().message());
      return 1;
    }
    g.candidates = std::move(cands).value();
    plan.groups.push_back(std::move(g));
  }

  // The distinct kernels (decode candidates differing only in their split
  // count share one).
  struct Task {
    KernelSpec spec;
    CompileResult result;
  };
  std::vector<Task> tasks;
  std::map<std::pair<size_t, size_t>, size_t> taskOf; // (group, cand) -> task
  for (size_t g = 0; g < plan.groups.size(); ++g)
    for (size_t c = 0; c < plan.groups[g].candidates.size(); ++c) {
      const TuneCandidate &cand = plan.groups[g].candidates[c];
      if (!cand.dropped.empty())
        continue;
      KernelSpec spec = candidateSpec(plan.groups[g], cand);
      size_t t = 0;
      while (t < tasks.size() && !(tasks[t].spec == spec))
        ++t;
      if (t == tasks.size())
        tasks.push_back({spec, {}});
      taskOf[{g, c}] = t;
    }

  if (!o.dryRun) {
    std::string bundle = o.output + "/bundle";
    std::error_code ec;
    std::filesystem::create_directories(bundle, ec);
    DiskCache cache(bundle);
    ResolveOptions options;
    if (o.cubin) {
      auto linker = CubinLinker::load();
      if (linker.isOk())
        options.cubinLinker = *linker;
    }
    std::mutex printMutex;
    options.log = [&](const std::string &m) {
      std::lock_guard<std::mutex> lock(printMutex);
      fmt::print(stderr, "attnc: {}\n", m);
    };
    // LLVM's pool: hardware_concurrency(0) means every core.
    llvm::DefaultThreadPool pool(llvm::hardware_concurrency(o.jobs));
    fmt::print(stderr, "attnc tune plan: compiling {} kernels on {} threads\n",
               tasks.size(), pool.getMaxConcurrency());
    size_t done = 0; // under printMutex
    auto start = std::chrono::steady_clock::now();
    for (Task &task : tasks)
      pool.async([&] {
        task.result = compileOne(cache, task.spec, options, o.ptxasPath);
        std::lock_guard<std::mutex> lock(printMutex);
        size_t n = ++done;
        double secs = std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - start)
                          .count();
        int filled = int(30.0 * n / tasks.size());
        fmt::print(stderr, "\r[{}{}] {}/{} kernels, {:.0f}s, ETA {:.0f}s ",
                   std::string(filled, '#'), std::string(30 - filled, '.'), n,
                   tasks.size(), secs, secs / n * (tasks.size() - n));
      });
    pool.wait();
    fmt::print(stderr, "\n");

    for (size_t g = 0; g < plan.groups.size(); ++g) {
      TuneGroup &group = plan.groups[g];
      const CompileResult *defaultResult = nullptr;
      int64_t limit = smemLimitBytes(group.spec.arch);
      for (size_t c = 0; c < group.candidates.size(); ++c) {
        TuneCandidate &cand = group.candidates[c];
        auto it = taskOf.find({g, c});
        if (it == taskOf.end())
          continue;
        const CompileResult &r = tasks[it->second].result;
        cand.mapping = r.mapping;
        cand.registers = r.registers;
        cand.spillBytes = r.spillBytes;
        cand.smemBytes = r.smemBytes;
        if (!r.ok) {
          cand.dropped = r.error;
          continue;
        }
        if (cand.heuristic) {
          // The baseline always runs (the gain needs it); say what is wrong.
          defaultResult = &r;
          if (r.spillBytes > 0 || r.smemBytes > limit)
            fmt::print(stderr,
                       "attnc: warning: group {}: the default spills ({} "
                       "bytes) or exceeds shared memory ({} bytes)\n",
                       group.name, r.spillBytes, r.smemBytes);
          continue;
        }
        if (r.spillBytes > 0)
          cand.dropped = fmt::format(
              "ptxas: spills ({} bytes of spill stores + loads, {} registers)",
              r.spillBytes, r.registers);
        else if (r.smemBytes > limit)
          cand.dropped =
              fmt::format("shared memory {} bytes over the {} limit of {}",
                          r.smemBytes, group.spec.arch, limit);
        else if (defaultResult && cand.splits == 0 &&
                 r.ptx == defaultResult->ptx &&
                 r.gridRule == defaultResult->gridRule)
          cand.dropped = "same PTX (and launch) as the default c0";
      }
    }
    // Dropped kernels need not travel to the GPU.
    std::map<std::string, bool> used;
    for (size_t g = 0; g < plan.groups.size(); ++g)
      for (size_t c = 0; c < plan.groups[g].candidates.size(); ++c) {
        auto it = taskOf.find({g, c});
        if (it == taskOf.end() || tasks[it->second].result.key.empty())
          continue;
        bool keep = plan.groups[g].candidates[c].dropped.empty();
        used[tasks[it->second].result.key] |= keep;
      }
    for (const auto &[key, keep] : used)
      if (!keep)
        (void)cache.remove(key);
  }

  std::vector<TuneJob> jobs = sweepJobs(plan);
  plan.estimateSeconds = estimateSweepSeconds(plan, jobs);

  // The plan, per group: kept candidates, then the dropped with reasons.
  for (const TuneGroup &g : plan.groups) {
    size_t kept = 0;
    for (const TuneCandidate &c : g.candidates)
      kept += c.dropped.empty();
    std::string sizes;
    for (const ProblemSize &p : g.problems)
      sizes += fmt::format(" {}x{}x{}", p.batch, p.seqQ, p.seqKV);
    fmt::print("group {}: {} candidates, {} kept; problems (BxSqxSkv):{}\n",
               g.name, g.candidates.size(), kept, sizes);
    for (const TuneCandidate &c : g.candidates)
      if (c.dropped.empty())
        fmt::print("  keep {:>4} {:<22} regs {:>4} smem {:>7}\n", c.id,
                   c.label(), c.registers, c.smemBytes);
    for (const TuneCandidate &c : g.candidates)
      if (!c.dropped.empty() &&
          (o.verbose || c.registers >= 0 || c.dropped.rfind("compile", 0) == 0))
        fmt::print("  drop {:>4} {:<22} {}\n", c.id, c.label(), c.dropped);
    if (!o.verbose) {
      size_t quiet = 0;
      for (const TuneCandidate &c : g.candidates)
        quiet += !c.dropped.empty() && c.registers < 0 &&
                 c.dropped.rfind("compile", 0) != 0;
      if (quiet)
        fmt::print("  ({} combinations no mapping takes; --verbose lists "
                   "them)\n",
                   quiet);
    }
  }
  fmt::print("{} timed runs; estimated {:.0f} s on the GPU\n", jobs.size(),
             plan.estimateSeconds);
  if (o.dryRun)
    return 0;
  std::string path = o.output + "/plan.json";
  if (Status s = plan.save(path); !s.isOk()) {
    fmt::print(stderr, "attnc: error: {}\n", s.message());
    return 1;
  }
  fmt::print("wrote {} and the bundle {}/bundle\n", path, o.output);
  return 0;
}

} // namespace attnc::cli
