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
///   Activations: ONE block arena shared by every LtxBlock instance (they run one after another on one stream;
///   LtxBlockOptions::arena), plus the model's own buffers.
///   Budget: covers ALL device memory: resident weights + model buffers + block arena (+ the 8-bit staging image)
///   + S x slot bytes, S = min(max_slots, L, what fits), S >= 2; a smaller budget is refused naming the given and
///   needed bytes and every part.
///
/// Build-time object: all device memory is allocated in build(); enqueue()/launch_graph() allocate nothing, do not
/// synchronise the host and are capturable (capture_graph()).
/// Weights: float32 or bf16 tensors (converted at build); fp8 / int8 linear weights of the blocks with their
/// per-channel scales (a WeightStore loaded with weights fp8|int8) are taken as codes (stream_weights of the same
/// format) or dequantised; non-block tensors must be float32 / bf16. Compute is bf16 (see LtxStreamWeights).
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
#include "warpstream/safetensors.h"
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

/// How the block weights travel (streamed) / what numbers they hold (resident). The block always computes in bf16.
///   kBF16: bf16 images (128 MiB per 2B block).
///   kFP8 / kINT8: the linear weights as e4m3 / int8 codes with per-output-channel float32 scales (absmax / 448 or
///     / 127 per row; already-converted WeightStore tensors keep their codes and scales), norms, modulation table and
///     biases bf16: half the bytes per ring slot. Streamed: after a slot's copy, one dequant kernel
///     (ltx_dequant.h) expands it on the compute stream, right before the block, into ONE bf16 staging image that
///     the block's bf16 GEMMs read (the blocks run in order on one stream, so one staging image suffices: the
///     dequant of block i+1 is stream-ordered after block i's last GEMM). Resident: the bf16 weights ARE those
///     dequantised values (dequantised on the host with the kernel's formula), so a resident and a streamed model
///     with the same stream_weights give bit-identical outputs.
enum class LtxStreamWeights { kBF16, kFP8, kINT8 };
const char* ltx_stream_weights_name(LtxStreamWeights w);
/// "bf16" | "fp8" | "int8" (kInvalidArgument naming the text otherwise).
Result<LtxStreamWeights> parse_ltx_stream_weights(const std::string& text);

/// Where 8-bit streamed weights are dequantised (stream_weights fp8 / int8 under a budget):
///  - kBlock: the whole block into one bf16 staging image (one bf16 block: 2B 0.25 GiB, 13B 0.76 GiB), one dequant
///    kernel per block;
///  - kLinear: each linear's weight, right before its GEMM, into one scratch the size of the largest linear (13B:
///    the FF weight, 0.125 GiB), biases / norms / table into a small fixed part: seven dequant kernels per block;
///  - kAuto: kBlock when the budget holds it with 2 ring slots, else kLinear.
/// Both write the same bf16 numbers (one formula), so their outputs are bit-identical.
enum class LtxStaging { kAuto, kBlock, kLinear };

struct LtxModelOptions {
  uint64_t vram_budget_bytes = 0;  ///< 0 = resident; else streamed, budget for ALL device memory (see file comment)
  int max_slots = 3;               ///< ring slots at most (S), >= 2
  bool record_timeline = false;    ///< streamed: per-block copy/compute timing events (enqueue_timed())
  LtxStreamWeights stream_weights = LtxStreamWeights::kBF16;
  LtxStaging staging = LtxStaging::kAuto;  ///< 8-bit streamed only (see LtxStaging)
  LtxBlockOptions block;           ///< arena / arena_bytes are set by the model (one shared arena), leave them empty
};

