//===- TuneRunner.cpp - the running half of an autotuning sweep -----------===//
#include "tools/attnc-tune-run/TuneRunner.h"

#include "attnc/runtime/Context.h"
#include "attnc/runtime/Driver.h"
#include "attnc/runtime/TunePlan.h"
#include "attnc/runtime/TuningDb.h"
#include "templates/HostHalf.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <thread>
#include <unistd.h>
#include <vector>

namespace attnc {

namespace {

// --- device memory and inputs ----------------------------------------------

class DeviceBuffer {
public:
  DeviceBuffer(const DriverApi &api, size_t bytes) : api_(&api), bytes_(bytes) {
    status_ = api.check(api.cuMemAlloc(&ptr_, std::max<size_t>(bytes, 256)),
                        "cuMemAlloc(" + std::to_string(bytes) + ")");
  }
  ~DeviceBuffer() {
    if (ptr_)
      api_->cuMemFree(ptr_);
  }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  const Status &status() const { return status_; }
  void *get() const { return reinterpret_cast<void *>(ptr_); }
  CUdeviceptr ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }

private:
  const DriverApi *api_;
  CUdeviceptr ptr_ = 0;
  size_t bytes_;
  Status status_;
};

using Buffer = std::unique_ptr<DeviceBuffer>;

Result<Buffer> allocate(const DriverApi &api, size_t bytes) {
  auto b = std::make_unique<DeviceBuffer>(api, bytes);
  if (!b->status().isOk())
    return b->status();
  return b;
}

/// Uniform values in [-1, 1) as 16-bit floats, from a per-chunk splitmix64
/// stream (fast enough for gigabytes of decode cache; threads split it).
void fillRandom(std::vector<uint16_t> &out, bool bf16, uint64_t seed) {
  const size_t n = out.size();
  unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
  size_t chunk = (n + threads - 1) / threads;
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      uint64_t s = seed ^ (0x9e3779b97f4a7c15ULL * (t + 1));
      size_t end = std::min(n, (t + 1) * chunk);
      for (size_t i = t * chunk; i < end; ++i) {
        s += 0x9e3779b97f4a7c15ULL;
        uint64_t z = s;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
        float x = float(z >> 40) * (2.0f / 16777216.0f) - 1.0f;
        out[i] = bf16 ? templates::floatToBf16Bits(x)
                      : templates::floatToHalfBits(x);
      }
    });
  for (std::thread &t : pool)
    t.join();
}

double toDouble(bool bf16, uint16_t bits) {
  return bf16 ? templates::bf16BitsToFloat(bits)
              : templates::halfBitsToFloat(bits);
}

// --- one problem's inputs, outputs and reference -----------------------------

/// A row of the output checked against float64: where it is in O (element
/// offset of its first element) and the reference values.
struct RefRow {
  size_t offset;
  std::vector<double> values;
};

struct InputSet {
  Buffer q, k, v, o, table, lens;
};

struct ProblemData {
  KernelSpec spec;
  ProblemSize size;
  bool decode = false;
  std::vector<InputSet> sets;
  size_t oElems = 0;
  std::vector<RefRow> rows;
  // Geometry
  std::array<int64_t, 4> qStride{}, kvStride{}, oStride{};
  int64_t pages = 0, blocksPerSeq = 0;
};

