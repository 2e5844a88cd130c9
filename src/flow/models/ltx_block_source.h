#pragma once
/// \file ltx_block_source.h
/// Adapters from the checkpoint readers (include/warpstream/safetensors.h, src/flow/host/weight_store.h; branch
/// "safetensors") to the GPU LTX block's LtxTensorSource. Host-only, header-only. When the readers are not in this
/// tree (__has_include), WS_LTX_HAVE_SAFETENSORS is 0 and only ltx_source_from_floats exists.

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "flow/models/ltx_block.h"

#if __has_include("warpstream/safetensors.h") && __has_include("flow/host/weight_store.h")
#define WS_LTX_HAVE_SAFETENSORS 1
#include "flow/host/weight_store.h"
#include "warpstream/safetensors.h"
#else
#define WS_LTX_HAVE_SAFETENSORS 0
#endif

namespace ws::flow {

/// In-memory float32 tensors (tests): name -> (shape, values).
struct LtxFloatTensor {
  std::vector<int64_t> shape;
  std::vector<float> values;
};
inline LtxTensorSource ltx_source_from_floats(const std::map<std::string, LtxFloatTensor>& tensors,
                                              std::string label = "<memory>") {
  return [&tensors, label](const std::string& name) -> Result<LtxHostTensor> {
    auto it = tensors.find(name);
    if (it == tensors.end()) return not_found("LTX block: tensor '" + name + "' not found in " + label);
    LtxHostTensor t;
    t.type = LtxHostTensor::Type::kF32;
    t.shape = it->second.shape;
    t.data = it->second.values.data();
    t.file = label;
    return t;
  };
}

#if WS_LTX_HAVE_SAFETENSORS
inline Result<LtxHostTensor::Type> ltx_host_type(ws::DType d, const std::string& name, const std::string& file) {
  switch (d) {
    case ws::DType::kFloat32: return LtxHostTensor::Type::kF32;
    case ws::DType::kBFloat16: return LtxHostTensor::Type::kBF16;
    case ws::DType::kFloat8E4M3FN: return LtxHostTensor::Type::kF8E4M3;
    case ws::DType::kInt8: return LtxHostTensor::Type::kS8;
    default:
      return unsupported("LTX block: tensor '" + name + "' in " + file + " has dtype " + ws::dtype_name(d) +
                         " (the block reads float32, bfloat16, or float8e4m3fn / int8 with per-channel scales)");
  }
}

/// Tensors of a WeightStore (loaded from `file`, the checkpoint path for messages). Converted fp8 / int8 weights
/// carry their per-channel scales.
inline LtxTensorSource ltx_source_from_store(const WeightStore& store, std::string file) {
  return [&store, file](const std::string& name) -> Result<LtxHostTensor> {
    const StoredTensor* st = store.find(name);
    if (st == nullptr) return not_found("LTX block: tensor '" + name + "' not found in " + file);
    WS_ASSIGN_OR_RETURN(LtxHostTensor::Type type, ltx_host_type(st->dtype, name, file));
    LtxHostTensor t;
    t.type = type;
    t.shape.assign(st->shape.begin(), st->shape.end());
    t.data = st->data;
    t.scale = st->scales;
    t.file = file;
    return t;
  };
}

/// Tensors straight from a checkpoint's mapping (no store; float32 / bf16 tensors).
/// Pre-quantised fp8/int8 [out, in] weights (tools/make_ltx_checkpoint.py --block-weights) come with their
/// per-output-channel scales "<layer>.weight_scale" (F32 [out] or [out, 1]); the scales are copied (the file's bytes
/// need not be float-aligned) into storage the source owns, valid as long as the source.
inline LtxTensorSource ltx_source_from_checkpoint(const io::SafetensorsCheckpoint& ckpt) {
  auto scales = std::make_shared<std::map<std::string, std::vector<float>>>();
  return [&ckpt, scales](const std::string& name) -> Result<LtxHostTensor> {
    io::CheckpointTensor ct = ckpt.find(name);
    if (ct.tensor == nullptr) return not_found("LTX block: tensor '" + name + "' not found in " + ckpt.path());
    const std::string file = ct.file ? ct.file->path() : ckpt.path();
    WS_ASSIGN_OR_RETURN(LtxHostTensor::Type type, ltx_host_type(ct.tensor->dtype, name, file));
    LtxHostTensor t;
    t.type = type;
    t.shape = ct.tensor->shape;
    t.data = ct.bytes.data();
    t.file = file;
    if (type == LtxHostTensor::Type::kF8E4M3 || type == LtxHostTensor::Type::kS8) {
      if (!is_ltx_block_linear_weight(name))
        return unsupported("LTX block: tensor '" + name + "' in " + file + " is fp8/int8; only the block linear "
                           "weights (transformer_blocks.N.attn1/attn2/ff ... .weight) may be stored 8-bit");
      if (t.shape.size() != 2)
        return unsupported("LTX block: tensor '" + name + "' in " + file + " is fp8/int8 but not a 2-D weight");
      WS_ASSIGN_OR_RETURN(io::CheckpointTensor sc, weight_scales_of(ckpt, *ct.tensor));
      const std::string& sname = sc.tensor->name;
      auto [it, fresh] = scales->try_emplace(sname);
      if (fresh) {
        it->second.resize(static_cast<size_t>(t.shape[0]));
        std::memcpy(it->second.data(), sc.bytes.data(), it->second.size() * sizeof(float));  // [out] or [out, 1]
      }
      t.scale = it->second.data();
    }
    return t;
  };
}

/// Reads a float32 / bfloat16 tensor of a safetensors file into floats (goldens); errors name tensor and file.
inline Result<LtxFloatTensor> ltx_read_floats(const io::SafetensorsFile& f, const std::string& name) {
  const io::SafetensorsTensor* t = f.find(name);
  if (t == nullptr) return not_found("tensor '" + name + "' not found in " + f.path());
  auto bytes = f.bytes(*t);
  LtxFloatTensor out;
  out.shape = t->shape;
  if (t->dtype == ws::DType::kFloat32) {
    out.values.resize(bytes.size() / 4);
    std::memcpy(out.values.data(), bytes.data(), out.values.size() * 4);
  } else if (t->dtype == ws::DType::kBFloat16) {
    out.values.resize(bytes.size() / 2);
    for (size_t i = 0; i < out.values.size(); ++i) {
      uint16_t b;
      std::memcpy(&b, bytes.data() + 2 * i, 2);
      uint32_t u = static_cast<uint32_t>(b) << 16;
      std::memcpy(&out.values[i], &u, 4);
    }
  } else {
    return unsupported("tensor '" + name + "' in " + f.path() + " has dtype " + ws::dtype_name(t->dtype) +
                       " (float32 or bfloat16 expected)");
  }
  return out;
}
#endif

}  // namespace ws::flow
