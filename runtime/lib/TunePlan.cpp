//===- TunePlan.cpp - an autotuning sweep's plan --------------------------===//
#include "attnc/runtime/TunePlan.h"

#include "attnc/runtime/Json.h"
#include "attnc/runtime/JsonReader.h"

#include "FileSystem.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <set>

namespace attnc {

std::string TuneCandidate::label() const {
  if (heuristic)
    return "default";
  std::string out;
  if (!mapping.empty())
    out = mapping == "mma.sync" ? "mma" : mapping;
  else if (!tuning.mapping.empty())
    out = tuning.mapping;
  else
    out = tuning.blockM > 0 ? "auto" : "tiles";
  if (tuning.blockM > 0)
    out += " " + std::to_string(tuning.blockM) + "x" +
           std::to_string(tuning.blockN);
  else if (tuning.blockN > 0)
    out += " n" + std::to_string(tuning.blockN);
  if (tuning.warps > 0)
    out += " w" + std::to_string(tuning.warps);
  if (tuning.stages > 0)
    out += " st" + std::to_string(tuning.stages);
  if (!tuning.kvSync.empty())
    out += " " + tuning.kvSync;
  if (!tuning.grid.empty())
    out += " " + tuning.grid;
  if (!tuning.epilogue.empty())
    out += " epilogue " + tuning.epilogue;
  if (splits > 0)
    out += " s" + std::to_string(splits);
  return out;
}

KernelSpec candidateSpec(const TuneGroup &group,
                         const TuneCandidate &candidate) {
  KernelSpec spec = group.spec;
  spec.tuning = candidate.tuning;
  return spec;
}

double problemFlops(const KernelSpec &spec, const ProblemSize &size) {
  double flops = 4.0 * double(size.batch) * double(spec.heads) *
                 double(size.seqQ) * double(size.seqKV) * double(spec.headDim);
  return spec.causal && spec.op != "decode" ? flops / 2 : flops;
}

double decodeKvBytes(const KernelSpec &spec, const ProblemSize &size) {
  return 2.0 * double(size.batch) * double(size.seqKV) * double(spec.kvHeads) *
         double(spec.headDim) * double(elementSize(spec));
}

std::vector<TuneJob> sweepJobs(const SweepPlan &plan) {
  std::vector<TuneJob> jobs;
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    const TuneGroup &group = plan.groups[g];
    for (size_t p = 0; p < group.problems.size(); ++p)
      for (size_t c = 0; c < group.candidates.size(); ++c)
        if (group.candidates[c].dropped.empty())
          jobs.push_back({g, p, c});
  }
  return jobs;
}

std::vector<TuneJob> shardJobs(const SweepPlan &plan,
                               const std::vector<TuneJob> &jobs, int index,
                               int count) {
  std::vector<TuneJob> mine;
  std::set<std::pair<size_t, size_t>> touched;
  for (size_t i = 0; i < jobs.size(); ++i)
    if (count <= 1 || int(i % size_t(count)) == index) {
      mine.push_back(jobs[i]);
      touched.insert({jobs[i].group, jobs[i].problem});
    }
  // The baseline of every problem this shard runs, when another shard got
  // it: inserted before the problem's first job, in plan order.
  std::vector<TuneJob> out;
  for (size_t i = 0; i < mine.size(); ++i) {
    const TuneJob &job = mine[i];
    bool first = i == 0 || mine[i - 1].group != job.group ||
                 mine[i - 1].problem != job.problem;
    if (first) {
      const TuneGroup &group = plan.groups[job.group];
      for (size_t c = 0; c < group.candidates.size(); ++c) {
        const TuneCandidate &cand = group.candidates[c];
        if (!cand.heuristic || !cand.dropped.empty())
          continue;
        bool have =
            std::any_of(mine.begin(), mine.end(), [&](const TuneJob &j) {
              return j.group == job.group && j.problem == job.problem &&
                     j.candidate == c;
            });
        if (!have)
          out.push_back({job.group, job.problem, c});
      }
    }
    out.push_back(job);
  }
  return out;
}

