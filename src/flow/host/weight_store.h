#pragma once
/// \file weight_store.h
/// Host-side weight store for Flow: loads named tensors of a safetensors checkpoint into ONE
/// page-aligned host allocation (anonymous mmap), every tensor at a 256-byte aligned offset, so the
/// CUDA side pins the whole store once (cudaHostRegister(storage().data(), storage().size(), ...))
/// and streams any tensor with one cudaMemcpyAsync. There is no second copy: bytes go straight from
/// the checkpoint's read-only mapping into the store (converted on the way when asked).
/// Host-only: no CUDA in this file.
///
/// Conversion at load (WeightStoreOptions::format), only for the tensors `quantize` selects (by
/// default the LTX block linears, is_ltx_block_linear_weight), which must be 2-D [out, in] float
/// (F32, F16 or BF16) weights; everything else stays exactly as stored (bytes copied verbatim):
///   - kInt8:     per output channel (row) r: s_r = absmax_r / 127; q = clamp(RNE(w / s_r), -127, 127)
///   - kFp8E4M3:  s_r = absmax_r / 448;  q = float_to_fp8_e4m3(w / s_r)  (RNE, saturating; numeric.h)
/// w is the stored value widened to float; w / s_r is a float division; an all-zero row, or one so
/// small that absmax / 127 (448) underflows to 0, gets s_r = 1 (all codes 0). Dequantised: w ~ q * s_r. Scales are float32 [out], stored in the same allocation
/// (256-byte aligned) and exposed as StoredTensor::scales. A non-finite weight is an error (it
/// would poison its row's scale). RNE for int8 uses std::nearbyint in the default rounding mode.
///
/// Pre-quantised checkpoints (tools/make_ltx_checkpoint.py --block-weights fp8|int8): a selected weight stored as
/// I8 / F8_E4M3 codes [out, in] is loaded as stored, with its scales from the checkpoint tensor
/// "<layer>.weight_scale" (F32 [out] or [out, 1]; each finite and > 0) copied into the store as StoredTensor::scales.
/// A missing or malformed scale tensor is an error naming it; asking for the other 8-bit format is refused (codes
/// are never converted twice); asking for the stored one, or kAsStored, is the same load.
///
/// Memory: the total (tensors + scales, each rounded up to 256 B, then to whole pages) is computed
/// from the header before anything is allocated and refused above WeightStoreOptions::max_host_bytes
/// (default: the machine's physical memory), naming both numbers.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "warpstream/dtype.h"
#include "warpstream/shape.h"
#include "warpstream/safetensors.h"
#include "warpstream/status.h"

