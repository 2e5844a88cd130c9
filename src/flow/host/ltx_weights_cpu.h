#pragma once
/// \file ltx_weights_cpu.h
/// fp32 host weights for the CPU LTX-Video reference (src/reference/ltx.h) read from a safetensors
/// checkpoint with diffusers' key names: a diffusers folder (config.json + diffusion_pytorch_model.safetensors,
/// or sharded with an index), or a single file with config.json beside it (io::SafetensorsCheckpoint), or a
/// single-block file (`tools/ltx_goldens.py --case block-2b`: block-relative keys). Host-only, no CUDA.
///
/// Every tensor of ref::ltx_model_tensor_specs (or ltx_block_tensor_specs) must be present with exactly that
/// shape and dtype F32, BF16 or F16; each is widened to float into ONE allocation (sized from the validated
/// headers after every tensor was checked, so a lying config cannot make it allocate more than the checkpoint
/// holds). Errors, one Status each, naming the tensor and the checkpoint:
///   - no config.json beside the checkpoint (kInvalidModel; open() only), a config.json that parse_ltx_config
///     refuses (its message);
///   - a missing tensor (kNotFound), a wrong shape (kInvalidModel, both shapes named), a dtype other than
///     F32/BF16/F16 (kUnsupported: quantised checkpoints are the GPU path's).
/// Tensors the reference does not use are ignored.

#include <cstddef>
#include <string>
#include <vector>

#include "flow/host/ltx_config.h"
#include "reference/ltx.h"
#include "warpstream/safetensors.h"
#include "warpstream/status.h"

namespace ws::flow {

/// diffusers config -> the reference's config (same fields; ff inner = 4 * D; timestep channels 256).
ref::LtxModelConfig reference_config(const LtxConfig& config);

/// A whole model's weights widened to fp32 plus the ref::LtxModelWeights that point into them.
/// Move-only (moving keeps the pointers valid: the storage buffer does not move).
class LtxCpuWeights {
 public:
  /// Opens `path` (folder or file) and the config.json beside it, then loads every model tensor.
  static Result<LtxCpuWeights> open(const std::string& path);
  /// Loads every model tensor of `config` from an opened checkpoint.
  static Result<LtxCpuWeights> load(const io::SafetensorsCheckpoint& checkpoint, const LtxConfig& config);

  const ref::LtxModelConfig& config() const { return config_; }
  const ref::LtxModelWeights& weights() const { return weights_; }
  /// Bytes of fp32 storage held.
  size_t bytes() const { return storage_.size() * sizeof(float); }

  LtxCpuWeights(LtxCpuWeights&&) noexcept = default;
  LtxCpuWeights& operator=(LtxCpuWeights&&) noexcept = default;
  LtxCpuWeights(const LtxCpuWeights&) = delete;
  LtxCpuWeights& operator=(const LtxCpuWeights&) = delete;

 private:
  LtxCpuWeights() = default;
  ref::LtxModelConfig config_;
  std::vector<float> storage_;
  ref::LtxModelWeights weights_;
};

/// One block's weights widened to fp32 (keys `prefix` + the block-relative names: "" for a block file,
/// "transformer_blocks.<i>." inside a model checkpoint).
class LtxCpuBlockWeights {
 public:
  static Result<LtxCpuBlockWeights> load(const io::SafetensorsCheckpoint& checkpoint,
                                         const ref::LtxBlockConfig& config, const std::string& prefix);

  const ref::LtxBlockWeights& weights() const { return weights_; }
  size_t bytes() const { return storage_.size() * sizeof(float); }

  LtxCpuBlockWeights(LtxCpuBlockWeights&&) noexcept = default;
  LtxCpuBlockWeights& operator=(LtxCpuBlockWeights&&) noexcept = default;
  LtxCpuBlockWeights(const LtxCpuBlockWeights&) = delete;
  LtxCpuBlockWeights& operator=(const LtxCpuBlockWeights&) = delete;

 private:
  LtxCpuBlockWeights() = default;
  std::vector<float> storage_;
  ref::LtxBlockWeights weights_;
};

}  // namespace ws::flow
