// libFuzzer target: the CUDA executor's timing-cache load (ir::TimingCache, src/engine/ir/timing_cache.h),
// reached device-free. Each input is parsed twice: under a fixed build identity (the real path: the file's
// "key" must equal it) and under the file's own "key" (so every well-formed cache is accepted and its
// entries reach the round trip). Findings: a crash or sanitizer report, an escaping exception (the build
// would end in "internal error"), a control byte or an unbounded warning, the two parses disagreeing on
// whether the file is well-formed, load(path) disagreeing with parse(text), or an accepted cache that
// does not survive to_json -> dump (what save() writes) -> parse with the same entries and identity.
// Seeds: tests/fuzz/seeds/timing_cache/ (hand-written in the format save() writes, plus malformed ones).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/ir/timing_cache.h"
#include "fuzz_common.h"

namespace {

using ws::ir::TimingCache;

// The identity the seeds carry (a real build's shape, see cache_identity in cuda_engine.cpp).
const nlohmann::json& build_identity() {
  static const nlohmann::json id = {{"gpu", "NVIDIA H200"}, {"uuid", "0123456789abcdef0123456789abcdef"},
                                    {"driver", 13000}, {"cuda_runtime", 13000}, {"cudnn", 91300},
                                    {"cublas", 130100}, {"graph_hash", "9f2c4e6a1b3d5f70"},
                                    {"max_workspace_bytes", 268435456}, {"tactic_sources", "cudnn,cublaslt,warpstream"}};
  return id;
}

[[noreturn]] void fail(const char* what, const TimingCache& c) {
  std::fprintf(stderr, "timing_cache_fuzz: %s (origin %d, %zu entries, warning: %s)\n", what,
               static_cast<int>(c.origin()), c.size(), c.warning().c_str());
  std::abort();
}

// The warning is printed to the user's terminal: escaped (the shared oracle), bounded, and present exactly
// when the cache was ignored as malformed.
void check_warning(const TimingCache& c) {
  ws::fuzz::check_message(ws::invalid_argument(c.warning()));
  if (c.warning().size() > 1024) fail("warning longer than 1 KiB", c);
  if (c.warning().empty() == (c.origin() == TimingCache::Origin::kMalformed)) fail("warning iff malformed broken", c);
  if (c.origin() != TimingCache::Origin::kMatched && c.size() != 0) fail("entries kept from an ignored cache", c);
}

// An accepted cache, written as save() writes it and read back, holds the same identity and entries.
void check_round_trip(const TimingCache& c) {
  const std::string text = c.to_json().dump(1) + "\n";
  TimingCache back(c.identity());
  back.parse(text, "round trip");
  if (back.origin() != TimingCache::Origin::kMatched) {
    std::fprintf(stderr, "serialized:\n%s\n", text.c_str());
    fail("serialized cache not accepted back", back);
  }
  if (back.entries() != c.entries()) fail("entries changed through serialize -> parse", back);
  if (back.to_json() != c.to_json()) fail("JSON changed through serialize -> parse", back);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  // 1. The real path: this build's identity; a cache of another identity is ignored silently.
  TimingCache fixed(build_identity());
  fixed.parse(text, "fuzz.json");
  check_warning(fixed);
  if (fixed.origin() == TimingCache::Origin::kEmpty) fail("parse() never yields kEmpty", fixed);
  if (fixed.origin() == TimingCache::Origin::kMatched) check_round_trip(fixed);

  // load(path) reads the same bytes to the same result.
  {
    ws::fuzz::MemFile f(data, size);
    TimingCache loaded(build_identity());
    loaded.load(f.path());
    if (loaded.origin() != fixed.origin() || loaded.entries() != fixed.entries()) fail("load() != parse()", loaded);
    check_warning(loaded);
  }

  // 2. Under the file's own key, every well-formed cache is accepted: the round trip sees all entries.
  const nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) {
    const auto key = j.find("key");
    if (key != j.end() && key->is_object()) {
      TimingCache own(*key);
      own.parse(text, "fuzz.json");
      check_warning(own);
      const bool own_malformed = own.origin() == TimingCache::Origin::kMalformed;
      if (own_malformed != (fixed.origin() == TimingCache::Origin::kMalformed)) fail("identity changed well-formedness", own);
      if (!own_malformed) {
        if (own.origin() != TimingCache::Origin::kMatched) fail("a cache under its own key not matched", own);
        if (fixed.origin() == TimingCache::Origin::kMatched && own.entries() != fixed.entries())
          fail("entries depend on the identity", own);
        check_round_trip(own);
      }
    }
  }
  return 0;
}
