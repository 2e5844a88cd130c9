#pragma once
/// \file flow.h
/// The Flow rail's public entry: the LTX-Video transformer (diffusers `LTXVideoTransformer3DModel.forward`,
/// diffusers 0.42.1) on the GPU in bf16, its block weights resident or streamed from pinned host memory under a
/// VRAM budget. Host-only header (no CUDA header); the implementation is src/flow/ltx_transformer.cpp over the
/// private model (src/flow/models/ltx_model.h). The Python drop-in warpstream.flow.LTXVideoTransformer wraps it.
///
/// Open once (LtxTransformer::open): config.json (in the folder, or beside a .safetensors file) and the
/// checkpoint's headers are checked first — every tensor present, float32/bf16, with the shape config.json implies
/// (errors name tensor, file and shapes; no tensor data read) — then the model's tensors are read into ONE host
/// allocation (in the layout the streamed model registers and copies from directly).
///
/// Problem size: the device model is planned for one LtxShape (batch, latent grid, text tokens, mask, timestep
/// kind, RoPE scale). forward() builds it at the first call and rebuilds it whenever the shape differs from the
/// last one (the old model is released first, after the device is idle): a rebuild allocates and captures a CUDA
/// graph (~ms to s), so keep the shape fixed across a denoising loop (diffusers' LTXPipeline does).
///
/// forward(args, stream), all pointers device memory on the current device, dense row-major, caller-owned:
///   hidden    bf16    [B, S, in_channels]        S = frames * height * width (latent grid, patch size 1)
///   encoder   bf16    [B, T, caption_channels]
///   timestep  float32 [B], or [B, S] with LtxShape::per_token_timestep
///   mask      float32 [B, T] (1 keep, 0 drop; diffusers' encoder_attention_mask) or nullptr when !LtxShape::mask
///   output    bf16    [B, S, out_channels]       (written)
/// Stream contract: everything is enqueued on `stream` (any stream, the legacy default stream too) and forward()
/// returns without synchronising: the inputs are copied device-to-device into the model's own input buffers
/// (their addresses are baked into the captured graph; B*S*in + B*T*caption bf16 values, KB..MB, next to ~GB of
/// weight traffic), the forward runs (one CUDA-graph launch; eager enqueue if capture failed, see describe()),
/// and the output is copied to `output`. The caller orders the inputs' producers before on `stream`, and keeps
/// every buffer alive and unmodified until `stream` has passed this forward. Calls on one object must not overlap
/// (one activation arena): use one object per concurrent stream. The steady state (same shape) allocates nothing.
/// Errors: wrong shape values (kInvalidArgument), a VRAM budget below the smallest streamed footprint (kResourceExhausted
/// or kInvalidArgument from the model naming given and needed bytes), CUDA failures (kCuda).

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "warpstream/status.h"

typedef struct CUstream_st* cudaStream_t;

namespace ws {

struct LtxTransformerOptions {
  /// Device bytes for everything (weights + ring + activations); 0 = resident (every block on the device).
  uint64_t vram_budget_bytes = 0;
  /// Block linear weights as streamed / held: "bf16", "fp8" (e4m3 + per-channel scales, half the bytes) or "int8";
  /// the compute is bf16 in every case (8-bit weights are dequantised on the device before each block).
  std::string weights = "bf16";
  int max_slots = 3;        ///< ring slots at most when streamed (>= 2)
  bool cuda_graph = true;   ///< capture the forward into a CUDA graph at each (re)build; false: eager enqueue
  int device = 0;           ///< CUDA device the model lives on
};

/// The problem size one device model is planned for (see the file comment).
struct LtxShape {
  int batch = 1;
  int frames = 1, height = 1, width = 1;  ///< latent grid
  int text_tokens = 1;                    ///< T
  bool per_token_timestep = false;        ///< timestep [B, S] instead of [B]
  bool mask = true;                       ///< an encoder attention mask is given
  bool rope_scale = false;                ///< apply rope_interpolation_scale (diffusers: when it is not None)
  std::array<float, 3> rope_interpolation_scale = {1.f, 1.f, 1.f};  ///< (frames, height, width) as diffusers
  int64_t tokens() const { return static_cast<int64_t>(frames) * height * width; }
  bool operator==(const LtxShape&) const = default;
};

/// Device pointers of one forward (see the file comment for dtypes and shapes).
struct LtxForwardArgs {
  const void* hidden = nullptr;
  const void* encoder = nullptr;
  const float* timestep = nullptr;
  const float* mask = nullptr;
  void* output = nullptr;
};

/// The model's configuration (config.json), as read.
struct LtxTransformerConfig {
  int64_t in_channels = 0, out_channels = 0, caption_channels = 0;
  int64_t num_attention_heads = 0, attention_head_dim = 0, cross_attention_dim = 0, num_layers = 0;
  int64_t patch_size = 1, patch_size_t = 1;
};

class LtxTransformer {
 public:
  /// Reads `checkpoint` (a diffusers folder with config.json + safetensors, or one .safetensors file with
  /// config.json beside it) into host memory. No device work yet. Errors: missing/invalid config or checkpoint
  /// (kNotFound / kInvalidModel naming the file), a tensor of the wrong dtype/shape (naming it), bad options.
  static Result<std::unique_ptr<LtxTransformer>> open(const std::string& checkpoint, const LtxTransformerOptions& options = {});
  ~LtxTransformer();
  LtxTransformer(const LtxTransformer&) = delete;
  LtxTransformer& operator=(const LtxTransformer&) = delete;

  /// Builds the device model for `shape` unless the current one already is (no-op then). forward() calls it.
  Status prepare(const LtxShape& shape);
  /// One forward for `shape` on `stream` (see the file comment).
  Status forward(const LtxShape& shape, const LtxForwardArgs& args, cudaStream_t stream);

  const LtxTransformerConfig& config() const;
  const LtxTransformerOptions& options() const;
  /// After prepare(): one line on placement, memory and the launch mode ("streamed: 3 slots of fp8 ..., CUDA graph").
  std::string describe() const;
  bool prepared() const;
  uint64_t device_bytes() const;  ///< everything the current device model allocated (0 before prepare)
  uint64_t host_bytes() const;    ///< the host copy of the weights
  int builds() const;             ///< device models built so far (1 per distinct consecutive shape)
  /// Tensors of the checkpoint the model does not read (sorted; empty for a matching checkpoint): another model's
  /// checkpoint, or a config.json that does not describe it. open() does not refuse them; callers warn.
  const std::vector<std::string>& unused_tensors() const;

  struct Impl;

 private:
  explicit LtxTransformer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ws
