// ws::LtxTransformer (include/warpstream/flow.h): the public face of the whole-model LTX path. Opens a diffusers
// checkpoint into one WeightStore (headers validated first), builds an LtxModel (src/flow/models/ltx_model.h) per
// problem size, captures its forward into a CUDA graph, and runs forwards on caller-owned device tensors
// (device-to-device copies into / out of the model's fixed buffers around one graph launch).
// Tested from Python on the GPU machine: python/tests/test_flow.py (diffusers' LTXPipeline with diffusers'
// transformer vs this one), run by `bash scripts/device.sh python`.
#include "warpstream/flow.h"

#include <cuda_runtime.h>
#include <sys/stat.h>

#include <optional>
#include <string>
#include <vector>

#include "core/escape.h"
#include "core/file_io.h"
#include "cuda/cuda_util.h"
#include "flow/host/ltx_config.h"
#include "flow/host/stream_plan.h"
#include "flow/host/weight_store.h"
#include "flow/models/ltx_block_source.h"
#include "flow/models/ltx_model.h"
#include "warpstream/safetensors.h"

namespace ws {

struct LtxTransformer::Impl {
  LtxTransformerOptions options;
  LtxTransformerConfig public_config;
  flow::LtxConfig config;
  flow::LtxStreamWeights weights = flow::LtxStreamWeights::kBF16;
  std::string file;
  std::optional<flow::WeightStore> store;
  // The current device model and what it was built for.
  std::unique_ptr<flow::LtxModel> model;
  std::optional<LtxShape> shape;
  std::optional<cuda::Stream> capture_stream;  // capture needs a non-default stream; launches use the caller's
  bool graph = false;
  std::string capture_error;
  int builds = 0;
  std::vector<std::string> unused_tensors;
};

namespace {

constexpr size_t kMaxConfigBytes = size_t{1} << 20;

/// config.json in the folder, or beside a file.
Result<std::string> find_config(const std::string& checkpoint) {
  struct stat st {};
  std::string path = checkpoint + "/config.json";
  if (::stat(path.c_str(), &st) == 0) return path;
  const size_t slash = checkpoint.rfind('/');
  path = (slash == std::string::npos ? std::string(".") : checkpoint.substr(0, slash)) + "/config.json";
  if (::stat(path.c_str(), &st) == 0) return path;
  return not_found("LTX transformer: no config.json in or beside " + quoted(checkpoint));
}

Status check_shape(const LtxShape& s) {
  if (s.batch < 1 || s.batch > 64) return invalid_argument("LTX transformer: batch " + std::to_string(s.batch) + " (1..64)");
  if (s.frames < 1 || s.height < 1 || s.width < 1 || s.tokens() > (int64_t{1} << 22))
    return invalid_argument("LTX transformer: latent grid " + std::to_string(s.frames) + "x" + std::to_string(s.height) +
                            "x" + std::to_string(s.width) + " (each >= 1, at most 2^22 tokens)");
  if (s.text_tokens < 1 || s.text_tokens > 4096)
    return invalid_argument("LTX transformer: " + std::to_string(s.text_tokens) + " text tokens (1..4096)");
  return Status::ok();
}

}  // namespace

LtxTransformer::LtxTransformer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LtxTransformer::~LtxTransformer() {
  if (impl_ && impl_->model) (void)cudaDeviceSynchronize();  // a forward may still read the model's buffers
}

Result<std::unique_ptr<LtxTransformer>> LtxTransformer::open(const std::string& checkpoint, const LtxTransformerOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  WS_ASSIGN_OR_RETURN(impl->weights, flow::parse_ltx_stream_weights(options.weights));
  const flow::LtxStreamWeights asked = impl->weights;
  if (options.max_slots < 2 || options.max_slots > 64)
    return invalid_argument("LTX transformer: max_slots " + std::to_string(options.max_slots) + " (2..64)");
  WS_ASSIGN_OR_RETURN(const std::string cfg_path, find_config(checkpoint));
  WS_ASSIGN_OR_RETURN(std::vector<char> text, read_regular_file(cfg_path, "config file", kMaxConfigBytes));
  WS_ASSIGN_OR_RETURN(impl->config, flow::parse_ltx_config(std::string_view(text.data(), text.size()), cfg_path));
  const flow::LtxConfig& c = impl->config;
  impl->public_config = {c.in_channels, c.out_channels, c.caption_channels, c.num_attention_heads, c.attention_head_dim,
                         c.cross_attention_dim, c.num_layers, c.patch_size, c.patch_size_t};
  WS_ASSIGN_OR_RETURN(io::SafetensorsCheckpoint ckpt, io::open_checkpoint(checkpoint));
  // A pre-quantised checkpoint (fp8/int8 codes + .weight_scale) keeps its own format: "bf16" (the default) takes it,
  // the other 8-bit format is refused (as `warpstream ltx`).
  if (const auto fmt = flow::stored_ltx_block_format(ckpt)) {
    const flow::LtxStreamWeights stored =
        *fmt == flow::WeightFormat::kInt8 ? flow::LtxStreamWeights::kINT8 : flow::LtxStreamWeights::kFP8;
    if (asked != flow::LtxStreamWeights::kBF16 && asked != stored)
      return invalid_argument("LTX transformer: " + quoted(checkpoint) + " stores its block weights pre-quantised as " +
                              flow::ltx_stream_weights_name(stored) + "; weights='" + options.weights + "' cannot be used");
    impl->weights = stored;
  }
  // Headers only: every tensor's presence, dtype and shape before the store copies a byte.
  WS_RETURN_IF_ERROR(flow::LtxModel::validate_tensors(c, flow::ltx_source_from_checkpoint(ckpt)));
  impl->unused_tensors = flow::LtxModel::unused_tensors(c, ckpt);
  const std::vector<std::string> names = flow::LtxModel::store_tensor_order(c);
  // 8-bit block linears are quantised once here, into the one host copy (as `warpstream ltx` does).
  flow::WeightStoreOptions wo;
  wo.format = impl->weights == flow::LtxStreamWeights::kFP8    ? flow::WeightFormat::kFp8E4M3
              : impl->weights == flow::LtxStreamWeights::kINT8 ? flow::WeightFormat::kInt8
                                                               : flow::WeightFormat::kAsStored;
  WS_ASSIGN_OR_RETURN(flow::WeightStore store, flow::WeightStore::load(ckpt, names, wo));
  impl->store.emplace(std::move(store));
  impl->file = checkpoint;
  return std::unique_ptr<LtxTransformer>(new LtxTransformer(std::move(impl)));
}

Status LtxTransformer::prepare(const LtxShape& shape) {
  Impl& m = *impl_;
  if (m.model && m.shape && *m.shape == shape) return Status::ok();
  WS_RETURN_IF_ERROR(check_shape(shape));
  WS_CUDA_RETURN_IF_ERROR(cudaSetDevice(m.options.device));
  if (m.model) {
    WS_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());  // the old model may still be read by queued work
    m.model.reset();
    m.shape.reset();
  }
  flow::LtxModelGeometry geo;
  geo.batch = shape.batch;
  geo.frames = shape.frames;
  geo.height = shape.height;
  geo.width = shape.width;
  geo.text_tokens = shape.text_tokens;
  geo.per_token_timestep = shape.per_token_timestep;
  geo.mask = shape.mask;
  geo.rope_scale = shape.rope_scale;
  geo.rope_interpolation_scale = shape.rope_interpolation_scale;
  flow::LtxModelOptions o;
  o.vram_budget_bytes = m.options.vram_budget_bytes;
  o.max_slots = m.options.max_slots;
  o.stream_weights = m.weights;
  WS_ASSIGN_OR_RETURN(m.model, flow::LtxModel::build_from_store(m.config, *m.store, m.file, geo, o));
  m.shape = shape;
  ++m.builds;
  m.graph = false;
  m.capture_error.clear();
  if (m.options.cuda_graph) {
    if (!m.capture_stream) {
      WS_ASSIGN_OR_RETURN(cuda::Stream s, cuda::Stream::create());
      m.capture_stream.emplace(std::move(s));
    }
    const Status st = m.model->capture_graph(m.capture_stream->get());
    if (st.is_ok()) {
      m.graph = true;
    } else {
      m.capture_error = st.to_string();
      (void)cudaGetLastError();
    }
  }
  return Status::ok();
}

