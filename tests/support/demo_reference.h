#pragma once
// An independent, unoptimised evaluation of the demo model (engine/ir/model_builder.h,
// make_demo_model): every layer as written in the file, BatchNormalization and Pad as separate
// steps, computed with ws::ref functions from the weights read straight out of the protobuf.
// The shapes below are worked out by hand from the layer list, not by the engine's inference.
#include <onnx/onnx_pb.h>

#include <map>
#include <string>
#include <vector>

#include "engine/ir/model_builder.h"

namespace ws::test {

struct DemoTensor {
  std::vector<int64_t> shape;
  std::vector<float> values;
};

/// Tensor name (as in the ONNX file: "conv1", "bn1", "relu1", "pad2", "conv2", "clip2", "conv3",
/// "hsw3", "pool4", "avg5", "gap6", "flat6", "logits") → reference value for `input` [1,3,32,32].
std::map<std::string, DemoTensor> evaluate_demo_reference(const onnx::ModelProto& model,
                                                          const std::vector<float>& input);

/// Writes make_demo_model(options) to `path` (asserting success).
void write_demo_model(const std::string& path, const ir::DemoModelOptions& options = {});

}  // namespace ws::test