namespace ws::flow {

/// What the quantize-selected weights become at load.
enum class WeightFormat {
  kAsStored,  ///< no conversion (bf16 stays bf16)
  kInt8,      ///< int8 codes + float32 per-output-channel scales (absmax / 127)
  kFp8E4M3,   ///< FP8 E4M3 (fn) codes + float32 per-output-channel scales (absmax / 448)
};
/// "as-stored", "int8", "fp8".
std::string_view weight_format_name(WeightFormat f);
/// "bf16" / "as-stored" -> kAsStored, "int8", "fp8" / "fp8e4m3" -> ...; kInvalidArgument otherwise.
Result<WeightFormat> parse_weight_format(std::string_view s);

/// True for the linear weights of an LTX-Video transformer block, by diffusers' key names:
///   [prefix]transformer_blocks.<N>.attn1|attn2.to_q|to_k|to_v|to_out.0.weight
///   [prefix]transformer_blocks.<N>.ff.net.0.proj.weight, [prefix]transformer_blocks.<N>.ff.net.2.weight
/// (biases, norms, scale_shift_table and everything outside the blocks: false).
bool is_ltx_block_linear_weight(std::string_view name);

using TensorPredicate = std::function<bool(const io::SafetensorsTensor&)>;

struct WeightStoreOptions {
  /// Which tensors to load when no name list is given; empty = all tensors of the checkpoint.
  TensorPredicate select;
  /// Conversion for the tensors `quantize` selects.
  WeightFormat format = WeightFormat::kAsStored;
  /// Which loaded tensors to convert (ignored for kAsStored); empty = is_ltx_block_linear_weight.
  TensorPredicate quantize;
  /// Host memory bound for the store in bytes; 0 = the machine's physical memory.
  uint64_t max_host_bytes = 0;
  /// Worker threads for copying/converting (one tensor at a time each); 0 = hardware concurrency.
  /// The result is the same for any count.
  unsigned threads = 0;
};

/// One tensor of the store. Pointers stay valid as long as the store (also across moves).
struct StoredTensor {
  std::string name;
  DType dtype = DType::kUndefined;         ///< as stored, or kInt8 / kFloat8E4M3FN when converted
  DType source_dtype = DType::kUndefined;  ///< dtype in the checkpoint
  Shape shape;                                 ///< unchanged by conversion ([out, in] for converted weights)
  const std::byte* data = nullptr;                 ///< 256-byte aligned, inside storage()
  uint64_t offset = 0;                             ///< data - storage().data()
  uint64_t bytes = 0;
  const float* scales = nullptr;                   ///< float32 [shape[0]] when converted or pre-quantised, else null
  uint64_t scales_offset = 0;                      ///< scales - storage().data() (0 when null)
  template <typename T> const T* data_as() const { return reinterpret_cast<const T*>(data); }
  int64_t elements() const { return shape_elements(shape); }
};

/// The per-output-channel scales of a pre-quantised [out, in] weight `codes`: the tensor "<layer>.weight_scale",
/// F32 [out] or [out, 1] (compressed-tensors spelling). Errors name both tensors and the checkpoint.
Result<io::CheckpointTensor> weight_scales_of(const io::SafetensorsCheckpoint& checkpoint, const io::SafetensorsTensor& codes);
/// The 8-bit format of a pre-quantised LTX checkpoint (its first block's attn1.to_q.weight is I8 / F8_E4M3), or
/// nullopt for a float checkpoint.
std::optional<WeightFormat> stored_ltx_block_format(const io::SafetensorsCheckpoint& checkpoint);

class WeightStore {
 public:
  static constexpr uint64_t kAlignment = 256;  ///< every tensor and scale vector starts at a multiple

  /// Loads the tensors options.select picks (all when empty), in checkpoint order.
  static Result<WeightStore> load(const io::SafetensorsCheckpoint& checkpoint, const WeightStoreOptions& options = {});
  /// Loads exactly `names` (in that order); a missing or repeated name is an error.
  static Result<WeightStore> load(const io::SafetensorsCheckpoint& checkpoint, std::span<const std::string> names,
                                  const WeightStoreOptions& options = {});

  const std::vector<StoredTensor>& tensors() const { return tensors_; }
  /// nullptr when absent.
  const StoredTensor* find(std::string_view name) const;
  /// kNotFound naming the tensor when absent.
  Result<const StoredTensor*> get(std::string_view name) const;
  /// As get(), and kInvalidModel naming both shapes unless the tensor has exactly `shape`.
  Result<const StoredTensor*> get(std::string_view name, std::span<const int64_t> shape) const;

  /// The one allocation (page-aligned, size a whole number of pages; empty when nothing is loaded).
  std::span<std::byte> storage();
  std::span<const std::byte> storage() const;

  WeightStore(WeightStore&&) noexcept;
  WeightStore& operator=(WeightStore&&) noexcept;
  ~WeightStore();

 private:
  WeightStore();
  struct Region;
  std::unique_ptr<Region> region_;
  std::vector<StoredTensor> tensors_;
  std::vector<uint32_t> by_name_;  ///< indices into tensors_, sorted by name
};

}  // namespace ws::flow
