#pragma once
/// \file timing_cache.h
/// The CUDA executor's timing cache (CudaBuildOptions::timing_cache_path): the tactic each node chose and
/// its measured time, so a later build of the same model on the same GPU and library versions replays the
/// choices instead of timing again. Host-only and device-free (plain C++ + nlohmann-json + POSIX), hence in
/// engine_ir (which engine_cuda depends on) rather than engine_cuda: it is unit-tested on the CPU
/// (tests/unit/engine_ir_timing_cache_test.cpp) and fuzzed through parse() (tests/fuzz/timing_cache_fuzz.cpp).
///
/// File format (JSON, "warpstream-timing-cache-1"):
///   {"format": "warpstream-timing-cache-1",
///    "key": {identity object: GPU name + UUID, driver, CUDA runtime, cuDNN, cuBLAS, graph hash, ...},
///    "entries": {"<cache key of a node>": ENTRY, ...}}
/// ENTRY is an object whose known fields must have these types (unknown fields are ignored):
///   "impl": string            Conv: "cudnn" or one of our conv kernels' keys (absent = "cudnn")
///   "algo": integer           Conv via cuDNN: cudnnConvolutionFwdAlgo_t
///   "fused": boolean          Conv via cuDNN: cudnnConvolutionBiasActivationForward
///   "heuristic_index": integer >= 0   Gemm/MatMul: index into cuBLASLt's heuristic list
///   "time_us": number >= 0    the measured time
///   "alternatives": array     up to kMaxAlternatives ENTRY objects (without their own "alternatives"): the
///                             runners-up timed beside the choice, fastest first — what the frame-level check
///                             (CudaEngine::tune_frame) flips in the whole captured frame. Absent: none recorded.
/// Loading: a missing file is an empty cache; a file whose "key" differs from this build's identity is
/// ignored silently (another GPU, library or model: it is rewritten); anything else that is not exactly
/// this format — invalid JSON, a wrong-typed field, one malformed entry — makes the WHOLE cache ignored
/// with a warning (warning()), and the build times every node again and rewrites the file.
/// Saving: written to a temporary file in the same directory and renamed over the cache, while holding an
/// exclusive flock(2) on "<path>.lock", so concurrent builds never leave a truncated or interleaved file.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "warpstream/status.h"

namespace ws::ir {

/// One node's cached choice (see the file format above). Fields absent in the file are empty.
struct TimingEntry {
  std::optional<std::string> impl;
  std::optional<int64_t> algo;
  std::optional<bool> fused;
  std::optional<int64_t> heuristic_index;
  float time_us = 0.0f;
  /// The runners-up timed at build beside this choice, fastest first (each with no alternatives of its own).
  std::vector<TimingEntry> alternatives;

  friend bool operator==(const TimingEntry&, const TimingEntry&) = default;
};

class TimingCache {
 public:
  static constexpr const char* kFormat = "warpstream-timing-cache-1";
  /// Most runners-up one entry keeps ("alternatives"); a file with more is malformed.
  static constexpr size_t kMaxAlternatives = 4;

  /// How the last load()/parse() went.
  enum class Origin {
    kEmpty,       ///< no file (or no path): nothing cached
    kMatched,     ///< the file's key equals this build's identity: entries loaded
    kMismatched,  ///< a well-formed cache of another identity: ignored silently, rewritten on save
    kMalformed,   ///< not this format: ignored with warning(), rewritten on save
  };

  TimingCache() = default;
  explicit TimingCache(nlohmann::json identity) : identity_(std::move(identity)) {}

  /// Largest cache file read (a real cache is a few hundred bytes per node); a larger file is malformed.
  static constexpr uint64_t kMaxFileBytes = uint64_t{64} << 20;

  /// Reads `path` (see "Loading" above). Never fails: problems become kMalformed + warning().
  void load(const std::string& path);

  /// Parses cache text (the fuzz entry point; `name` labels the warning).
  void parse(std::string_view text, const std::string& name = "<timing cache>");

  /// Writes the cache (identity + entries) to `path`: temp file + rename under flock on "<path>.lock".
  /// Errors: kNotFound when the directory cannot be written (naming the path and errno's text).
  Status save(const std::string& path) const;

  /// Entries are looked up and stored by cache key (BindContext::cache_key).
  const TimingEntry* find(const std::string& key) const {
    auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : &it->second;
  }
  void put(const std::string& key, TimingEntry e) {
    entries_[key] = std::move(e);
    dirty_ = true;
  }

  /// Same-problem memo of this build (TensorRT's timing cache is keyed the same way: by the layer's problem, not
  /// its name): an entry chosen for one node is reused for every later node whose problem key
  /// (BindContext::problem_key: op, precision, input shapes and constness, attributes, fused activation) is equal,
  /// so a network of repeated blocks (EfficientNet-B7: ~4x fewer distinct convolutions than nodes) times each
  /// problem once. In memory only: never saved, never read from a file, not a reason to save.
  const TimingEntry* find_problem(const std::string& problem) const {
    auto it = problems_.find(problem);
    return it == problems_.end() ? nullptr : &it->second;
  }
  void put_problem(const std::string& problem, TimingEntry e) { problems_.emplace(problem, std::move(e)); }
  size_t problem_count() const { return problems_.size(); }

  /// True when save() would change the file: it did not match this identity, or entries were added.
  bool needs_save() const { return origin_ != Origin::kMatched || dirty_; }
  Origin origin() const { return origin_; }
  /// Why the file was ignored (kMalformed only), e.g. "timing cache 'x.json': entry \"k\" field \"algo\"
  /// must be an integer; ignoring the whole cache (it will be timed again and rewritten)".
  const std::string& warning() const { return warning_; }
  const nlohmann::json& identity() const { return identity_; }
  size_t size() const { return entries_.size(); }
  /// All entries, ordered by cache key.
  const std::map<std::string, TimingEntry>& entries() const { return entries_; }

  /// The whole cache as the JSON save() writes.
  nlohmann::json to_json() const;

  static nlohmann::json entry_to_json(const TimingEntry& e);

  /// The entry `v` as a TimingEntry, or nullopt with `why` naming the first wrong field.
  /// `nested`: an element of "alternatives" (which may not have its own).
  static std::optional<TimingEntry> entry_from_json(const nlohmann::json& v, std::string* why, bool nested = false);

  /// The file at `path` read with the identity it names (no identity of this build to compare with): what a tool that
  /// edits a cache it just wrote (CudaEngine::tune_frame) starts from. Origin kMatched when it parsed; otherwise the
  /// origin and warning() say why (kEmpty: no file).
  static TimingCache load_as_is(const std::string& path);

 private:
  void clear_loaded();
  void malformed(const std::string& name, const std::string& why);
  /// parse() after the JSON parse: the document (or the parse's error) checked and, on a matching key, loaded.
  void parse_document(const Result<nlohmann::json>& doc, const std::string& name);

  nlohmann::json identity_ = nlohmann::json::object();
  std::map<std::string, TimingEntry> entries_;
  std::map<std::string, TimingEntry> problems_;
  Origin origin_ = Origin::kEmpty;
  bool dirty_ = false;
  std::string warning_;
};

}  // namespace ws::ir
