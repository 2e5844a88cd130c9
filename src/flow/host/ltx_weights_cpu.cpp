// fp32 host weights for the CPU LTX reference from a safetensors checkpoint (see ltx_weights_cpu.h).
#include "flow/host/ltx_weights_cpu.h"

#include <cstring>
#include <map>
#include <utility>

#include "flow/host/weight_store.h"
#include "warpstream/dtype.h"
#include "warpstream/shape.h"
#include "warpstream/numeric.h"

namespace ws::flow {
namespace {

/// Finds and checks every spec, then widens them all into `storage`; offsets[name] = float offset.
Status load_specs(const io::SafetensorsCheckpoint& ck, const std::vector<ref::LtxTensorSpec>& specs,
                  std::vector<float>& storage, std::map<std::string, size_t>& offsets) {
  std::vector<io::CheckpointTensor> found;
  std::vector<std::vector<float>> row_scales(specs.size());  // pre-quantised 8-bit weights: their scales
  found.reserve(specs.size());
  size_t total = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    const ref::LtxTensorSpec& s = specs[i];
    Result<io::CheckpointTensor> t = ck.get(s.name);
    if (!t.is_ok()) return t.status();
    const io::SafetensorsTensor& e = *t->tensor;
    if (e.shape != s.shape)
      return invalid_model("LTX checkpoint " + ck.path() + ": tensor '" + s.name + "' has shape " +
                           shape_string(e.shape) + ", the config needs " + shape_string(s.shape));
    if ((e.dtype == DType::kInt8 || e.dtype == DType::kFloat8E4M3FN) && is_ltx_block_linear_weight(e.name)) {
      // Pre-quantised block linear weight (tools/make_ltx_checkpoint.py --block-weights): w = code * scale[row],
      // the scales through the same checks as WeightStore::load (one store of just this tensor).
      const std::vector<std::string> one = {e.name};
      WS_ASSIGN_OR_RETURN(WeightStore st, WeightStore::load(ck, one));
      const StoredTensor& q = st.tensors().front();
      row_scales[i].assign(q.scales, q.scales + q.shape[0]);
    } else if (e.dtype != DType::kFloat32 && e.dtype != DType::kBFloat16 && e.dtype != DType::kFloat16) {
      return unsupported("LTX checkpoint " + ck.path() + ": tensor '" + s.name + "' is " +
                         std::string(io::safetensors_dtype_name(e.dtype)) +
                         "; the CPU reference reads F32, BF16 or F16 weights (and I8 / F8_E4M3 block linear "
                         "weights with their .weight_scale)");
    }
    total += static_cast<size_t>(e.elements());  // bounded by the validated file sizes
    found.push_back(t.value());
  }
  storage.assign(total, 0.0f);
  size_t at = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    const io::CheckpointTensor& t = found[i];
    const size_t n = static_cast<size_t>(t.tensor->elements());
    float* dst = storage.data() + at;
    const std::byte* src = t.bytes.data();
    switch (t.tensor->dtype) {
      case DType::kFloat32:
        std::memcpy(dst, src, n * sizeof(float));
        break;
      case DType::kBFloat16:
        for (size_t j = 0; j < n; ++j) {
          uint16_t h;
          std::memcpy(&h, src + 2 * j, 2);
          dst[j] = bf16_to_float(h);
        }
        break;
      case DType::kInt8:
      case DType::kFloat8E4M3FN: {  // pre-quantised (checked above): code * per-row scale
        const size_t cols = static_cast<size_t>(t.tensor->shape[1]);
        const bool fp8 = t.tensor->dtype == DType::kFloat8E4M3FN;
        for (size_t j = 0; j < n; ++j) {
          const uint8_t c = static_cast<uint8_t>(src[j]);
          const float code = fp8 ? fp8_e4m3_to_float(c) : static_cast<float>(static_cast<int8_t>(c));
          dst[j] = code * row_scales[i][j / cols];
        }
        break;
      }
      default:  // kFloat16 (checked above)
        for (size_t j = 0; j < n; ++j) {
          uint16_t h;
          std::memcpy(&h, src + 2 * j, 2);
          dst[j] = half_to_float(h);
        }
        break;
    }
    offsets[specs[i].name] = at;
    at += n;
  }
  return Status::ok();
}

ref::LtxTensorLookup lookup_into(const std::vector<float>& storage, const std::map<std::string, size_t>& offsets) {
  return [&storage, &offsets](const ref::LtxTensorSpec& s) -> Result<const float*> {
    auto it = offsets.find(s.name);
    if (it == offsets.end()) return internal_error("LTX CPU weights: tensor '" + s.name + "' was not loaded");
    return storage.data() + it->second;
  };
}

}  // namespace

ref::LtxModelConfig reference_config(const LtxConfig& c) {
  ref::LtxModelConfig r;
  r.in_channels = c.in_channels;
  r.out_channels = c.out_channels;
  r.patch_size = c.patch_size;
  r.patch_size_t = c.patch_size_t;
  r.heads = c.num_attention_heads;
  r.head_dim = c.attention_head_dim;
  r.cross_dim = c.cross_attention_dim;
  r.num_layers = c.num_layers;
  r.caption_channels = c.caption_channels;
  r.norm_eps = c.norm_eps;
  return r;
}

Result<LtxCpuWeights> LtxCpuWeights::open(const std::string& path) {
  WS_ASSIGN_OR_RETURN(io::SafetensorsCheckpoint ck, io::open_checkpoint(path));
  if (!ck.has_config())
    return invalid_model("LTX checkpoint " + path +
                         ": no config.json beside it (diffusers' LTXVideoTransformer3DModel config is required)");
  WS_ASSIGN_OR_RETURN(LtxConfig config, parse_ltx_config(ck.config_text(), ck.config_path()));
  return load(ck, config);
}

Result<LtxCpuWeights> LtxCpuWeights::load(const io::SafetensorsCheckpoint& ck, const LtxConfig& config) {
  LtxCpuWeights w;
  w.config_ = reference_config(config);
  // Bound the spec list by what the checkpoint holds before building it (num_layers comes from config.json):
  // 13 + 2 non-block tensors and 25 per block. A checkpoint short of at most one block's worth of tensors gets
  // the by-name error below instead (it names the first missing tensor, e.g. one dropped from a shard).
  const size_t needed = 15 + 25 * static_cast<size_t>(config.num_layers);
  if (needed > ck.size() + 25)
    return invalid_model("LTX checkpoint " + ck.path() + ": config num_layers " + std::to_string(config.num_layers) +
                         " needs " + std::to_string(needed) + " tensors, the checkpoint holds " +
                         std::to_string(ck.size()));
  std::map<std::string, size_t> offsets;
  WS_RETURN_IF_ERROR(load_specs(ck, ref::ltx_model_tensor_specs(w.config_), w.storage_, offsets));
  WS_ASSIGN_OR_RETURN(w.weights_, ref::ltx_bind_model_weights(w.config_, lookup_into(w.storage_, offsets)));
  return w;
}

Result<LtxCpuBlockWeights> LtxCpuBlockWeights::load(const io::SafetensorsCheckpoint& ck,
                                                    const ref::LtxBlockConfig& config, const std::string& prefix) {
  LtxCpuBlockWeights w;
  std::map<std::string, size_t> offsets;
  WS_RETURN_IF_ERROR(load_specs(ck, ref::ltx_block_tensor_specs(config, prefix), w.storage_, offsets));
  WS_ASSIGN_OR_RETURN(w.weights_, ref::ltx_bind_block_weights(config, prefix, lookup_into(w.storage_, offsets)));
  return w;
}

}  // namespace ws::flow
