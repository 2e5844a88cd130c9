#pragma once
// Import + build + run helpers for tests that write models with ir::ModelBuilder.
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/ir/model_builder.h"
#include "warpstream/engine.h"

namespace ws::test {

inline Result<ir::Graph> import_builder(const ir::ModelBuilder& b, const ir::ImportOptions& opt = {}) {
  const std::vector<std::byte> bytes = b.bytes();
  return ir::import_onnx_bytes(bytes, "test.onnx", opt);
}

inline Result<std::unique_ptr<CpuEngine>> build_engine(const ir::ModelBuilder& b, const ir::ImportOptions& opt = {}) {
  WS_ASSIGN_OR_RETURN(ir::Graph g, import_builder(b, opt));
  return CpuEngine::build(std::move(g));
}

/// Copies `inputs[i]` into input i, runs, returns output `out` as a vector.
inline std::vector<float> run_engine(CpuEngine& e, const std::vector<std::vector<float>>& inputs, size_t out = 0) {
  for (size_t i = 0; i < inputs.size(); ++i) std::memcpy(e.input(i), inputs[i].data(), inputs[i].size() * 4);
  if (!e.run().is_ok()) return {};
  const float* y = static_cast<const float*>(e.output(out));
  return std::vector<float>(y, y + e.output_desc(out).bytes / 4);
}

}  // namespace ws::test
