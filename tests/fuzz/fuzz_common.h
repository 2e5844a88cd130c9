#pragma once
// Shared by the libFuzzer targets in tests/fuzz (see tests/fuzz/README.md): the build limits every
// target runs under, the oracle on error messages, and an in-memory file for readers that only
// take a path.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>

#include "core/limits.h"
#include "engine/cuda/build_stages.h"
#include "warpstream/engine.h"
#include "warpstream/graph.h"
#include "warpstream/status.h"

namespace ws::fuzz {

// Limits under which every target runs: well inside libFuzzer's -rss_limit_mb=1024.
constexpr int64_t kMaxTensorElements = int64_t{1} << 20;  // 4 MiB of float32 per tensor
constexpr size_t kMaxTensorBytes = size_t{16} << 20;
constexpr size_t kMaxArenaBytes = size_t{64} << 20;
constexpr size_t kRunArenaBytes = size_t{1} << 20;        // run() the engine when the arena is this small

inline void set_fuzz_limits() {
  static const bool once = [] {
    BuildLimits l;
    l.max_tensor_elements = kMaxTensorElements;
    l.max_tensor_bytes = kMaxTensorBytes;
    l.max_image_pixels = int64_t{1} << 22;  // 4 Mpx = 12 MiB of RGB8
    // 2 M multiply-accumulates per node: the reference conv under ASAN+UBSAN runs ~3 M MAC/s on thin shapes
    // (Conv(W, W), W [260, 1, 2, 65]: 8.8 M MACs took 3 s on an idle core and > 10 s on a loaded one, a libFuzzer
    // timeout, 2026-12-02), so every unit stays near a second even on a busy machine.
    l.max_node_macs = int64_t{1} << 21;
    set_build_limits(l);
    return true;
  }();
  (void)once;
}

// The escaping contract as an oracle: an error message never carries a control byte (a newline
// would forge a second line, ESC a terminal sequence), whatever the input held.
inline void check_message(const Status& s) {
  for (char ch : s.message()) {
    const auto b = static_cast<unsigned char>(ch);
    if (b < 0x20 || b == 0x7F) {
      std::fprintf(stderr, "unescaped byte 0x%02x in message: %s\n", b, s.to_string().c_str());
      std::abort();
    }
  }
}

// ONNX import + ir::optimize + CPU engine build (+ one run when the arena is small): the path a
// model from the internet takes through `warpstream classify --device cpu`; before it, the CUDA executor's
// device-free stages (optimize_for_cuda with the NHWC layout planner, the arena plan) on a copy.
inline void fuzz_model_bytes(const uint8_t* data, size_t size) {
  set_fuzz_limits();
  ir::ImportOptions opt;
  opt.max_tensor_bytes = kMaxTensorBytes;
  auto g = ir::import_onnx_bytes(std::as_bytes(std::span<const uint8_t>(data, size)), "fuzz.onnx", opt);
  if (!g) { check_message(g.status()); return; }
  {  // the CUDA executor's device-free build stages on the same graph: its fusions, the channels-last planner
     // forced on (every reformat insertion reachable), and the arena plan (build_stages.h)
    CudaBuildOptions o;
    o.precision = Precision::kFloat16;
    o.layout = Layout::kNhwc;
    auto og = cudaexec::optimize_for_cuda(*g, o);
    if (!og) check_message(og.status());
    else (void)cudaexec::plan_cuda_arena(og->graph, true, false);
  }
  auto e = CpuEngine::build(std::move(*g), kMaxArenaBytes);
  if (!e) { check_message(e.status()); return; }
  CpuEngine& engine = **e;
  if (engine.arena_bytes() > kRunArenaBytes) return;
  for (size_t i = 0; i < engine.num_inputs(); ++i) {
    const TensorDesc& d = engine.input_desc(i);
    auto* p = static_cast<float*>(engine.input(i));
    for (size_t k = 0; k < d.bytes / sizeof(float); ++k) p[k] = static_cast<float>(k % 7) - 3.0f;
  }
  Status s = engine.run();
  if (!s.is_ok()) check_message(s);
}

// A path naming `bytes` for readers that only open files: a memfd (a regular file, no disk).
class MemFile {
 public:
  MemFile(const uint8_t* data, size_t size) {
    fd_ = memfd_create("fuzz", 0);
    if (fd_ < 0) { std::perror("memfd_create"); std::abort(); }
    size_t done = 0;
    while (done < size) {
      const ssize_t w = ::write(fd_, data + done, size - done);
      if (w <= 0) { std::perror("write"); std::abort(); }
      done += static_cast<size_t>(w);
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemFile() { ::close(fd_); }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace ws::fuzz
