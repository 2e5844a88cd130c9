// libFuzzer target: the safetensors header parser (SafetensorsFile::parse, no mmap) and, for every
// accepted input, a WeightStore load of it with int8 and fp8 conversion of its 2-D float tensors (issue 16), and one
// with the default selection (pre-quantised LTX block weights + their .weight_scale tensors).
// Build (clang):
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Iinclude -Isrc \
//     tests/fuzz/safetensors_fuzz.cpp src/io/safetensors.cpp src/flow/host/weight_store.cpp \
//     src/core/status.cpp src/core/file_io.cpp src/engine/ir/graph.cpp -o safetensors_fuzz
// Run: ./safetensors_fuzz -rss_limit_mb=1024 -max_len=65536 tests/fuzz/seeds/safetensors
// Checks beyond "no crash": an accepted file's tensors all lie inside the data section and are found
// by name; a store never exceeds its host bound; every refusal carries a message.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "flow/host/weight_store.h"
#include "warpstream/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ws::io::SafetensorsLimits limits;
  limits.max_header_bytes = 1 << 20;  // keeps one input's parser memory far below -rss_limit_mb
  auto r = ws::io::SafetensorsFile::parse({reinterpret_cast<const std::byte*>(data), size}, "fuzz", limits);
  if (!r.is_ok()) {
    if (r.status().message().empty()) std::abort();  // every refusal explains itself
    return 0;
  }
  for (const ws::io::SafetensorsTensor& t : r->tensors()) {
    if (t.begin > t.end || t.end > r->data_bytes()) std::abort();
    if (r->find(t.name) != &t) std::abort();
    if (r->bytes(t).size() != t.end - t.begin) std::abort();
  }
  const ws::io::SafetensorsCheckpoint checkpoint = ws::io::SafetensorsCheckpoint::from_file(std::move(r).value());
  for (ws::flow::WeightFormat f : {ws::flow::WeightFormat::kAsStored, ws::flow::WeightFormat::kInt8,
                                   ws::flow::WeightFormat::kFp8E4M3}) {
    ws::flow::WeightStoreOptions o;
    o.format = f;
    o.threads = 1;
    o.max_host_bytes = 64u << 20;
    o.quantize = [](const ws::io::SafetensorsTensor& t) {
      return t.shape.size() == 2 && (t.dtype == ws::DType::kBFloat16 || t.dtype == ws::DType::kFloat16 ||
                                     t.dtype == ws::DType::kFloat32);
    };
    auto s = ws::flow::WeightStore::load(checkpoint, o);
    if (!s.is_ok()) {
      if (s.status().message().empty()) std::abort();
      continue;
    }
    if (s->storage().size() > o.max_host_bytes) std::abort();
    for (const ws::flow::StoredTensor& t : s->tensors())
      if (t.offset + t.bytes > s->storage().size() || s->find(t.name) != &t) std::abort();
  }
  // The default selection (LTX block linear names): pre-quantised I8 / F8_E4M3 codes with their ".weight_scale"
  // tensors (tools/make_ltx_checkpoint.py --block-weights), loaded as stored; scales inside the store, each > 0.
  ws::flow::WeightStoreOptions d;
  d.threads = 1;
  d.max_host_bytes = 64u << 20;
  auto s = ws::flow::WeightStore::load(checkpoint, d);
  if (!s.is_ok()) {
    if (s.status().message().empty()) std::abort();
    return 0;
  }
  for (const ws::flow::StoredTensor& t : s->tensors()) {
    if (t.scales == nullptr) continue;
    const uint64_t end = t.scales_offset + static_cast<uint64_t>(t.shape.at(0)) * sizeof(float);
    if (end > s->storage().size()) std::abort();
    for (int64_t r = 0; r < t.shape[0]; ++r)
      if (!(t.scales[r] > 0.0f)) std::abort();
  }
  return 0;
}