/// The reference output of one query row: float64 softmax(scale q.k) v over
/// the keys it sees (bottom-right aligned causal/window masks), softcap
/// applied to the scores. `key(j)` / `value(j)` give key j's row.
template <typename KeyFn, typename ValueFn>
std::vector<double> referenceRow(const KernelSpec &spec, bool bf16,
                                 const uint16_t *q, int64_t i, int64_t seqQ,
                                 int64_t seqKV, KeyFn key, ValueFn value) {
  const int64_t d = spec.headDim;
  const double scale = spec.effectiveScale();
  const int64_t diag = i + seqKV - seqQ;
  std::vector<double> scores;
  std::vector<int64_t> keys;
  for (int64_t j = 0; j < seqKV; ++j) {
    bool visible = true;
    if (spec.causal && spec.op != "decode" && j > diag)
      visible = false;
    if (spec.windowLeft >= 0 && j < diag - spec.windowLeft)
      visible = false;
    if (spec.windowRight >= 0 && j > diag + spec.windowRight)
      visible = false;
    if (!visible)
      continue;
    const uint16_t *k = key(j);
    double s = 0;
    for (int64_t x = 0; x < d; ++x)
      s += toDouble(bf16, q[x]) * toDouble(bf16, k[x]);
    s *= scale;
    if (spec.softcap > 0)
      s = spec.softcap * std::tanh(s / spec.softcap);
    scores.push_back(s);
    keys.push_back(j);
  }
  std::vector<double> out(d, 0.0);
  if (scores.empty())
    return out;
  double m = *std::max_element(scores.begin(), scores.end()), l = 0;
  for (double &s : scores) {
    s = std::exp(s - m);
    l += s;
  }
  for (size_t n = 0; n < keys.size(); ++n) {
    const uint16_t *v = value(keys[n]);
    for (int64_t x = 0; x < d; ++x)
      out[x] += scores[n] / l * toDouble(bf16, v[x]);
  }
  return out;
}

