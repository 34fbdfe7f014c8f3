//===- FuzzDriver.cpp - corpus replay and seeded mutation, without libFuzzer =//
//
//   attnc-fuzz-<target> [--seed N] [--runs N] [--max-time SECONDS]
//                       [--max-len BYTES] [CORPUS_FILE_OR_DIR...]
//
// Runs every corpus file once, then `--runs` inputs (default 1000), each a
// random mutation of a corpus file (byte flips, insertions, deletions,
// copies within the input, splices with another file, interesting integers
// and dictionary tokens), stopping early after --max-time seconds. The seed
// (default: from the clock) is printed first, so a finding reproduces with
// the same --seed and corpus. On a crash the input is written to
// ./crash-<target>-<seed>-<run> before the signal is re-raised: check it in
// under tests/fuzz/regressions/<target>/ once fixed.
//
//===----------------------------------------------------------------------===//
#include "tests/fuzz/FuzzTarget.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace {

// The input being run, for the crash handler (async-signal-safe writes).
const std::string *current = nullptr;
char crashPath[512];

void onCrash(int sig) {
  if (current) {
    int fd = ::open(crashPath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      (void)!::write(fd, current->data(), current->size());
      ::close(fd);
    }
    const char msg[] = "fuzz: crashing input written to ";
    (void)!::write(2, msg, sizeof(msg) - 1);
    (void)!::write(2, crashPath, std::strlen(crashPath));
    (void)!::write(2, "\n", 1);
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void addPath(const std::string &path, std::vector<std::string> &corpus) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    std::fprintf(stderr, "fuzz: cannot read '%s'\n", path.c_str());
    std::exit(2);
  }
  if (S_ISDIR(st.st_mode)) {
    std::vector<std::string> names;
    if (DIR *dir = ::opendir(path.c_str())) {
      while (struct dirent *ent = ::readdir(dir))
        if (ent->d_name[0] != '.')
          names.push_back(path + "/" + ent->d_name);
      ::closedir(dir);
    }
    std::sort(names.begin(), names.end()); // a seed means one order
    for (const std::string &name : names)
      addPath(name, corpus);
    return;
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  corpus.push_back(text.str());
}

// Tokens that open doors in attnc's inputs (IR, JSON, argument fields).
const char *const kDictionary[] = {"attn.attention",
                                   "attn.decode",
                                   "attn.kv_append",
                                   "attn.lse_merge",
                                   "attn.map",
                                   "attn.rope",
                                   "attn.silu_mul",
                                   "tensor<",
                                   "x",
                                   "?",
                                   "bf16",
                                   "f16",
                                   "f32",
                                   "i32",
                                   "i64",
                                   "index",
                                   "0",
                                   "1",
                                   "-1",
                                   "16",
                                   "64",
                                   "128",
                                   "256",
                                   "65536",
                                   "2147483648",
                                   "9223372036854775807",
                                   "-9223372036854775808",
                                   "1e308",
                                   "nan",
                                   "inf",
                                   "\"op\"",
                                   "\"dtype\"",
                                   "\"heads\"",
                                   "\"kv_heads\"",
                                   "\"head_dim\"",
                                   "\"tuning\"",
                                   "\"block_n\"",
                                   "\"files\"",
                                   "\"spec\"",
                                   "\"specs\"",
                                   "{",
                                   "}",
                                   "[",
                                   "]",
                                   ",",
                                   ":",
                                   "\"",
                                   "\\u0000",
                                   "null",
                                   "true",
                                   "// -----",
                                   "func.func",
                                   "return",
                                   "{causal}",
                                   "window",
                                   "softcap",
                                   "scale",
                                   "#attn.window<",
                                   ">",
                                   "(",
                                   ")"};

const uint64_t kInteresting[] = {0,
                                 1,
                                 2,
                                 15,
                                 16,
                                 255,
                                 256,
                                 65535,
                                 65536,
                                 0x7fffffff,
                                 0x80000000,
                                 0xffffffff,
                                 0x7fffffffffffffffull,
                                 0x8000000000000000ull,
                                 0xffffffffffffffffull,
                                 0xfffffffffffff000ull};

std::string mutate(std::string s, const std::vector<std::string> &corpus,
                   std::mt19937_64 &rng, size_t maxLen) {
  auto pick = [&](size_t n) { return n ? size_t(rng() % n) : 0; };
  // Half the inputs get only the mutations that keep text parseable.
  const bool textual = rng() % 2;
  int steps = 1 + int(rng() % 4);
  for (int i = 0; i < steps; ++i) {
    switch (textual ? 8 + rng() % 2 : rng() % 10) {
    case 0: // flip a bit
      if (!s.empty())
        s[pick(s.size())] ^= char(1 << (rng() % 8));
      break;
    case 1: // random byte
      if (!s.empty())
        s[pick(s.size())] = char(rng());
      break;
    case 2: { // delete a range
      if (s.empty())
        break;
      size_t at = pick(s.size()), n = 1 + pick(std::min<size_t>(16, s.size()));
      s.erase(at, n);
      break;
    }
    case 3: { // insert random bytes
      size_t n = 1 + pick(8);
      std::string bytes;
      for (size_t k = 0; k < n; ++k)
        bytes += char(rng());
      s.insert(pick(s.size() + 1), bytes);
      break;
    }
    case 4: { // copy a range within the input
      if (s.empty())
        break;
      size_t from = pick(s.size()),
             n = 1 + pick(std::min<size_t>(32, s.size()));
      std::string part = s.substr(from, n);
      s.insert(pick(s.size() + 1), part);
      break;
    }
    case 5: { // splice with another corpus file
      const std::string &other = corpus[pick(corpus.size())];
      if (other.empty())
        break;
      size_t at = pick(s.size() + 1), from = pick(other.size());
      s = s.substr(0, at) + other.substr(from);
      break;
    }
    case 6: { // a dictionary token
      const char *token =
          kDictionary[pick(sizeof(kDictionary) / sizeof(*kDictionary))];
      s.insert(pick(s.size() + 1), token);
      break;
    }
    case 7: { // an interesting integer, as raw bytes
      uint64_t v =
          kInteresting[pick(sizeof(kInteresting) / sizeof(*kInteresting))];
      size_t n = size_t(1) << pick(4); // 1, 2, 4 or 8 bytes
      if (s.size() < n)
        break;
      std::memcpy(&s[pick(s.size() - n + 1)], &v, n);
      break;
    }
    case 8: { // a decimal number in text replaced by another: the syntax
              // survives, so the verifiers and checks behind it are reached
      size_t at = pick(s.size() + 1);
      size_t begin = s.find_first_of("0123456789", at);
      if (begin == std::string::npos)
        begin = s.find_first_of("0123456789");
      if (begin == std::string::npos)
        break;
      size_t end = s.find_first_not_of("0123456789", begin);
      if (end == std::string::npos)
        end = s.size();
      static const char *const numbers[] = {"0",
                                            "1",
                                            "2",
                                            "3",
                                            "7",
                                            "8",
                                            "15",
                                            "16",
                                            "17",
                                            "64",
                                            "96",
                                            "100",
                                            "128",
                                            "192",
                                            "256",
                                            "257",
                                            "1024",
                                            "65536",
                                            "2147483648",
                                            "9223372036854775807",
                                            "99999999999999999999",
                                            "-1"};
      s.replace(begin, end - begin,
                numbers[pick(sizeof(numbers) / sizeof(*numbers))]);
      break;
    }
    case 9: { // one element type or dimension spelling for another
      static const char *const words[] = {"bf16", "f16",   "f32", "i32", "i64",
                                          "i1",   "index", "?",   "f64", "i8"};
      const size_t n = sizeof(words) / sizeof(*words);
      const char *from = words[pick(n)], *to = words[pick(n)];
      size_t at = s.find(from, pick(s.size() + 1));
      if (at == std::string::npos)
        at = s.find(from);
      if (at != std::string::npos)
        s.replace(at, std::strlen(from), to);
      break;
    }
    }
  }
  if (s.size() > maxLen)
    s.resize(maxLen);
  return s;
}

} // namespace

