// GPU LTX-Video block (src/flow/models/ltx_block.h) vs the CPU reference block (src/reference/ltx.h) and vs
// diffusers' goldens, per intermediate (max-abs and cosine).
//   - LtxBlockGpu.MatchesCpuReference*: random bf16-representable weights/inputs (seed printed; WS_SEED replays),
//     the block with cuDNN SDPA where cuDNN takes the shape and with the fallback SDPA forced; which attention ran
//     is printed per call site. Outputs NaN-poisoned before the run.
//   - LtxBlockGpu.Fp8WeightsVsBf16 / Int8WeightsVsBf16: fp8 e4m3 (cuBLASLt) and int8 (gemm_s8_mma) weights with
//     per-channel scales vs the bf16 block: cosine per intermediate printed, >= 0.999 asserted on the block output
//     (issue 11's bar).
//   - LtxBlockGpu.GraphReplayMatchesEnqueue: a CUDA-graph replay of the whole block equals a direct enqueue
//     bit for bit, and enqueue makes no device allocation.
//   - LtxBlockGpu.TinyDiffusersGoldens: tests/data/ltx_tiny (tools/ltx_goldens.py --case tiny), skipped when absent.
//   - LtxBlockGpu.FullSizeDiffusersGoldens: $WS_LTX_GOLDENS = a folder of tools/ltx_goldens.py --case block-2b.
// bf16 tolerance (stated once, used everywhere): cosine >= 0.999 and max-abs <= 0.03 * max|reference| per
// intermediate. Why: every stage stores bf16 (relative rounding 2^-9) and the GEMMs/attention accumulate
// rounded operands, so a few bf16 ulps of the largest values; 0.03 of the range is ~8 ulps at the top binade.
// Run: ws_gpu_tests --gtest_filter='LtxBlockGpu*' (skips without a CUDA device).
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cuda/cuda_util.h"
#include "flow/models/ltx_block.h"
#include "flow/models/ltx_block_source.h"
#include "reference/ltx.h"
#include "support/cuda_check.h"
#include "support/seed.h"
#include "support/test_data.h"
#include "warpstream/numeric.h"

