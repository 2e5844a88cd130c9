#pragma once
/// \file timing_cache.h
/// The CUDA executor's timing cache (CudaBuildOptions::timing_cache_path): the tactic each node chose and
/// its measured time, so a later build of the same model on the same GPU and library versions replays the
/// choices instead of timing again. Host-only and device-free (plain C++ + nlohmann-json + POSIX), so it is
/// unit-tested on the CPU (tests/unit/engine_cuda_timing_cache_test.cpp) and fuzzed through parse().
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
/// Loading: a missing file is an empty cache; a file whose "key" differs from this build's identity is
/// ignored silently (another GPU, library or model: it is rewritten); anything else that is not exactly
/// this format — invalid JSON, a wrong-typed field, one malformed entry — makes the WHOLE cache ignored
/// with a warning (warning()), and the build times every node again and rewrites the file.
/// Saving: written to a temporary file in the same directory and renamed over the cache, while holding an
/// exclusive flock(2) on "<path>.lock", so concurrent builds never leave a truncated or interleaved file.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/file_io.h"
#include "core/json_parse.h"
#include "warpstream/status.h"

namespace ws::cudaexec {

/// One node's cached choice (see the file format above). Fields absent in the file are empty.
struct TimingEntry {
  std::optional<std::string> impl;
  std::optional<int64_t> algo;
  std::optional<bool> fused;
  std::optional<int64_t> heuristic_index;
  float time_us = 0.0f;

  friend bool operator==(const TimingEntry&, const TimingEntry&) = default;
};

class TimingCache {
 public:
  static constexpr const char* kFormat = "warpstream-timing-cache-1";

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
  void load(const std::string& path) {
    clear_loaded();
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return;  // no cache yet
    // A regular file of at most kMaxFileBytes (a FIFO or a directory is refused before it is opened).
    auto bytes = read_regular_file(path, "timing cache", kMaxFileBytes);
    if (!bytes.is_ok()) return malformed(path, "cannot be read (" + bytes.status().message() + ")");
    parse(std::string_view(bytes->data(), bytes->size()), path);
  }

  /// Parses cache text (the fuzz entry point; `name` labels the warning).
  void parse(std::string_view text, const std::string& name = "<timing cache>") {
    clear_loaded();
    auto doc = parse_json_bounded(text, name);  // nesting bounded (kMaxJsonDepth)
    if (!doc.is_ok()) return malformed(name, "is not valid JSON (" + doc.status().message() + ")");
    const nlohmann::json& j = doc.value();
    if (!j.is_object()) return malformed(name, "is not a JSON object");
    const auto fmt = j.find("format");
    if (fmt == j.end() || !fmt->is_string() || fmt->get<std::string>() != kFormat)
      return malformed(name, std::string("has no \"format\": \"") + kFormat + "\"");
    const auto key = j.find("key");
    if (key == j.end() || !key->is_object()) return malformed(name, "has no \"key\" object");
    const auto entries = j.find("entries");
    if (entries == j.end() || !entries->is_object()) return malformed(name, "has no \"entries\" object");
    std::map<std::string, TimingEntry> parsed;
    for (const auto& [k, v] : entries->items()) {
      std::string why;
      std::optional<TimingEntry> e = entry_from_json(v, &why);
      if (!e) return malformed(name, "entry \"" + printable(k) + "\" " + why);
      parsed.emplace(k, std::move(*e));
    }
    if (*key != identity_) {
      origin_ = Origin::kMismatched;
      return;
    }
    entries_ = std::move(parsed);
    origin_ = Origin::kMatched;
  }

  /// Writes the cache (identity + entries) to `path`: temp file + rename under flock on "<path>.lock".
  /// Errors: kNotFound when the directory cannot be written (naming the path and errno's text).
  Status save(const std::string& path) const {
    const std::string text = to_json().dump(1) + "\n";
    const std::string lock_path = path + ".lock";
    const int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock_fd < 0) return io_error("cannot create the timing cache lock '" + lock_path + "'");
    Status s = Status::ok();
    while (::flock(lock_fd, LOCK_EX) != 0) {
      if (errno != EINTR) {
        s = io_error("cannot lock '" + lock_path + "'");
        break;
      }
    }
    if (s.is_ok()) s = write_and_rename(path, text);
    ::close(lock_fd);  // releases the flock
    return s;
  }

  /// Entries are looked up and stored by cache key (BindContext::cache_key).
  const TimingEntry* find(const std::string& key) const {
    auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : &it->second;
  }
  void put(const std::string& key, TimingEntry e) {
    entries_[key] = std::move(e);
    dirty_ = true;
  }

  /// True when save() would change the file: it did not match this identity, or entries were added.
  bool needs_save() const { return origin_ != Origin::kMatched || dirty_; }
  Origin origin() const { return origin_; }
  /// Why the file was ignored (kMalformed only), e.g. "timing cache 'x.json': entry \"k\" field \"algo\"
  /// must be an integer; ignoring the whole cache (it will be timed again and rewritten)".
  const std::string& warning() const { return warning_; }
  const nlohmann::json& identity() const { return identity_; }
  size_t size() const { return entries_.size(); }

