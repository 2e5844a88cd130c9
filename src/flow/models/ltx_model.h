#pragma once
/// \file ltx_model.h
/// The whole LTX-Video transformer (diffusers `LTXVideoTransformer3DModel.forward`, 0.42.1; research file
/// /work/shared/research/ltx-video-and-streaming.md section 1.2) on the GPU in bf16:
///   rope tables (host, ref::ltx_rope_tables, uploaded once at build) -> mask bias -> proj_in -> time_embed
///   (sinusoid 256 cos-first -> linear_1 -> SiLU -> linear_2 = embedded_timestep; SiLU -> linear (6D) = temb)
///   -> caption_projection (linear_1 + GELU-tanh -> linear_2) -> the L blocks (LtxBlock, ltx_block.h)
///   -> LayerNorm(no affine, 1e-6) * (1 + sst[1] + e) + sst[0] + e -> proj_out.
///
/// Weight placements, ONE compute path (the same per-layer LtxBlock launches in the same order; only where the
/// block's weights live differs, so the outputs are bit-identical — tests/gpu/ltx_model_test.cpp asserts it):
///   - resident (vram_budget_bytes == 0): every block's weights on the device (one allocation), one LtxBlock per layer.
///   - streamed (vram_budget_bytes > 0): non-block weights resident; block weights in ONE pinned host image (all L
///     block images, cudaHostAlloc'd once, each in the device layout the block binds to: fused q/k/v, fused attn2
///     k/v, every piece 256-B aligned), streamed through S ring slots by flow::Streamer (streamer.h): the copy stream
///     fills slot (i+S-1) while block i computes, events only; the next forward's first S-1 blocks are copied during
///     this forward's tail (StreamerOptions::prefetch_next_pass). One LtxBlock per slot.
///   Budget: covers the device WEIGHTS (resident part + S x slot bytes), S = min(max_slots, L, what fits), S >= 2;
///   a smaller budget is refused naming needed and given bytes. Activations are outside the budget and reported
///   (activation_bytes()): today every LtxBlock instance owns its activation arena (the block API binds weights at
///   build), so activations scale with the number of block instances (L resident, S streamed).
///
/// Build-time object: all device memory is allocated in build(); enqueue()/launch_graph() allocate nothing, do not
/// synchronise the host and are capturable (capture_graph()).
/// Weights: float32 or bf16 tensors (converted to bf16 at build); fp8 / int8 block weights: kUnsupported (the GPU
/// block supports fp8, the model path here is bf16 only for now).
/// Shapes, device layouts (row-major): hidden bf16 [B, S, in], encoder bf16 [B, T, caption], timestep float32 [B] or
/// [B, S] (per-token), mask float32 [B, T] (1 keep, 0 drop), output bf16 [B, S, out]. S = frames*height*width.

#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "flow/host/ltx_config.h"
#include "flow/host/weight_store.h"
#include "flow/models/ltx_block.h"
#include "flow/streamer.h"
#include "warpstream/status.h"

namespace ws::flow {

/// Problem size the model is planned for.
struct LtxModelGeometry {
  int batch = 1;
  int frames = 1, height = 1, width = 1;  ///< latent grid (patch 1): S = frames * height * width
  int text_tokens = 1;                    ///< T
  bool per_token_timestep = false;        ///< timestep [B, S] instead of [B]
  bool mask = true;                       ///< encoder_attention_mask given
  bool rope_scale = false;                ///< use rope_interpolation_scale below (else raw integer coordinates)
  std::array<float, 3> rope_interpolation_scale = {1.f, 1.f, 1.f};
  int tokens() const { return frames * height * width; }
};

struct LtxModelOptions {
  uint64_t vram_budget_bytes = 0;  ///< 0 = resident; else streamed, budget for device weights (see file comment)
  int max_slots = 3;               ///< ring slots at most (S), >= 2
  bool record_timeline = false;    ///< streamed: per-block copy/compute timing events (enqueue_timed())
  LtxBlockOptions block;
};

/// Device weight bytes of a config (no allocation): what a budget must cover.
struct LtxModelFootprint {
  uint64_t resident_weight_bytes = 0;  ///< non-block weights (always on the device)
  uint64_t block_bytes = 0;            ///< one block image (= one ring slot)
  int layers = 0;
  uint64_t all_block_bytes() const { return block_bytes * static_cast<uint64_t>(layers); }
  /// The smallest streamed budget: resident part + 2 slots.
  uint64_t min_streamed_budget() const { return resident_weight_bytes + 2 * block_bytes; }
  /// The budget for exactly `slots` slots.
  uint64_t budget_for_slots(int slots) const { return resident_weight_bytes + block_bytes * static_cast<uint64_t>(slots); }
};

/// Device buffers of one forward's inputs (owned by the model; write them before enqueue).
struct LtxModelDeviceInputs {
  void* hidden = nullptr;     ///< bf16 [B, S, in_channels]
  void* encoder = nullptr;    ///< bf16 [B, T, caption_channels]
  float* timestep = nullptr;  ///< float32 [B] or [B, S]
  float* mask = nullptr;      ///< float32 [B, T] (null when geometry.mask is false)
};

/// Device pointers of the model-level stages (bf16), valid after the stage ran (see enqueue_prologue()).
struct LtxModelStages {
  const void* x = nullptr;                  ///< [B, S, D]: proj_in output after enqueue_prologue, then the blocks' stream
  const void* timestep_proj = nullptr;      ///< [B*S', 256]
  const void* embedded_timestep = nullptr;  ///< [B*S', D]
  const void* temb = nullptr;               ///< [B*S', 6D]
  const void* caption = nullptr;            ///< [B*T, D]
  const void* mask_bias = nullptr;          ///< [B*T] (null without mask)
  const void* norm_out_mod = nullptr;       ///< [B*S, D]
  const void* output = nullptr;             ///< [B*S, out]
};

class LtxModel {
 public:
  static Result<LtxModelFootprint> footprint(const LtxConfig& config);