Status parseShard(std::string_view text, int &index, int &count) {
  auto bad = [&] {
    return Status(ErrorCode::InvalidArgument,
                  "--shard expects i/n with 0 <= i < n (got '" +
                      std::string(text) + "')");
  };
  size_t slash = text.find('/');
  if (slash == std::string_view::npos)
    return bad();
  std::string_view a = text.substr(0, slash), b = text.substr(slash + 1);
  auto ra = std::from_chars(a.data(), a.data() + a.size(), index);
  auto rb = std::from_chars(b.data(), b.data() + b.size(), count);
  if (ra.ec != std::errc() || ra.ptr != a.data() + a.size() ||
      rb.ec != std::errc() || rb.ptr != b.data() + b.size() || count < 1 ||
      index < 0 || index >= count)
    return bad();
  return Status::ok();
}

double estimateSweepSeconds(const SweepPlan &plan,
                            const std::vector<TuneJob> &jobs) {
  // Rough H100/H200 rates: 300 TFLOP/s prefill, 3 TB/s decode; inputs made
  // and copied at ~1 GB/s; each float64 reference row ~4 flops/ns.
  double total = 0;
  std::set<std::pair<size_t, size_t>> problems;
  for (const TuneJob &job : jobs) {
    const TuneGroup &group = plan.groups[job.group];
    const ProblemSize &size = group.problems[job.problem];
    const KernelSpec &spec = group.spec;
    bool decode = spec.op == "decode";
    double kernel = decode ? decodeKvBytes(spec, size) / 3e12
                           : problemFlops(spec, size) / 300e12;
    double inputBytes =
        decode ? decodeKvBytes(spec, size)
               : 2.0 * size.batch *
                     (spec.heads * size.seqQ + 2 * spec.kvHeads * size.seqKV) *
                     spec.headDim;
    if (problems.insert({job.group, job.problem}).second)
      total +=
          0.5 + inputBytes / 1e9 + 48.0 * 2 * size.seqKV * spec.headDim / 4e9;
    // load + correctness launch and read-back + warm-up + timed launches
    // (at least 10, up to 0.15 s).
    double timed = std::clamp(0.15, 10 * kernel, 50 * kernel);
    total += 0.05 + 0.05 + 4 * kernel + timed;
  }
  return total;
}

// --- JSON -----------------------------------------------------------------

std::string SweepPlan::serialize() const {
  Json groupList = Json::array();
  for (const TuneGroup &g : groups) {
    Json problems = Json::array();
    for (const ProblemSize &p : g.problems) {
      Json item = Json::object();
      item.set("batch", p.batch);
      item.set("seq_q", p.seqQ);
      item.set("seq_kv", p.seqKV);
      problems.push(std::move(item));
    }
    Json candidates = Json::array();
    for (const TuneCandidate &c : g.candidates) {
      Json item = Json::object();
      item.set("id", c.id);
      item.set("heuristic", c.heuristic);
      item.set("tuning", tuningToJson(c.tuning));
      item.set("splits", c.splits);
      item.set("mapping", c.mapping);
      item.set("registers", c.registers);
      item.set("spill_bytes", c.spillBytes);
      item.set("smem_bytes", c.smemBytes);
      item.set("dropped", c.dropped);
      candidates.push(std::move(item));
    }
    Json group = Json::object();
    group.set("name", g.name);
    group.set("spec", specToJson(g.spec));
    group.set("problems", std::move(problems));
    group.set("candidates", std::move(candidates));
    groupList.push(std::move(group));
  }
  Json doc = Json::object();
  doc.set("version", 1);
  doc.set("build_id", buildId);
  doc.set("estimate_s", estimateSeconds);
  doc.set("groups", std::move(groupList));
  return writeJson(doc) + "\n";
}

