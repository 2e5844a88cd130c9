// libFuzzer target: ONNX model bytes → import_onnx_bytes → ir::optimize → CpuEngine::build (and
// one run() when the arena is under 1 MiB). Byte-level mutations (protobuf parse, varints, field
// tags); onnx_structure_fuzz mutates the model's structure instead. Seeds: tests/fuzz/seeds/onnx.
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ws::fuzz::fuzz_model_bytes(data, size);
  return 0;
}
