// One-allocation host weight store with optional int8 / FP8 conversion; see weight_store.h.
#include "flow/host/weight_store.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <optional>
#include <system_error>
#include <thread>

#include "warpstream/numeric.h"

namespace ws::flow {
namespace {

std::string quote_escaped(std::string_view s) {
  std::string out(1, '\'');
  out += io::escape_for_message(s);
  out.push_back('\'');
  return out;
}

uint64_t align_up(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

uint64_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : UINT64_MAX;
}

bool is_float_source(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16;
}

// Element i of a float-typed source (unaligned little-endian bytes) widened to float.
float load_float(const std::byte* p, DType t, size_t i) {
  switch (t) {
    case DType::kFloat32: { float f; std::memcpy(&f, p + 4 * i, 4); return f; }
    case DType::kBFloat16: { uint16_t b; std::memcpy(&b, p + 2 * i, 2); return bf16_to_float(b); }
    default: { uint16_t b; std::memcpy(&b, p + 2 * i, 2); return half_to_float(b); }
  }
}

// Converts one [out, in] weight; writes codes to dst and scales to scale_dst.
Status quantize_rows(const io::CheckpointTensor& src, WeightFormat format, std::byte* dst, float* scale_dst) {
  const io::SafetensorsTensor& t = *src.tensor;
  const auto rows = static_cast<size_t>(t.shape[0]);
  const auto cols = static_cast<size_t>(t.shape[1]);
  const float qmax = format == WeightFormat::kInt8 ? 127.0f : kFp8E4M3Max;
  const std::byte* p = src.bytes.data();
  for (size_t r = 0; r < rows; ++r) {
    float absmax = 0.0f;
    for (size_t c = 0; c < cols; ++c) {
      const float w = load_float(p, t.dtype, r * cols + c);
      if (!std::isfinite(w))
        return invalid_model("tensor " + quote_escaped(t.name) + " in " + quote_escaped(src.file->path()) + ": element [" +
                             std::to_string(r) + ", " + std::to_string(c) + "] is " + std::to_string(w) +
                             "; cannot compute a per-channel " + std::string(weight_format_name(format)) + " scale");
      absmax = std::max(absmax, std::fabs(w));
    }
    // absmax / qmax underflows to 0 for rows of tiny subnormals (found by the fuzzer: w / 0 is NaN):
    // such a row is treated like an all-zero row.
    float scale = absmax / qmax;
    if (!(scale > 0.0f)) scale = 1.0f;
    scale_dst[r] = scale;
    if (format == WeightFormat::kInt8) {
      auto* q = reinterpret_cast<int8_t*>(dst) + r * cols;
      for (size_t c = 0; c < cols; ++c) {
        const float v = std::nearbyint(load_float(p, t.dtype, r * cols + c) / scale);
        q[c] = static_cast<int8_t>(std::clamp(v, -127.0f, 127.0f));
      }
    } else {
      auto* q = reinterpret_cast<uint8_t*>(dst) + r * cols;
      for (size_t c = 0; c < cols; ++c) q[c] = float_to_fp8_e4m3(load_float(p, t.dtype, r * cols + c) / scale);
    }
  }
  return Status::ok();
}

}  // namespace

std::string_view weight_format_name(WeightFormat f) {
  switch (f) {
    case WeightFormat::kAsStored: return "as-stored";
    case WeightFormat::kInt8: return "int8";
    case WeightFormat::kFp8E4M3: return "fp8";
  }
  return "?";
}

Result<WeightFormat> parse_weight_format(std::string_view s) {
  if (s == "bf16" || s == "as-stored") return WeightFormat::kAsStored;
  if (s == "int8") return WeightFormat::kInt8;
  if (s == "fp8" || s == "fp8e4m3") return WeightFormat::kFp8E4M3;
  return invalid_argument("weight format " + quote_escaped(s) + " is not one of bf16, int8, fp8");
}

bool is_ltx_block_linear_weight(std::string_view name) {
  constexpr std::string_view kBlocks = "transformer_blocks.";
  const size_t at = name.find(kBlocks);
  if (at == std::string_view::npos) return false;
  // The prefix before "transformer_blocks." must end at a component boundary.
  if (at > 0 && name[at - 1] != '.') return false;
  std::string_view rest = name.substr(at + kBlocks.size());
  size_t digits = 0;
  while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
  if (digits == 0 || digits >= rest.size() || rest[digits] != '.') return false;
  rest = rest.substr(digits + 1);
  constexpr std::string_view kLinears[] = {
      "attn1.to_q.weight", "attn1.to_k.weight", "attn1.to_v.weight", "attn1.to_out.0.weight",
      "attn2.to_q.weight", "attn2.to_k.weight", "attn2.to_v.weight", "attn2.to_out.0.weight",
      "ff.net.0.proj.weight", "ff.net.2.weight",
  };
  return std::find(std::begin(kLinears), std::end(kLinears), rest) != std::end(kLinears);
}

Result<io::CheckpointTensor> weight_scales_of(const io::SafetensorsCheckpoint& ck, const io::SafetensorsTensor& w) {
  const std::string where = "tensor " + quote_escaped(w.name) + " (" + std::string(dtype_name(w.dtype)) + " " +
                            shape_string(w.shape) + ") in " + quote_escaped(ck.path());
  if (w.shape.size() != 2) return invalid_model(where + ": pre-quantised codes must be a 2-D [out, in] weight");
  constexpr std::string_view kWeight = ".weight";
  if (w.name.size() < kWeight.size() || w.name.compare(w.name.size() - kWeight.size(), kWeight.size(), kWeight) != 0)
    return invalid_model(where + ": pre-quantised codes need a name ending in .weight (their scales are .weight_scale)");
  const std::string sname = w.name.substr(0, w.name.size() - kWeight.size()) + ".weight_scale";
  io::CheckpointTensor sc = ck.find(sname);
  if (sc.tensor == nullptr)
    return invalid_model(where + ": 8-bit codes without their per-channel scales: no tensor " + quote_escaped(sname));
  const io::SafetensorsTensor& s = *sc.tensor;
  const bool shape_ok = (s.shape.size() == 1 && s.shape[0] == w.shape[0]) ||
                        (s.shape.size() == 2 && s.shape[0] == w.shape[0] && s.shape[1] == 1);
  if (s.dtype != DType::kFloat32 || !shape_ok)
    return invalid_model("tensor " + quote_escaped(sname) + " is " + std::string(dtype_name(s.dtype)) + " " +
                         shape_string(s.shape) + ", the scales of " + quote_escaped(w.name) + " must be float32 [" +
                         std::to_string(w.shape[0]) + "] (or [" + std::to_string(w.shape[0]) + ", 1])");
  return sc;
}

std::optional<WeightFormat> stored_ltx_block_format(const io::SafetensorsCheckpoint& ck) {
  const io::CheckpointTensor probe = ck.find("transformer_blocks.0.attn1.to_q.weight");
  if (probe.tensor == nullptr) return std::nullopt;
  if (probe.tensor->dtype == DType::kInt8) return WeightFormat::kInt8;
  if (probe.tensor->dtype == DType::kFloat8E4M3FN) return WeightFormat::kFp8E4M3;
  return std::nullopt;
}

namespace {

/// Copies the scales (the checkpoint's bytes may be unaligned for float) and checks each is finite, > 0 and small
/// enough that the largest code times it stays finite (448 for e4m3, 127 for int8); fp8 codes must not be NaN
/// (0x7F / 0xFF): a stored weight is a number, as a weight quantised at load must be finite.
Status copy_stored_scales(const io::CheckpointTensor& sc, const io::CheckpointTensor& codes, std::byte* dst) {
  const io::SafetensorsTensor& w = *codes.tensor;
  const size_t n = static_cast<size_t>(w.shape[0]);
  const bool fp8 = w.dtype == DType::kFloat8E4M3FN;
  const float qmax = fp8 ? kFp8E4M3Max : 127.0f;
  std::memcpy(dst, sc.bytes.data(), n * sizeof(float));
  for (size_t r = 0; r < n; ++r) {
    float v;
    std::memcpy(&v, dst + r * sizeof(float), sizeof v);
    if (!(std::isfinite(v) && v > 0.0f && std::isfinite(v * qmax)))
      return invalid_model("tensor " + quote_escaped(sc.tensor->name) + ": scale [" + std::to_string(r) + "] is " +
                           std::to_string(v) + "; a per-channel scale must be finite and > 0, with the largest code (" +
                           std::to_string(static_cast<int>(qmax)) + ") times it still finite");
  }
  if (fp8) {
    const auto* c = reinterpret_cast<const uint8_t*>(codes.bytes.data());
    const size_t cols = static_cast<size_t>(w.shape[1]);
    for (size_t i = 0; i < codes.bytes.size(); ++i)
      if ((c[i] & 0x7F) == 0x7F)
        return invalid_model("tensor " + quote_escaped(w.name) + ": element [" + std::to_string(i / std::max<size_t>(cols, 1)) +
                             ", " + std::to_string(i % std::max<size_t>(cols, 1)) + "] is an fp8 NaN code (0x" +
                             (c[i] & 0x80 ? std::string("FF") : std::string("7F")) + "); a stored weight must be a number");
  }
  return Status::ok();
}

}  // namespace

// ---- the allocation ------------------------------------------------------------------------------

struct WeightStore::Region {
  void* addr = nullptr;
  size_t size = 0;
  ~Region() {
    if (addr != nullptr) ::munmap(addr, size);
  }
};

WeightStore::WeightStore() = default;
WeightStore::WeightStore(WeightStore&&) noexcept = default;
WeightStore& WeightStore::operator=(WeightStore&&) noexcept = default;
WeightStore::~WeightStore() = default;

std::span<std::byte> WeightStore::storage() {
  if (!region_) return {};
  return {static_cast<std::byte*>(region_->addr), region_->size};
}
std::span<const std::byte> WeightStore::storage() const {
  if (!region_) return {};
  return {static_cast<const std::byte*>(region_->addr), region_->size};
}

const StoredTensor* WeightStore::find(std::string_view name) const {
  auto it = std::lower_bound(by_name_.begin(), by_name_.end(), name,
                             [&](uint32_t i, std::string_view n) { return tensors_[i].name < n; });
  if (it == by_name_.end() || tensors_[*it].name != name) return nullptr;
  return &tensors_[*it];
}

Result<const StoredTensor*> WeightStore::get(std::string_view name) const {
  if (const StoredTensor* t = find(name)) return t;
  return not_found("weight store has no tensor " + quote_escaped(name) + " (" + std::to_string(tensors_.size()) +
                   " tensors loaded)");
}

Result<const StoredTensor*> WeightStore::get(std::string_view name, std::span<const int64_t> shape) const {
  WS_ASSIGN_OR_RETURN(const StoredTensor* t, get(name));
  if (!std::equal(t->shape.begin(), t->shape.end(), shape.begin(), shape.end()))
    return invalid_model("tensor " + quote_escaped(name) + " has shape " + shape_string(t->shape) + ", expected " +
                         shape_string(shape));
  return t;
}

Result<WeightStore> WeightStore::load(const io::SafetensorsCheckpoint& checkpoint, const WeightStoreOptions& options) {
  std::vector<std::string> names;
  for (const io::CheckpointTensor& t : checkpoint.tensors())
    if (!options.select || options.select(*t.tensor)) names.push_back(t.tensor->name);
  return load(checkpoint, names, options);
}

Result<WeightStore> WeightStore::load(const io::SafetensorsCheckpoint& checkpoint, std::span<const std::string> names,
                                      const WeightStoreOptions& options) {
  const std::string where = "loading weights from " + quote_escaped(checkpoint.path()) + ": ";
  struct Plan {
    io::CheckpointTensor src;
    bool convert = false;
    std::optional<io::CheckpointTensor> stored_scales;  // pre-quantised: the checkpoint's "<layer>.weight_scale"
    uint64_t offset = 0, bytes = 0, scales_offset = 0;
  };
  {
    std::vector<std::string_view> sorted(names.begin(), names.end());
    std::sort(sorted.begin(), sorted.end());
    auto dup = std::adjacent_find(sorted.begin(), sorted.end());
    if (dup != sorted.end()) return invalid_argument(where + "tensor " + quote_escaped(*dup) + " is requested twice");
  }
  std::vector<Plan> plan;
  plan.reserve(names.size());
  // 1. Resolve names and lay the store out (nothing proportional to the data is allocated yet).
  uint64_t total = 0;
  for (const std::string& name : names) {
    WS_ASSIGN_OR_RETURN(io::CheckpointTensor src, checkpoint.get(name));
    const io::SafetensorsTensor& t = *src.tensor;
    Plan p;
    p.src = src;
    const bool selected = options.quantize ? options.quantize(t) : is_ltx_block_linear_weight(t.name);
    if (selected && (t.dtype == DType::kInt8 || t.dtype == DType::kFloat8E4M3FN)) {
      // Pre-quantised (tools/make_ltx_checkpoint.py --block-weights): codes as stored + their per-channel scales.
      WS_ASSIGN_OR_RETURN(io::CheckpointTensor sc, weight_scales_of(checkpoint, t));
      const WeightFormat stored = t.dtype == DType::kInt8 ? WeightFormat::kInt8 : WeightFormat::kFp8E4M3;
      if (options.format != WeightFormat::kAsStored && options.format != stored)
        return invalid_argument(where + "tensor " + quote_escaped(t.name) + " is stored pre-quantised as " +
                                std::string(weight_format_name(stored)) + " codes; it cannot be converted to " +
                                std::string(weight_format_name(options.format)) + " (load it as stored or as " +
                                std::string(weight_format_name(stored)) + ")");
      p.stored_scales = sc;
    }
    p.convert = !p.stored_scales && options.format != WeightFormat::kAsStored && selected;
    if (p.convert) {
      if (t.shape.size() != 2 || !is_float_source(t.dtype))
        return invalid_argument(where + "tensor " + quote_escaped(t.name) + " (" + dtype_name(t.dtype) + " " +
                                shape_string(t.shape) + ") is selected for " + std::string(weight_format_name(options.format)) +
                                " conversion, which needs a 2-D float32/float16/bfloat16 [out, in] weight");
    }
    const uint64_t elements = static_cast<uint64_t>(t.elements());  // validated by the reader: no overflow
    p.bytes = p.convert ? elements : t.bytes();                      // 1-byte codes after conversion
    const bool scaled = p.convert || p.stored_scales.has_value();
    const uint64_t scale_bytes = scaled ? static_cast<uint64_t>(t.shape[0]) * sizeof(float) : 0;
    // Each term is bounded by the checkpoint's file size, so these sums cannot overflow in practice;
    // check anyway (a sum of many shards).
    uint64_t end = 0;
    if (__builtin_add_overflow(align_up(total, kAlignment), p.bytes, &end))
      return resource_exhausted(where + "the store's size overflows 64 bits");
    p.offset = align_up(total, kAlignment);
    total = end;
    if (scaled) {
      p.scales_offset = align_up(total, kAlignment);
      total = p.scales_offset + scale_bytes;
    }
    plan.push_back(std::move(p));
  }
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t size = align_up(total, page);
  const uint64_t bound = options.max_host_bytes != 0 ? options.max_host_bytes : physical_memory_bytes();
  if (size > bound)
    return resource_exhausted(where + std::to_string(plan.size()) + " tensors need " + std::to_string(size) +
                              " bytes of host memory, above the host bound of " + std::to_string(bound) + " bytes" +
                              (options.max_host_bytes != 0 ? " (WeightStoreOptions::max_host_bytes)" : " (physical memory)"));

  // 2. The one allocation.
  WeightStore store;
  store.region_ = std::make_unique<Region>();
  if (size > 0) {
    void* addr = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (addr == MAP_FAILED)
      return resource_exhausted(where + "cannot allocate " + std::to_string(size) + " bytes of host memory: " + std::strerror(errno));
    store.region_->addr = addr;
    store.region_->size = static_cast<size_t>(size);
  }
  auto* base = static_cast<std::byte*>(store.region_->addr);

  // 3. Copy / convert straight from the checkpoint mapping: tensors are independent, so workers take
  //    them one at a time (results do not depend on the thread count); the first error in load order wins.
  store.tensors_.reserve(plan.size());
  for (const Plan& p : plan) {
    const io::SafetensorsTensor& t = *p.src.tensor;
    StoredTensor s;
    s.name = t.name;
    s.source_dtype = t.dtype;
    s.dtype = t.dtype;
    s.shape = t.shape;
    s.offset = p.offset;
    s.bytes = p.bytes;
    s.data = base + p.offset;
    if (p.convert) s.dtype = options.format == WeightFormat::kInt8 ? DType::kInt8 : DType::kFloat8E4M3FN;
    if (p.convert || p.stored_scales) {
      s.scales_offset = p.scales_offset;
      s.scales = reinterpret_cast<const float*>(base + p.scales_offset);
    }
    store.tensors_.push_back(std::move(s));
  }
  std::vector<Status> errors(plan.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next.fetch_add(1); i < plan.size(); i = next.fetch_add(1)) {
      const Plan& p = plan[i];
      if (p.convert) {
        errors[i] = quantize_rows(p.src, options.format, base + p.offset, reinterpret_cast<float*>(base + p.scales_offset));
      } else if (p.bytes > 0) {
        std::memcpy(base + p.offset, p.src.bytes.data(), static_cast<size_t>(p.bytes));
      }
      if (p.stored_scales) errors[i] = copy_stored_scales(*p.stored_scales, p.src, base + p.scales_offset);
    }
  };
  unsigned threads = options.threads != 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<size_t>(threads, plan.size()));
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < threads; ++i) {
    try {
      pool.emplace_back(work);
    } catch (const std::system_error&) {  // no more threads: the ones started (and this one) finish the work
      break;
    }
  }
  work();
  for (std::thread& th : pool) th.join();
  for (const Status& st : errors)
    if (!st.is_ok()) return Status(st.code(), where + st.message());
  store.by_name_.resize(store.tensors_.size());
  for (uint32_t i = 0; i < store.by_name_.size(); ++i) store.by_name_[i] = i;
  std::sort(store.by_name_.begin(), store.by_name_.end(),
            [&](uint32_t a, uint32_t b) { return store.tensors_[a].name < store.tensors_[b].name; });
  return store;
}

}  // namespace ws::flow