/// Device bytes of a model (no allocation): what a budget must cover. From footprint(config) only the weight fields
/// are known (activation fields 0); footprint(config, geometry, options) fills all of them.
struct LtxModelFootprint {
  uint64_t resident_weight_bytes = 0;  ///< non-block weights (always on the device)
  uint64_t block_bytes = 0;            ///< one block image as streamed (= one ring slot; 8-bit images are ~half)
  uint64_t bf16_block_bytes = 0;       ///< one bf16 block image (resident blocks, the 8-bit staging image)
  int layers = 0;
  uint64_t model_activation_bytes = 0; ///< the model's own buffers: inputs, rope tables, stage outputs, workspace
  uint64_t block_arena_bytes = 0;      ///< the ONE activation arena every block instance shares
  uint64_t staging_bytes = 0;          ///< 8-bit streamed: the bf16 staging the dequant writes (block or per-linear)
  bool per_linear_staging = false;     ///< 8-bit streamed: LtxStaging resolved to kLinear (kAuto: by the budget)
  uint64_t all_block_bytes() const { return bf16_block_bytes * static_cast<uint64_t>(layers); }
  /// Everything but the ring: resident weights + model buffers + block arena + staging.
  uint64_t fixed_bytes() const {
    return resident_weight_bytes + model_activation_bytes + block_arena_bytes + staging_bytes;
  }
  /// The smallest streamed budget: fixed part + 2 slots.
  uint64_t min_streamed_budget() const { return fixed_bytes() + 2 * block_bytes; }
  /// The budget for exactly `slots` slots.
  uint64_t budget_for_slots(int slots) const { return fixed_bytes() + block_bytes * static_cast<uint64_t>(slots); }
  /// Resident device bytes (all blocks bf16 + fixed part without staging).
  uint64_t resident_bytes() const {
    return resident_weight_bytes + model_activation_bytes + block_arena_bytes + all_block_bytes();
  }
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
  /// Weights only (activation fields 0), for the bf16 block image.
  static Result<LtxModelFootprint> footprint(const LtxConfig& config);
  /// Everything a build with these arguments allocates (plans the attentions on the host for the cuDNN workspace;
  /// no device allocation). options.vram_budget_bytes does not matter; options.stream_weights picks the slot size.
  static Result<LtxModelFootprint> footprint(const LtxConfig& config, const LtxModelGeometry& geometry,
                                             const LtxModelOptions& options);

  /// Reads every tensor of the model through `source` (diffusers key names; shapes checked against `config`, errors
  /// name the tensor and the file), plans all GEMMs/attentions, allocates everything. `source` is used only during
  /// build. Streamed: refuses a budget below footprint(config, geometry, options).min_streamed_budget() (the given and
  /// needed bytes named, with the weights / activations / staging / ring parts).
  static Result<std::unique_ptr<LtxModel>> build(const LtxConfig& config, const LtxTensorSource& source,
                                                 const LtxModelGeometry& geometry, const LtxModelOptions& options = {});
  /// Tensor names in the order that makes a WeightStore (WeightStore::load(ckpt, names)) hold every block as one
  /// contiguous image in exactly the device layout: non-block tensors first, then per block scale_shift_table,
  /// attn1/attn2 norms, then each linear's stacked weights followed by their stacked biases.
  static std::vector<std::string> store_tensor_order(const LtxConfig& config);
  /// The tensors of `ckpt` the model never reads (neither in store_tensor_order nor the ".weight_scale" of one that
  /// is), sorted: diffusers' "Some weights of the model checkpoint were not used" — a checkpoint of another model
  /// (or a config.json that does not match it) shows here. Callers warn; nothing is refused.
  static std::vector<std::string> unused_tensors(const LtxConfig& config, const io::SafetensorsCheckpoint& ckpt);
  /// Host-only (no CUDA call, no tensor data read): every tensor build() reads is present in `source` with a
  /// supported dtype and the shape `config` implies (non-block linears and scale_shift_table, then each block through
  /// LtxBlockWeights::validate). Run it on the checkpoint's mapping (ltx_source_from_checkpoint) before a WeightStore
  /// copies anything, so a header claiming huge tensors is refused in milliseconds. Errors name tensor, file, shapes.
  static Status validate_tensors(const LtxConfig& config, const LtxTensorSource& source);

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
  uint64_t activation_bytes() const;        ///< model buffers + the one shared block arena
  uint64_t staging_bytes() const;           ///< 8-bit streamed: the bf16 staging image; else 0
  /// Everything this model allocated on the device (weights + ring + staging + activations).
  uint64_t device_bytes() const;
  LtxStreamWeights stream_weights() const;
  const LtxModelGeometry& geometry() const;
  const LtxConfig& config() const;
  std::string attention_backends() const;   ///< "attn1: ..., attn2: ..."

  struct Impl;

 private:
  explicit LtxModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ws::flow
