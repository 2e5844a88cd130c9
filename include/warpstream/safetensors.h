#pragma once
/// \file safetensors.h
/// Bounded, memory-mapped reader for safetensors checkpoints (https://github.com/huggingface/safetensors,
/// format described in its README): an 8-byte little-endian unsigned header length N, N bytes of a
/// UTF-8 JSON object, then the raw data section. Each JSON entry is
///   "name": {"dtype": "BF16", "shape": [out, in], "data_offsets": [begin, end]}
/// with offsets relative to the start of the data section; the optional "__metadata__" entry is a
/// string -> string map. Tensors are dense, row-major, little-endian.
///
/// Everything is validated before anything proportional to the file is allocated and before any
/// tensor byte is touched:
///   - file size >= 8, header length <= file size - 8 and <= SafetensorsLimits::max_header_bytes;
///   - the header is a JSON object (parsed with nlohmann-json's SAX interface straight from the
///     mapping: no copy of the header, no DOM); each entry is an object with exactly the fields
///     dtype (string), shape (array of integers), data_offsets (array of two integers);
///   - dtype is known (F32 F16 BF16 I8 U8 F8_E4M3, and the plain types BOOL I16 U16 I32 U32 I64 U64 F64);
///     other safetensors dtypes (F8_E5M2, F8_E8M0, F4, F6_*) are refused by name;
///   - dims are non-negative integers, rank <= max_rank, the element count and the byte count do not
///     overflow 64 bits;
///   - begin <= end <= data section size, end - begin == elements * dtype size, and no two non-empty
///     ranges overlap (gaps between tensors are allowed);
///   - no name appears twice (nor a "__metadata__" key twice);
///   - the parser's own memory (names, shapes, index) is accounted and kept <= max_header_bytes.
/// Each violation is ONE Status (the first found): kInvalidModel for a malformed file,
/// kResourceExhausted for a limit, kUnsupported for a known but unsupported dtype, kNotFound /
/// kInvalidArgument for a missing or non-regular file. Messages name the file, the tensor and
/// the numbers; names taken from the file are escaped (non-printable bytes as \xNN).
///
/// The mapping is read-only (PROT_READ, MAP_PRIVATE). Like any mmap reader, a file truncated by
/// another process while mapped raises SIGBUS on access; checkpoints are expected to be immutable.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "warpstream/dtype.h"
#include "warpstream/shape.h"
#include "warpstream/status.h"

namespace ws::io {

/// Bounds applied while reading a safetensors header. All are user-settable.
struct SafetensorsLimits {
  uint64_t max_header_bytes = 100'000'000;  ///< JSON header length bound (the reference implementation's 100 MB)
  uint32_t max_rank = 32;                   ///< dims per tensor
};

/// One tensor entry of the header.
struct SafetensorsTensor {
  std::string name;
  DType dtype = DType::kUndefined;
  std::vector<int64_t> shape;  ///< row-major; [] is a scalar
  uint64_t begin = 0, end = 0; ///< byte offsets into the data section (end - begin == byte size)
  uint64_t bytes() const { return end - begin; }
  int64_t elements() const { return shape_elements(shape); }
};

/// safetensors dtype string ("BF16") -> DType; kUndefined when unknown or unsupported.
DType safetensors_dtype(std::string_view name);
/// DType -> safetensors dtype string ("BF16"); "" when the format has no spelling for it.
std::string_view safetensors_dtype_name(DType t);
/// `s` with every byte outside printable ASCII (control bytes, DEL, non-ASCII) written as \xNN, for messages.
std::string escape_for_message(std::string_view s);

/// A parsed safetensors file: the validated header plus a read-only view of the data section.
/// Move-only; the mapping lives as long as the object (views from bytes() die with it).
class SafetensorsFile {
 public:
  /// Maps and validates `path`. See the file comment for the checks and error codes.
  static Result<SafetensorsFile> open(const std::string& path, const SafetensorsLimits& limits = {});
  /// Validates an in-memory file image (no mmap, no copy: `bytes` must outlive the result).
  /// `name` is used in messages. This is the fuzzing entry point.
  static Result<SafetensorsFile> parse(std::span<const std::byte> bytes, std::string name,
                                       const SafetensorsLimits& limits = {});