Result<SweepPlan> SweepPlan::parse(std::string_view json,
                                   const std::string &where) {
  ATTNC_ASSIGN_OR_RETURN(Json doc, parseJson(json));
  JsonObjectReader reader(doc, where);
  int64_t version = 0;
  SweepPlan plan;
  reader.getInt("version", version, true);
  reader.getString("build_id", plan.buildId, false);
  reader.getNumber("estimate_s", plan.estimateSeconds, false);
  const Json *groups = reader.getValue("groups", Json::Kind::Array, true);
  ATTNC_RETURN_IF_ERROR(reader.finish());
  if (version != 1)
    return Status(ErrorCode::ParseError, where + ": version " +
                                             std::to_string(version) +
                                             " is not supported (expected 1)");
  const Json::Array &items = groups->asArray();
  for (size_t i = 0; i < items.size(); ++i) {
    std::string at = where + ".groups[" + std::to_string(i) + "]";
    JsonObjectReader gr(items[i], at);
    TuneGroup g;
    gr.getString("name", g.name, true);
    const Json *spec = gr.getValue("spec", Json::Kind::Object, true);
    const Json *problems = gr.getValue("problems", Json::Kind::Array, true);
    const Json *cands = gr.getValue("candidates", Json::Kind::Array, true);
    ATTNC_RETURN_IF_ERROR(gr.finish());
    ATTNC_ASSIGN_OR_RETURN(g.spec, specFromJson(*spec, at + ".spec"));
    const Json::Array &ps = problems->asArray();
    for (size_t p = 0; p < ps.size(); ++p) {
      std::string pat = at + ".problems[" + std::to_string(p) + "]";
      JsonObjectReader pr(ps[p], pat);
      ProblemSize size;
      pr.getInt("batch", size.batch, true);
      pr.getInt("seq_q", size.seqQ, true);
      pr.getInt("seq_kv", size.seqKV, true);
      ATTNC_RETURN_IF_ERROR(pr.finish());
      if (size.batch < 1 || size.seqQ < 1 || size.seqKV < 1)
        return Status(ErrorCode::ParseError,
                      pat + ": batch, seq_q and seq_kv must be >= 1");
      g.problems.push_back(size);
    }
    const Json::Array &cs = cands->asArray();
    std::set<std::string> ids;
    for (size_t c = 0; c < cs.size(); ++c) {
      std::string cat = at + ".candidates[" + std::to_string(c) + "]";
      JsonObjectReader cr(cs[c], cat);
      TuneCandidate cand;
      cr.getString("id", cand.id, true);
      cr.getBool("heuristic", cand.heuristic, false);
      const Json *tuning = cr.getValue("tuning", Json::Kind::Object, true);
      cr.getInt("splits", cand.splits, false);
      cr.getString("mapping", cand.mapping, false);
      cr.getInt("registers", cand.registers, false);
      cr.getInt("spill_bytes", cand.spillBytes, false);
      cr.getInt("smem_bytes", cand.smemBytes, false);
      cr.getString("dropped", cand.dropped, false);
      ATTNC_RETURN_IF_ERROR(cr.finish());
      ATTNC_ASSIGN_OR_RETURN(cand.tuning,
                             tuningFromJson(*tuning, cat + ".tuning"));
      if (!ids.insert(cand.id).second)
        return Status(ErrorCode::ParseError,
                      cat + ".id: '" + cand.id +
                          "' is not unique in its group");
      if (cand.splits < 0 || cand.splits > 256)
        return Status(ErrorCode::ParseError,
                      cat +
                          ".splits: expected 0 (the runtime's choice) to 256");
      g.candidates.push_back(std::move(cand));
    }
    plan.groups.push_back(std::move(g));
  }
  return plan;
}

Result<SweepPlan> SweepPlan::load(const std::string &path) {
  ATTNC_ASSIGN_OR_RETURN(std::string text, fs::readFile(path, 64u << 20));
  return parse(text, path);
}

Status SweepPlan::save(const std::string &path) const {
  return fs::replaceFile(path, serialize());
}

} // namespace attnc