Status LtxTransformer::forward(const LtxShape& shape, const LtxForwardArgs& a, cudaStream_t stream) {
  if (a.hidden == nullptr || a.encoder == nullptr || a.timestep == nullptr || a.output == nullptr)
    return invalid_argument("LTX transformer: hidden, encoder, timestep and output must be device pointers");
  if (shape.mask != (a.mask != nullptr))
    return invalid_argument(shape.mask ? "LTX transformer: the shape says a mask is given but mask is null"
                                       : "LTX transformer: a mask was given but the shape says none");
  WS_RETURN_IF_ERROR(prepare(shape));
  Impl& m = *impl_;
  const flow::LtxConfig& c = m.config;
  const flow::LtxModelDeviceInputs& in = m.model->inputs();
  const size_t B = static_cast<size_t>(shape.batch), S = static_cast<size_t>(shape.tokens()),
               T = static_cast<size_t>(shape.text_tokens);
  const size_t ts = shape.per_token_timestep ? B * S : B;
  auto copy = [stream](void* dst, const void* src, size_t bytes) {
    return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream);
  };
  WS_CUDA_RETURN_IF_ERROR(copy(in.hidden, a.hidden, B * S * static_cast<size_t>(c.in_channels) * 2));
  WS_CUDA_RETURN_IF_ERROR(copy(in.encoder, a.encoder, B * T * static_cast<size_t>(c.caption_channels) * 2));
  WS_CUDA_RETURN_IF_ERROR(copy(in.timestep, a.timestep, ts * sizeof(float)));
  if (shape.mask) WS_CUDA_RETURN_IF_ERROR(copy(in.mask, a.mask, B * T * sizeof(float)));
  WS_RETURN_IF_ERROR(m.graph ? m.model->launch_graph(stream) : m.model->enqueue(stream));
  WS_CUDA_RETURN_IF_ERROR(copy(a.output, m.model->stages().output, B * S * static_cast<size_t>(c.out_channels) * 2));
  return Status::ok();
}

