// `warpstream make-demo-model OUT.onnx [--seed N] [--no-extras]`
//
// Writes a small deterministic CNN (ONNX opset 13) for demos and tests, no download needed:
//   input "input" float32 [1, 3, 32, 32]
//   → Conv 3→8 k3 s1 pad1 → BatchNormalization → Relu [→ Identity]
//   → Pad (constant 0, 1 px each side) → Conv depthwise 8 k3 s2 → Clip(0, 6) with min/max from
//     Constant nodes (opset-13 input form)
//   → Conv 1×1 8→16 → HardSwish → MaxPool 2×2 s2 → AveragePool 3×3 s1 pad1 (count_include_pad 0)
//   → GlobalAveragePool → Flatten [→ Dropout (inference)] → Gemm 16→10 (transB = 1)
//   → output "logits" float32 [1, 10]
//   [+ a dead branch Sigmoid(clip) → Mul that reaches no output]
// The bracketed nodes ("extras", on by default) exist so the graph passes have something to
// remove; --no-extras leaves them out. Weights come from std::mt19937(seed) raw 32-bit draws
// (identical on every standard library); the exact order and ranges are documented in
// src/engine/ir/model_builder.h (make_demo_model). Same seed → byte-identical file.
// Exit code 0 ok, 2 when the file cannot be written.
#include <cstdio>
#include <fstream>

#include "command.h"
#include "core/file_io.h"
#include "engine/ir/model_builder.h"

namespace ws::app {
namespace {

struct Options {
  std::string out;
  uint32_t seed = 1;
  bool no_extras = false;
};

int run(const Options& opt) {
  ir::DemoModelOptions d;
  d.seed = opt.seed;
  d.extras = !opt.no_extras;
  const onnx::ModelProto model = ir::make_demo_model(d);
  std::string bytes;
  if (!model.SerializeToString(&bytes)) {
    std::fprintf(stderr, "error: %s\n", internal_error("demo model serialisation failed").to_string().c_str());
    return 2;
  }
  if (Status s = write_file(opt.out, bytes.data(), bytes.size(), "model file"); !s.is_ok()) {
    std::fprintf(stderr, "error: %s\n", s.to_string().c_str());
    return 2;
  }
  std::printf("wrote %s (%zu bytes): demo CNN, input \"input\" [1, 3, 32, 32] → \"logits\" [1, 10], opset 13, seed %u%s\n",
              opt.out.c_str(), bytes.size(), opt.seed, d.extras ? "" : ", no extras");
  return 0;
}

std::function<int()> setup(CLI::App& sub) {
  auto opt = std::make_shared<Options>();
  sub.footer(
      "Model: input \"input\" float32 [1,3,32,32] -> Conv 3->8 k3 pad1 -> BatchNormalization -> Relu -> Pad(1) -> "
      "depthwise Conv 8 k3 s2 -> Clip(0,6) (opset-13 Constant min/max) -> Conv 1x1 8->16 -> HardSwish -> MaxPool 2x2 "
      "-> AveragePool 3x3 s1 pad1 -> GlobalAveragePool -> Flatten -> Gemm 16->10 (transB=1) -> output \"logits\" [1,10]. "
      "Extras (default on): Identity, Dropout and an unused dead branch, which the engine's passes remove. "
      "Weights: std::mt19937(seed), see src/engine/ir/model_builder.h.\n");
  sub.add_option("out", opt->out, "where to write the .onnx file")->required();
  sub.add_option("--seed", opt->seed, "weight generator seed (std::mt19937)")->capture_default_str();
  sub.add_flag("--no-extras", opt->no_extras, "leave out the Identity, Dropout and dead branch");
  return [opt] { return run(*opt); };
}

}  // namespace

WS_REGISTER_COMMAND(make_demo_model, "make-demo-model",
                    "write a small deterministic demo CNN (ONNX opset 13, [1,3,32,32] -> 10 logits)", setup);

}  // namespace ws::app
