// The whole LTX-Video transformer on the GPU (see ltx_model.h for the math, placements and contracts).
#include "flow/models/ltx_model.h"

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <set>
#include <thread>
#include <utility>

#include "cuda/cuda_util.h"
#include "flow/models/ltx_dequant.h"
#include "flow/models/ltx_linear.h"
#include "flow/models/ltx_model_kernels.h"
#include "flow/host/stream_plan.h"
#include "flow/streamer.h"
#include "kernels/transformer/transformer.h"
#include "reference/transformer.h"
#include "warpstream/shape.h"

namespace ws::flow {
namespace {

constexpr uint64_t kAlign = 256;
constexpr int kTimestepChannels = 256;  // diffusers Timesteps(num_channels=256), fixed
constexpr float kNormOutEps = 1e-6f;    // norm_out = LayerNorm(D, eps=1e-6, elementwise_affine=False)

uint64_t align_up(uint64_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

std::string bytes_str(uint64_t b) { return format_bytes(b) + " (" + std::to_string(b) + " B)"; }

uint16_t f32_to_bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

// One host tensor read through the source, shape-checked. fp8 / int8 (with per-channel scales) only where
// `quantized_ok` (the blocks' linear weights); elsewhere the model reads float32 / bf16.
Result<LtxHostTensor> fetch(const LtxTensorSource& src, const std::string& name, const std::vector<int64_t>& shape,
                            bool quantized_ok = false) {
  Result<LtxHostTensor> r = src(name);
  if (!r.is_ok()) return r.status();
  const LtxHostTensor& t = r.value();
  if (t.shape != shape)
    return invalid_model("LTX model: tensor '" + name + "' in " + t.file + " has shape " + shape_str(t.shape) +
                         ", the config needs " + shape_str(shape));
  if (t.data == nullptr) return invalid_model("LTX model: tensor '" + name + "' in " + t.file + " has no data");
  const bool q = t.type == LtxHostTensor::Type::kF8E4M3 || t.type == LtxHostTensor::Type::kS8;
  if (q && !quantized_ok)
    return unsupported("LTX model: tensor '" + name + "' in " + t.file +
                       " is fp8/int8: only the blocks' linear weights may be 8-bit (norms, tables, biases and the "
                       "non-block tensors are read as bf16/float32)");
  if (q && (t.scale == nullptr || shape.size() != 2))
    return invalid_model("LTX model: 8-bit tensor '" + name + "' in " + t.file +
                         " comes without its per-output-channel scales");
  return r;
}

float bf16_bits_to_f32(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
float fp8_to_f32(uint8_t b) {
  __nv_fp8_e4m3 v;
  v.__x = b;
  return static_cast<float>(v);
}
// Element i of a (row-scaled, for 8-bit) host tensor as float.
float host_value(const LtxHostTensor& t, size_t i, size_t cols) {
  switch (t.type) {
    case LtxHostTensor::Type::kF32: return static_cast<const float*>(t.data)[i];
    case LtxHostTensor::Type::kBF16: return bf16_bits_to_f32(static_cast<const uint16_t*>(t.data)[i]);
    case LtxHostTensor::Type::kS8: return static_cast<float>(static_cast<const int8_t*>(t.data)[i]) * t.scale[i / cols];
    case LtxHostTensor::Type::kF8E4M3: return fp8_to_f32(static_cast<const uint8_t*>(t.data)[i]) * t.scale[i / cols];
  }
  return 0.f;
}

// Writes `count` values of t (from element `first`) as bf16 at dst (8-bit rows of `cols` dequantised: the
// device dequant's formula, bf16_rn(float(q) * scale)).
void write_bf16(const LtxHostTensor& t, size_t first, size_t count, uint8_t* dst, size_t cols = 1) {
  auto* d = reinterpret_cast<uint16_t*>(dst);
  if (t.type == LtxHostTensor::Type::kBF16) {
    std::memcpy(d, static_cast<const uint16_t*>(t.data) + first, count * 2);
    return;
  }
  for (size_t i = 0; i < count; ++i) d[i] = f32_to_bf16_bits(host_value(t, first + i, cols));
}

// Writes a [rows, cols] linear weight as 8-bit codes + per-row float32 scales: a tensor already in `fp8`'s format
// keeps its codes and scales; others are quantized per output channel (absmax / 448 -> e4m3 RNE saturating, or
// absmax / 127 -> int8 round half even, clamp 127), as the WeightStore and the GPU block do.
void write_8bit(const LtxHostTensor& t, size_t rows, size_t cols, bool fp8, uint8_t* codes, float* scales) {
  const bool same = fp8 ? t.type == LtxHostTensor::Type::kF8E4M3 : t.type == LtxHostTensor::Type::kS8;
  if (same) {
    std::memcpy(codes, t.data, rows * cols);
    std::memcpy(scales, t.scale, rows * 4);
    return;
  }
  std::vector<float> row(cols);
  for (size_t r = 0; r < rows; ++r) {
    float amax = 0.f;
    for (size_t c = 0; c < cols; ++c) {
      row[c] = host_value(t, r * cols + c, cols);
      amax = std::max(amax, std::fabs(row[c]));
    }
    const float s = amax > 0.f ? amax / (fp8 ? 448.f : 127.f) : 1.f;
    scales[r] = s;
    uint8_t* dst = codes + r * cols;
    for (size_t c = 0; c < cols; ++c) {
      if (fp8) {
        __nv_fp8_e4m3 q(row[c] / s);
        dst[c] = q.__x;
      } else {
        const float q = std::nearbyint(row[c] / s);
        dst[c] = static_cast<uint8_t>(static_cast<int8_t>(std::min(127.f, std::max(-127.f, q))));
      }
    }
  }
}

size_t elems(const std::vector<int64_t>& shape) {
  size_t n = 1;
  for (int64_t v : shape) n *= static_cast<size_t>(v);
  return n;
}

// ---- the block image: the device layout LtxBlock binds to (bf16; fused attn1 q/k/v and attn2 k/v) ----
struct LinearSlot {
  uint64_t w = 0, b = 0;
  uint64_t scale = 0;  // 8-bit layouts: float32 [out]
  int out = 0, in = 0;
  std::vector<std::string> parts;  // block-relative names of the stacked parts
};
struct BlockLayout {
  int d = 0, dc = 0, ff = 0;
  int weight_format = 0;  // 0 bf16, 1 fp8 e4m3 codes, 2 int8 codes (+ scales)
  uint64_t sst = 0, n1q = 0, n1k = 0, n2q = 0, n2k = 0;
  LinearSlot qkv, o1, q2, kv2, o2, f0, f2;
  uint64_t bytes = 0;
};

// weight_format 0: the bf16 image (the layout LtxBlock binds to; zero-copy from a WeightStore). 1 / 2: the 8-bit
// streamed image: the same order, each linear's weight as 1-byte codes followed by its float32 scales, then its bf16
// bias; the bf16 pieces (table, norms) sit at the same offsets as in the bf16 image.
BlockLayout make_block_layout(int d, int dc, int ff, int weight_format = 0) {
  BlockLayout L;
  L.d = d; L.dc = dc; L.ff = ff;
  L.weight_format = weight_format;
  uint64_t off = 0;
  auto take_bytes = [&](uint64_t n) {
    uint64_t o = off;
    off = align_up(off + n);
    return o;
  };
  auto take = [&](uint64_t n_elems) { return take_bytes(n_elems * 2); };
  L.sst = take(6ull * d);
  L.n1q = take(d); L.n1k = take(d); L.n2q = take(d); L.n2k = take(d);
  auto lin = [&](LinearSlot& s, std::vector<std::string> parts, int out_each, int in) {
    s.parts = std::move(parts);
    s.out = out_each * static_cast<int>(s.parts.size());
    s.in = in;
    if (weight_format == 0) {
      s.w = take(static_cast<uint64_t>(s.out) * in);
    } else {
      s.w = take_bytes(static_cast<uint64_t>(s.out) * in);
      s.scale = take_bytes(static_cast<uint64_t>(s.out) * 4);
    }
    s.b = take(static_cast<uint64_t>(s.out));
  };
  lin(L.qkv, {"attn1.to_q", "attn1.to_k", "attn1.to_v"}, d, d);
  lin(L.o1, {"attn1.to_out.0"}, d, d);
  lin(L.q2, {"attn2.to_q"}, d, d);
  lin(L.kv2, {"attn2.to_k", "attn2.to_v"}, d, dc);
  lin(L.o2, {"attn2.to_out.0"}, d, d);
  lin(L.f0, {"ff.net.0.proj"}, ff, d);
  lin(L.f2, {"ff.net.2"}, d, ff);
  L.bytes = off;
  return L;
}

// The per-linear staging layout (LtxStaging::kLinear): the bf16 image's table + norms prefix at the same offsets, then
// the seven biases, then ONE weight scratch the size of the largest linear that every linear's weight points at
// (each is dequantised into it right before its GEMM).
BlockLayout make_linear_staging_layout(const BlockLayout& b) {
  BlockLayout L = b;
  uint64_t off = align_up(b.n2k + 2ull * static_cast<uint64_t>(b.d));
  uint64_t wmax = 0;
  for (LinearSlot* s : {&L.qkv, &L.o1, &L.q2, &L.kv2, &L.o2, &L.f0, &L.f2}) {
    s->b = off;
    off = align_up(off + 2ull * static_cast<uint64_t>(s->out));
    wmax = std::max<uint64_t>(wmax, 2ull * static_cast<uint64_t>(s->out) * static_cast<uint64_t>(s->in));
  }
  for (LinearSlot* s : {&L.qkv, &L.o1, &L.q2, &L.kv2, &L.o2, &L.f0, &L.f2}) s->w = off;
  L.bytes = align_up(off + wmax);
  return L;
}

std::unique_ptr<LtxBlockWeights> block_view(const BlockLayout& L, const void* base_ptr) {
  auto w = std::make_unique<LtxBlockWeights>();
  const auto* base = static_cast<const uint8_t*>(base_ptr);
  auto lin = [&](const LinearSlot& s) {
    LtxBlockWeights::Linear l;
    l.w = base + s.w;
    l.bias = base + s.b;
    l.scale = nullptr;
    l.out = s.out;
    l.in = s.in;
    return l;
  };
  w->attn1_qkv = lin(L.qkv); w->attn1_out = lin(L.o1); w->attn2_q = lin(L.q2); w->attn2_kv = lin(L.kv2);
  w->attn2_out = lin(L.o2); w->ff0 = lin(L.f0); w->ff2 = lin(L.f2);
  w->sst = base + L.sst;
  w->attn1_norm_q = base + L.n1q; w->attn1_norm_k = base + L.n1k;
  w->attn2_norm_q = base + L.n2q; w->attn2_norm_k = base + L.n2k;
  w->format = LtxWeightFormat::kBF16;
  return w;
}

// Fills one block image (host, L.bytes, zeroed padding) from the source under `prefix`, in L's weight format;
// dst == nullptr only checks every tensor (presence, shape, dtype) without writing.
Status fill_block_image(const LtxTensorSource& src, const std::string& prefix, const BlockLayout& L, uint8_t* dst) {
  if (dst) std::memset(dst, 0, L.bytes);
  auto vec = [&](const std::string& local, std::vector<int64_t> shape, uint64_t off) -> Status {
    WS_ASSIGN_OR_RETURN(LtxHostTensor t, fetch(src, prefix + local, shape));
    if (dst) write_bf16(t, 0, elems(shape), dst + off);
    return Status::ok();
  };
  WS_RETURN_IF_ERROR(vec("scale_shift_table", {6, L.d}, L.sst));
  WS_RETURN_IF_ERROR(vec("attn1.norm_q.weight", {L.d}, L.n1q));
  WS_RETURN_IF_ERROR(vec("attn1.norm_k.weight", {L.d}, L.n1k));
  WS_RETURN_IF_ERROR(vec("attn2.norm_q.weight", {L.d}, L.n2q));
  WS_RETURN_IF_ERROR(vec("attn2.norm_k.weight", {L.d}, L.n2k));
  for (const LinearSlot* s : {&L.qkv, &L.o1, &L.q2, &L.kv2, &L.o2, &L.f0, &L.f2}) {
    const int out_each = s->out / static_cast<int>(s->parts.size());
    for (size_t k = 0; k < s->parts.size(); ++k) {
      const std::string& p = s->parts[k];
      WS_ASSIGN_OR_RETURN(LtxHostTensor w, fetch(src, prefix + p + ".weight", {out_each, s->in}, true));
      WS_ASSIGN_OR_RETURN(LtxHostTensor b, fetch(src, prefix + p + ".bias", {out_each}));
      if (!dst) continue;
      const uint64_t rows_before = k * static_cast<uint64_t>(out_each);
      if (L.weight_format == 0) {
        write_bf16(w, 0, static_cast<size_t>(out_each) * s->in, dst + s->w + rows_before * s->in * 2,
                   static_cast<size_t>(s->in));
      } else {
        write_8bit(w, static_cast<size_t>(out_each), static_cast<size_t>(s->in), L.weight_format == 1,
                   dst + s->w + rows_before * s->in, reinterpret_cast<float*>(dst + s->scale) + rows_before);
      }
      write_bf16(b, 0, static_cast<size_t>(out_each), dst + s->b + rows_before * 2);
    }
  }
  return Status::ok();
}

// The segments that turn an 8-bit image (q) into the bf16 image (b): the table + norms prefix, each linear's weight
// (dequantised) and bias (copied).
ltx::LtxDequantTable dequant_table(const BlockLayout& q, const BlockLayout& b) {
  using Seg = ltx::LtxDequantSegment;
  ltx::LtxDequantTable t;
  auto add = [&](int32_t kind, uint64_t src, uint64_t dst, uint64_t scale, int64_t rows, int64_t cols) {
    Seg& s = t.seg[t.count++];
    s.kind = kind; s.src = src; s.dst = dst; s.scale = scale; s.rows = rows; s.cols = cols;
  };
  add(Seg::kCopyBf16, 0, 0, 0, 1, static_cast<int64_t>(b.n2k / 2 + static_cast<uint64_t>(b.d)));  // sst .. norm_k
  const int32_t kind = q.weight_format == 1 ? Seg::kFp8E4M3Row : Seg::kInt8Row;
  const LinearSlot* qs[] = {&q.qkv, &q.o1, &q.q2, &q.kv2, &q.o2, &q.f0, &q.f2};
  const LinearSlot* bs[] = {&b.qkv, &b.o1, &b.q2, &b.kv2, &b.o2, &b.f0, &b.f2};
  for (int i = 0; i < 7; ++i) {
    add(kind, qs[i]->w, bs[i]->w, qs[i]->scale, qs[i]->out, qs[i]->in);
    add(Seg::kCopyBf16, qs[i]->b, bs[i]->b, 0, 1, qs[i]->out);
  }
  return t;
}

// Per-linear staging (q: the 8-bit image, b: make_linear_staging_layout): `prefix` copies the table + norms and the
// seven biases once per block; linear[i] dequantises linear i's weight into the shared scratch.
struct LinearDequantTables {
  ltx::LtxDequantTable prefix;
  ltx::LtxDequantTable linear[7];
};
LinearDequantTables linear_dequant_tables(const BlockLayout& q, const BlockLayout& b) {
  using Seg = ltx::LtxDequantSegment;
  LinearDequantTables t;
  auto add = [](ltx::LtxDequantTable& tb, int32_t kind, uint64_t src, uint64_t dst, uint64_t scale, int64_t rows, int64_t cols) {
    Seg& s = tb.seg[tb.count++];
    s.kind = kind; s.src = src; s.dst = dst; s.scale = scale; s.rows = rows; s.cols = cols;
  };
  add(t.prefix, Seg::kCopyBf16, 0, 0, 0, 1, static_cast<int64_t>(b.n2k / 2 + static_cast<uint64_t>(b.d)));
  const int32_t kind = q.weight_format == 1 ? Seg::kFp8E4M3Row : Seg::kInt8Row;
  const LinearSlot* qs[] = {&q.qkv, &q.o1, &q.q2, &q.kv2, &q.o2, &q.f0, &q.f2};
  const LinearSlot* bs[] = {&b.qkv, &b.o1, &b.q2, &b.kv2, &b.o2, &b.f0, &b.f2};
  for (int i = 0; i < 7; ++i) {
    add(t.prefix, Seg::kCopyBf16, qs[i]->b, bs[i]->b, 0, 1, qs[i]->out);
    add(t.linear[i], kind, qs[i]->w, bs[i]->w, qs[i]->scale, qs[i]->out, qs[i]->in);
  }
  return t;
}

// The host twin of the dequant kernel (same segments, same formula: bf16_rn(float(code) * scale)).
void dequant_image_host(const ltx::LtxDequantTable& t, const uint8_t* src, uint8_t* dst) {
  for (int i = 0; i < t.count; ++i) {
    const ltx::LtxDequantSegment& s = t.seg[i];
    const size_t n = static_cast<size_t>(s.rows * s.cols);
    if (s.kind == ltx::LtxDequantSegment::kCopyBf16) {
      std::memcpy(dst + s.dst, src + s.src, n * 2);
      continue;
    }
    const float* scale = reinterpret_cast<const float*>(src + s.scale);
    auto* out = reinterpret_cast<uint16_t*>(dst + s.dst);
    for (size_t e = 0; e < n; ++e) {
      const uint8_t c = src[s.src + e];
      const float v = s.kind == ltx::LtxDequantSegment::kFp8E4M3Row ? fp8_to_f32(c)
                                                                    : static_cast<float>(static_cast<int8_t>(c));
      out[e] = f32_to_bf16_bits(v * scale[e / static_cast<size_t>(s.cols)]);
    }
  }
}

// ---- the non-block (resident) weights ----
struct HeadLayout {
  struct Lin {
    std::string name;
    int out = 0, in = 0;
    uint64_t w = 0, b = 0;
  };
  Lin proj_in, t1, t2, tl, c1, c2, proj_out;
  uint64_t sst = 0;
  uint64_t bytes = 0;
};

HeadLayout make_head_layout(const LtxConfig& c) {
  HeadLayout H;
  const int d = static_cast<int>(c.inner_dim());
  uint64_t off = 0;
  auto take = [&](uint64_t n) {
    uint64_t o = off;
    off = align_up(off + n * 2);
    return o;
  };
  auto lin = [&](HeadLayout::Lin& l, std::string name, int out, int in) {
    l.name = std::move(name); l.out = out; l.in = in;
    l.w = take(static_cast<uint64_t>(out) * in);
    l.b = take(static_cast<uint64_t>(out));
  };
  lin(H.proj_in, "proj_in", d, static_cast<int>(c.in_channels));
  H.sst = take(2ull * d);
  lin(H.t1, "time_embed.emb.timestep_embedder.linear_1", d, kTimestepChannels);
  lin(H.t2, "time_embed.emb.timestep_embedder.linear_2", d, d);
  lin(H.tl, "time_embed.linear", 6 * d, d);
  lin(H.c1, "caption_projection.linear_1", d, static_cast<int>(c.caption_channels));
  lin(H.c2, "caption_projection.linear_2", d, d);
  lin(H.proj_out, "proj_out", static_cast<int>(c.out_channels), d);
  H.bytes = off;
  return H;
}

Status validate_config(const LtxConfig& c) {
  const int64_t d = c.inner_dim();
  if (c.patch_size != 1 || c.patch_size_t != 1)
    return unsupported("LTX model: patch_size " + std::to_string(c.patch_size) + " / patch_size_t " +
                       std::to_string(c.patch_size_t) + " (only 1 / 1: packed latents)");
  if (c.cross_attention_dim != d)
    return invalid_model("LTX model: cross_attention_dim " + std::to_string(c.cross_attention_dim) +
                         " != inner dim " + std::to_string(d) + " (the caption projection maps to the inner dim)");
  if (d > (1 << 16) || c.num_layers > 4096)
    return invalid_model("LTX model: inner dim " + std::to_string(d) + " / num_layers " + std::to_string(c.num_layers) +
                         " out of range");
  return Status::ok();
}

// Host threads that build block images at once: 8-bit images quantize every weight on the host (~10 ns each, ~19 s
// for the 2B model on one core), so they are built in parallel (the tensor sources only read). bf16: one thread.
int build_workers(int layers, bool quantize) {
  if (!quantize) return 1;
  const unsigned hc = std::thread::hardware_concurrency();
  return std::max(1, std::min({layers, 8, static_cast<int>(hc == 0 ? 1 : hc)}));
}

// Runs fn(0) .. fn(n-1) on n threads (inline when n == 1); the first error in index order wins.
Status parallel_blocks(int n, const std::function<Status(int)>& fn) {
  if (n <= 1) return n == 1 ? fn(0) : Status::ok();
  std::vector<Status> st(static_cast<size_t>(n), Status::ok());
  std::vector<std::thread> th;
  th.reserve(static_cast<size_t>(n));
  for (int t = 0; t < n; ++t) th.emplace_back([&, t] { st[static_cast<size_t>(t)] = fn(t); });
  for (auto& x : th) x.join();
  for (auto& x : st)
    if (!x.is_ok()) return x;
  return Status::ok();
}

Status validate_geometry(const LtxModelGeometry& geo) {
  if (geo.batch < 1 || geo.batch > 64 || geo.frames < 1 || geo.height < 1 || geo.width < 1 || geo.text_tokens < 1 ||
      static_cast<int64_t>(geo.frames) * geo.height * geo.width > (1 << 22))
    return invalid_argument("LTX model: batch " + std::to_string(geo.batch) + ", grid " + std::to_string(geo.frames) +
                            "x" + std::to_string(geo.height) + "x" + std::to_string(geo.width) + ", text tokens " +
                            std::to_string(geo.text_tokens) + " (batch 1..64, grid and T >= 1, S <= 2^22)");
  return Status::ok();
}

int weight_format_of(LtxStreamWeights w) {
  return w == LtxStreamWeights::kFP8 ? 1 : w == LtxStreamWeights::kINT8 ? 2 : 0;
}

LtxBlockConfig block_config(const LtxConfig& config) {
  LtxBlockConfig bc;
  bc.heads = static_cast<int>(config.num_attention_heads);
  bc.head_dim = static_cast<int>(config.attention_head_dim);
  bc.cross_dim = static_cast<int>(config.cross_attention_dim);
  bc.ff_dim = static_cast<int>(config.ff_inner_dim());
  bc.norm_eps = config.norm_eps;
  return bc;
}

LtxBlockGeometry block_geometry(const LtxModelGeometry& geo) {
  LtxBlockGeometry bg;
  bg.batch = geo.batch;
  bg.tokens = geo.tokens();
  bg.text_tokens = geo.text_tokens;
  bg.temb_rows = geo.per_token_timestep ? geo.tokens() : 1;
  bg.mask = geo.mask;
  bg.rope = true;
  return bg;
}

// Bytes of the model's own buffers, in the order build_impl carves them: hidden_in, enc_in, timestep, mask,
// mask_bias, x, tproj, t1, t1s, emb, embs, temb, c1, enc, nout, out, rope cos, rope sin, GEMM workspace.
std::vector<uint64_t> model_buffer_sizes(const LtxConfig& c, const LtxModelGeometry& geo, uint64_t ws_bytes) {
  const uint64_t d = static_cast<uint64_t>(c.inner_dim()), S = static_cast<uint64_t>(geo.tokens());
  const uint64_t M = static_cast<uint64_t>(geo.batch) * S, MT = static_cast<uint64_t>(geo.batch) * geo.text_tokens;
  const uint64_t R = geo.per_token_timestep ? M : static_cast<uint64_t>(geo.batch);
  return {M * static_cast<uint64_t>(c.in_channels) * 2, MT * static_cast<uint64_t>(c.caption_channels) * 2, R * 4,
          geo.mask ? MT * 4 : 0, geo.mask ? MT * 2 : 0, M * d * 2,
          R * 2 * kTimestepChannels, R * 2 * d, R * 2 * d,
          R * 2 * d, R * 2 * d, R * 12 * d, MT * 2 * d,
          MT * 2 * d, M * 2 * d, M * 2 * static_cast<uint64_t>(c.out_channels),
          S * d * 4, S * d * 4, ws_bytes};
}

}  // namespace

const char* ltx_stream_weights_name(LtxStreamWeights w) {
  switch (w) {
    case LtxStreamWeights::kBF16: return "bf16";
    case LtxStreamWeights::kFP8: return "fp8";
    case LtxStreamWeights::kINT8: return "int8";
  }
  return "?";
}

Result<LtxStreamWeights> parse_ltx_stream_weights(const std::string& text) {
  if (text == "bf16") return LtxStreamWeights::kBF16;
  if (text == "fp8" || text == "fp8e4m3") return LtxStreamWeights::kFP8;
  if (text == "int8") return LtxStreamWeights::kINT8;
  return invalid_argument("LTX model: stream weights '" + text + "' (bf16, fp8 or int8)");
}

// ---------------------------------------------------------------------------------------------------------------

struct LtxModel::Impl {
  LtxConfig cfg;
  LtxModelGeometry geo;
  LtxModelOptions opt;
  BlockLayout bl;   // bf16 block image (resident blocks, staging)
  BlockLayout ql;   // 8-bit streamed image (stream_weights fp8/int8)
  bool eight_bit_stream = false;
  ltx::LtxDequantTable dq;
  bool per_linear = false;  // 8-bit streamed with LtxStaging resolved to kLinear
  BlockLayout sl;           // per-linear staging layout (make_linear_staging_layout)
  LinearDequantTables ldq;
  cuda::DeviceBuffer staging;       // 8-bit streamed: the bf16 image the one block instance reads
  cuda::DeviceBuffer block_arena;   // the ONE activation arena every block instance shares
  HeadLayout hl;
  int d = 0, S = 0, T = 0, B = 0, R = 0;  // R = rows of the time embedding (B or B*S)
  LtHandle lt;
  cuda::DeviceBuffer head_weights;    // non-block weights
  cuda::DeviceBuffer block_weights;   // resident: L block images
  cuda::PinnedBuffer host_blocks;     // streamed: the one pinned image of all blocks (repack path)
  void* registered = nullptr;         // streamed from a WeightStore: its registered allocation (zero-copy path)
  uint64_t registered_bytes = 0;
  bool zero_copy = false;
  std::string zero_copy_note = "not built from a WeightStore";
  cuda::DeviceBuffer arena;           // model-level activations, inputs, rope tables, GEMM workspace
  std::unique_ptr<Streamer> streamer;
  std::vector<std::unique_ptr<LtxBlockWeights>> views;  // one per block instance (borrowed by the blocks)
  std::vector<std::unique_ptr<LtxBlock>> blocks;        // L (resident) or S (streamed)
  LayerCompute layer_fn;
  std::unique_ptr<LtLinear> l_proj_in, l_t1, l_t2, l_tl, l_c1, l_c2, l_proj_out;
  LtxModelDeviceInputs in;
  void *mask_bias = nullptr, *x = nullptr, *tproj = nullptr, *t1 = nullptr, *t1s = nullptr, *emb = nullptr,
       *embs = nullptr, *temb = nullptr, *c1 = nullptr, *enc = nullptr, *nout = nullptr, *out = nullptr;
  float *rope_cos = nullptr, *rope_sin = nullptr;
  void* gemm_ws = nullptr;
  uint64_t arena_bytes = 0;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t graph_exec = nullptr;

  ~Impl() {
    // Nothing may still read the ring, the pinned image or the arena when they are freed (not a steady-state path).
    (void)cudaDeviceSynchronize();
    if (registered) (void)cudaHostUnregister(registered);
    if (graph_exec) cudaGraphExecDestroy(graph_exec);
    if (graph) cudaGraphDestroy(graph);
    // Blocks before their weight views; the streamer (ring) after the blocks that read it.
    blocks.clear();
    views.clear();
  }
};

Result<LtxModelFootprint> LtxModel::footprint(const LtxConfig& config) {
  WS_RETURN_IF_ERROR(validate_config(config));
  const int d = static_cast<int>(config.inner_dim());
  LtxModelFootprint f;
  f.resident_weight_bytes = align_up(make_head_layout(config).bytes);
  f.block_bytes = make_block_layout(d, static_cast<int>(config.cross_attention_dim),
                                    static_cast<int>(config.ff_inner_dim())).bytes;
  f.bf16_block_bytes = f.block_bytes;
  f.layers = static_cast<int>(config.num_layers);
  return f;
}

Result<LtxModelFootprint> LtxModel::footprint(const LtxConfig& config, const LtxModelGeometry& geo,
                                              const LtxModelOptions& options) {
  WS_ASSIGN_OR_RETURN(LtxModelFootprint f, footprint(config));
  WS_RETURN_IF_ERROR(validate_geometry(geo));
  const int fmt = weight_format_of(options.stream_weights);
  if (fmt != 0)
    f.block_bytes = make_block_layout(static_cast<int>(config.inner_dim()), static_cast<int>(config.cross_attention_dim),
                                      static_cast<int>(config.ff_inner_dim()), fmt).bytes;
  f.staging_bytes = fmt != 0 ? f.bf16_block_bytes : 0;
  for (uint64_t b : model_buffer_sizes(config, geo, options.block.gemm_workspace_bytes)) f.model_activation_bytes += align_up(b);
  LtxBlockOptions bo = options.block;
  bo.arena = nullptr;
  bo.arena_bytes = 0;
  WS_ASSIGN_OR_RETURN(size_t arena, LtxBlock::arena_bytes(block_config(config), block_geometry(geo),
                                                          LtxWeightFormat::kBF16, bo));
  f.block_arena_bytes = align_up(arena);
  // 8-bit streamed: per-linear staging when asked, or (kAuto) when the whole-block staging image does not fit the
  // budget with the 2 smallest ring slots.
  if (fmt != 0 && options.vram_budget_bytes > 0 &&
      (options.staging == LtxStaging::kLinear ||
       (options.staging == LtxStaging::kAuto && options.vram_budget_bytes < f.min_streamed_budget()))) {
    f.per_linear_staging = true;
    f.staging_bytes = make_linear_staging_layout(make_block_layout(static_cast<int>(config.inner_dim()),
                                                                   static_cast<int>(config.cross_attention_dim),
                                                                   static_cast<int>(config.ff_inner_dim())))
                          .bytes;
  }
  return f;
}

namespace {
// Where each block image lies inside a WeightStore allocation, when the store can be streamed from directly.
struct StoreImages {
  const WeightStore* store = nullptr;
  std::vector<uint64_t> block_offsets;  // [L] offset of block i's image in store.storage()
};
}  // namespace

static Result<std::unique_ptr<LtxModel::Impl>> build_impl(const LtxConfig& config, const LtxTensorSource& source,
                                                          const LtxModelGeometry& geo, const LtxModelOptions& options,
                                                          const StoreImages* images, std::string note);

Result<std::unique_ptr<LtxModel>> LtxModel::build(const LtxConfig& config, const LtxTensorSource& source,
                                                  const LtxModelGeometry& geo, const LtxModelOptions& options) {
  WS_ASSIGN_OR_RETURN(std::unique_ptr<Impl> impl, build_impl(config, source, geo, options, nullptr,
                                                             "not built from a WeightStore"));
  return std::unique_ptr<LtxModel>(new LtxModel(std::move(impl)));
}

std::vector<std::string> LtxModel::store_tensor_order(const LtxConfig& config) {
  std::vector<std::string> n;
  const HeadLayout hl = make_head_layout(config);
  for (const HeadLayout::Lin* l : {&hl.proj_in, &hl.t1, &hl.t2, &hl.tl, &hl.c1, &hl.c2, &hl.proj_out}) {
    n.push_back(l->name + ".weight");
    n.push_back(l->name + ".bias");
  }
  n.push_back("scale_shift_table");
  const BlockLayout bl = make_block_layout(static_cast<int>(config.inner_dim()),
                                           static_cast<int>(config.cross_attention_dim),
                                           static_cast<int>(config.ff_inner_dim()));
  for (int64_t i = 0; i < config.num_layers; ++i) {
    const std::string p = "transformer_blocks." + std::to_string(i) + ".";
    for (const char* v : {"scale_shift_table", "attn1.norm_q.weight", "attn1.norm_k.weight", "attn2.norm_q.weight",
                          "attn2.norm_k.weight"})
      n.push_back(p + v);
    for (const LinearSlot* s : {&bl.qkv, &bl.o1, &bl.q2, &bl.kv2, &bl.o2, &bl.f0, &bl.f2}) {
      for (const auto& part : s->parts) n.push_back(p + part + ".weight");
      for (const auto& part : s->parts) n.push_back(p + part + ".bias");
    }
  }
  return n;
}

std::vector<std::string> LtxModel::unused_tensors(const LtxConfig& config, const io::SafetensorsCheckpoint& ckpt) {
  const std::vector<std::string> order = store_tensor_order(config);
  const std::set<std::string> used(order.begin(), order.end());
  std::vector<std::string> unused;
  for (const io::CheckpointTensor& t : ckpt.tensors()) {
    const std::string& name = t.tensor->name;
    if (used.count(name)) continue;
    const std::string suffix = ".weight_scale";
    if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0 &&
        used.count(name.substr(0, name.size() - suffix.size()) + ".weight"))
      continue;
    unused.push_back(name);
  }
  std::sort(unused.begin(), unused.end());
  return unused;
}

Status LtxModel::validate_tensors(const LtxConfig& config, const LtxTensorSource& source) {
  WS_RETURN_IF_ERROR(validate_config(config));
  auto expect = [&](const std::string& name, std::vector<int64_t> shape) -> Status {
    WS_ASSIGN_OR_RETURN(LtxHostTensor t, source(name));
    if (t.shape != shape)
      return invalid_model("LTX model: tensor '" + name + "' in " + t.file + " has shape " + shape_string(t.shape) +
                           ", the config needs " + shape_string(shape));
    return Status::ok();
  };
  const HeadLayout hl = make_head_layout(config);
  for (const HeadLayout::Lin* l : {&hl.proj_in, &hl.t1, &hl.t2, &hl.tl, &hl.c1, &hl.c2, &hl.proj_out}) {
    WS_RETURN_IF_ERROR(expect(l->name + ".weight", {l->out, l->in}));
    WS_RETURN_IF_ERROR(expect(l->name + ".bias", {l->out}));
  }
  WS_RETURN_IF_ERROR(expect("scale_shift_table", {2, config.inner_dim()}));
  const LtxBlockConfig bc = block_config(config);
  for (int64_t i = 0; i < config.num_layers; ++i)
    WS_RETURN_IF_ERROR(LtxBlockWeights::validate(source, "transformer_blocks." + std::to_string(i) + ".", bc));
  return Status::ok();
}

Result<std::unique_ptr<LtxModel>> LtxModel::build_from_store(const LtxConfig& config, const WeightStore& store,
                                                             const std::string& file, const LtxModelGeometry& geo,
                                                             const LtxModelOptions& options) {
  WS_RETURN_IF_ERROR(validate_config(config));
  const LtxTensorSource source = [&store, file](const std::string& name) -> Result<LtxHostTensor> {
    const StoredTensor* st = store.find(name);
    if (st == nullptr) return not_found("LTX model: tensor '" + name + "' not found in the weight store of " + file);
    LtxHostTensor t;
    if (st->dtype == ws::DType::kBFloat16) t.type = LtxHostTensor::Type::kBF16;
    else if (st->dtype == ws::DType::kFloat32) t.type = LtxHostTensor::Type::kF32;
    else if (st->dtype == ws::DType::kFloat8E4M3FN) t.type = LtxHostTensor::Type::kF8E4M3;
    else if (st->dtype == ws::DType::kInt8) t.type = LtxHostTensor::Type::kS8;
    else
      return unsupported("LTX model: tensor '" + name + "' in " + file + " has dtype " + ws::dtype_name(st->dtype) +
                         " (the whole-model GPU path reads bf16/float32, and fp8/int8 block linear weights)");
    t.scale = st->scales;
    t.shape.assign(st->shape.begin(), st->shape.end());
    t.data = st->data;
    t.file = file;
    return t;
  };
  // Zero-copy check: every block tensor bf16 and at its layout offset from the block's first tensor.
  const BlockLayout bl = make_block_layout(static_cast<int>(config.inner_dim()),
                                           static_cast<int>(config.cross_attention_dim),
                                           static_cast<int>(config.ff_inner_dim()));
  StoreImages images;
  images.store = &store;
  std::string note = "zero-copy: streaming from the WeightStore's registered allocation";
  bool ok = options.vram_budget_bytes > 0;
  if (!ok) note = "resident: block weights uploaded once from the WeightStore";
  const uint64_t storage = store.storage().size();
  for (int64_t i = 0; ok && i < config.num_layers; ++i) {
    const std::string p = "transformer_blocks." + std::to_string(i) + ".";
    const StoredTensor* first = store.find(p + "scale_shift_table");
    if (first == nullptr) break;  // build_impl reports the missing tensor
    const uint64_t base = first->offset;
    auto at = [&](const std::string& name, uint64_t want) {
      const StoredTensor* st = store.find(p + name);
      if (st == nullptr || st->dtype != ws::DType::kBFloat16 || st->offset != base + want) {
        ok = false;
        note = "repacked into one pinned image: '" + p + name + "' is " +
               (st == nullptr ? std::string("missing")
                              : st->dtype != ws::DType::kBFloat16 ? "not bf16"
                                                                  : "not at its layout offset (load the store with "
                                                                    "LtxModel::store_tensor_order)");
      }
    };
    at("scale_shift_table", bl.sst);
    at("attn1.norm_q.weight", bl.n1q); at("attn1.norm_k.weight", bl.n1k);
    at("attn2.norm_q.weight", bl.n2q); at("attn2.norm_k.weight", bl.n2k);
    for (const LinearSlot* s : {&bl.qkv, &bl.o1, &bl.q2, &bl.kv2, &bl.o2, &bl.f0, &bl.f2}) {
      const uint64_t out_each = static_cast<uint64_t>(s->out) / s->parts.size();
      for (size_t k = 0; ok && k < s->parts.size(); ++k) {
        at(s->parts[k] + ".weight", s->w + k * out_each * static_cast<uint64_t>(s->in) * 2);
        at(s->parts[k] + ".bias", s->b + k * out_each * 2);
      }
    }
    if (ok && base + bl.bytes > storage) {
      ok = false;
      note = "repacked: block " + std::to_string(i) + "'s image would end past the store";
    }
    images.block_offsets.push_back(base);
  }
  WS_ASSIGN_OR_RETURN(std::unique_ptr<Impl> impl,
                      build_impl(config, source, geo, options, ok ? &images : nullptr, note));
  return std::unique_ptr<LtxModel>(new LtxModel(std::move(impl)));
}

static Result<std::unique_ptr<LtxModel::Impl>> build_impl(const LtxConfig& config, const LtxTensorSource& source,
                                                          const LtxModelGeometry& geo, const LtxModelOptions& options,
                                                          const StoreImages* images, std::string note) {
  using Impl = LtxModel::Impl;
  WS_RETURN_IF_ERROR(validate_config(config));
  WS_RETURN_IF_ERROR(validate_geometry(geo));
  if (options.vram_budget_bytes > 0 && options.max_slots < 2)
    return invalid_argument("LTX model: max_slots " + std::to_string(options.max_slots) + " (streaming needs >= 2)");
  auto impl = std::make_unique<Impl>();
  Impl& I = *impl;
  I.zero_copy_note = std::move(note);
  I.cfg = config;
  I.geo = geo;
  I.opt = options;
  I.d = static_cast<int>(config.inner_dim());
  I.S = geo.tokens();
  I.T = geo.text_tokens;
  I.B = geo.batch;
  I.R = geo.per_token_timestep ? I.B * I.S : I.B;
  const int d = I.d, L = static_cast<int>(config.num_layers);
  I.bl = make_block_layout(d, static_cast<int>(config.cross_attention_dim), static_cast<int>(config.ff_inner_dim()));
  I.hl = make_head_layout(config);
  const bool streamed = options.vram_budget_bytes > 0;
  const int wfmt = weight_format_of(options.stream_weights);
  I.ql = make_block_layout(d, static_cast<int>(config.cross_attention_dim), static_cast<int>(config.ff_inner_dim()),
                           wfmt == 0 ? 0 : wfmt);
  I.eight_bit_stream = streamed && wfmt != 0;
  if (wfmt != 0) I.dq = dequant_table(I.ql, I.bl);
  const BlockLayout& slot_layout = I.eight_bit_stream ? I.ql : I.bl;

  // ---- device bytes -> budget -> slots (before any allocation) ----
  WS_ASSIGN_OR_RETURN(LtxModelFootprint fp, LtxModel::footprint(config, geo, options));
  I.per_linear = I.eight_bit_stream && fp.per_linear_staging;
  if (I.per_linear) {
    I.sl = make_linear_staging_layout(I.bl);
    I.ldq = linear_dequant_tables(I.ql, I.sl);
  }
  int slots = 0;
  if (streamed) {
    const int min_slots = std::min(2, L);
    const uint64_t fixed = fp.fixed_bytes();
    const uint64_t needed = fixed + static_cast<uint64_t>(min_slots) * slot_layout.bytes;
    if (options.vram_budget_bytes < needed)
      return resource_exhausted(
          "LTX model: VRAM budget " + bytes_str(options.vram_budget_bytes) + " is too small: needed at least " +
          bytes_str(needed) + " = resident non-block weights " + bytes_str(fp.resident_weight_bytes) +
          " + activations " + bytes_str(fp.model_activation_bytes + fp.block_arena_bytes) + " (model buffers " +
          bytes_str(fp.model_activation_bytes) + " + one shared block arena " + bytes_str(fp.block_arena_bytes) +
          ", batch " + std::to_string(geo.batch) + ", " + std::to_string(geo.tokens()) + " tokens)" +
          (fp.staging_bytes ? std::string(fp.per_linear_staging ? " + per-linear bf16 staging " : " + bf16 staging image ") +
                                  bytes_str(fp.staging_bytes)
                            : std::string()) + " + " +
          std::to_string(min_slots) + " ring slots x " + bytes_str(slot_layout.bytes) + " (one " +
          ltx_stream_weights_name(options.stream_weights) + " block image)");
    const uint64_t fit = (options.vram_budget_bytes - fixed) / slot_layout.bytes;
    slots = static_cast<int>(std::min<uint64_t>({fit, static_cast<uint64_t>(options.max_slots),
                                                  static_cast<uint64_t>(L)}));
  }

  // ---- non-block weights: host staging -> one device buffer ----
  {
    std::vector<uint8_t> st(align_up(I.hl.bytes), 0);
    for (const HeadLayout::Lin* l : {&I.hl.proj_in, &I.hl.t1, &I.hl.t2, &I.hl.tl, &I.hl.c1, &I.hl.c2, &I.hl.proj_out}) {
      WS_ASSIGN_OR_RETURN(LtxHostTensor w, fetch(source, l->name + ".weight", {l->out, l->in}));
      WS_ASSIGN_OR_RETURN(LtxHostTensor b, fetch(source, l->name + ".bias", {l->out}));
      write_bf16(w, 0, static_cast<size_t>(l->out) * l->in, st.data() + l->w);
      write_bf16(b, 0, static_cast<size_t>(l->out), st.data() + l->b);
    }
    WS_ASSIGN_OR_RETURN(LtxHostTensor sst, fetch(source, "scale_shift_table", {2, d}));
    write_bf16(sst, 0, 2ull * d, st.data() + I.hl.sst);
    WS_ASSIGN_OR_RETURN(I.head_weights, cuda::DeviceBuffer::allocate(st.size()));
    WS_RETURN_IF_ERROR(::ws::cuda::copy_to_device(I.head_weights.get(), st.data(), st.size()));
  }

  // ---- model-level arena ----
  const int64_t M = static_cast<int64_t>(I.B) * I.S, MT = static_cast<int64_t>(I.B) * I.T;
  struct Piece { void** ptr; uint64_t bytes; };
  void* hidden_in = nullptr; void* enc_in = nullptr; void* ts = nullptr; void* mask = nullptr;
  void* rc = nullptr; void* rs = nullptr;
  const uint64_t ws_bytes = options.block.gemm_workspace_bytes;
  const std::vector<uint64_t> sizes = model_buffer_sizes(config, geo, ws_bytes);
  void** ptrs[] = {&hidden_in, &enc_in, &ts, &mask, &I.mask_bias, &I.x, &I.tproj, &I.t1, &I.t1s, &I.emb,
                   &I.embs, &I.temb, &I.c1, &I.enc, &I.nout, &I.out, &rc, &rs, &I.gemm_ws};
  static_assert(sizeof(ptrs) / sizeof(ptrs[0]) == 19, "model_buffer_sizes order");
  std::vector<Piece> pieces;
  for (size_t i = 0; i < sizes.size(); ++i) pieces.push_back({ptrs[i], sizes[i]});
  uint64_t total = 0;
  for (const Piece& p : pieces) total += align_up(p.bytes);
  WS_ASSIGN_OR_RETURN(I.arena, cuda::DeviceBuffer::allocate(total));
  {
    uint64_t off = 0;
    for (const Piece& p : pieces) {
      *p.ptr = p.bytes ? static_cast<uint8_t*>(I.arena.get()) + off : nullptr;
      off += align_up(p.bytes);
    }
  }
  I.arena_bytes = total;
  I.in.hidden = hidden_in;
  I.in.encoder = enc_in;
  I.in.timestep = static_cast<float*>(ts);
  I.in.mask = static_cast<float*>(mask);
  I.rope_cos = static_cast<float*>(rc);
  I.rope_sin = static_cast<float*>(rs);
  // Poison the inputs (NaN bf16 / float) so a forward that runs before upload_inputs shows it.
  WS_RETURN_IF_ERROR(::ws::cuda::fill_device(I.arena.get(), 0xff, total));

  // ---- RoPE tables (host, the reference's function; uploaded once) ----
  {
    ref::LtxRopeParams rp;
    rp.dim = d;
    rp.patch_size = config.patch_size;
    rp.patch_size_t = config.patch_size_t;
    std::vector<float> c(static_cast<size_t>(I.S) * d), s(c.size());
    ref::ltx_rope_tables(rp, geo.frames, geo.height, geo.width,
                         geo.rope_scale ? geo.rope_interpolation_scale.data() : nullptr, c.data(), s.data());
    WS_RETURN_IF_ERROR(::ws::cuda::copy_to_device(I.rope_cos, c.data(), c.size() * 4));
    WS_RETURN_IF_ERROR(::ws::cuda::copy_to_device(I.rope_sin, s.data(), s.size() * 4));
  }

  // ---- model-level linears ----
  WS_ASSIGN_OR_RETURN(I.lt, LtHandle::create());
  auto* hw = static_cast<uint8_t*>(I.head_weights.get());
  auto plan = [&](std::unique_ptr<LtLinear>& dst, const HeadLayout::Lin& l, int64_t m, LinearEpilogue e,
                  const void* x, void* y) -> Status {
    LinearShape s;
    s.m = m; s.n = l.out; s.k = l.in; s.format = LinearFormat::kBF16; s.epilogue = e;
    WS_ASSIGN_OR_RETURN(dst, LtLinear::build(I.lt.get(), s, ws_bytes, l.name));
    LinearBinding b;
    b.x = x; b.w = hw + l.w; b.bias = hw + l.b; b.y = y;
    return dst->bind(b, I.gemm_ws);
  };
  WS_RETURN_IF_ERROR(plan(I.l_proj_in, I.hl.proj_in, M, LinearEpilogue::kBias, hidden_in, I.x));
  WS_RETURN_IF_ERROR(plan(I.l_t1, I.hl.t1, I.R, LinearEpilogue::kBias, I.tproj, I.t1));
  WS_RETURN_IF_ERROR(plan(I.l_t2, I.hl.t2, I.R, LinearEpilogue::kBias, I.t1s, I.emb));
  WS_RETURN_IF_ERROR(plan(I.l_tl, I.hl.tl, I.R, LinearEpilogue::kBias, I.embs, I.temb));
  WS_RETURN_IF_ERROR(plan(I.l_c1, I.hl.c1, MT, LinearEpilogue::kBiasGeluTanh, enc_in, I.c1));
  WS_RETURN_IF_ERROR(plan(I.l_c2, I.hl.c2, MT, LinearEpilogue::kBias, I.c1, I.enc));
  WS_RETURN_IF_ERROR(plan(I.l_proj_out, I.hl.proj_out, M, LinearEpilogue::kBias, I.nout, I.out));

  // ---- block weights + block instances ----
  const LtxBlockConfig bc = block_config(config);
  const LtxBlockGeometry bg = block_geometry(geo);
  // ONE activation arena for every block instance (they run one after another on one stream).
  WS_ASSIGN_OR_RETURN(I.block_arena, cuda::DeviceBuffer::allocate(fp.block_arena_bytes));
  // NaN-poisoned once, like the model arena: a block stage reading an element nothing wrote shows as NaN.
  WS_RETURN_IF_ERROR(::ws::cuda::fill_device(I.block_arena.get(), 0xff, fp.block_arena_bytes));
  LtxBlockOptions bo = options.block;
  bo.arena = I.block_arena.get();
  bo.arena_bytes = fp.block_arena_bytes;
  LtxBlockIO io;
  io.x = I.x;
  io.temb = I.temb;
  io.enc = I.enc;
  io.enc_bias = geo.mask ? I.mask_bias : nullptr;
  io.rope_cos = I.rope_cos;
  io.rope_sin = I.rope_sin;
  auto prefix = [](int i) { return "transformer_blocks." + std::to_string(i) + "."; };
  auto add_block = [&](const void* base, const BlockLayout& layout) -> Status {
    I.views.push_back(block_view(layout, base));
    WS_ASSIGN_OR_RETURN(std::unique_ptr<LtxBlock> blk, LtxBlock::build(bc, bg, *I.views.back(), io, bo));
    I.blocks.push_back(std::move(blk));
    return Status::ok();
  };
  if (!streamed) {
    WS_ASSIGN_OR_RETURN(I.block_weights, cuda::DeviceBuffer::allocate(I.bl.bytes * static_cast<uint64_t>(L)));
    // Host images in chunks of `workers` blocks built in parallel (8-bit: quantize, then dequantise with the
    // kernel's formula: the same numbers a streamed model computes with), uploaded in layer order.
    const int workers = build_workers(L, wfmt != 0);
    std::vector<std::vector<uint8_t>> st(static_cast<size_t>(workers), std::vector<uint8_t>(I.bl.bytes));
    std::vector<std::vector<uint8_t>> q(static_cast<size_t>(workers),
                                        std::vector<uint8_t>(wfmt != 0 ? I.ql.bytes : 0));
    for (int c = 0; c < L; c += workers) {
      const int n = std::min(workers, L - c);
      WS_RETURN_IF_ERROR(parallel_blocks(n, [&](int t) -> Status {
        if (wfmt == 0) return fill_block_image(source, prefix(c + t), I.bl, st[t].data());
        WS_RETURN_IF_ERROR(fill_block_image(source, prefix(c + t), I.ql, q[t].data()));
        std::memset(st[t].data(), 0, st[t].size());
        dequant_image_host(I.dq, q[t].data(), st[t].data());
        return Status::ok();
      }));
      for (int t = 0; t < n; ++t) {
        uint8_t* dst = static_cast<uint8_t*>(I.block_weights.get()) + I.bl.bytes * static_cast<uint64_t>(c + t);
        WS_RETURN_IF_ERROR(::ws::cuda::copy_to_device(dst, st[t].data(), st[t].size()));
        WS_RETURN_IF_ERROR(add_block(dst, I.bl));
      }
    }
    Impl* P = impl.get();
    I.layer_fn = [P](int layer, const void*, uint64_t, cudaStream_t s) {
      return P->blocks[static_cast<size_t>(layer)]->enqueue(s);
    };
  } else {
    std::vector<HostLayer> layers;
    if (images != nullptr && !I.eight_bit_stream && static_cast<int>(images->block_offsets.size()) == L) {
      // Zero-copy: check every block tensor, then register the store's one allocation once and stream each block
      // image from it.
      for (int i = 0; i < L; ++i) WS_RETURN_IF_ERROR(fill_block_image(source, prefix(i), I.bl, nullptr));
      auto storage = images->store->storage();
      const cudaError_t reg = cudaHostRegister(const_cast<std::byte*>(storage.data()), storage.size(),
                                               cudaHostRegisterDefault);
      if (reg == cudaErrorHostMemoryAlreadyRegistered) {
        (void)cudaGetLastError();  // pinned by its owner (or another model on the same store): not ours to unregister
      } else if (reg != cudaSuccess) {
        return cuda::cuda_status(reg, "cudaHostRegister(weight store)", __FILE__, __LINE__);
      } else {
        I.registered = const_cast<std::byte*>(storage.data());
      }
      I.registered_bytes = storage.size();
      I.zero_copy = true;
      for (int i = 0; i < L; ++i)
        layers.push_back({storage.data() + images->block_offsets[static_cast<size_t>(i)], I.bl.bytes});
    } else {
      if (I.eight_bit_stream) I.zero_copy_note = std::string("repacked into one pinned ") +
                                                   ltx_stream_weights_name(options.stream_weights) + " image";
      WS_ASSIGN_OR_RETURN(I.host_blocks, cuda::PinnedBuffer::allocate(slot_layout.bytes * static_cast<uint64_t>(L)));
      auto* images_base = static_cast<uint8_t*>(I.host_blocks.get());
      const int workers = build_workers(L, I.eight_bit_stream);
      for (int c = 0; c < L; c += workers)
        WS_RETURN_IF_ERROR(parallel_blocks(std::min(workers, L - c), [&](int t) -> Status {
          return fill_block_image(source, prefix(c + t), slot_layout,
                                  images_base + slot_layout.bytes * static_cast<uint64_t>(c + t));
        }));
      for (int i = 0; i < L; ++i)
        layers.push_back({images_base + slot_layout.bytes * static_cast<uint64_t>(i), slot_layout.bytes});
    }
    StreamerOptions so;
    so.slots = slots;
    so.vram_budget_bytes = slot_layout.bytes * static_cast<uint64_t>(slots);
    so.prefetch_next_pass = true;
    so.record_timeline = options.record_timeline;
    WS_ASSIGN_OR_RETURN(Streamer st, Streamer::create(std::move(layers), so));
    I.streamer = std::make_unique<Streamer>(std::move(st));
    if (I.eight_bit_stream) {
      // One bf16 staging (the whole block image, or per-linear: the small fixed part + one weight scratch), one
      // block instance bound to it; each slot is dequantised into it on the compute stream, right before its block
      // (per-linear: each weight right before its GEMM).
      const BlockLayout& stl = I.per_linear ? I.sl : I.bl;
      WS_ASSIGN_OR_RETURN(I.staging, cuda::DeviceBuffer::allocate(stl.bytes));
      WS_RETURN_IF_ERROR(::ws::cuda::fill_device(I.staging.get(), 0, stl.bytes));
      WS_RETURN_IF_ERROR(add_block(I.staging.get(), stl));
    } else {
      for (int s = 0; s < slots; ++s) WS_RETURN_IF_ERROR(add_block(I.streamer->slot_ptr(s), I.bl));
    }
    Impl* P = impl.get();
    I.layer_fn = [P](int layer, const void* dev, uint64_t, cudaStream_t s) -> Status {
      const int slot = P->streamer->plan().layer_slot[static_cast<size_t>(layer)];
      if (dev != P->streamer->slot_ptr(slot))
        return internal_error("LTX model: layer " + std::to_string(layer) + " was handed a slot address that is not "
                              "slot " + std::to_string(slot) + "'s");
      if (P->eight_bit_stream && P->per_linear) {
        WS_RETURN_IF_ERROR(ltx::dequant_block_image(dev, P->staging.get(), P->ldq.prefix, s));
        LtxBlock& b = *P->blocks[0];
        const auto& stages = b.stages();
        for (size_t i = 0; i < stages.size(); ++i) {
          if (stages[i].linear >= 0)
            WS_RETURN_IF_ERROR(ltx::dequant_block_image(dev, P->staging.get(), P->ldq.linear[stages[i].linear], s));
          WS_RETURN_IF_ERROR(b.enqueue_stage(i, s));
        }
        return Status::ok();
      }
      if (P->eight_bit_stream) {
        WS_RETURN_IF_ERROR(ltx::dequant_block_image(dev, P->staging.get(), P->dq, s));
        return P->blocks[0]->enqueue(s);
      }
      return P->blocks[static_cast<size_t>(slot)]->enqueue(s);
    };
    cudaStream_t cs = I.streamer->copy_stream();
    WS_RETURN_IF_ERROR(I.streamer->prime(cs));
    WS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(cs));
  }
  WS_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  return impl;
}

Status LtxModel::enqueue_prologue(cudaStream_t s) {
  Impl& I = *impl_;
  const int64_t MT = static_cast<int64_t>(I.B) * I.T;
  if (I.geo.mask) WS_RETURN_IF_ERROR(ltx::mask_to_bias_bf16(I.in.mask, I.mask_bias, MT, s));
  WS_RETURN_IF_ERROR(I.l_proj_in->enqueue(s));
  WS_RETURN_IF_ERROR(ltx::timestep_sinusoid(I.in.timestep, I.tproj, I.R, kTimestepChannels, s));
  WS_RETURN_IF_ERROR(I.l_t1->enqueue(s));
  WS_RETURN_IF_ERROR(ltx::silu_bf16(I.t1, I.t1s, static_cast<int64_t>(I.R) * I.d, s));
  WS_RETURN_IF_ERROR(I.l_t2->enqueue(s));
  WS_RETURN_IF_ERROR(ltx::silu_bf16(I.emb, I.embs, static_cast<int64_t>(I.R) * I.d, s));
  WS_RETURN_IF_ERROR(I.l_tl->enqueue(s));
  WS_RETURN_IF_ERROR(I.l_c1->enqueue(s));
  return I.l_c2->enqueue(s);
}

Status LtxModel::enqueue_blocks(cudaStream_t s) {
  Impl& I = *impl_;
  if (I.streamer) return I.streamer->enqueue(s, I.layer_fn);
  // Resident: the same per-layer function, in order, on the caller's stream.
  for (int i = 0; i < static_cast<int>(I.blocks.size()); ++i) {
    Status st = I.layer_fn(i, nullptr, 0, s);
    if (!st.is_ok()) return Status(st.code(), "LTX model block " + std::to_string(i) + ": " + st.message());
  }
  return Status::ok();
}

Status LtxModel::enqueue_head(cudaStream_t s) {
  Impl& I = *impl_;
  kernels::AdaLnTable mod;
  mod.table = static_cast<const uint8_t*>(I.head_weights.get()) + I.hl.sst;
  mod.temb = static_cast<const __nv_bfloat16*>(I.emb);
  mod.temb_row_stride = I.d;
  mod.temb_chunk_stride = 0;
  mod.tokens_per_temb_row = I.geo.per_token_timestep ? 1 : I.S;
  WS_RETURN_IF_ERROR(kernels::layer_norm_modulate(static_cast<const __nv_bfloat16*>(I.x),
                                                  static_cast<__nv_bfloat16*>(I.nout),
                                                  static_cast<int64_t>(I.B) * I.S, I.d, kNormOutEps, mod,
                                                  kernels::kShiftOut, kernels::kScaleOut, s));
  return I.l_proj_out->enqueue(s);
}

Status LtxModel::enqueue(cudaStream_t s) {
  WS_RETURN_IF_ERROR(enqueue_prologue(s));
  WS_RETURN_IF_ERROR(enqueue_blocks(s));
  return enqueue_head(s);
}

Status LtxModel::enqueue_timed(cudaStream_t s) {
  Impl& I = *impl_;
  if (!I.streamer || !I.opt.record_timeline)
    return failed_precondition("LTX model: enqueue_timed needs a streamed model built with record_timeline");
  WS_RETURN_IF_ERROR(enqueue_prologue(s));
  WS_RETURN_IF_ERROR(I.streamer->enqueue_timed(s, I.layer_fn));
  return enqueue_head(s);
}

Result<std::vector<LayerTiming>> LtxModel::timeline() const {
  if (!impl_->streamer) return failed_precondition("LTX model: timeline of a resident model");
  return impl_->streamer->timeline();
}

Status LtxModel::capture_graph(cudaStream_t s) {
  Impl& I = *impl_;
  if (s == nullptr) return invalid_argument("LTX model: capture_graph needs a non-default stream");
  if (I.graph_exec) cudaGraphExecDestroy(I.graph_exec);
  if (I.graph) cudaGraphDestroy(I.graph);
  I.graph_exec = nullptr;
  I.graph = nullptr;
  WS_CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  Status st = enqueue(s);
  cudaGraph_t g = nullptr;
  cudaError_t end = cudaStreamEndCapture(s, &g);
  if (!st.is_ok()) {
    if (g) cudaGraphDestroy(g);
    return st;
  }
  if (end != cudaSuccess) return cuda::cuda_status(end, "cudaStreamEndCapture", __FILE__, __LINE__);
  I.graph = g;
  cudaError_t inst = cudaGraphInstantiate(&I.graph_exec, I.graph, 0);
  if (inst != cudaSuccess) {
    cudaGraphDestroy(I.graph);
    I.graph = nullptr;
    I.graph_exec = nullptr;
    return cuda::cuda_status(inst, "cudaGraphInstantiate", __FILE__, __LINE__);
  }
  return Status::ok();
}

Status LtxModel::launch_graph(cudaStream_t s) {
  if (!impl_->graph_exec) return failed_precondition("LTX model: launch_graph before capture_graph");
  WS_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(impl_->graph_exec, s));
  return Status::ok();
}