  nlohmann::json to_json() const {
    nlohmann::json entries = nlohmann::json::object();
    for (const auto& [k, e] : entries_) entries[k] = entry_to_json(e);
    return nlohmann::json{{"format", kFormat}, {"key", identity_}, {"entries", std::move(entries)}};
  }

  static nlohmann::json entry_to_json(const TimingEntry& e) {
    nlohmann::json j = nlohmann::json::object();
    if (e.impl) j["impl"] = *e.impl;
    if (e.algo) j["algo"] = *e.algo;
    if (e.fused) j["fused"] = *e.fused;
    if (e.heuristic_index) j["heuristic_index"] = *e.heuristic_index;
    j["time_us"] = e.time_us;
    return j;
  }

  /// The entry `v` as a TimingEntry, or nullopt with `why` naming the first wrong field.
  static std::optional<TimingEntry> entry_from_json(const nlohmann::json& v, std::string* why) {
    if (!v.is_object()) {
      *why = "is not an object";
      return std::nullopt;
    }
    TimingEntry e;
    auto integer = [&](const char* field, std::optional<int64_t>& out, int64_t lo, int64_t hi) {
      const auto it = v.find(field);
      if (it == v.end()) return true;
      if (!it->is_number_integer() || it->get<int64_t>() < lo || it->get<int64_t>() > hi) {
        *why = std::string("field \"") + field + "\" must be an integer in " + std::to_string(lo) + ".." + std::to_string(hi);
        return false;
      }
      out = it->get<int64_t>();
      return true;
    };
    if (const auto it = v.find("impl"); it != v.end()) {
      if (!it->is_string()) {
        *why = "field \"impl\" must be a string";
        return std::nullopt;
      }
      e.impl = it->get<std::string>();
    }
    if (!integer("algo", e.algo, 0, 1 << 16) || !integer("heuristic_index", e.heuristic_index, 0, 1 << 16))
      return std::nullopt;
    if (const auto it = v.find("fused"); it != v.end()) {
      if (!it->is_boolean()) {
        *why = "field \"fused\" must be a boolean";
        return std::nullopt;
      }
      e.fused = it->get<bool>();
    }
    if (const auto it = v.find("time_us"); it != v.end()) {
      const double t = it->is_number() ? it->get<double>() : -1.0;
      if (!(t >= 0.0 && t <= 3.4e38)) {
        *why = "field \"time_us\" must be a number >= 0";
        return std::nullopt;
      }
      e.time_us = static_cast<float>(t);
    }
    return e;
  }

 private:
  void clear_loaded() {
    entries_.clear();
    origin_ = Origin::kEmpty;
    dirty_ = false;
    warning_.clear();
  }
  void malformed(const std::string& name, const std::string& why) {
    entries_.clear();
    origin_ = Origin::kMalformed;
    warning_ = "timing cache '" + printable(name) + "' " + why +
               "; ignoring the whole cache (every node is timed again and the file rewritten)";
  }
  /// Cache keys and file contents are untrusted: control bytes are shown as \xNN.
  static std::string printable(std::string_view s) {
    std::string r;
    for (unsigned char ch : s.substr(0, 200)) {
      if (ch < 0x20 || ch == 0x7f) {
        char buf[5];
        std::snprintf(buf, sizeof buf, "\\x%02x", ch);
        r += buf;
      } else {
        r += static_cast<char>(ch);
      }
    }
    if (s.size() > 200) r += "...";
    return r;
  }
  static Status io_error(const std::string& what) {
    return not_found(what + ": " + std::strerror(errno));
  }
  static Status write_and_rename(const std::string& path, const std::string& text) {
    std::string tmpl = path + ".tmp.XXXXXX";
    const int fd = ::mkstemp(tmpl.data());
    if (fd < 0) return io_error("cannot write the timing cache '" + path + "' (temporary file)");
    size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        Status s = io_error("cannot write the timing cache '" + path + "'");
        ::close(fd);
        ::unlink(tmpl.c_str());
        return s;
      }
      done += static_cast<size_t>(n);
    }
    ::fchmod(fd, 0644);
    const bool synced = ::fsync(fd) == 0;
    const bool closed = ::close(fd) == 0;
    if (!synced || !closed) {
      Status s = io_error("cannot write the timing cache '" + path + "'");
      ::unlink(tmpl.c_str());
      return s;
    }
    if (::rename(tmpl.c_str(), path.c_str()) != 0) {
      Status s = io_error("cannot replace the timing cache '" + path + "'");
      ::unlink(tmpl.c_str());
      return s;
    }
    return Status::ok();
  }

  nlohmann::json identity_ = nlohmann::json::object();
  std::map<std::string, TimingEntry> entries_;
  Origin origin_ = Origin::kEmpty;
  bool dirty_ = false;
  std::string warning_;
};

}  // namespace ws::cudaexec
