// libFuzzer target: the `onnx-test` TensorProto reader (ir::parse_tensor_proto, behind
// ir::read_tensor_proto). Seeds: the node suite's input_N.pb / output_N.pb (tests/fuzz/seeds/pb).
#include "engine/ir/tensor_proto.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ws::fuzz::set_fuzz_limits();
  auto t = ws::ir::parse_tensor_proto(std::as_bytes(std::span<const uint8_t>(data, size)), "input_0.pb",
                                      ws::fuzz::kMaxTensorBytes);
  if (!t) { ws::fuzz::check_message(t.status()); return 0; }
  // What the reader returns is consistent: the data holds exactly what the shape promises.
  const int64_t n = t->elements();
  if (n < 0 || !t->data || t->data->size() != static_cast<size_t>(n) * ws::ir::dtype_size(t->dtype)) std::abort();
  return 0;
}