Result<std::unique_ptr<ProblemData>>
makeProblem(const Context &ctx, const KernelSpec &spec, const ProblemSize &size,
            size_t l2Bytes, std::mt19937_64 &rng) {
  const DriverApi &api = ctx.driver();
  auto p = std::make_unique<ProblemData>();
  p->spec = spec;
  p->size = size;
  p->decode = spec.op == "decode";
  const bool bf16 = spec.dtype == "bf16";
  const int64_t B = size.batch, hq = spec.heads, hkv = spec.kvHeads,
                d = spec.headDim, sq = size.seqQ, skv = size.seqKV;
  // BSHD (the PyTorch layout); decode: NHD pages [pages, page, Hkv, D].
  size_t qElems = size_t(B) * sq * hq * d, kvElems;
  p->oElems = qElems;
  p->qStride = {sq * hq * d, d, hq * d, 1};
  p->oStride = p->qStride;
  if (p->decode) {
    int64_t page = spec.pageSize;
    p->blocksPerSeq = (skv + page - 1) / page;
    p->pages = B * p->blocksPerSeq;
    kvElems = size_t(p->pages) * page * hkv * d;
    p->kvStride = {page * hkv * d, d, hkv * d, 1};
  } else {
    kvElems = size_t(B) * skv * hkv * d;
    p->kvStride = {skv * hkv * d, d, hkv * d, 1};
  }
  size_t setBytes = (2 * qElems + 2 * kvElems) * 2;
  // Enough sets that the timed launches do not read what the last one left
  // in L2 (4x its size in all), at most 8.
  size_t nsets =
      std::clamp<size_t>((4 * l2Bytes + setBytes - 1) / setBytes, 1, 8);
  std::vector<uint16_t> hq0, hk0, hv0; // set 0 stays on the host
  std::vector<int32_t> table0;
  for (size_t s = 0; s < nsets; ++s) {
    InputSet set;
    std::vector<uint16_t> bq(qElems), bk(kvElems), bv(kvElems);
    fillRandom(bq, bf16, rng());
    fillRandom(bk, bf16, rng());
    fillRandom(bv, bf16, rng());
    ATTNC_ASSIGN_OR_RETURN(set.q, allocate(api, qElems * 2));
    ATTNC_ASSIGN_OR_RETURN(set.k, allocate(api, kvElems * 2));
    ATTNC_ASSIGN_OR_RETURN(set.v, allocate(api, kvElems * 2));
    ATTNC_ASSIGN_OR_RETURN(set.o, allocate(api, qElems * 2));
    ATTNC_RETURN_IF_ERROR(api.check(
        api.cuMemcpyHtoD(set.q->ptr(), bq.data(), qElems * 2), "copy q"));
    ATTNC_RETURN_IF_ERROR(api.check(
        api.cuMemcpyHtoD(set.k->ptr(), bk.data(), kvElems * 2), "copy k"));
    ATTNC_RETURN_IF_ERROR(api.check(
        api.cuMemcpyHtoD(set.v->ptr(), bv.data(), kvElems * 2), "copy v"));
    if (p->decode) {
      // Pages in a random order (the kernel must follow the table).
      std::vector<int32_t> table(p->pages);
      std::iota(table.begin(), table.end(), 0);
      std::shuffle(table.begin(), table.end(), rng);
      std::vector<int32_t> lens(B, int32_t(skv));
      ATTNC_ASSIGN_OR_RETURN(set.table, allocate(api, table.size() * 4));
      ATTNC_ASSIGN_OR_RETURN(set.lens, allocate(api, lens.size() * 4));
      ATTNC_RETURN_IF_ERROR(api.check(
          api.cuMemcpyHtoD(set.table->ptr(), table.data(), table.size() * 4),
          "copy block table"));
      ATTNC_RETURN_IF_ERROR(api.check(
          api.cuMemcpyHtoD(set.lens->ptr(), lens.data(), lens.size() * 4),
          "copy lengths"));
      if (s == 0)
        table0 = std::move(table);
    }
    if (s == 0) {
      hq0 = std::move(bq);
      hk0 = std::move(bk);
      hv0 = std::move(bv);
    }
    p->sets.push_back(std::move(set));
  }

  // Sampled rows: the first and last rows, tile edges, and random ones.
  std::vector<std::pair<int64_t, int64_t>> picks; // (b * hq + h, i)
  std::uniform_int_distribution<int64_t> anyBH(0, B * hq - 1), anyI(0, sq - 1);
  picks.push_back({0, 0});
  picks.push_back({B * hq - 1, sq - 1});
  for (int64_t i : {63, 64, 127, 128, 191, 192})
    if (i < sq)
      picks.push_back({anyBH(rng), i});
  int64_t budget = p->decode ? 24 : 40;
  // Long rows cost more on the host: fewer of them.
  if (skv > 65536)
    budget /= 2;
  while (int64_t(picks.size()) < budget)
    picks.push_back({anyBH(rng), anyI(rng)});
  const int64_t group = hq / hkv;
  for (auto [bh, i] : picks) {
    int64_t b = bh / hq, h = bh % hq, kh = h / group;
    const uint16_t *qrow =
        hq0.data() + b * p->qStride[0] + h * p->qStride[1] + i * p->qStride[2];
    auto kvRow = [&](const std::vector<uint16_t> &cache, int64_t j) {
      if (p->decode) {
        int64_t page = spec.pageSize;
        int64_t phys = table0[b * p->blocksPerSeq + j / page];
        return cache.data() + phys * p->kvStride[0] + kh * p->kvStride[1] +
               (j % page) * p->kvStride[2];
      }
      return cache.data() + b * p->kvStride[0] + kh * p->kvStride[1] +
             j * p->kvStride[2];
    };
    RefRow row;
    row.offset = b * p->oStride[0] + h * p->oStride[1] + i * p->oStride[2];
    row.values = referenceRow(
        spec, bf16, qrow, i, sq, skv, [&](int64_t j) { return kvRow(hk0, j); },
        [&](int64_t j) { return kvRow(hv0, j); });
    p->rows.push_back(std::move(row));
  }
  return p;
}

// --- one candidate ----------------------------------------------------------

struct Launcher {
  const Context &ctx;
  const Kernel &kernel;
  ProblemData &p;
  int64_t splits = 0;
  Buffer workspace;