const LtxModelDeviceInputs& LtxModel::inputs() const { return impl_->in; }

LtxModelStages LtxModel::stages() const {
  const Impl& I = *impl_;
  LtxModelStages r;
  r.x = I.x; r.timestep_proj = I.tproj; r.embedded_timestep = I.emb; r.temb = I.temb; r.caption = I.enc;
  r.mask_bias = I.mask_bias; r.norm_out_mod = I.nout; r.output = I.out;
  return r;
}

Status LtxModel::upload_inputs(const float* hidden, const float* encoder, const float* timestep, const float* mask) {
  const Impl& I = *impl_;
  if (hidden == nullptr || encoder == nullptr || timestep == nullptr || (I.geo.mask && mask == nullptr))
    return invalid_argument("LTX model: upload_inputs with a null hidden/encoder/timestep" +
                            std::string(I.geo.mask ? "/mask" : "") + " pointer");
  WS_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  auto up_bf16 = [](const float* src, size_t n, void* dst) -> Status {
    std::vector<uint16_t> h(n);
    for (size_t i = 0; i < n; ++i) h[i] = f32_to_bf16_bits(src[i]);
    WS_RETURN_IF_ERROR(::ws::cuda::copy_to_device(dst, h.data(), n * 2));
    return Status::ok();
  };
  const size_t M = static_cast<size_t>(I.B) * I.S, MT = static_cast<size_t>(I.B) * I.T;
  WS_RETURN_IF_ERROR(up_bf16(hidden, M * static_cast<size_t>(I.cfg.in_channels), I.in.hidden));
  WS_RETURN_IF_ERROR(up_bf16(encoder, MT * static_cast<size_t>(I.cfg.caption_channels), I.in.encoder));
  WS_RETURN_IF_ERROR(::ws::cuda::copy_to_device(I.in.timestep, timestep, static_cast<size_t>(I.R) * 4));
  if (I.geo.mask) WS_RETURN_IF_ERROR(::ws::cuda::copy_to_device(I.in.mask, mask, MT * 4));
  return Status::ok();
}

