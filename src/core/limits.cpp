// The build-time memory budget; see limits.h.
#include "core/limits.h"

#include <cerrno>
#include <cstdlib>
#include <type_traits>

#include "core/checked_math.h"

namespace ws {
namespace {

struct State {
  BuildLimits limits;
  Status env_error;  // a malformed environment variable, reported by every check
};

bool parse_positive(const char* s, uint64_t& out) {
  if (!s || !*s) return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0' || v == 0 || s[0] == '-') return false;
  out = v;
  return true;
}

State& state() {
  static State s = [] {
    State st;
    auto read = [&st](const char* name, auto& field, uint64_t max) {
      const char* v = std::getenv(name);
      if (!v) return;
      uint64_t parsed = 0;
      if (!parse_positive(v, parsed) || parsed > max) {
        st.env_error = invalid_argument(std::string(name) + " must be a positive decimal integer up to " +
                                        std::to_string(max));
        return;
      }
      field = static_cast<std::remove_reference_t<decltype(field)>>(parsed);
    };
    read("WS_MAX_TENSOR_ELEMENTS", st.limits.max_tensor_elements, uint64_t{1} << 62);
    read("WS_MAX_TENSOR_BYTES", st.limits.max_tensor_bytes, uint64_t{1} << 62);
    read("WS_MAX_IMAGE_PIXELS", st.limits.max_image_pixels, uint64_t{1} << 62);
    read("WS_MAX_ARENA_BYTES", st.limits.max_arena_bytes, uint64_t{1} << 62);
    read("WS_MAX_NODE_MACS", st.limits.max_node_macs, uint64_t{1} << 62);
    return st;
  }();
  return s;
}

}  // namespace

const BuildLimits& build_limits() { return state().limits; }

void set_build_limits(const BuildLimits& limits) {
  state().limits = limits;
  state().env_error = Status::ok();
}

Status check_shape_within_limits(std::span<const int64_t> shape, const std::string& what) {
  const State& st = state();
  if (!st.env_error.is_ok()) return st.env_error;
  for (int64_t d : shape) {
    if (d < 0) return invalid_model(what + " has a negative dimension " + std::to_string(d));
  }
  const auto extent = checked_extent(shape);
  if (!extent || *extent > st.limits.max_tensor_elements) {
    std::string dims = "[";
    for (size_t i = 0; i < shape.size(); ++i) dims += (i ? ", " : "") + std::to_string(shape[i]);
    dims += "]";
    return resource_exhausted(what + " of shape " + dims + " exceeds the limit of " +
                              std::to_string(st.limits.max_tensor_elements) +
                              " elements per tensor (WS_MAX_TENSOR_ELEMENTS)");
  }
  return Status::ok();
}

Status check_work_within_limits(std::optional<int64_t> macs, const std::string& what) {
  const State& st = state();
  if (!st.env_error.is_ok()) return st.env_error;
  if (!macs || *macs > st.limits.max_node_macs)
    return resource_exhausted(what + ": " + (macs ? std::to_string(*macs) : std::string("more than 2^63")) +
                              " multiply-accumulates exceed the limit of " + std::to_string(st.limits.max_node_macs) +
                              " per node (WS_MAX_NODE_MACS)");
  return Status::ok();
}

}  // namespace ws