  DecodeArgs decodeArgs(const InputSet &s) const {
    const int64_t B = p.size.batch, hq = p.spec.heads, hkv = p.spec.kvHeads,
                  d = p.spec.headDim;
    DecodeArgs a;
    a.q = {s.q->get(), {B, hq, p.size.seqQ, d}, p.qStride};
    a.kCache = {s.k->get(), {p.pages, hkv, p.spec.pageSize, d}, p.kvStride};
    a.vCache = {s.v->get(), {p.pages, hkv, p.spec.pageSize, d}, p.kvStride};
    a.blockTable = static_cast<const int32_t *>(s.table->get());
    a.maxBlocks = p.blocksPerSeq;
    a.kvLens = static_cast<const int32_t *>(s.lens->get());
    a.maxKvLen = p.size.seqKV;
    a.o = {s.o->get(), {B, hq, p.size.seqQ, d}, p.oStride};
    a.numSplits = splits;
    if (workspace) {
      a.workspace = workspace->get();
      a.workspaceBytes = workspace->bytes();
    }
    return a;
  }

  AttentionArgs attentionArgs(const InputSet &s) const {
    const int64_t B = p.size.batch, hq = p.spec.heads, hkv = p.spec.kvHeads,
                  d = p.spec.headDim;
    AttentionArgs a;
    a.q = {s.q->get(), {B, hq, p.size.seqQ, d}, p.qStride};
    a.k = {s.k->get(), {B, hkv, p.size.seqKV, d}, p.kvStride};
    a.v = {s.v->get(), {B, hkv, p.size.seqKV, d}, p.kvStride};
    a.o = {s.o->get(), {B, hq, p.size.seqQ, d}, p.oStride};
    if (workspace) {
      a.workspace = workspace->get();
      a.workspaceBytes = workspace->bytes();
    }
    return a;
  }

  // The workspace a launch takes: decode's partials, or a persistent
  // attention kernel's stream-K tail (zeroed once; launches leave it so),
  // so that candidates are timed as attnc.attention runs them.
  Status prepare() {
    if (!p.decode) {
      ATTNC_ASSIGN_OR_RETURN(
          size_t bytes, ctx.workspaceSize(kernel, attentionArgs(p.sets[0])));
      if (!bytes)
        return Status::ok();
      ATTNC_ASSIGN_OR_RETURN(workspace, allocate(ctx.driver(), bytes));
      return ctx.driver().check(
          ctx.driver().cuMemsetD8(workspace->ptr(), 0, bytes),
          "cuMemsetD8(workspace)");
    }
    ATTNC_ASSIGN_OR_RETURN(
        size_t bytes, ctx.decodeWorkspaceSize(kernel, decodeArgs(p.sets[0])));
    ATTNC_ASSIGN_OR_RETURN(workspace, allocate(ctx.driver(), bytes));
    return Status::ok();
  }

  Status launch(const InputSet &s) const {
    if (p.decode)
      return ctx.launchDecode(kernel, decodeArgs(s), nullptr);
    return ctx.launch(kernel, attentionArgs(s), nullptr);
  }
};

struct Check {
  double relL2 = 0;
  int64_t nonFinite = 0;
};

Result<Check> checkOutput(const Launcher &l) {
  const DriverApi &api = l.ctx.driver();
  const ProblemData &p = l.p;
  const InputSet &s = p.sets[0];
  // Poison: 0xFF bytes are NaN in bf16 and fp16; any element the kernel
  // does not write shows up as non-finite.
  ATTNC_RETURN_IF_ERROR(api.check(
      api.cuMemsetD8(s.o->ptr(), 0xFF, p.oElems * 2), "poison the output"));
  ATTNC_RETURN_IF_ERROR(l.launch(s));
  ATTNC_RETURN_IF_ERROR(api.check(api.cuCtxSynchronize(), "the launch"));
  std::vector<uint16_t> o(p.oElems);
  ATTNC_RETURN_IF_ERROR(api.check(
      api.cuMemcpyDtoH(o.data(), s.o->ptr(), p.oElems * 2), "copy o back"));
  const bool bf16 = p.spec.dtype == "bf16";
  Check c;
  for (uint16_t x : o)
    c.nonFinite += !std::isfinite(toDouble(bf16, x));
  double err = 0, ref = 0;
  for (const RefRow &row : p.rows)
    for (size_t x = 0; x < row.values.size(); ++x) {
      double g = toDouble(bf16, o[row.offset + x]), r = row.values[x];
      err += (g - r) * (g - r);
      ref += r * r;
    }
  c.relL2 = std::sqrt(err / std::max(ref, 1e-300));
  return c;
}

