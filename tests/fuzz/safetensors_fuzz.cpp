// libFuzzer target: the safetensors header parser (SafetensorsFile::parse, no mmap), issue 16.
// Build (clang): clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Isrc
//   tests/fuzz/safetensors_fuzz.cpp src/io/safetensors.cpp src/core/*.cpp src/engine/ir/graph.cpp
// Run: ./safetensors_fuzz -rss_limit_mb=1024 -max_len=65536 tests/fuzz/corpus/safetensors
// Checks beyond "no crash": an accepted file's tensors all lie inside the data section, are found
// by name, and their bytes can be read (ASAN catches a view past the input).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "warpstream/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ws::io::SafetensorsLimits limits;
  limits.max_header_bytes = 1 << 20;  // keeps one input's parser memory far below -rss_limit_mb
  auto r = ws::io::SafetensorsFile::parse({reinterpret_cast<const std::byte*>(data), size}, "fuzz", limits);
  if (!r.is_ok()) {
    if (r.status().message().empty()) std::abort();  // every refusal explains itself
    return 0;
  }
  unsigned sum = 0;
  for (const ws::io::SafetensorsTensor& t : r->tensors()) {
    if (t.begin > t.end || t.end > r->data_bytes()) std::abort();
    if (r->find(t.name) != &t) std::abort();
    const std::span<const std::byte> b = r->bytes(t);
    if (b.size() != t.end - t.begin) std::abort();
    if (!b.empty()) sum += static_cast<unsigned>(b.front()) + static_cast<unsigned>(b.back());
  }
  return static_cast<int>(sum & 0);
}