const LtxTransformerConfig& LtxTransformer::config() const { return impl_->public_config; }
const LtxTransformerOptions& LtxTransformer::options() const { return impl_->options; }
bool LtxTransformer::prepared() const { return impl_->model != nullptr; }
uint64_t LtxTransformer::device_bytes() const { return impl_->model ? impl_->model->device_bytes() : 0; }
uint64_t LtxTransformer::host_bytes() const { return impl_->store ? impl_->store->storage().size() : 0; }
int LtxTransformer::builds() const { return impl_->builds; }
const std::vector<std::string>& LtxTransformer::unused_tensors() const { return impl_->unused_tensors; }

std::string LtxTransformer::describe() const {
  const Impl& m = *impl_;
  const flow::LtxConfig& c = m.config;
  std::string s = "LTX transformer " + m.file + ": " + std::to_string(c.num_layers) + " blocks, D " +
                  std::to_string(c.inner_dim()) + ", weights " + flow::ltx_stream_weights_name(m.weights) + ", host copy " +
                  flow::format_bytes(host_bytes());
  if (!m.model) return s + "; not built yet (the first forward builds it)";
  const flow::LtxModel& md = *m.model;
  s += md.streamed() ? "; streamed: " + std::to_string(md.slots()) + " ring slots, budget " +
                           flow::format_bytes(m.options.vram_budget_bytes) + ", " +
                           flow::format_bytes(md.streamed_bytes_per_forward()) + " streamed per forward"
                     : std::string("; resident");
  s += "; device " + flow::format_bytes(md.device_bytes()) + "; " + md.attention_backends();
  s += m.graph ? "; CUDA graph" : m.options.cuda_graph ? "; eager (graph capture failed: " + m.capture_error + ")" : "; eager";
  return s;
}

}  // namespace ws
