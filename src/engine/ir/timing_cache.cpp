// The timing cache's load/parse, serialization and locked save (timing_cache.h has the file format and the
// loading/saving rules). Tested by tests/unit/engine_ir_timing_cache_test.cpp and
// tests/fuzz/timing_cache_fuzz.cpp (parse -> to_json -> parse round trip).
#include "engine/ir/timing_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/file_io.h"
#include "core/json_parse.h"

namespace ws::ir {
namespace {

/// Cache keys and file contents are untrusted: control bytes are shown as \xNN.
std::string printable(std::string_view s) {
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

Status io_error(const std::string& what) { return not_found(what + ": " + std::strerror(errno)); }

Status write_and_rename(const std::string& path, const std::string& text) {
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

}  // namespace

void TimingCache::load(const std::string& path) {
  clear_loaded();
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;  // no cache yet
  // A regular file of at most kMaxFileBytes (a FIFO or a directory is refused before it is opened).
  auto bytes = read_regular_file(path, "timing cache", kMaxFileBytes);
  if (!bytes.is_ok()) return malformed(path, "cannot be read (" + bytes.status().message() + ")");
  parse(std::string_view(bytes->data(), bytes->size()), path);
}

TimingCache TimingCache::load_as_is(const std::string& path) {
  TimingCache c;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return c;
  auto bytes = read_regular_file(path, "timing cache", kMaxFileBytes);
  if (!bytes.is_ok()) {
    c.malformed(path, "cannot be read (" + bytes.status().message() + ")");
    return c;
  }
  // One parse: the identity the file names becomes this cache's, then the document is checked as load() checks it.
  auto doc = parse_json_bounded(std::string_view(bytes->data(), bytes->size()), path);
  if (doc.is_ok() && doc->is_object())
    if (const auto key = doc->find("key"); key != doc->end() && key->is_object()) c.identity_ = *key;
  c.parse_document(doc, path);
  return c;
}

void TimingCache::parse(std::string_view text, const std::string& name) {
  parse_document(parse_json_bounded(text, name), name);  // nesting bounded (kMaxJsonDepth)
}

void TimingCache::parse_document(const Result<nlohmann::json>& doc, const std::string& name) {
  clear_loaded();
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

Status TimingCache::save(const std::string& path) const {
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

nlohmann::json TimingCache::to_json() const {
  nlohmann::json entries = nlohmann::json::object();
  for (const auto& [k, e] : entries_) entries[k] = entry_to_json(e);
  return nlohmann::json{{"format", kFormat}, {"key", identity_}, {"entries", std::move(entries)}};
}

nlohmann::json TimingCache::entry_to_json(const TimingEntry& e) {
  nlohmann::json j = nlohmann::json::object();
  if (e.impl) j["impl"] = *e.impl;
  if (e.algo) j["algo"] = *e.algo;
  if (e.fused) j["fused"] = *e.fused;
  if (e.heuristic_index) j["heuristic_index"] = *e.heuristic_index;
  j["time_us"] = e.time_us;
  if (!e.alternatives.empty()) {
    nlohmann::json a = nlohmann::json::array();
    for (const TimingEntry& alt : e.alternatives) a.push_back(entry_to_json(alt));
    j["alternatives"] = std::move(a);
  }
  return j;
}

std::optional<TimingEntry> TimingCache::entry_from_json(const nlohmann::json& v, std::string* why, bool nested) {
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
  if (const auto it = v.find("alternatives"); it != v.end()) {
    if (nested) {
      *why = "field \"alternatives\" may not nest (an alternative has none of its own)";
      return std::nullopt;
    }
    if (!it->is_array() || it->size() > kMaxAlternatives) {
      *why = "field \"alternatives\" must be an array of at most " + std::to_string(kMaxAlternatives) + " entries";
      return std::nullopt;
    }
    for (size_t i = 0; i < it->size(); ++i) {
      std::string inner;
      std::optional<TimingEntry> alt = entry_from_json((*it)[i], &inner, true);
      if (!alt) {
        *why = "alternative " + std::to_string(i) + " " + inner;
        return std::nullopt;
      }
      e.alternatives.push_back(std::move(*alt));
    }
  }
  return e;
}

void TimingCache::clear_loaded() {
  entries_.clear();
  origin_ = Origin::kEmpty;
  dirty_ = false;
  warning_.clear();
}

void TimingCache::malformed(const std::string& name, const std::string& why) {
  entries_.clear();
  origin_ = Origin::kMalformed;
  warning_ = "timing cache '" + printable(name) + "' " + why +
             "; ignoring the whole cache (every node is timed again and the file rewritten)";
}

}  // namespace ws::ir
