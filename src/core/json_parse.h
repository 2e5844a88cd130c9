#pragma once
/// \file json_parse.h
/// The one bounded JSON-to-DOM parse for every JSON file the runtime reads (checkpoint index and config.json,
/// LTX config, bench reports, the timing cache, model configs). nlohmann's recursive-descent parser is iterative,
/// but the DOM it builds for "[[[[...]]]]" costs a vector per level: a 45M-deep document would take gigabytes
/// before failing. Here the parser callback counts the nesting and aborts at the first container deeper than
/// `max_depth`, so such a document is refused after max_depth bytes with no memory to speak of.
/// Header-only: callers are modules that already link nlohmann-json (core itself does not).

#include <nlohmann/json.hpp>

#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/escape.h"
#include "warpstream/status.h"

namespace ws {

/// Nesting bound of the runtime's JSON files (the deepest real one, a bench report, has 4 levels).
inline constexpr int kMaxJsonDepth = 64;

struct JsonParseOptions {
  int max_depth = kMaxJsonDepth;         ///< containers nested deeper than this are refused
  bool refuse_duplicate_keys = false;    ///< a key twice in one object is an error (configs, indexes)
  StatusCode code = StatusCode::kInvalidArgument;  ///< the code of every refusal (kInvalidModel for model files)
};

/// Parses `text`; errors (code options.code) start with `what` ("checkpoint index 'x.json'") and say what is wrong:
/// not JSON (nlohmann's message, escaped), nesting over max_depth, or a duplicate key (escaped, truncated).
inline Result<nlohmann::json> parse_json_bounded(std::string_view text, const std::string& what,
                                                 const JsonParseOptions& options = {}) {
  struct TooDeep {};
  std::vector<std::set<std::string>> keys;
  std::string duplicate;
  auto callback = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    // `depth` = the containers around this one (the callback is called before it is pushed).
    if ((event == E::object_start || event == E::array_start) && depth >= options.max_depth) throw TooDeep{};
    if (!options.refuse_duplicate_keys) return true;
    if (event == E::object_start) keys.emplace_back();
    else if (event == E::object_end) { if (!keys.empty()) keys.pop_back(); }
    else if (event == E::key && !keys.empty() && parsed.is_string()) {
      if (!keys.back().insert(parsed.get<std::string>()).second && duplicate.empty()) duplicate = parsed.get<std::string>();
    }
    return true;
  };
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text.begin(), text.end(), callback);
  } catch (const TooDeep&) {
    return Status(options.code, what + ": JSON nested deeper than " + std::to_string(options.max_depth) + " levels");
  } catch (const std::exception& e) {
    // nlohmann's message quotes the input it last read ("last read: '...'"), which can be as long as the input:
    // keep its head and tail so a hostile file cannot make a message of unbounded size (timing_cache_fuzz).
    std::string_view m = e.what();
    constexpr size_t kHead = 100, kTail = 60;
    std::string shown = m.size() <= kHead + kTail + 32
                            ? std::string(m)
                            : std::string(m.substr(0, kHead)) + " ... (" + std::to_string(m.size() - kHead - kTail) +
                                  " bytes left out) ... " + std::string(m.substr(m.size() - kTail));
    return Status(options.code, what + " is not valid JSON: " + escape_text(shown));
  }
  if (!duplicate.empty()) return Status(options.code, what + ": key " + ws::quoted(duplicate) + " appears twice in one object");
  return doc;
}

}  // namespace ws