/// Median milliseconds of timed launches, rotating the input sets.
Result<double> timeCandidate(const Launcher &l, const TuneRunOptions &o) {
  const DriverApi &api = l.ctx.driver();
  if (!api.cuEventCreate || !api.cuEventElapsedTime)
    return Status(ErrorCode::DriverError, "the driver has no event API");
  CUevent start = nullptr, stop = nullptr;
  ATTNC_RETURN_IF_ERROR(api.check(api.cuEventCreate(&start, 0), "event"));
  ATTNC_RETURN_IF_ERROR(api.check(api.cuEventCreate(&stop, 0), "event"));
  const size_t nsets = l.p.sets.size();
  size_t next = 1 % nsets; // set 0 was just used by the check
  auto once = [&]() -> Result<float> {
    ATTNC_RETURN_IF_ERROR(api.check(api.cuEventRecord(start, nullptr), "rec"));
    ATTNC_RETURN_IF_ERROR(l.launch(l.p.sets[next]));
    ATTNC_RETURN_IF_ERROR(api.check(api.cuEventRecord(stop, nullptr), "rec"));
    ATTNC_RETURN_IF_ERROR(api.check(api.cuEventSynchronize(stop), "sync"));
    next = (next + 1) % nsets;
    float ms = 0;
    ATTNC_RETURN_IF_ERROR(
        api.check(api.cuEventElapsedTime(&ms, start, stop), "elapsed"));
    return ms;
  };
  Result<double> out = Status(ErrorCode::DriverError, "no timing");
  {
    std::vector<float> ms;
    float warm = 0;
    Status failed;
    for (int i = 0; i < 3 && failed.isOk(); ++i) {
      Result<float> t = once();
      if (!t.isOk())
        failed = t.status();
      else
        warm = *t;
    }
    int reps = o.minReps;
    if (failed.isOk() && warm > 0)
      reps = std::clamp(int(o.timedSeconds * 1e3 / warm), o.minReps, o.maxReps);
    for (int i = 0; i < reps && failed.isOk(); ++i) {
      Result<float> t = once();
      if (!t.isOk())
        failed = t.status();
      else
        ms.push_back(*t);
    }
    if (!failed.isOk()) {
      out = failed;
    } else {
      std::sort(ms.begin(), ms.end());
      out = double(ms[ms.size() / 2]);
    }
  }
  api.cuEventDestroy(start);
  api.cuEventDestroy(stop);
  return out;
}

// --- results
// ------------------------------------------------------------------

struct Outcome {
  size_t candidate;
  double ms = 0;       // > 0: correct and timed
  std::string dropped; // why not
  double relL2 = 0;
  double firstMs = 0; // the baseline: its first timing, before the re-time
};

std::string metricText(const KernelSpec &spec, const ProblemSize &size,
                       double ms) {
  char buf[64];
  if (spec.op == "decode")
    std::snprintf(buf, sizeof buf, "%.2f TB/s",
                  decodeKvBytes(spec, size) / (ms * 1e-3) / 1e12);
  else
    std::snprintf(buf, sizeof buf, "%.1f TFLOP/s",
                  problemFlops(spec, size) / (ms * 1e-3) / 1e12);
  return buf;
}

std::string problemText(const ProblemSize &s) {
  return "B=" + std::to_string(s.batch) + " Sq=" + std::to_string(s.seqQ) +
         " Skv=" + std::to_string(s.seqKV);
}