namespace ws {
namespace {

using flow::LtxFloatTensor;

constexpr double kCosMin = 0.999;
constexpr double kMaxAbsRel = 0.03;

std::vector<uint16_t> to_bf16(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = float_to_bf16(v[i]);
  return out;
}

// Device buffer with checked upload/download.
struct Dev {
  cuda::DeviceBuffer buf;
  static Dev bf16(const std::vector<float>& v) {
    Dev d;
    auto b = cuda::DeviceBuffer::allocate(std::max<size_t>(16, v.size() * 2));
    EXPECT_TRUE(b.is_ok()) << b.status().to_string();
    d.buf = std::move(b.value());
    auto h = to_bf16(v);
    EXPECT_EQ(::ws::test::upload_sync(d.buf.get(), h.data(), h.size() * 2), cudaSuccess);
    return d;
  }
  static Dev f32(const std::vector<float>& v) {
    Dev d;
    auto b = cuda::DeviceBuffer::allocate(std::max<size_t>(16, v.size() * 4));
    EXPECT_TRUE(b.is_ok()) << b.status().to_string();
    d.buf = std::move(b.value());
    EXPECT_EQ(::ws::test::upload_sync(d.buf.get(), v.data(), v.size() * 4), cudaSuccess);
    return d;
  }
  void* get() const { return buf.get(); }
};

// bf16 [rows, cols] with row stride ld (elements) -> floats.
std::vector<float> download_bf16(const void* p, int64_t rows, int64_t cols, int64_t ld) {
  std::vector<uint16_t> h(rows * ld);
  EXPECT_EQ(cudaMemcpy(h.data(), p, h.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  std::vector<float> out(rows * cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      uint32_t u = static_cast<uint32_t>(h[r * ld + c]) << 16;
      std::memcpy(&out[r * cols + c], &u, 4);
    }
  return out;
}

struct Metric {
  double cos = 0, max_abs = 0, ref_max = 0;
  int64_t worst = -1;
};
Metric compare(const std::vector<float>& got, const std::vector<float>& ref) {
  Metric m;
  double dot = 0, ng = 0, nr = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double g = got[i], r = ref[i];
    dot += g * r; ng += g * g; nr += r * r;
    m.ref_max = std::max(m.ref_max, std::fabs(r));
    const double e = std::isfinite(g) ? std::fabs(g - r) : INFINITY;
    if (e > m.max_abs || (m.worst < 0 && !(e <= m.max_abs))) { m.max_abs = e; m.worst = (int64_t)i; }
  }
  m.cos = (ng > 0 && nr > 0) ? dot / std::sqrt(ng * nr) : (ng == nr ? 1.0 : 0.0);
  return m;
}

// Checks one intermediate against the bf16 tolerance; prints the metric line, and on failure the first
// element outside the tolerance with both operands.
void expect_close(const char* what, const std::vector<float>& got, const std::vector<float>& ref) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  Metric m = compare(got, ref);
  std::printf("  %-14s cos %.6f  max-abs %.4g (|ref| max %.4g)\n", what, m.cos, m.max_abs, m.ref_max);
  const double tol = kMaxAbsRel * std::max(m.ref_max, 1e-3);
  bool ok = m.cos >= kCosMin && m.max_abs <= tol;
  if (!ok) {
    for (size_t i = 0; i < ref.size(); ++i)
      if (!(std::fabs(got[i] - ref[i]) <= tol)) {
        ADD_FAILURE() << what << ": cosine " << m.cos << " (min " << kCosMin << "), max-abs " << m.max_abs
                      << " (tol " << tol << "); first bad index " << i << ": gpu " << got[i] << " vs reference "
                      << ref[i];
        return;
      }
    ADD_FAILURE() << what << ": cosine " << m.cos << " below " << kCosMin;
  }
}

// ---- random block ------------------------------------------------------------------------------------------------

struct Case {
  const char* name;
  int heads, head_dim, cross, batch, f, h, w, text, temb_rows_per_token;  // temb per token when 1
};

struct BlockData {
  ref::LtxBlockConfig rc;
  flow::LtxBlockConfig gc;
  std::map<std::string, LtxFloatTensor> w;  // block-relative names, bf16-representable values
  std::vector<float> hidden, encoder, temb, cos, sin, mask_bias;
  int64_t B = 0, S = 0, T = 0, temb_rows = 1;
};

BlockData make_block(const Case& c) {
  BlockData d;
  d.rc.heads = c.heads; d.rc.head_dim = c.head_dim; d.rc.cross_dim = c.cross; d.rc.ff_inner = 4 * c.heads * c.head_dim;
  d.gc.heads = c.heads; d.gc.head_dim = c.head_dim; d.gc.cross_dim = c.cross;
  const int64_t D = d.rc.dim(), FF = d.rc.ff_inner;
  d.B = c.batch; d.S = (int64_t)c.f * c.h * c.w; d.T = c.text; d.temb_rows = c.temb_rows_per_token ? d.S : 1;
  std::mt19937 rng(test::test_seed(std::string("ltx block ") + c.name));
  std::normal_distribution<float> nd(0.f, 1.f);
  auto fill = [&](std::vector<float>& v, size_t n, float scale, float offset = 0.f) {
    v.resize(n);
    for (auto& x : v) x = round_to_bf16(offset + scale * nd(rng));
  };
  auto lin = [&](const std::string& n, int64_t out, int64_t in) {
    fill(d.w[n + ".weight"].values, out * in, 1.f / std::sqrt((float)in));
    d.w[n + ".weight"].shape = {out, in};
    fill(d.w[n + ".bias"].values, out, 0.1f);
    d.w[n + ".bias"].shape = {out};
  };
  fill(d.w["scale_shift_table"].values, 6 * D, 1.f / std::sqrt((float)D));
  d.w["scale_shift_table"].shape = {6, D};
  for (const char* a : {"attn1", "attn2"}) {
    const int64_t in_kv = std::string(a) == "attn1" ? D : c.cross;
    lin(std::string(a) + ".to_q", D, D);
    lin(std::string(a) + ".to_k", D, in_kv);
    lin(std::string(a) + ".to_v", D, in_kv);
    lin(std::string(a) + ".to_out.0", D, D);
    for (const char* n : {".norm_q.weight", ".norm_k.weight"}) {
      fill(d.w[std::string(a) + n].values, D, 0.2f, 1.f);
      d.w[std::string(a) + n].shape = {D};
    }
  }
  lin("ff.net.0.proj", FF, D);
  lin("ff.net.2", D, FF);
  fill(d.hidden, d.B * d.S * D, 1.f);
  fill(d.encoder, d.B * d.T * c.cross, 1.f);
  fill(d.temb, d.B * d.temb_rows * 6 * D, 0.5f);
  d.mask_bias.assign(d.B * d.T, 0.f);
  for (int64_t b = 0; b < d.B; ++b)  // drop the last (b + 1) text tokens of sample b
    for (int64_t t = d.T - 1 - b; t < d.T; ++t) d.mask_bias[b * d.T + t] = round_to_bf16(-10000.f);
  d.cos.resize(d.S * D);
  d.sin.resize(d.S * D);
  ref::LtxRopeParams rp;
  rp.dim = D;
  const float scale[3] = {8.f / 25.f, 32.f, 32.f};
  ref::ltx_rope_tables(rp, c.f, c.h, c.w, scale, d.cos.data(), d.sin.data());
  return d;
}

ref::LtxLinear rlin(const BlockData& d, const std::string& n) {
  return {d.w.at(n + ".weight").values.data(), d.w.at(n + ".bias").values.data()};
}
ref::LtxBlockWeights ref_weights(const BlockData& d) {
  ref::LtxBlockWeights w;
  w.scale_shift_table = d.w.at("scale_shift_table").values.data();
  for (auto [a, dst] : {std::pair{"attn1", &w.attn1}, std::pair{"attn2", &w.attn2}}) {
    dst->to_q = rlin(d, std::string(a) + ".to_q");
    dst->to_k = rlin(d, std::string(a) + ".to_k");
    dst->to_v = rlin(d, std::string(a) + ".to_v");
    dst->to_out = rlin(d, std::string(a) + ".to_out.0");
    dst->norm_q = d.w.at(std::string(a) + ".norm_q.weight").values.data();
    dst->norm_k = d.w.at(std::string(a) + ".norm_k.weight").values.data();
  }
  w.ff_in = rlin(d, "ff.net.0.proj");
  w.ff_out = rlin(d, "ff.net.2");
  return w;
}

struct GpuRun {
  std::string attn1, attn2;
  std::vector<std::string> linears;
  std::map<std::string, std::vector<float>> out;  // intermediates + "out"
};

// Builds the GPU block over BlockData (weights uploaded in `format`), runs it once, downloads everything.
void run_gpu(const BlockData& d, flow::LtxWeightFormat format, bool force_fallback, GpuRun* run) {
  const int64_t D = d.rc.dim();
  auto source = flow::ltx_source_from_floats(d.w, "random block");
  auto weights = flow::LtxBlockWeights::upload(source, "", d.gc, format);
  ASSERT_TRUE(weights.is_ok()) << weights.status().to_string();
  Dev x = Dev::bf16(d.hidden), enc = Dev::bf16(d.encoder), temb = Dev::bf16(d.temb), bias = Dev::bf16(d.mask_bias);
  Dev cs = Dev::f32(d.cos), sn = Dev::f32(d.sin);
  flow::LtxBlockGeometry geo;
  geo.batch = (int)d.B; geo.tokens = (int)d.S; geo.text_tokens = (int)d.T; geo.temb_rows = (int)d.temb_rows;
  flow::LtxBlockIO io;
  io.x = x.get(); io.temb = temb.get(); io.enc = enc.get(); io.enc_bias = bias.get();
  io.rope_cos = static_cast<const float*>(cs.get()); io.rope_sin = static_cast<const float*>(sn.get());
  flow::LtxBlockOptions opt;
  opt.force_fallback_attention = force_fallback;
  auto block = flow::LtxBlock::build(d.gc, geo, weights.value(), io, opt);
  ASSERT_TRUE(block.is_ok()) << block.status().to_string();
  flow::LtxBlock& blk = *block.value();
  run->attn1 = blk.attn1_backend();
  run->attn2 = blk.attn2_backend();
  run->linears = blk.linear_report();
  std::printf("  attn1: %s\n  attn2: %s\n", run->attn1.c_str(), run->attn2.c_str());
  // NaN-poison every intermediate (0xFFFF is a bf16 NaN) so a stage that writes nothing cannot pass.
  flow::LtxBlockIntermediates in = blk.intermediates();
  const int64_t M = d.B * d.S;
  for (const void* p : {in.norm1, in.attn1, in.attn2, in.norm2, in.ff})
    WS_ASSERT_CUDA(::ws::test::memset_sync(const_cast<void*>(p), 0xFF, M * D * 2));
  WS_ASSERT_CUDA(::ws::test::memset_sync(const_cast<void*>(in.q_rope), 0xFF, M * in.q_rope_ld * 2));
  cuda::Stream stream;
  {
    auto s = cuda::Stream::create();
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    stream = std::move(s.value());
  }
  Status st = blk.enqueue(stream.get());
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  WS_ASSERT_CUDA(cudaStreamSynchronize(stream.get()));
  run->out["norm1_mod"] = download_bf16(in.norm1, M, D, D);
  run->out["q_rope"] = download_bf16(in.q_rope, M, D, in.q_rope_ld);
  run->out["k_rope"] = download_bf16(in.k_rope, M, D, in.q_rope_ld);
  run->out["attn1_out"] = download_bf16(in.attn1, M, D, D);
  run->out["attn2_out"] = download_bf16(in.attn2, M, D, D);
  run->out["norm2_mod"] = download_bf16(in.norm2, M, D, D);
  run->out["ff_out"] = download_bf16(in.ff, M, D, D);
  run->out["out"] = download_bf16(x.get(), M, D, D);
}

std::map<std::string, std::vector<float>> run_reference(const BlockData& d) {
  ref::LtxBlockWeights w = ref_weights(d);
  std::vector<float> hidden = d.hidden;
  ref::LtxBlockArgs a;
  a.batch = d.B; a.seq = d.S; a.text_seq = d.T; a.temb_seq = d.temb_rows; a.rope_batch = 1;
  a.hidden = hidden.data(); a.encoder = d.encoder.data(); a.temb = d.temb.data();
  a.rope_cos = d.cos.data(); a.rope_sin = d.sin.data(); a.mask_bias = d.mask_bias.data();
  ref::LtxBlockIntermediates in;
  Status st = ref::ltx_block_forward(d.rc, w, a, &in);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return {{"norm1_mod", in.norm1_mod}, {"q_rope", in.q_rope},       {"k_rope", in.k_rope},
          {"attn1_out", in.attn1_out}, {"attn2_out", in.attn2_out}, {"norm2_mod", in.norm2_mod},
          {"ff_out", in.ff_out},       {"out", hidden}};
}

const char* kStages[] = {"norm1_mod", "q_rope", "k_rope", "attn1_out", "attn2_out", "norm2_mod", "ff_out", "out"};

void check_vs_reference(const Case& c) {
  BlockData d = make_block(c);
  auto ref = run_reference(d);
  for (bool fallback : {false, true}) {
    std::printf("case %s (%d x %d, cross %d, B %d, grid %dx%dx%d, T %d, temb %s), SDPA %s:\n", c.name, c.heads,
                c.head_dim, c.cross, c.batch, c.f, c.h, c.w, c.text, c.temb_rows_per_token ? "per token" : "per sample",
                fallback ? "fallback forced" : "cuDNN if it takes the shape");
    GpuRun run;
    run_gpu(d, flow::LtxWeightFormat::kBF16, fallback, &run);
    if (::testing::Test::HasFatalFailure()) return;
    for (const char* s : kStages) {
      SCOPED_TRACE(std::string(c.name) + (fallback ? " fallback " : " auto ") + s);
      expect_close(s, run.out[s], ref[s]);
    }
  }
}

TEST(LtxBlockGpu, MatchesCpuReferenceHeadDim64) {
  WS_SKIP_WITHOUT_GPU();
  check_vs_reference({"hd64", 2, 64, 96, 2, 2, 4, 6, 7, 0});
}

TEST(LtxBlockGpu, MatchesCpuReferenceHeadDim128PerTokenTemb) {
  WS_SKIP_WITHOUT_GPU();
  check_vs_reference({"hd128-tok", 2, 128, 256, 1, 1, 8, 8, 16, 1});
}

// 8-bit weights (per-output-channel scales, activations per token) vs the bf16 block on the same inputs.
void check_8bit(flow::LtxWeightFormat fmt, const char* label) {
  BlockData d = make_block({label, 4, 64, 256, 2, 2, 8, 8, 32, 0});
  GpuRun bf, q;
  run_gpu(d, flow::LtxWeightFormat::kBF16, false, &bf);
  if (::testing::Test::HasFatalFailure()) return;
  run_gpu(d, fmt, false, &q);
  if (::testing::Test::HasFatalFailure()) return;
  for (const auto& l : q.linears) std::printf("  %s linear %s\n", label, l.c_str());
  for (const char* s : kStages) {
    Metric m = compare(q.out[s], bf.out[s]);
    std::printf("  %s vs bf16 %-10s cos %.6f  max-abs %.4g\n", label, s, m.cos, m.max_abs);
  }
  Metric fin = compare(q.out["out"], bf.out["out"]);
  EXPECT_GE(fin.cos, 0.999) << label << " block output vs bf16 block output";
}

TEST(LtxBlockGpu, Fp8WeightsVsBf16) {
  WS_SKIP_WITHOUT_GPU();
  check_8bit(flow::LtxWeightFormat::kFP8, "fp8");
}

TEST(LtxBlockGpu, Int8WeightsVsBf16) {
  WS_SKIP_WITHOUT_GPU();
  check_8bit(flow::LtxWeightFormat::kINT8, "int8");
}

TEST(LtxBlockGpu, GraphReplayMatchesEnqueue) {
  WS_SKIP_WITHOUT_GPU();
  BlockData d = make_block({"graph", 2, 64, 128, 1, 2, 4, 4, 8, 0});
  const int64_t D = d.rc.dim(), M = d.B * d.S;
  auto source = flow::ltx_source_from_floats(d.w, "random block");
  auto weights = flow::LtxBlockWeights::upload(source, "", d.gc, flow::LtxWeightFormat::kBF16);
  ASSERT_TRUE(weights.is_ok()) << weights.status().to_string();
  Dev x0 = Dev::bf16(d.hidden), x = Dev::bf16(d.hidden), enc = Dev::bf16(d.encoder), temb = Dev::bf16(d.temb),
      bias = Dev::bf16(d.mask_bias), cs = Dev::f32(d.cos), sn = Dev::f32(d.sin);
  flow::LtxBlockGeometry geo;
  geo.batch = (int)d.B; geo.tokens = (int)d.S; geo.text_tokens = (int)d.T;
  flow::LtxBlockIO io{x.get(), temb.get(), enc.get(), bias.get(), static_cast<const float*>(cs.get()),
                      static_cast<const float*>(sn.get())};
  auto block = flow::LtxBlock::build(d.gc, geo, weights.value(), io);
  ASSERT_TRUE(block.is_ok()) << block.status().to_string();
  auto s = cuda::Stream::create();
  ASSERT_TRUE(s.is_ok());
  cudaStream_t stream = s.value().get();
  // Direct enqueue (twice: the first call may initialise library state), no device allocation.
  std::vector<float> direct;
  for (int i = 0; i < 2; ++i) {
    WS_ASSERT_CUDA(cudaMemcpyAsync(x.get(), x0.get(), M * D * 2, cudaMemcpyDeviceToDevice, stream));
    const uint64_t before = cuda::cuda_allocation_count();
    Status st = block.value()->enqueue(stream);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_EQ(cuda::cuda_allocation_count(), before) << "enqueue allocated device memory";
    WS_ASSERT_CUDA(cudaStreamSynchronize(stream));
    direct = download_bf16(x.get(), M, D, D);
  }
  cudaGraph_t graph = nullptr;
  WS_ASSERT_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  Status st = block.value()->enqueue(stream);
  cudaError_t end = cudaStreamEndCapture(stream, &graph);
  ASSERT_TRUE(st.is_ok()) << "enqueue under capture: " << st.to_string();
  WS_ASSERT_CUDA(end);
  cudaGraphExec_t exec = nullptr;
  WS_ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < 3; ++i) {
    WS_ASSERT_CUDA(cudaMemcpyAsync(x.get(), x0.get(), M * D * 2, cudaMemcpyDeviceToDevice, stream));
    WS_ASSERT_CUDA(cudaGraphLaunch(exec, stream));
    WS_ASSERT_CUDA(cudaStreamSynchronize(stream));
    std::vector<float> replay = download_bf16(x.get(), M, D, D);
    for (size_t k = 0; k < replay.size(); ++k)
      if (std::memcmp(&replay[k], &direct[k], 4) != 0) {
        ADD_FAILURE() << "graph replay " << i << " differs at " << k << ": " << replay[k] << " vs direct " << direct[k];
        break;
      }
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

// LtxBlockOptions::arena: two blocks (different weights) carving ONE external arena, run one after another on one
// stream, give bit for bit what each gives with its own arena; arena_bytes() equals what an own-arena block
// allocates; a smaller external arena is refused naming both numbers. The shared arena is NaN-poisoned first.
TEST(LtxBlockGpu, SharedArenaMatchesOwnArena) {
  WS_SKIP_WITHOUT_GPU();
  BlockData d0 = make_block({"arena0", 2, 64, 128, 2, 2, 4, 4, 8, 0});
  BlockData d1 = make_block({"arena1", 2, 64, 128, 2, 2, 4, 4, 8, 0});
  // make_block seeds by name: different weights; same inputs shape.
  const int64_t D = d0.rc.dim(), M = d0.B * d0.S;
  auto src0 = flow::ltx_source_from_floats(d0.w, "random block 0");
  auto src1 = flow::ltx_source_from_floats(d1.w, "random block 1");
  auto w0 = flow::LtxBlockWeights::upload(src0, "", d0.gc, flow::LtxWeightFormat::kBF16);
  auto w1 = flow::LtxBlockWeights::upload(src1, "", d1.gc, flow::LtxWeightFormat::kBF16);
  ASSERT_TRUE(w0.is_ok() && w1.is_ok());
  Dev x0 = Dev::bf16(d0.hidden), x = Dev::bf16(d0.hidden), enc = Dev::bf16(d0.encoder), temb = Dev::bf16(d0.temb),
      bias = Dev::bf16(d0.mask_bias), cs = Dev::f32(d0.cos), sn = Dev::f32(d0.sin);
  flow::LtxBlockGeometry geo;
  geo.batch = (int)d0.B; geo.tokens = (int)d0.S; geo.text_tokens = (int)d0.T;
  flow::LtxBlockIO io{x.get(), temb.get(), enc.get(), bias.get(), static_cast<const float*>(cs.get()),
                      static_cast<const float*>(sn.get())};
  auto s = cuda::Stream::create();
  ASSERT_TRUE(s.is_ok());
  cudaStream_t stream = s.value().get();
  // x <- x0, then the blocks in order; returns x.
  auto run = [&](std::vector<flow::LtxBlock*> blocks) {
    EXPECT_EQ(cudaMemcpyAsync(x.get(), x0.get(), M * D * 2, cudaMemcpyDeviceToDevice, stream), cudaSuccess);
    for (flow::LtxBlock* b : blocks) {
      Status st = b->enqueue(stream);
      EXPECT_TRUE(st.is_ok()) << st.to_string();
    }
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    return download_bf16(x.get(), M, D, D);
  };
  auto own0 = flow::LtxBlock::build(d0.gc, geo, w0.value(), io);
  auto own1 = flow::LtxBlock::build(d1.gc, geo, w1.value(), io);
  ASSERT_TRUE(own0.is_ok() && own1.is_ok());
  const std::vector<float> want0 = run({own0.value().get()});
  const std::vector<float> want01 = run({own0.value().get(), own1.value().get()});
  auto need = flow::LtxBlock::arena_bytes(d0.gc, geo, flow::LtxWeightFormat::kBF16);
  ASSERT_TRUE(need.is_ok()) << need.status().to_string();
  EXPECT_EQ(need.value(), own0.value()->device_bytes());
  std::printf("block arena %zu B\n", need.value());
  auto arena = cuda::DeviceBuffer::allocate(need.value());
  ASSERT_TRUE(arena.is_ok());
  WS_ASSERT_CUDA(::ws::test::memset_sync(arena.value().get(), 0xFF, need.value()));
  flow::LtxBlockOptions small;
  small.arena = arena.value().get();
  small.arena_bytes = need.value() - 256;
  auto refused = flow::LtxBlock::build(d0.gc, geo, w0.value(), io, small);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find(std::to_string(need.value())), std::string::npos)
      << refused.status().to_string();
  EXPECT_NE(refused.status().message().find(std::to_string(need.value() - 256)), std::string::npos)
      << refused.status().to_string();
  flow::LtxBlockOptions shared;
  shared.arena = arena.value().get();
  shared.arena_bytes = need.value();
  auto sh0 = flow::LtxBlock::build(d0.gc, geo, w0.value(), io, shared);
  auto sh1 = flow::LtxBlock::build(d1.gc, geo, w1.value(), io, shared);
  ASSERT_TRUE(sh0.is_ok()) << sh0.status().to_string();
  ASSERT_TRUE(sh1.is_ok()) << sh1.status().to_string();
  EXPECT_EQ(sh0.value()->device_bytes(), 0u);
  EXPECT_EQ(sh0.value()->arena_used_bytes(), need.value());
  const std::vector<float> got01 = run({sh0.value().get(), sh1.value().get()});
  const std::vector<float> got0 = run({sh0.value().get()});
  for (size_t k = 0; k < want0.size(); ++k) {
    ASSERT_EQ(std::memcmp(&got0[k], &want0[k], 4), 0) << "shared arena, block 0 alone, element " << k << ": "
                                                      << got0[k] << " vs own arena " << want0[k];
    ASSERT_EQ(std::memcmp(&got01[k], &want01[k], 4), 0) << "shared arena, blocks 0 then 1, element " << k << ": "
                                                        << got01[k] << " vs own arenas " << want01[k];
  }
  for (float v : got01) ASSERT_FALSE(std::isnan(v)) << "NaN from the poisoned shared arena";
}

#if WS_LTX_HAVE_SAFETENSORS
// One diffusers block from goldens: weights under `prefix` in `ckpt`, inputs/intermediates named
// `<in_prefix>...` / `<gold_prefix><stage>` in `goldens`.
void check_vs_goldens(const io::SafetensorsCheckpoint& ckpt, const std::string& prefix, const flow::LtxBlockConfig& cfg,
                      const io::SafetensorsFile& g, const std::map<std::string, std::string>& in_names,
                      const std::string& gold_prefix) {
  auto rd = [&](const std::string& n) { return flow::ltx_read_floats(g, n); };
  auto hidden = rd(in_names.at("hidden")), enc = rd(in_names.at("encoder")), temb = rd(in_names.at("temb")),
       cs = rd(in_names.at("cos")), sn = rd(in_names.at("sin")), bias = rd(in_names.at("mask_bias"));
  for (auto* r : {&hidden, &enc, &temb, &cs, &sn, &bias}) ASSERT_TRUE(r->is_ok()) << r->status().to_string();
  const int64_t B = hidden->shape[0], S = hidden->shape[1], D = hidden->shape[2], T = enc->shape[1];
  const int64_t temb_rows = temb->shape.size() == 3 ? temb->shape[1] : 1;
  ASSERT_EQ(D, cfg.dim());
  for (flow::LtxWeightFormat fmt : {flow::LtxWeightFormat::kBF16}) {
    auto weights = flow::LtxBlockWeights::upload(flow::ltx_source_from_checkpoint(ckpt), prefix, cfg, fmt);
    ASSERT_TRUE(weights.is_ok()) << weights.status().to_string();
    Dev x = Dev::bf16(hidden->values), e = Dev::bf16(enc->values), t = Dev::bf16(temb->values),
        b = Dev::bf16(bias->values);
    // The tables are [B, S, D]; every sample shares the grid here, so the block takes sample 0's [S, D].
    std::vector<float> c0(cs->values.begin(), cs->values.begin() + S * D),
        s0(sn->values.begin(), sn->values.begin() + S * D);
    Dev c = Dev::f32(c0), s = Dev::f32(s0);
    flow::LtxBlockGeometry geo;
    geo.batch = (int)B; geo.tokens = (int)S; geo.text_tokens = (int)T; geo.temb_rows = (int)temb_rows;
    flow::LtxBlockIO io{x.get(), t.get(), e.get(), b.get(), static_cast<const float*>(c.get()),
                        static_cast<const float*>(s.get())};
    auto block = flow::LtxBlock::build(cfg, geo, weights.value(), io);
    ASSERT_TRUE(block.is_ok()) << block.status().to_string();
    std::printf("  attn1: %s\n  attn2: %s\n", block.value()->attn1_backend().c_str(),
                block.value()->attn2_backend().c_str());
    Status st = block.value()->enqueue(nullptr);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    WS_ASSERT_CUDA(cudaDeviceSynchronize());
    flow::LtxBlockIntermediates in = block.value()->intermediates();
    const int64_t M = B * S;
    std::map<std::string, std::vector<float>> got = {
        {"norm1_mod", download_bf16(in.norm1, M, D, D)},  {"q_rope", download_bf16(in.q_rope, M, D, in.q_rope_ld)},
        {"k_rope", download_bf16(in.k_rope, M, D, in.q_rope_ld)}, {"attn1_out", download_bf16(in.attn1, M, D, D)},
        {"attn2_out", download_bf16(in.attn2, M, D, D)}, {"norm2_mod", download_bf16(in.norm2, M, D, D)},
        {"ff_out", download_bf16(in.ff, M, D, D)},        {"out", download_bf16(x.get(), M, D, D)}};
    for (const char* stage : kStages) {
      auto gold = rd(gold_prefix + stage);
      ASSERT_TRUE(gold.is_ok()) << gold.status().to_string();
      SCOPED_TRACE(gold_prefix + stage);
      expect_close(stage, got[stage], gold->values);
    }
  }
}

TEST(LtxBlockGpu, TinyDiffusersGoldens) {
  WS_SKIP_WITHOUT_GPU();
  const std::string dir = test::test_data_dir() + "/ltx_tiny";
  auto g = io::SafetensorsFile::open(dir + "/goldens.safetensors");
  if (!g.is_ok()) GTEST_SKIP() << "no tiny goldens (" << g.status().to_string() << "); tools/ltx_goldens.py --case tiny";
  struct Tiny { const char* c; const char* sub; int heads, head_dim, cross; };
  for (const Tiny& t : {Tiny{"base", "", 2, 8, 16}, Tiny{"tok", "", 2, 8, 16}, Tiny{"scaled", "", 2, 8, 16},
                        Tiny{"small", "/small", 4, 8, 32}}) {
    auto ckpt = io::open_checkpoint(dir + t.sub);
    ASSERT_TRUE(ckpt.is_ok()) << ckpt.status().to_string();
    flow::LtxBlockConfig cfg;
    cfg.heads = t.heads; cfg.head_dim = t.head_dim; cfg.cross_dim = t.cross;
    const std::string c = t.c;
    std::printf("tiny case %s block 0:\n", t.c);
    SCOPED_TRACE(c);
    check_vs_goldens(ckpt.value(), "transformer_blocks.0.", cfg, g.value(),
                     {{"hidden", c + ".proj_in"}, {"encoder", c + ".caption"}, {"temb", c + ".temb"},
                      {"cos", c + ".rope_cos"}, {"sin", c + ".rope_sin"}, {"mask_bias", c + ".mask_bias"}},
                     c + ".block0.");
  }
}

TEST(LtxBlockGpu, FullSizeDiffusersGoldens) {
  WS_SKIP_WITHOUT_GPU();
  const char* dir = std::getenv("WS_LTX_GOLDENS");
  if (dir == nullptr || !*dir) GTEST_SKIP() << "set WS_LTX_GOLDENS to a tools/ltx_goldens.py --case block-2b folder";
  auto ckpt = io::open_checkpoint(std::string(dir) + "/block.safetensors");
  ASSERT_TRUE(ckpt.is_ok()) << ckpt.status().to_string();
  auto g = io::SafetensorsFile::open(std::string(dir) + "/goldens.safetensors");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  flow::LtxBlockConfig cfg;  // 2B: 32 x 64, cross 2048; metadata overrides when present
  const auto& md = ckpt.value().files().front().metadata();
  if (auto it = md.find("heads"); it != md.end()) cfg.heads = std::atoi(it->second.c_str());
  if (auto it = md.find("head_dim"); it != md.end()) cfg.head_dim = std::atoi(it->second.c_str());
  if (auto it = md.find("cross_dim"); it != md.end()) cfg.cross_dim = std::atoi(it->second.c_str());
  if (auto it = md.find("ff_inner"); it != md.end()) cfg.ff_dim = std::atoi(it->second.c_str());
  std::printf("full-size block (%d x %d, cross %d) from %s:\n", cfg.heads, cfg.head_dim, cfg.cross_dim, dir);
  check_vs_goldens(ckpt.value(), "", cfg, g.value(),
                   {{"hidden", "in.hidden"}, {"encoder", "in.encoder"}, {"temb", "in.temb"}, {"cos", "in.rope_cos"},
                    {"sin", "in.rope_sin"}, {"mask_bias", "in.mask_bias"}},
                   "block.");
}
#endif

}  // namespace
}  // namespace ws
