// GPU LTX-Video block: weight upload, build-time planning and the enqueue sequence (see ltx_block.h).
// Test: tests/gpu/ltx_block_test.cpp. CLI/timing: `warpstream ltx-block` (apps/cmd_ltx_block.cpp).
#include "flow/models/ltx_block.h"

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <utility>

#include "flow/models/ltx_block_kernels.h"
#include "flow/models/ltx_linear.h"
#include "flow/models/ltx_sdpa_cudnn.h"
#include "kernels/transformer/transformer.h"

namespace ws::flow {

const char* ltx_weight_format_name(LtxWeightFormat f) {
  switch (f) {
    case LtxWeightFormat::kBF16: return "bf16";
    case LtxWeightFormat::kFP8: return "fp8";
    case LtxWeightFormat::kINT8: return "int8";
  }
  return "?";
}

namespace {

constexpr size_t kAlign = 256;
size_t align_up(size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

uint16_t f32_to_bf16_bits(float f) {  // round to nearest even; NaN stays NaN
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
float bf16_bits_to_f32(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// Reads element i of a host tensor as float.
float host_value(const LtxHostTensor& t, size_t i) {
  switch (t.type) {
    case LtxHostTensor::Type::kF32: return static_cast<const float*>(t.data)[i];
    case LtxHostTensor::Type::kBF16: return bf16_bits_to_f32(static_cast<const uint16_t*>(t.data)[i]);
    case LtxHostTensor::Type::kS8: return static_cast<float>(static_cast<const int8_t*>(t.data)[i]);
    case LtxHostTensor::Type::kF8E4M3: {
      __nv_fp8_e4m3 v;
      v.__x = static_cast<const __nv_fp8_storage_t*>(t.data)[i];
      return static_cast<float>(v);
    }
  }
  return 0.f;
}

// Host staging image of the device allocation: each piece appended at a 256-byte aligned offset.
struct Staging {
  std::vector<uint8_t> bytes;
  size_t add(size_t n) {
    size_t off = align_up(bytes.size());
    bytes.resize(off + n);
    return off;
  }
};

struct PendingLinear {
  size_t w = 0, scale = SIZE_MAX, bias = 0, bias_f32 = SIZE_MAX;
  int out = 0, in = 0;
};

class Uploader {
 public:
  Uploader(const LtxTensorSource& src, std::string prefix, LtxWeightFormat fmt)
      : src_(src), prefix_(std::move(prefix)), fmt_(fmt) {}

  Result<LtxHostTensor> get(const std::string& local, std::vector<int64_t> shape) {
    const std::string name = prefix_ + local;
    Result<LtxHostTensor> r = src_(name);
    if (!r.is_ok()) return r.status();
    const LtxHostTensor& t = r.value();
    if (t.shape != shape)
      return invalid_model("LTX block: tensor '" + name + "' in " + t.file + " has shape " + shape_str(t.shape) +
                           ", the config needs " + shape_str(shape));
    if (t.data == nullptr) return invalid_model("LTX block: tensor '" + name + "' in " + t.file + " has no data");
    if ((t.type == LtxHostTensor::Type::kF8E4M3 || t.type == LtxHostTensor::Type::kS8) && t.scale == nullptr)
      return invalid_model("LTX block: " + std::string(t.type == LtxHostTensor::Type::kS8 ? "int8" : "fp8") +
                           " tensor '" + name + "' in " + t.file + " comes without its per-output-channel scale");
    if ((t.type == LtxHostTensor::Type::kF8E4M3 || t.type == LtxHostTensor::Type::kS8) && shape.size() != 2)
      return invalid_model("LTX block: quantized tensor '" + name + "' in " + t.file + " is not a 2-D weight");
    return r;
  }

  // bf16 copy of a vector/table tensor (any stored type is converted; fp8 dequantized with its row scale).
  Result<size_t> bf16(const std::string& local, std::vector<int64_t> shape) {
    WS_ASSIGN_OR_RETURN(LtxHostTensor t, get(local, shape));
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    const size_t cols = shape.empty() ? 1 : static_cast<size_t>(shape.back());
    size_t off = st_.add(n * 2);
    auto* dst = reinterpret_cast<uint16_t*>(st_.bytes.data() + off);
    for (size_t i = 0; i < n; ++i) {
      float v = host_value(t, i);
      if (t.scale != nullptr) v *= t.scale[i / cols];
      dst[i] = f32_to_bf16_bits(v);
    }
    return off;
  }

  // Linear weights [out, in] from one or more stacked parts (fused q/k/v), in the block's format.
  Result<PendingLinear> linear(const std::vector<std::string>& parts, int out_each, int in) {
    PendingLinear p;
    p.out = out_each * static_cast<int>(parts.size());
    p.in = in;
    const size_t rows = static_cast<size_t>(p.out), cols = static_cast<size_t>(in);
    std::vector<LtxHostTensor> w, b;
    for (const auto& part : parts) {
      WS_ASSIGN_OR_RETURN(LtxHostTensor wt, get(part + ".weight", {out_each, in}));
      WS_ASSIGN_OR_RETURN(LtxHostTensor bt, get(part + ".bias", {out_each}));
      w.push_back(std::move(wt));
      b.push_back(std::move(bt));
    }
    // bias: bf16 [out]
    p.bias = st_.add(rows * 2);
    {
      auto* dst = reinterpret_cast<uint16_t*>(st_.bytes.data() + p.bias);
      for (size_t k = 0; k < parts.size(); ++k)
        for (int i = 0; i < out_each; ++i) dst[k * out_each + i] = f32_to_bf16_bits(host_value(b[k], i));
    }
    if (fmt_ == LtxWeightFormat::kBF16) {
      p.w = st_.add(rows * cols * 2);
      auto* dst = reinterpret_cast<uint16_t*>(st_.bytes.data() + p.w);
      for (size_t k = 0; k < parts.size(); ++k) {
        const LtxHostTensor& t = w[k];
        for (size_t r = 0; r < static_cast<size_t>(out_each); ++r) {
          const float s = t.scale != nullptr ? t.scale[r] : 1.f;
          uint16_t* drow = dst + (k * out_each + r) * cols;
          if (t.type == LtxHostTensor::Type::kBF16) {
            std::memcpy(drow, static_cast<const uint16_t*>(t.data) + r * cols, cols * 2);
          } else {
            for (size_t c = 0; c < cols; ++c) drow[c] = f32_to_bf16_bits(host_value(t, r * cols + c) * s);
          }
        }
      }
      return p;
    }
    if (fmt_ == LtxWeightFormat::kINT8) {
      // int8 with per-output-channel absmax scales (a stored int8 tensor keeps its codes and scales); the INT8
      // GEMM's epilogue takes a float32 bias.
      p.bias_f32 = st_.add(rows * 4);
      auto* bf = reinterpret_cast<float*>(st_.bytes.data() + p.bias_f32);
      for (size_t k = 0; k < parts.size(); ++k)
        for (int i = 0; i < out_each; ++i) bf[k * out_each + i] = bf16_bits_to_f32(f32_to_bf16_bits(host_value(b[k], i)));
      p.w = st_.add(rows * cols);
      p.scale = st_.add(rows * 4);
      for (size_t k = 0; k < parts.size(); ++k) {
        const LtxHostTensor& t = w[k];
        for (size_t r = 0; r < static_cast<size_t>(out_each); ++r) {
          auto* drow = reinterpret_cast<int8_t*>(st_.bytes.data() + p.w + (k * out_each + r) * cols);
          auto* dscale = reinterpret_cast<float*>(st_.bytes.data() + p.scale) + k * out_each + r;
          if (t.type == LtxHostTensor::Type::kS8) {
            std::memcpy(drow, static_cast<const int8_t*>(t.data) + r * cols, cols);
            *dscale = t.scale[r];
            continue;
          }
          const float ts = t.scale != nullptr ? t.scale[r] : 1.f;  // a stored fp8 row: dequantize first
          float amax = 0.f;
          for (size_t c = 0; c < cols; ++c) amax = std::max(amax, std::fabs(host_value(t, r * cols + c) * ts));
          const float s = amax > 0.f ? amax / 127.f : 1.f;
          *dscale = s;
          for (size_t c = 0; c < cols; ++c) {
            const float q = std::nearbyint(host_value(t, r * cols + c) * ts / s);
            drow[c] = static_cast<int8_t>(std::min(127.f, std::max(-127.f, q)));
          }
        }
      }
      return p;
    }
    // fp8 e4m3 with per-output-channel absmax scales (a stored fp8 tensor keeps its bytes and scales).
    p.w = st_.add(rows * cols);
    p.scale = st_.add(rows * 4);
    for (size_t k = 0; k < parts.size(); ++k) {
      const LtxHostTensor& t = w[k];
      for (size_t r = 0; r < static_cast<size_t>(out_each); ++r) {
        auto* drow = st_.bytes.data() + p.w + (k * out_each + r) * cols;
        auto* dscale = reinterpret_cast<float*>(st_.bytes.data() + p.scale) + k * out_each + r;
        if (t.type == LtxHostTensor::Type::kF8E4M3) {
          std::memcpy(drow, static_cast<const uint8_t*>(t.data) + r * cols, cols);
          *dscale = t.scale[r];
          continue;
        }
        const float ts = t.scale != nullptr ? t.scale[r] : 1.f;  // a stored int8 row: dequantize first
        float amax = 0.f;
        for (size_t c = 0; c < cols; ++c) amax = std::max(amax, std::fabs(host_value(t, r * cols + c) * ts));
        const float s = amax > 0.f ? amax / 448.f : 1.f;
        *dscale = s;
        for (size_t c = 0; c < cols; ++c) {
          __nv_fp8_e4m3 q(host_value(t, r * cols + c) * ts / s);
          drow[c] = q.__x;
        }
      }
    }
    return p;
  }

  Staging& staging() { return st_; }

 private:
  const LtxTensorSource& src_;
  std::string prefix_;
  LtxWeightFormat fmt_;
  Staging st_;
};

}  // namespace

std::vector<std::string> ltx_block_tensor_names(const std::string& prefix) {
  std::vector<std::string> n = {prefix + "scale_shift_table"};
  for (const char* a : {"attn1.", "attn2."}) {
    for (const char* l : {"to_q", "to_k", "to_v", "to_out.0"}) {
      n.push_back(prefix + a + l + ".weight");
      n.push_back(prefix + a + l + ".bias");
    }
    n.push_back(prefix + a + "norm_q.weight");
    n.push_back(prefix + a + "norm_k.weight");
  }
  for (const char* l : {"ff.net.0.proj", "ff.net.2"}) {
    n.push_back(prefix + l + ".weight");
    n.push_back(prefix + l + ".bias");
  }
  return n;
}

Status LtxBlockWeights::validate(const LtxTensorSource& source, const std::string& prefix, const LtxBlockConfig& cfg) {
  // cfg.dim() / ff() are int products: bound the factors first so they cannot overflow (signed overflow is UB).
  const int64_t d64 = static_cast<int64_t>(cfg.heads) * cfg.head_dim;
  if (cfg.heads < 1 || cfg.head_dim < 1 || cfg.cross_dim < 1 || cfg.ff_dim < 0 || d64 > (int64_t{1} << 20))
    return invalid_argument("LTX block: heads " + std::to_string(cfg.heads) + " x head_dim " +
                            std::to_string(cfg.head_dim) + " (cross_dim " + std::to_string(cfg.cross_dim) +
                            ", ff " + std::to_string(cfg.ff_dim) + "): each must be >= 1 and heads * head_dim <= 2^20");
  const int64_t d = cfg.dim(), dc = cfg.cross_dim, ff = cfg.ff();
  Uploader up(source, prefix, LtxWeightFormat::kBF16);
  std::vector<std::pair<std::string, std::vector<int64_t>>> expect = {{"scale_shift_table", {6, d}}};
  for (const char* a : {"attn1.", "attn2."}) {
    const int64_t in_kv = std::string(a) == "attn1." ? d : dc;
    for (const char* l : {"to_q", "to_out.0"}) {
      expect.push_back({std::string(a) + l + ".weight", {d, d}});
      expect.push_back({std::string(a) + l + ".bias", {d}});
    }
    for (const char* l : {"to_k", "to_v"}) {
      expect.push_back({std::string(a) + l + ".weight", {d, in_kv}});
      expect.push_back({std::string(a) + l + ".bias", {d}});
    }
    expect.push_back({std::string(a) + "norm_q.weight", {d}});
    expect.push_back({std::string(a) + "norm_k.weight", {d}});
  }
  expect.push_back({"ff.net.0.proj.weight", {ff, d}});
  expect.push_back({"ff.net.0.proj.bias", {ff}});
  expect.push_back({"ff.net.2.weight", {d, ff}});
  expect.push_back({"ff.net.2.bias", {d}});
  for (const auto& [name, shape] : expect) {
    auto r = up.get(name, shape);
    if (!r.is_ok()) return r.status();
  }
  return Status::ok();
}

Result<LtxBlockWeights> LtxBlockWeights::upload(const LtxTensorSource& source, const std::string& prefix,
                                                const LtxBlockConfig& cfg, LtxWeightFormat format) {
  const int d = cfg.dim(), dc = cfg.cross_dim, ff = cfg.ff();
  if (cfg.heads < 1 || cfg.head_dim < 1 || dc < 1 || d % 2 != 0)
    return invalid_argument("LTX block: heads " + std::to_string(cfg.heads) + " x head_dim " +
                            std::to_string(cfg.head_dim) + " (inner dim must be even), cross dim " + std::to_string(dc));
  Uploader up(source, prefix, format);
  WS_ASSIGN_OR_RETURN(size_t sst, up.bf16("scale_shift_table", {6, d}));
  WS_ASSIGN_OR_RETURN(size_t n1q, up.bf16("attn1.norm_q.weight", {d}));
  WS_ASSIGN_OR_RETURN(size_t n1k, up.bf16("attn1.norm_k.weight", {d}));
  WS_ASSIGN_OR_RETURN(size_t n2q, up.bf16("attn2.norm_q.weight", {d}));
  WS_ASSIGN_OR_RETURN(size_t n2k, up.bf16("attn2.norm_k.weight", {d}));
  WS_ASSIGN_OR_RETURN(PendingLinear qkv, up.linear({"attn1.to_q", "attn1.to_k", "attn1.to_v"}, d, d));
  WS_ASSIGN_OR_RETURN(PendingLinear o1, up.linear({"attn1.to_out.0"}, d, d));
  WS_ASSIGN_OR_RETURN(PendingLinear q2, up.linear({"attn2.to_q"}, d, d));
  WS_ASSIGN_OR_RETURN(PendingLinear kv2, up.linear({"attn2.to_k", "attn2.to_v"}, d, dc));
  WS_ASSIGN_OR_RETURN(PendingLinear o2, up.linear({"attn2.to_out.0"}, d, d));
  WS_ASSIGN_OR_RETURN(PendingLinear f0, up.linear({"ff.net.0.proj"}, ff, d));
  WS_ASSIGN_OR_RETURN(PendingLinear f2, up.linear({"ff.net.2"}, d, ff));
  Staging& st = up.staging();
  LtxBlockWeights w;
  WS_ASSIGN_OR_RETURN(w.buffer_, cuda::DeviceBuffer::allocate(align_up(st.bytes.size())));
  WS_RETURN_IF_ERROR(::ws::cuda::copy_to_device(w.buffer_.get(), st.bytes.data(), st.bytes.size()));
  auto* base = static_cast<uint8_t*>(w.buffer_.get());
  auto lin = [&](const PendingLinear& p) {
    Linear l;
    l.w = base + p.w;
    l.bias = base + p.bias;
    l.scale = p.scale == SIZE_MAX ? nullptr : reinterpret_cast<const float*>(base + p.scale);
    l.bias_f32 = p.bias_f32 == SIZE_MAX ? nullptr : reinterpret_cast<const float*>(base + p.bias_f32);
    l.out = p.out;
    l.in = p.in;
    return l;
  };
  w.attn1_qkv = lin(qkv);
  w.attn1_out = lin(o1);
  w.attn2_q = lin(q2);
  w.attn2_kv = lin(kv2);
  w.attn2_out = lin(o2);
  w.ff0 = lin(f0);
  w.ff2 = lin(f2);
  w.sst = base + sst;
  w.attn1_norm_q = base + n1q;
  w.attn1_norm_k = base + n1k;
  w.attn2_norm_q = base + n2q;
  w.attn2_norm_k = base + n2k;
  w.format = format;
  return w;
}

// ---------------------------------------------------------------------------------------------------------------

struct LtxBlock::Impl {
  LtxBlockConfig cfg;
  LtxBlockGeometry geo;
  LtxBlockIO io;
  LtxWeightFormat format = LtxWeightFormat::kBF16;
  const LtxBlockWeights* w = nullptr;
  LtHandle lt;
  cuda::DeviceBuffer arena;
  // activations (bf16) inside the arena
  void *n1 = nullptr, *qkv = nullptr, *ao = nullptr, *proj1 = nullptr, *q2 = nullptr, *kv2 = nullptr,
       *proj2 = nullptr, *n2 = nullptr, *ffh = nullptr, *ffo = nullptr;
  void* xq = nullptr;        // fp8/int8 quantized activation (largest input), quantized formats only
  float* xscale = nullptr;   // per-token scales [max rows]
  void* gemm_ws = nullptr;
  void* sdpa_ws = nullptr;
  size_t gemm_ws_bytes = 0;
  std::unique_ptr<LtLinear> l_qkv, l_o1, l_q2, l_kv2, l_o2, l_f0, l_f2;
  std::unique_ptr<CudnnSdpa> s1, s2;
  std::string b1 = "fallback kernel", b2 = "fallback kernel";
  std::vector<Stage> stages;
  std::vector<std::function<Status(cudaStream_t)>> ops;
  size_t bytes = 0;  // own arena bytes (0 with an external arena)
  size_t used = 0;   // arena bytes used

  // The block's AdaLN source for the shared transformer kernels: scale_shift_table [6, D] + temb [B, S', 6D].
  kernels::AdaLnTable mod() const {
    kernels::AdaLnTable t;
    t.table = w->sst;
    t.temb = static_cast<const __nv_bfloat16*>(io.temb);
    t.temb_row_stride = 6 * (int64_t)cfg.dim();
    t.temb_chunk_stride = cfg.dim();
    t.tokens_per_temb_row = geo.temb_rows == 1 ? geo.tokens : 1;
    return t;
  }
  __nv_bfloat16* x() const { return static_cast<__nv_bfloat16*>(io.x); }
  int64_t rows() const { return (int64_t)geo.batch * geo.tokens; }
};

namespace {

Result<std::unique_ptr<CudnnSdpa>> try_cudnn(const SdpaShape& s, const std::string& name, bool force_fallback,
                                             std::string& backend) {
  if (force_fallback) {
    backend = "fallback kernel (forced by option)";
    return std::unique_ptr<CudnnSdpa>();
  }
  auto r = CudnnSdpa::build(s, name);
  if (r.is_ok()) {
    backend = "cuDNN fused SDPA";
    return r;
  }
  if (r.status().code() == StatusCode::kUnsupported) {
    backend = "fallback kernel (" + r.status().message() + ")";
    return std::unique_ptr<CudnnSdpa>();
  }
  return r.status();
}

constexpr int kArenaPieces = 14;
// Sizes of the arena pieces in the order build() carves them: n1, qkv, ao, proj1, q2, kv2, proj2, n2, ffh, ffo,
// gemm workspace, SDPA workspace, quantized activation, per-token scales.
std::array<size_t, kArenaPieces> arena_piece_sizes(const LtxBlockConfig& cfg, const LtxBlockGeometry& geo,
                                                   bool quantized, size_t sdpa_ws, const LtxBlockOptions& options) {
  const int64_t d = cfg.dim(), dc = cfg.cross_dim, ff = cfg.ff();
  const int64_t M = (int64_t)geo.batch * geo.tokens, MT = (int64_t)geo.batch * geo.text_tokens;
  const size_t e = 2;  // bf16
  const int64_t quant_elems = quantized ? std::max({M * d, MT * dc, M * ff}) : 0;
  return {static_cast<size_t>(M * d) * e,      static_cast<size_t>(M * 3 * d) * e, static_cast<size_t>(M * d) * e,
          static_cast<size_t>(M * d) * e,      static_cast<size_t>(M * d) * e,     static_cast<size_t>(MT * 2 * d) * e,
          static_cast<size_t>(M * d) * e,      static_cast<size_t>(M * d) * e,     static_cast<size_t>(M * ff) * e,
          static_cast<size_t>(M * d) * e,      options.gemm_workspace_bytes,       sdpa_ws,
          static_cast<size_t>(quant_elems),    quantized ? static_cast<size_t>(std::max(M, MT)) * 4 : 0};
}

SdpaShape attn1_shape(const LtxBlockConfig& cfg, const LtxBlockGeometry& geo) {
  const int d = cfg.dim();
  SdpaShape a1;
  a1.batch = geo.batch; a1.heads = cfg.heads; a1.head_dim = cfg.head_dim; a1.sq = geo.tokens; a1.skv = geo.tokens;
  a1.ld_q = a1.ld_k = a1.ld_v = 3 * d; a1.ld_o = d; a1.bias = false;
  return a1;
}
SdpaShape attn2_shape(const LtxBlockConfig& cfg, const LtxBlockGeometry& geo) {
  const int d = cfg.dim();
  SdpaShape a2 = attn1_shape(cfg, geo);
  a2.skv = geo.text_tokens; a2.ld_q = d; a2.ld_k = a2.ld_v = 2 * d; a2.bias = geo.mask;
  return a2;
}

}  // namespace

Result<size_t> LtxBlock::arena_bytes(const LtxBlockConfig& cfg, const LtxBlockGeometry& geo, LtxWeightFormat format,
                                     const LtxBlockOptions& options) {
  if (geo.batch < 1 || geo.tokens < 1 || geo.text_tokens < 1)
    return invalid_argument("LTX block: arena_bytes for batch " + std::to_string(geo.batch) + ", tokens " +
                            std::to_string(geo.tokens) + ", text tokens " + std::to_string(geo.text_tokens));
  std::string b1, b2;
  WS_ASSIGN_OR_RETURN(std::unique_ptr<CudnnSdpa> s1,
                      try_cudnn(attn1_shape(cfg, geo), "attn1", options.force_fallback_attention, b1));
  WS_ASSIGN_OR_RETURN(std::unique_ptr<CudnnSdpa> s2,
                      try_cudnn(attn2_shape(cfg, geo), "attn2", options.force_fallback_attention, b2));
  const size_t sdpa_ws = std::max<int64_t>(s1 ? s1->workspace_bytes() : 0, s2 ? s2->workspace_bytes() : 0);
  const bool quantized = format != LtxWeightFormat::kBF16;
  size_t total = 0;
  for (size_t b : arena_piece_sizes(cfg, geo, quantized, sdpa_ws, options)) total += align_up(b);
  return total;
}

Result<std::unique_ptr<LtxBlock>> LtxBlock::build(const LtxBlockConfig& cfg, const LtxBlockGeometry& geo,
                                                  const LtxBlockWeights& weights, const LtxBlockIO& io,
                                                  const LtxBlockOptions& options) {
  const int d = cfg.dim(), dc = cfg.cross_dim, ff = cfg.ff();
  const int64_t M = (int64_t)geo.batch * geo.tokens, MT = (int64_t)geo.batch * geo.text_tokens;
  if (geo.batch < 1 || geo.tokens < 1 || geo.text_tokens < 1 || (geo.temb_rows != 1 && geo.temb_rows != geo.tokens))
    return invalid_argument("LTX block: batch " + std::to_string(geo.batch) + ", tokens " + std::to_string(geo.tokens) +
                            ", text tokens " + std::to_string(geo.text_tokens) + ", temb rows " +
                            std::to_string(geo.temb_rows) + " (1 or tokens)");
  if (M * std::max(3 * d, ff) > (int64_t{1} << 31))
    return resource_exhausted("LTX block: " + std::to_string(M) + " tokens x " + std::to_string(std::max(3 * d, ff)) +
                              " features exceeds the 2^31-element activation limit of the kernels");
  if (io.x == nullptr || io.temb == nullptr || io.enc == nullptr || (geo.mask && io.enc_bias == nullptr) ||
      (geo.rope && (io.rope_cos == nullptr || io.rope_sin == nullptr)))
    return invalid_argument("LTX block: a null input pointer (x, temb, enc" + std::string(geo.mask ? ", enc_bias" : "") +
                            (geo.rope ? ", rope cos/sin" : "") + ")");
  if (weights.attn1_qkv.in != d || weights.attn2_kv.in != dc || weights.ff0.out != ff)
    return invalid_argument("LTX block: the uploaded weights do not match the config (D " + std::to_string(d) +
                            ", cross " + std::to_string(dc) + ", FF " + std::to_string(ff) + ")");
  auto impl = std::make_unique<Impl>();
  Impl& I = *impl;
  I.cfg = cfg;
  I.geo = geo;
  I.io = io;
  I.w = &weights;
  I.format = weights.format;
  const bool fp8 = I.format == LtxWeightFormat::kFP8, int8 = I.format == LtxWeightFormat::kINT8;
  const bool quantized = fp8 || int8;  // activations quantized per token before every linear
  WS_ASSIGN_OR_RETURN(I.lt, LtHandle::create());

  // ---- plan the linears ----
  const LinearFormat lf = fp8 ? LinearFormat::kFP8 : int8 ? LinearFormat::kINT8 : LinearFormat::kBF16;
  auto plan = [&](std::unique_ptr<LtLinear>& dst, int64_t m, int64_t n, int64_t k, LinearEpilogue e,
                  const char* name) -> Status {
    LinearShape s;
    s.m = m; s.n = n; s.k = k; s.format = lf; s.epilogue = e;
    WS_ASSIGN_OR_RETURN(dst, LtLinear::build(I.lt.get(), s, options.gemm_workspace_bytes, name));
    return Status::ok();
  };
  WS_RETURN_IF_ERROR(plan(I.l_qkv, M, 3 * d, d, LinearEpilogue::kBias, "attn1.to_qkv"));
  WS_RETURN_IF_ERROR(plan(I.l_o1, M, d, d, LinearEpilogue::kBias, "attn1.to_out.0"));
  WS_RETURN_IF_ERROR(plan(I.l_q2, M, d, d, LinearEpilogue::kBias, "attn2.to_q"));
  WS_RETURN_IF_ERROR(plan(I.l_kv2, MT, 2 * d, dc, LinearEpilogue::kBias, "attn2.to_kv"));
  WS_RETURN_IF_ERROR(plan(I.l_o2, M, d, d, LinearEpilogue::kBias, "attn2.to_out.0"));
  WS_RETURN_IF_ERROR(plan(I.l_f0, M, ff, d, LinearEpilogue::kBiasGeluTanh, "ff.net.0.proj"));
  WS_RETURN_IF_ERROR(plan(I.l_f2, M, d, ff, LinearEpilogue::kBias, "ff.net.2"));

  // ---- plan the attentions ----
  const SdpaShape a1 = attn1_shape(cfg, geo), a2 = attn2_shape(cfg, geo);
  WS_ASSIGN_OR_RETURN(I.s1, try_cudnn(a1, "attn1", options.force_fallback_attention, I.b1));
  WS_ASSIGN_OR_RETURN(I.s2, try_cudnn(a2, "attn2", options.force_fallback_attention, I.b2));

  // ---- one arena for activations and workspaces (own, or the caller's shared one) ----
  const size_t sdpa_ws = std::max<int64_t>(I.s1 ? I.s1->workspace_bytes() : 0, I.s2 ? I.s2->workspace_bytes() : 0);
  void* xscale_raw = nullptr;
  void** ptrs[kArenaPieces] = {&I.n1, &I.qkv, &I.ao, &I.proj1, &I.q2, &I.kv2, &I.proj2, &I.n2,
                               &I.ffh, &I.ffo, &I.gemm_ws, &I.sdpa_ws, &I.xq, &xscale_raw};
  const std::array<size_t, kArenaPieces> sizes = arena_piece_sizes(cfg, geo, quantized, sdpa_ws, options);
  size_t total = 0;
  for (size_t b : sizes) total += align_up(b);
  uint8_t* base = nullptr;
  if (options.arena != nullptr) {
    if (options.arena_bytes < total)
      return resource_exhausted("LTX block: external activation arena of " + std::to_string(options.arena_bytes) +
                                " B is smaller than the " + std::to_string(total) + " B this block needs (B " +
                                std::to_string(geo.batch) + ", S " + std::to_string(geo.tokens) + ", T " +
                                std::to_string(geo.text_tokens) + "; LtxBlock::arena_bytes)");
    if (reinterpret_cast<uintptr_t>(options.arena) % kAlign != 0)
      return invalid_argument("LTX block: external activation arena is not 256-byte aligned");
    base = static_cast<uint8_t*>(options.arena);
    I.bytes = 0;
  } else {
    WS_ASSIGN_OR_RETURN(I.arena, cuda::DeviceBuffer::allocate(total));
    base = static_cast<uint8_t*>(I.arena.get());
    I.bytes = total;
    // NaN-poison the own arena once (0xFF bytes: bf16/fp32/e4m3 NaN), as the model does with its buffers and the
    // CUDA engine with its arena: a stage that reads an element no earlier stage wrote gives NaN, which the
    // tests' comparisons against the CPU reference catch (docs/results/H200.md, "initcheck and cuBLASLt").
    WS_RETURN_IF_ERROR(::ws::cuda::fill_device(base, 0xff, total));
  }
  I.used = total;
  size_t off = 0;
  for (int p = 0; p < kArenaPieces; ++p) {
    *ptrs[p] = sizes[static_cast<size_t>(p)] ? base + off : nullptr;
    off += align_up(sizes[static_cast<size_t>(p)]);
  }
  I.xscale = static_cast<float*>(xscale_raw);
  I.gemm_ws_bytes = options.gemm_workspace_bytes;

  // ---- bind ----
  auto bind = [&](LtLinear& l, const void* x, const LtxBlockWeights::Linear& wl, void* y) {
    LinearBinding b;
    b.x = quantized ? I.xq : x;
    b.w = wl.w; b.bias = wl.bias; b.y = y; b.w_scale = wl.scale; b.x_scale = I.xscale; b.bias_f32 = wl.bias_f32;
    return l.bind(b, I.gemm_ws);
  };
  WS_RETURN_IF_ERROR(bind(*I.l_qkv, I.n1, weights.attn1_qkv, I.qkv));
  WS_RETURN_IF_ERROR(bind(*I.l_o1, I.ao, weights.attn1_out, I.proj1));
  WS_RETURN_IF_ERROR(bind(*I.l_q2, io.x, weights.attn2_q, I.q2));
  WS_RETURN_IF_ERROR(bind(*I.l_kv2, io.enc, weights.attn2_kv, I.kv2));
  WS_RETURN_IF_ERROR(bind(*I.l_o2, I.ao, weights.attn2_out, I.proj2));
  WS_RETURN_IF_ERROR(bind(*I.l_f0, I.n2, weights.ff0, I.ffh));
  WS_RETURN_IF_ERROR(bind(*I.l_f2, I.ffh, weights.ff2, I.ffo));
  auto* qkv = static_cast<__nv_bfloat16*>(I.qkv);
  auto* kv2 = static_cast<__nv_bfloat16*>(I.kv2);
  if (I.s1) WS_RETURN_IF_ERROR(I.s1->bind(qkv, qkv + d, qkv + 2 * d, I.ao, nullptr, I.sdpa_ws));
  if (I.s2) WS_RETURN_IF_ERROR(I.s2->bind(I.q2, kv2, kv2 + d, I.ao, geo.mask ? io.enc_bias : nullptr, I.sdpa_ws));

  // ---- the stage list ----
  Impl* P = impl.get();
  const double Md = (double)M, MTd = (double)MT, D = d, DC = dc, FF = ff;
  const double S = geo.tokens, T = geo.text_tokens, B = geo.batch;
  const float scale = 1.f / std::sqrt((float)cfg.head_dim);
  auto add = [&](std::string name, double flops, std::function<Status(cudaStream_t)> op, int linear = -1) {
    I.stages.push_back({std::move(name), flops, linear});
    I.ops.push_back(std::move(op));
  };
  auto quant = [P, int8](const char* name, const void* x, int64_t rows, int cols) {
    return std::make_pair(std::string(name),
                          std::function<Status(cudaStream_t)>([P, x, rows, cols, int8](cudaStream_t s) {
                            if (int8) return ltx::quantize_rows_s8(x, cols, P->xq, P->xscale, (int)rows, cols, s);
                            return ltx::quantize_rows_e4m3(x, cols, P->xq, P->xscale, (int)rows, cols, s);
                          }));
  };
  auto add_linear = [&](const char* qname, const void* x, int64_t rows, int cols, LtLinear* l, const char* name,
                        double flops, int linear) {
    if (quantized) {
      auto q = quant(qname, x, rows, cols);
      add(q.first, 0, q.second);
    }
    add(name, flops, [l](cudaStream_t s) { return l->enqueue(s); }, linear);
  };
  add("norm1+modulate", 0, [P](cudaStream_t s) {
    const kernels::AdaLnTable mod = P->mod();
    return kernels::rms_norm_modulate(P->x(), static_cast<__nv_bfloat16*>(P->n1), P->rows(), P->cfg.dim(),
                                      P->cfg.norm_eps, mod, kernels::kShiftMsa, kernels::kScaleMsa, s);
  });
  add_linear("attn1.quantize", I.n1, M, d, I.l_qkv.get(), "attn1.to_qkv", 2 * Md * 3 * D * D, 0);
  add("attn1.norm_qk+rope", 0, [P, d](cudaStream_t s) {
    auto* base = static_cast<__nv_bfloat16*>(P->qkv);
    const int rows = P->geo.batch * P->geo.tokens;
    const float* c = P->geo.rope ? P->io.rope_cos : nullptr;
    const float* sn = P->geo.rope ? P->io.rope_sin : nullptr;
    WS_RETURN_IF_ERROR(ltx::qk_norm_rope(base, 3 * d, P->w->attn1_norm_q, c, sn, rows, P->geo.tokens, d,
                                         P->cfg.qk_norm_eps, s));
    return ltx::qk_norm_rope(base + d, 3 * d, P->w->attn1_norm_k, c, sn, rows, P->geo.tokens, d, P->cfg.qk_norm_eps, s);
  });
  add("attn1.sdpa", 4 * B * cfg.heads * S * S * cfg.head_dim, [P, d, scale](cudaStream_t s) {
    if (P->s1) return P->s1->enqueue(s);
    auto* base = static_cast<const __nv_bfloat16*>(P->qkv);
    return ltx::sdpa_fallback(base, 3 * d, base + d, 3 * d, base + 2 * d, 3 * d, P->ao, d, nullptr, P->geo.batch,
                              P->cfg.heads, P->cfg.head_dim, P->geo.tokens, P->geo.tokens, scale, s);
  });
  add_linear("attn1.out.quantize", I.ao, M, d, I.l_o1.get(), "attn1.to_out.0", 2 * Md * D * D, 1);
  add("attn1.gated_residual", 0, [P](cudaStream_t s) {
    const kernels::AdaLnTable mod = P->mod();
    return kernels::gated_residual_add(P->x(), static_cast<const __nv_bfloat16*>(P->proj1), nullptr, P->rows(),
                                       P->cfg.dim(), &mod, kernels::kGateMsa, s);
  });
  add_linear("attn2.q.quantize", io.x, M, d, I.l_q2.get(), "attn2.to_q", 2 * Md * D * D, 2);
  add_linear("attn2.kv.quantize", io.enc, MT, dc, I.l_kv2.get(), "attn2.to_kv", 2 * MTd * 2 * D * DC, 3);
  add("attn2.norm_qk", 0, [P, d](cudaStream_t s) {
    const int rows = P->geo.batch * P->geo.tokens, trows = P->geo.batch * P->geo.text_tokens;
    WS_RETURN_IF_ERROR(ltx::qk_norm_rope(P->q2, d, P->w->attn2_norm_q, nullptr, nullptr, rows, P->geo.tokens, d,
                                         P->cfg.qk_norm_eps, s));
    return ltx::qk_norm_rope(P->kv2, 2 * d, P->w->attn2_norm_k, nullptr, nullptr, trows, P->geo.text_tokens, d,
                             P->cfg.qk_norm_eps, s);
  });
  add("attn2.sdpa", 4 * B * cfg.heads * S * T * cfg.head_dim, [P, d, scale](cudaStream_t s) {
    if (P->s2) return P->s2->enqueue(s);
    auto* kv = static_cast<const __nv_bfloat16*>(P->kv2);
    return ltx::sdpa_fallback(P->q2, d, kv, 2 * d, kv + d, 2 * d, P->ao, d, P->geo.mask ? P->io.enc_bias : nullptr,
                              P->geo.batch, P->cfg.heads, P->cfg.head_dim, P->geo.tokens, P->geo.text_tokens, scale,
                              s);
  });
  add_linear("attn2.out.quantize", I.ao, M, d, I.l_o2.get(), "attn2.to_out.0", 2 * Md * D * D, 4);
  // attn2's plain residual add fused with norm2 + modulation (one pass over x).
  add("attn2.residual+norm2+modulate", 0, [P](cudaStream_t s) {
    const kernels::AdaLnTable mod = P->mod();
    return kernels::gated_residual_add(P->x(), static_cast<const __nv_bfloat16*>(P->proj2), nullptr, P->rows(),
                                       P->cfg.dim(), nullptr, 0, s, static_cast<__nv_bfloat16*>(P->n2),
                                       P->cfg.norm_eps, &mod, kernels::kShiftMlp, kernels::kScaleMlp);
  });
  add_linear("ff.0.quantize", I.n2, M, d, I.l_f0.get(), "ff.net.0.proj+gelu", 2 * Md * FF * D, 5);
  add_linear("ff.2.quantize", I.ffh, M, ff, I.l_f2.get(), "ff.net.2", 2 * Md * D * FF, 6);
  add("ff.gated_residual", 0, [P](cudaStream_t s) {
    const kernels::AdaLnTable mod = P->mod();
    return kernels::gated_residual_add(P->x(), static_cast<const __nv_bfloat16*>(P->ffo), nullptr, P->rows(),
                                       P->cfg.dim(), &mod, kernels::kGateMlp, s);
  });
  return std::unique_ptr<LtxBlock>(new LtxBlock(std::move(impl)));
}

Status LtxBlock::enqueue(cudaStream_t stream) {
  for (size_t i = 0; i < impl_->ops.size(); ++i) {
    Status st = impl_->ops[i](stream);
    if (!st.is_ok()) return Status(st.code(), "LTX block stage '" + impl_->stages[i].name + "': " + st.message());
  }
  return Status::ok();
}

Status LtxBlock::enqueue_stage(size_t index, cudaStream_t stream) {
  if (index >= impl_->ops.size()) return invalid_argument("LTX block: stage index " + std::to_string(index));
  Status st = impl_->ops[index](stream);
  if (!st.is_ok()) return Status(st.code(), "LTX block stage '" + impl_->stages[index].name + "': " + st.message());
  return st;
}

const std::vector<LtxBlock::Stage>& LtxBlock::stages() const { return impl_->stages; }
const std::string& LtxBlock::attn1_backend() const { return impl_->b1; }
const std::string& LtxBlock::attn2_backend() const { return impl_->b2; }
size_t LtxBlock::device_bytes() const { return impl_->bytes; }
size_t LtxBlock::arena_used_bytes() const { return impl_->used; }

std::vector<std::string> LtxBlock::linear_report() const {
  std::vector<std::string> out;
  for (const LtLinear* l : {impl_->l_qkv.get(), impl_->l_o1.get(), impl_->l_q2.get(), impl_->l_kv2.get(),
                            impl_->l_o2.get(), impl_->l_f0.get(), impl_->l_f2.get()}) {
    const LinearShape& s = l->shape();
    out.push_back("M " + std::to_string(s.m) + " N " + std::to_string(s.n) + " K " + std::to_string(s.k) + ": " +
                  l->scaling_mode());
  }
  return out;
}

LtxBlockIntermediates LtxBlock::intermediates() const {
  LtxBlockIntermediates r;
  const int d = impl_->cfg.dim();
  r.norm1 = impl_->n1;
  r.q_rope = impl_->qkv;
  r.q_rope_ld = 3 * d;
  r.k_rope = static_cast<const __nv_bfloat16*>(impl_->qkv) + d;
  r.attn1 = impl_->proj1;
  r.attn2 = impl_->proj2;
  r.norm2 = impl_->n2;
  r.ff = impl_->ffo;
  return r;
}

LtxBlock::LtxBlock(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LtxBlock::~LtxBlock() = default;

}  // namespace ws::flow