Result<std::vector<float>> LtxModel::download_bf16(const void* device, size_t count) {
  if (device == nullptr) return invalid_argument("LTX model: download_bf16 of a null pointer");
  WS_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  std::vector<uint16_t> h(count);
  WS_CUDA_RETURN_IF_ERROR(cudaMemcpy(h.data(), device, count * 2, cudaMemcpyDeviceToHost));
  std::vector<float> out(count);
  for (size_t i = 0; i < count; ++i) {
    uint32_t u = static_cast<uint32_t>(h[i]) << 16;
    std::memcpy(&out[i], &u, 4);
  }
  return out;
}

bool LtxModel::streamed() const { return impl_->streamer != nullptr; }
int LtxModel::slots() const { return impl_->streamer ? impl_->streamer->plan().slots : 0; }
int LtxModel::layers() const { return static_cast<int>(impl_->cfg.num_layers); }
uint64_t LtxModel::resident_weight_bytes() const { return impl_->head_weights.bytes(); }
uint64_t LtxModel::block_weight_device_bytes() const {
  return impl_->streamer ? impl_->streamer->peak_device_bytes() : impl_->block_weights.bytes();
}
uint64_t LtxModel::pinned_host_bytes() const {
  return impl_->zero_copy ? impl_->registered_bytes : impl_->host_blocks.bytes();
}
bool LtxModel::store_zero_copy() const { return impl_->zero_copy; }
const std::string& LtxModel::store_zero_copy_note() const { return impl_->zero_copy_note; }
uint64_t LtxModel::streamed_bytes_per_forward() const {
  return impl_->streamer ? impl_->streamer->plan().total_layer_bytes : 0;
}
uint64_t LtxModel::activation_bytes() const {
  uint64_t b = impl_->arena_bytes + impl_->block_arena.bytes();
  for (const auto& blk : impl_->blocks) b += blk->device_bytes();  // 0: the blocks carve the shared arena
  return b;
}
uint64_t LtxModel::staging_bytes() const { return impl_->staging.bytes(); }
uint64_t LtxModel::device_bytes() const {
  return resident_weight_bytes() + block_weight_device_bytes() + staging_bytes() + activation_bytes();
}
LtxStreamWeights LtxModel::stream_weights() const { return impl_->opt.stream_weights; }
const LtxModelGeometry& LtxModel::geometry() const { return impl_->geo; }
const LtxConfig& LtxModel::config() const { return impl_->cfg; }
std::string LtxModel::attention_backends() const {
  if (impl_->blocks.empty()) return "no blocks";
  return "attn1: " + impl_->blocks[0]->attn1_backend() + ", attn2: " + impl_->blocks[0]->attn2_backend();
}

LtxModel::LtxModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LtxModel::~LtxModel() = default;

}  // namespace ws::flow