  /// Tensors in header order.
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  /// The entry named `name`, or nullptr (binary search over a name index).
  const SafetensorsTensor* find(std::string_view name) const;
  /// Zero-copy view of a tensor's bytes (t must come from this file). Not aligned in general.
  std::span<const std::byte> bytes(const SafetensorsTensor& t) const;
  /// The "__metadata__" map (empty when absent).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  /// The path given to open(), or the name given to parse().
  const std::string& path() const { return path_; }
  /// Header length N (the JSON bytes) and the data section's size in bytes.
  uint64_t header_bytes() const { return header_bytes_; }
  uint64_t data_bytes() const { return data_.size(); }

  SafetensorsFile(SafetensorsFile&&) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&&) noexcept;
  ~SafetensorsFile();

 private:
  SafetensorsFile() = default;
  struct Mapping;
  std::string path_;
  std::unique_ptr<Mapping> mapping_;  ///< null for parse()
  std::span<const std::byte> data_;
  uint64_t header_bytes_ = 0;
  std::vector<SafetensorsTensor> tensors_;
  std::vector<uint32_t> by_name_;  ///< indices into tensors_, sorted by name
  std::map<std::string, std::string> metadata_;
};

/// A tensor found in a checkpoint: its entry, the file (shard) holding it and its bytes.
struct CheckpointTensor {
  const SafetensorsTensor* tensor = nullptr;
  const SafetensorsFile* file = nullptr;
  std::span<const std::byte> bytes;
};

/// A checkpoint: one safetensors file, or a diffusers model folder
///   - DIR/diffusion_pytorch_model.safetensors.index.json (or exactly one other *.safetensors.index.json):
///     {"metadata": {...}, "weight_map": {"tensor name": "shard file name", ...}}; shard names must be
///     plain file names inside DIR (no '/', '\\', "..", NUL); every mapped tensor must exist in its
///     shard and every shard tensor must be mapped to that shard;
///   - else DIR/diffusion_pytorch_model.safetensors, else DIR/model.safetensors, else the only
///     *.safetensors in DIR.
/// config.json beside the checkpoint (in DIR, or in the directory of a single file) is read when
/// present, checked to be a JSON object (no duplicate keys) and kept as text.
/// Move-only; CheckpointTensor views die with it.
class SafetensorsCheckpoint {
 public:
  static Result<SafetensorsCheckpoint> open(const std::string& path, const SafetensorsLimits& limits = {});
  /// A one-file checkpoint around an already parsed file (e.g. SafetensorsFile::parse of a buffer:
  /// the fuzz entry for WeightStore). No config.
  static SafetensorsCheckpoint from_file(SafetensorsFile file);

  /// All shards (one for a single file), in the order of first use in the weight map.
  const std::vector<SafetensorsFile>& files() const { return files_; }
  /// Lookup across shards; tensor == nullptr when absent.
  CheckpointTensor find(std::string_view name) const;
  /// Lookup that fails with kNotFound naming the tensor and the checkpoint.
  Result<CheckpointTensor> get(std::string_view name) const;
  /// Every tensor, shard by shard, each shard in header order.
  std::vector<CheckpointTensor> tensors() const;
  /// Total number of tensors.
  size_t size() const;
  /// The path given to open().
  const std::string& path() const { return path_; }
  /// config.json text ("" when there is none) and its path.
  bool has_config() const { return !config_path_.empty(); }
  const std::string& config_text() const { return config_text_; }
  const std::string& config_path() const { return config_path_; }

 private:
  std::string path_;
  std::vector<SafetensorsFile> files_;
  std::map<std::string, uint32_t, std::less<>> shard_of_;  ///< weight map (sharded form only)
  std::string config_text_, config_path_;
};

/// Same as SafetensorsCheckpoint::open.
Result<SafetensorsCheckpoint> open_checkpoint(const std::string& path, const SafetensorsLimits& limits = {});

}  // namespace ws::io