/// A bar with the ETA on a terminal; a line per problem in a log file.
void progress(size_t done, size_t total, double elapsed, double eta,
              const std::string &what, bool newProblem) {
  static const bool tty = ::isatty(2);
  if (!tty) {
    if (newProblem)
      std::fprintf(stderr, "[%zu/%zu runs] %.0fs, ETA %.0fs: %s\n", done, total,
                   elapsed, eta, what.c_str());
    return;
  }
  int filled = total ? int(30.0 * done / total) : 30;
  std::fprintf(stderr, "\r[%s%s] %zu/%zu %4.0fs ETA %4.0fs %-40.40s",
               std::string(filled, '#').c_str(),
               std::string(30 - filled, '.').c_str(), done, total, elapsed, eta,
               what.c_str());
  std::fflush(stderr);
}

} // namespace

int runTuneSweep(const TuneRunOptions &o) {
  auto fail = [](const std::string &message) {
    std::fprintf(stderr, "attnc-tune-run: error: %s\n", message.c_str());
    return 1;
  };
  Result<SweepPlan> loaded = SweepPlan::load(o.planPath);
  if (!loaded.isOk())
    return fail(loaded.status().message());
  const SweepPlan &plan = *loaded;
  int shard = 0, shards = 1;
  if (Status s = parseShard(o.shard, shard, shards); !s.isOk())
    return fail(s.message());
  std::vector<TuneJob> jobs = shardJobs(plan, sweepJobs(plan), shard, shards);
  std::string bundle = o.bundleDir;
  if (bundle.empty())
    bundle =
        (std::filesystem::path(o.planPath).parent_path() / "bundle").string();

  Result<const DriverApi *> driver = loadDriver();
  int devices = 0;
  if (!driver.isOk() || (*driver)->cuDeviceGetCount(&devices) != CUDA_SUCCESS ||
      devices == 0) {
    std::printf("skipped: no CUDA device\n");
    return 77;
  }
  const DriverApi &d = **driver;
  if (!d.cuMemAlloc || !d.cuMemFree || !d.cuMemcpyHtoD || !d.cuMemcpyDtoH ||
      !d.cuMemsetD8 || !d.cuCtxSynchronize || !d.cuCtxSetCurrent ||
      !d.cuEventCreate || !d.cuEventRecord || !d.cuEventSynchronize ||
      !d.cuEventElapsedTime || !d.cuEventDestroy)
    return fail("the CUDA driver " + d.library +
                " lacks memory, copy or event entry points a sweep needs");
  ContextOptions options;
  options.cacheDir = bundle;
  options.device = o.device;
  options.linkCubin = false;
  auto created = Context::create(options);
  if (!created.isOk())
    return fail(created.status().message());
  Context &ctx = **created;
  const DriverApi &api = ctx.driver();
  if (Status s =
          api.check(api.cuCtxSetCurrent(ctx.cuContext()), "cuCtxSetCurrent");
      !s.isOk())
    return fail(s.message());
  std::string gpu = o.gpuName;
  if (gpu.empty()) {
    char name[256] = {0};
    if (api.cuDeviceGetName &&
        api.cuDeviceGetName(name, sizeof(name) - 1, ctx.device()) ==
            CUDA_SUCCESS)
      gpu = name;
    else
      gpu = "unknown GPU";
  }
  int l2 = 0;
  api.cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,
                           ctx.device());
  size_t l2Bytes = std::max<size_t>(size_t(std::max(l2, 0)), 50u << 20);
  if (!plan.buildId.empty() && plan.buildId != ctx.buildId())
    std::fprintf(stderr,
                 "attnc-tune-run: warning: the plan was compiled by build %s, "
                 "this runtime is %s: its kernels will not be found\n",
                 plan.buildId.c_str(), ctx.buildId().c_str());
  uint64_t seed =
      o.seed ? o.seed
             : uint64_t(
                   std::chrono::steady_clock::now().time_since_epoch().count());
  std::mt19937_64 rng(seed);
  std::printf("attnc-tune-run: %s (sm_%d, %d SMs, L2 %zu MB), shard %d/%d: "
              "%zu runs, seed %llu, plan estimate %.0f s for all shards\n",
              gpu.c_str(), ctx.computeCapability(), ctx.smCount(),
              l2Bytes >> 20, shard, shards, jobs.size(),
              (unsigned long long)seed, plan.estimateSeconds);
  std::fflush(stdout);

  // Progress weights: the plan's estimate per job.
  std::vector<double> weight(jobs.size());
  double totalWeight = 0;
  for (size_t i = 0; i < jobs.size(); ++i)
    totalWeight += weight[i] = estimateSweepSeconds(plan, {jobs[i]});
  double doneWeight = 0;
  auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
        .count();
  };

  TuningDb db;
  if (!o.dbPath.empty() && std::filesystem::exists(o.dbPath)) {
    auto existing = TuningDb::load(o.dbPath);
    if (!existing.isOk())
      return fail(existing.status().message());
    db = std::move(existing).value();
  }
  std::ostringstream table, details;
  table << "| group | problem | default | best | best config | gain |\n"
        << "|---|---|---|---|---|---|\n";
  auto save = [&]() -> Status {
    if (!o.tablePath.empty()) {
      std::ofstream md(o.tablePath);
      md << "# attnc tune: " << gpu << ", shard " << shard << "/" << shards
         << "\n\n"
         << "default = the runtime's heuristic config (no database entry); "
            "gain = default time / best time.\n\n"
         << table.str();
    }
    return o.dbPath.empty() ? Status::ok() : db.save(o.dbPath);
  };
  int status = 0;
  for (size_t begin = 0; begin < jobs.size();) {
    size_t end = begin;
    while (end < jobs.size() && jobs[end].group == jobs[begin].group &&
           jobs[end].problem == jobs[begin].problem)
      ++end;
    const TuneGroup &group = plan.groups[jobs[begin].group];
    const ProblemSize &size = group.problems[jobs[begin].problem];
    std::string where = group.name + " " + problemText(size);
    auto data = makeProblem(ctx, group.spec, size, l2Bytes, rng);
    if (!data.isOk())
      return fail(where + ": " + data.status().message());
    std::vector<Outcome> outcomes;
    for (size_t j = begin; j < end; ++j) {
      const TuneCandidate &cand = group.candidates[jobs[j].candidate];
      progress(j, jobs.size(), elapsed(),
               doneWeight > 0
                   ? elapsed() / doneWeight * (totalWeight - doneWeight)
                   : totalWeight,
               group.name + " " + problemText(size) + " " + cand.label(),
               j == begin);
      Outcome out{jobs[j].candidate};
      auto kernel = ctx.getKernel(candidateSpec(group, cand));
      if (!kernel.isOk()) {
        out.dropped = "not loaded: " + kernel.status().message();
      } else {
        Launcher l{ctx, **kernel, **data, cand.splits, nullptr};
        Status prep = l.prepare();
        auto check = prep.isOk() ? checkOutput(l) : Result<Check>(prep);
        if (!check.isOk()) {
          out.dropped = "launch failed: " + check.status().message();
        } else if (check->nonFinite > 0 || !(check->relL2 <= o.maxRelL2)) {
          char buf[128];
          std::snprintf(buf, sizeof buf,
                        "wrong: rel L2 %.2e (limit %.0e), %lld NaN/Inf",
                        check->relL2, o.maxRelL2, (long long)check->nonFinite);
          out.dropped = buf;
        } else {
          out.relL2 = check->relL2;
          auto ms = timeCandidate(l, o);
          if (!ms.isOk())
            out.dropped = "timing failed: " + ms.status().message();
          else
            out.ms = *ms;
        }
      }
      doneWeight += weight[j];
      outcomes.push_back(std::move(out));
    }
    // The baseline ran first, perhaps on a GPU still ramping its clocks:
    // time it again after the others and keep the faster median, so that
    // gains are never flattered by a cold start.
    for (Outcome &out : outcomes) {
      const TuneCandidate &c = group.candidates[out.candidate];
      if (!c.heuristic || out.ms <= 0)
        continue;
      auto kernel = ctx.getKernel(candidateSpec(group, c));
      if (!kernel.isOk())
        continue;
      Launcher l{ctx, **kernel, **data, c.splits, nullptr};
      if (!l.prepare().isOk())
        continue;
      if (auto again = timeCandidate(l, o); again.isOk()) {
        out.firstMs = out.ms;
        out.ms = std::min(out.ms, *again);
      }
    }
    // This problem's results.
    const Outcome *best = nullptr, *base = nullptr;
    for (const Outcome &out : outcomes) {
      if (out.ms > 0 && (!best || out.ms < best->ms))
        best = &out;
      if (group.candidates[out.candidate].heuristic)
        base = &out;
    }
    if (::isatty(2))
      std::fprintf(stderr, "\r%*s\r", 110, "");
    details << where << ":\n";
    for (const Outcome &out : outcomes) {
      const TuneCandidate &c = group.candidates[out.candidate];
      char line[512];
      if (out.ms > 0)
        std::snprintf(line, sizeof line,
                      "  %-5s %-22s %8.3f ms  %-14s rel L2 %.1e%s%s\n",
                      c.id.c_str(), c.label().c_str(), out.ms,
                      metricText(group.spec, size, out.ms).c_str(), out.relL2,
                      &out == best ? "  <- best" : "",
                      out.firstMs > 0
                          ? (" (timed twice: first " +
                             std::to_string(out.firstMs).substr(0, 6) + " ms)")
                                .c_str()
                          : "");
      else
        std::snprintf(line, sizeof line, "  %-5s %-22s dropped: %.400s\n",
                      c.id.c_str(), c.label().c_str(), out.dropped.c_str());
      details << line;
    }
    std::printf("%s", details.str().c_str());
    std::fflush(stdout);
    details.str("");
    if (!best) {
      std::fprintf(stderr, "attnc-tune-run: %s: no candidate was correct\n",
                   where.c_str());
      status = 1;
      begin = end;
      continue;
    }
    const TuneCandidate &winner = group.candidates[best->candidate];
    double baseMs = base && base->ms > 0 ? base->ms : 0;
    TuningRecord r;
    r.gpu = gpu;
    r.arch = group.spec.arch;
    r.spec = untunedSpecKey(group.spec);
    r.bucket = problemBucket(size);
    r.tuning = winner.tuning;
    r.splits = winner.splits;
    r.ms = best->ms;
    r.heuristicMs = baseMs;
    r.tflops = group.spec.op == "decode"
                   ? 0
                   : problemFlops(group.spec, size) / (best->ms * 1e-3) / 1e12;
    db.record(r);
    char row[512];
    std::snprintf(
        row, sizeof row, "| %s | %s | %s | %s | %s (%s) | %s |\n",
        group.name.c_str(), problemText(size).c_str(),
        baseMs > 0 ? (std::to_string(baseMs).substr(0, 6) + " ms, " +
                      metricText(group.spec, size, baseMs))
                         .c_str()
                   : "not measured",
        (std::to_string(best->ms).substr(0, 6) + " ms, " +
         metricText(group.spec, size, best->ms))
            .c_str(),
        winner.label().c_str(), winner.id.c_str(),
        baseMs > 0
            ? (std::to_string(baseMs / best->ms).substr(0, 5) + "x").c_str()
            : "-");
    table << row;
    // After every problem, so that a sweep cut short (a timeout, a kernel
    // that faults and takes the context with it) keeps what it measured.
    if (Status st = save(); !st.isOk())
      return fail(st.message());
    begin = end;
  }
  progress(jobs.size(), jobs.size(), elapsed(), 0, "done", true);
  std::fprintf(stderr, "\n");
  std::printf("\nResults on %s (shard %d/%d, %.0f s):\n\n%s", gpu.c_str(),
              shard, shards, elapsed(), table.str().c_str());
  if (Status st = save(); !st.isOk())
    return fail(st.message());
  if (!o.dbPath.empty())
    std::printf("\nwrote %zu records to %s\n", db.size(), o.dbPath.c_str());
  return status;
}

} // namespace attnc