int main(int argc, char **argv) {
  uint64_t seed =
      uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  long runs = 1000;
  double maxTime = 0;
  size_t maxLen = 1 << 16;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> const char * {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "fuzz: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--seed")
      seed = std::strtoull(value(), nullptr, 0);
    else if (arg == "--runs")
      runs = std::strtol(value(), nullptr, 0);
    else if (arg == "--max-time")
      maxTime = std::strtod(value(), nullptr);
    else if (arg == "--max-len")
      maxLen = std::strtoull(value(), nullptr, 0);
    else if (!arg.empty() && arg[0] == '-') {
      std::fprintf(stderr,
                   "usage: %s [--seed N] [--runs N] [--max-time S] "
                   "[--max-len N] [CORPUS...]\n",
                   argv[0]);
      return 2;
    } else
      paths.push_back(arg);
  }
  std::vector<std::string> corpus;
  for (const std::string &path : paths)
    addPath(path, corpus);
  if (corpus.empty())
    corpus.push_back("");
  LLVMFuzzerInitialize(&argc, &argv);

  const char *name = std::strrchr(argv[0], '/');
  name = name ? name + 1 : argv[0];
  std::printf("%s: seed %llu, %zu corpus inputs, %ld runs\n", name,
              static_cast<unsigned long long>(seed), corpus.size(), runs);
  std::fflush(stdout);
  for (int sig : {SIGSEGV, SIGABRT, SIGFPE, SIGBUS, SIGILL})
    std::signal(sig, onCrash);

  auto run = [&](const std::string &input, long index) {
    std::snprintf(crashPath, sizeof(crashPath), "crash-%s-%llu-%ld", name,
                  static_cast<unsigned long long>(seed), index);
    current = &input;
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(input.data()),
                           input.size());
    current = nullptr;
  };
  for (size_t i = 0; i < corpus.size(); ++i)
    run(corpus[i], -1 - long(i));
  std::mt19937_64 rng(seed);
  auto start = std::chrono::steady_clock::now();
  long done = 0;
  for (; done < runs; ++done) {
    if (maxTime > 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
                .count() > maxTime)
      break;
    const std::string &base = corpus[rng() % corpus.size()];
    run(mutate(base, corpus, rng, maxLen), done);
  }
  std::printf("%s: %ld mutated inputs, no finding\n", name, done);
  return 0;
}