  /// Reads every tensor of the model through `source` (diffusers key names; shapes checked against `config`, errors
  /// name the tensor and the file), plans all GEMMs/attentions, allocates everything. `source` is used only during
  /// build. Streamed: refuses a budget below footprint().min_streamed_budget() (both numbers named).
  static Result<std::unique_ptr<LtxModel>> build(const LtxConfig& config, const LtxTensorSource& source,
                                                 const LtxModelGeometry& geometry, const LtxModelOptions& options = {});
  /// Tensor names in the order that makes a WeightStore (WeightStore::load(ckpt, names)) hold every block as one
  /// contiguous image in exactly the device layout: non-block tensors first, then per block scale_shift_table,
  /// attn1/attn2 norms, then each linear's stacked weights followed by their stacked biases.
  static std::vector<std::string> store_tensor_order(const LtxConfig& config);

  /// As build(), with the block weights taken from `store` (loaded with store_tensor_order, kept alive by the caller
  /// while the model exists). Streamed: when every block tensor is bf16 and sits at its layout offset (true for
  /// the LTX checkpoints: all fused parts are multiples of 256 B), the store's ONE allocation is cudaHostRegister'd
  /// once and streamed from directly (no second host copy; store_zero_copy() == true); otherwise the blocks are
  /// repacked into one pinned image as build() does (the reason is in store_zero_copy_note()).
  static Result<std::unique_ptr<LtxModel>> build_from_store(const LtxConfig& config, const WeightStore& store,
                                                            const std::string& file, const LtxModelGeometry& geometry,
                                                            const LtxModelOptions& options = {});
  bool store_zero_copy() const;
  const std::string& store_zero_copy_note() const;
  ~LtxModel();

  /// The whole forward on `stream` (prologue, blocks, head).
  Status enqueue(cudaStream_t stream);
  /// The three parts of enqueue(), in order (tests read stages in between).
  Status enqueue_prologue(cudaStream_t stream);
  Status enqueue_blocks(cudaStream_t stream);
  Status enqueue_head(cudaStream_t stream);

  /// Streamed with record_timeline: one forward recording per-block copy/compute events; read them with timeline()
  /// after the stream completed (times in ms since the blocks' fork; layers 0..S-2's copy is the tail copy made for
  /// the next forward, see StreamerOptions::prefetch_next_pass). kFailedPrecondition otherwise.
  Status enqueue_timed(cudaStream_t stream);
  Result<std::vector<LayerTiming>> timeline() const;

  /// Captures one forward into a CUDA Graph (stream: non-default, not capturing) / launches it.
  Status capture_graph(cudaStream_t stream);
  Status launch_graph(cudaStream_t stream);

  const LtxModelDeviceInputs& inputs() const;
  LtxModelStages stages() const;
  /// Test/tool helpers (synchronous, allocate host memory: not for the steady state). Host float32 in the shapes of
  /// LtxModelDeviceInputs; hidden/encoder are rounded to bf16 (RNE). mask may be null when geometry.mask is false.
  Status upload_inputs(const float* hidden, const float* encoder, const float* timestep, const float* mask);
  /// Synchronously copies a bf16 device tensor of `count` elements to floats.
  static Result<std::vector<float>> download_bf16(const void* device, size_t count);

  bool streamed() const;
  int slots() const;                        ///< S (streamed) or 0
  int layers() const;
  uint64_t resident_weight_bytes() const;   ///< non-block weights on the device
  uint64_t block_weight_device_bytes() const;  ///< ring (streamed) or all blocks (resident)
  uint64_t pinned_host_bytes() const;       ///< pinned host bytes streamed from (the image or the registered store)
  uint64_t streamed_bytes_per_forward() const;
  uint64_t activation_bytes() const;        ///< activations + workspaces of the model and its block instances
  const LtxModelGeometry& geometry() const;
  const LtxConfig& config() const;
  std::string attention_backends() const;   ///< "attn1: ..., attn2: ..."

  struct Impl;

 private:
  explicit LtxModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ws::flow
