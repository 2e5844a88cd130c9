#pragma once
// Test-only safetensors writer: builds file images (valid ones from tensor specs, and raw ones from
// a hand-written header for the malformed cases) so reader tests need no Python.
// Format: 8-byte little-endian header length, JSON header, data section (see safetensors.h).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "warpstream/numeric.h"

namespace ws::test {

struct SafetensorsSpec {
  std::string name;
  std::string dtype;             ///< safetensors spelling: "F32", "BF16", ...
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;     ///< raw little-endian bytes (size must match shape x dtype)
};

inline std::string le64(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return s;
}

/// 8-byte length (= header.size() unless overridden) + header + `data_bytes` bytes of 0xAB.
inline std::string safetensors_raw(const std::string& header, size_t data_bytes,
                                   std::optional<uint64_t> length_field = std::nullopt) {
  return le64(length_field.value_or(header.size())) + header + std::string(data_bytes, '\xAB');
}

/// A valid file: tensors laid out back to back in the given order, header in the same order,
/// padded with spaces to a multiple of 8 as the reference writer does.
inline std::string safetensors_image(const std::vector<SafetensorsSpec>& tensors,
                                     const std::map<std::string, std::string>& metadata = {}) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string data;
  for (const SafetensorsSpec& t : tensors) {
    const uint64_t begin = data.size();
    if (!t.data.empty()) data.append(reinterpret_cast<const char*>(t.data.data()), t.data.size());
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {begin, static_cast<uint64_t>(data.size())}}};
  }
  std::string text = header.dump();
  while (text.size() % 8 != 0) text.push_back(' ');
  return le64(text.size()) + text + data;
}

inline std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

inline std::vector<uint8_t> bf16_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    const uint16_t b = ws::float_to_bf16(v[i]);
    out[2 * i] = static_cast<uint8_t>(b & 0xFF);
    out[2 * i + 1] = static_cast<uint8_t>(b >> 8);
  }
  return out;
}

}  // namespace ws::test
