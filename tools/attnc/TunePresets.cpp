//===- TunePresets.cpp - the sweeps `attnc tune plan --preset` names ------===//
#include "tools/attnc/TunePresets.h"

#include <charconv>

namespace attnc::cli {

std::string groupName(const KernelSpec &spec) {
  std::string name = (spec.op == "decode" ? "decode D" : "prefill D") +
                     std::to_string(spec.headDim);
  if (spec.heads != spec.kvHeads)
    name += " GQA" + std::to_string(spec.heads) + "/" +
            std::to_string(spec.kvHeads);
  if (spec.causal)
    name += " causal";
  if (spec.op == "decode")
    name += " p" + std::to_string(spec.pageSize);
  return name;
}

Result<std::vector<ProblemSize>> parseProblems(const std::string &text) {
  std::vector<ProblemSize> out;
  auto bad = [&](const std::string &item) {
    return Status(ErrorCode::InvalidArgument,
                  "--problems expects B:SQ:SKV[,B:SQ:SKV...] with positive "
                  "integers (got '" +
                      item + "')");
  };
  if (text.empty())
    return Status(ErrorCode::InvalidArgument,
                  "no problem sizes: pass --problems B:SQ:SKV,... or --preset");
  for (size_t start = 0; start <= text.size();) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma - start);
    int64_t v[3] = {0, 0, 0};
    const char *p = item.data(), *end = item.data() + item.size();
    for (int i = 0; i < 3; ++i) {
      auto r = std::from_chars(p, end, v[i]);
      if (r.ec != std::errc() || v[i] < 1)
        return bad(item);
      p = r.ptr;
      if (i < 2) {
        if (p == end || *p != ':')
          return bad(item);
        ++p;
      }
    }
    if (p != end)
      return bad(item);
    out.push_back({v[0], v[1], v[2]});
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  return out;
}

Result<std::vector<TuneGroup>> tunePreset(const std::string &name,
                                          const std::string &arch) {
  if (name != "peers" && name != "peers-d128")
    return Status(ErrorCode::InvalidArgument,
                  "unknown preset '" + name +
                      "' (expected \"peers-d128\" or \"peers\")");
  auto prefill = [&](int64_t d, bool causal,
                     std::vector<ProblemSize> problems) {
    TuneGroup g;
    g.spec.heads = g.spec.kvHeads = 2048 / d;
    g.spec.headDim = d;
    g.spec.causal = causal;
    g.spec.arch = arch;
    g.problems = std::move(problems);
    g.name = groupName(g.spec);
    return g;
  };
  // B * S = 16k tokens.
  std::vector<ProblemSize> d128 = {
      {16, 1024, 1024}, {4, 4096, 4096}, {1, 16384, 16384}};
  std::vector<TuneGroup> groups = {prefill(128, false, d128),
                                   prefill(128, true, d128)};
  if (name == "peers") {
    groups.push_back(prefill(64, false, {{4, 4096, 4096}}));
    groups.push_back(prefill(64, true, {{1, 16384, 16384}}));
    groups.push_back(prefill(256, false, {{1, 16384, 16384}}));
  }
  TuneGroup decode;
  decode.spec.op = "decode";
  decode.spec.heads = 32;
  decode.spec.kvHeads = 8;
  decode.spec.headDim = 128;
  decode.spec.pageSize = 256;
  decode.spec.maxQLen = 1;
  decode.spec.arch = arch;
  decode.problems = {
      {1, 1, 131072}, {16, 1, 32768}, {64, 1, 4096}, {64, 1, 16384}};
  decode.name = groupName(decode.spec);
  groups.push_back(std::move(decode));
  return groups;
}

} // namespace attnc::cli
