// `warpstream ltx-block`: one LTX-Video transformer block on the GPU from a safetensors checkpoint — checks it
// against diffusers goldens (--goldens) and times it (CUDA-graph replay of the whole block; per-stage breakdown
// from event pairs in a separate profiling pass). The work lives in src/flow/models/ltx_block.h.
#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "command.h"
#include "core/escape.h"
#include "flow/host/ltx_config.h"
#include "warpstream/safetensors.h"
#ifdef WS_HAVE_CUDA
#include "cuda/cuda_util.h"
#include "cuda/device.h"
#include "flow/models/ltx_block.h"
#include "flow/models/ltx_block_source.h"
#include "reference/transformer.h"
#endif

namespace {

struct LtxBlockArgs {
  std::string model, goldens, weights = "bf16", grid = "16x16x24", json, prefix;
  int block = 0, text_tokens = 128, batch = 1, repeat = 50, warmup = 5;
  int heads = 0, head_dim = 0, cross_dim = 0;
  bool profile = false, fallback_attention = false, per_token_temb = false;
  uint32_t seed = 1234;
};

int usage(const std::string& msg) {
  std::fprintf(stderr, "error: ltx-block: %s\n", msg.c_str());
  return 2;
}

int fail(const std::string& what, const ws::Status& st, int code = 1) {
  std::fprintf(stderr, "error: ltx-block: %s: %s\n", what.c_str(), st.to_string().c_str());
  return code;
}

constexpr int64_t kMaxDimOption = int64_t{1} << 20;  // heads, head_dim, cross_dim, ff_inner (as ltx_config)
constexpr int64_t kMaxModelDim = int64_t{1} << 20;   // D = heads * head_dim; 4 * D still fits int

// "FxHxW" with positive integers, nothing after W, F*H*W <= 2^22 tokens.
bool parse_grid(const std::string& s, int& f, int& h, int& w) {
  int* out[3] = {&f, &h, &w};
  const char* p = s.c_str();
  const char* end = p + s.size();
  for (int i = 0; i < 3; ++i) {
    if (i > 0) {
      if (p == end || *p != 'x') return false;
      ++p;
    }
    auto [q, ec] = std::from_chars(p, end, *out[i]);
    if (ec != std::errc() || q == p || *out[i] <= 0) return false;
    p = q;
  }
  return p == end && static_cast<int64_t>(f) * h * w <= (int64_t{1} << 22);
}

// A metadata integer in [1, kMaxDimOption]; the whole string must be the number.
bool parse_dim(const std::string& s, int& out) {
  int64_t v = 0;
  auto [q, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || q != s.data() + s.size() || v < 1 || v > kMaxDimOption) return false;
  out = static_cast<int>(v);
  return true;
}

struct BlockDims {
  int heads = 32, head_dim = 64, cross_dim = 2048, ff_dim = 0;
  float norm_eps = 1e-6f;
};

// What ltx-block checks from the checkpoint's header without the GPU and without reading tensor data: config.json
// (through the one bounded parser, parse_ltx_config) or the file's metadata, then the overrides and D's bound.
// 0 = fine, else the exit code.
int validate_host(const LtxBlockArgs& a, const ws::io::SafetensorsCheckpoint* ckpt, BlockDims& dims) {
  if (ckpt != nullptr) {
    if (ckpt->has_config()) {
      auto c = ws::flow::parse_ltx_config(ckpt->config_text(), ckpt->config_path());
      if (!c.is_ok()) return fail("config", c.status(), 2);
      dims.heads = static_cast<int>(c->num_attention_heads);
      dims.head_dim = static_cast<int>(c->attention_head_dim);
      dims.cross_dim = static_cast<int>(c->cross_attention_dim);
      dims.norm_eps = c->norm_eps;
    } else if (!ckpt->files().empty()) {
      const auto& md = ckpt->files().front().metadata();
      for (auto [k, dst] : {std::pair{"heads", &dims.heads}, std::pair{"head_dim", &dims.head_dim},
                            std::pair{"cross_dim", &dims.cross_dim}, std::pair{"ff_inner", &dims.ff_dim}}) {
        auto it = md.find(k);
        if (it != md.end() && !parse_dim(it->second, *dst))
          return usage("metadata \"" + std::string(k) + "\" of " + ws::quoted(ckpt->files().front().path()) + " is " +
                       ws::quoted(it->second) + "; expected an integer in 1.." + std::to_string(kMaxDimOption));
      }
    }
  }
  if (a.heads > 0) dims.heads = a.heads;
  if (a.head_dim > 0) dims.head_dim = a.head_dim;
  if (a.cross_dim > 0) dims.cross_dim = a.cross_dim;
  const int64_t d = static_cast<int64_t>(dims.heads) * dims.head_dim;
  if (d > kMaxModelDim)
    return usage("heads " + std::to_string(dims.heads) + " x head_dim " + std::to_string(dims.head_dim) + " = " +
                 std::to_string(d) + " is above the block width limit " + std::to_string(kMaxModelDim));
  return 0;
}

// The options alone, before any file is opened. 0 = fine, else the exit code.
int validate_options(const LtxBlockArgs& a) {
  if (a.model.empty()) return usage("--model FILE|DIR is required");
  int F = 0, H = 0, W = 0;
  if (!parse_grid(a.grid, F, H, W))
    return usage("--grid must be FxHxW with positive integers and nothing after (F*H*W <= 2^22), got " +
                 ws::quoted(a.grid));
  if (a.batch < 1 || a.batch > 64) return usage("--batch must be in 1..64, got " + std::to_string(a.batch));
  if (a.text_tokens < 1 || a.text_tokens > 4096)
    return usage("--text-tokens must be in 1..4096, got " + std::to_string(a.text_tokens));
  if (a.repeat < 20 || a.repeat > 1000000 || a.warmup < 1 || a.warmup > 1000000 || a.block < 0)
    return usage("--warmup >= 1, --repeat >= 20 (each at most 10^6), --block >= 0");
  for (auto [name, v] : {std::pair{"--heads", a.heads}, std::pair{"--head-dim", a.head_dim},
                         std::pair{"--cross-dim", a.cross_dim}})
    if (v < 0 || v > kMaxDimOption)
      return usage(std::string(name) + " must be in 1.." + std::to_string(kMaxDimOption) + ", got " + std::to_string(v));
  if (a.weights != "bf16" && a.weights != "fp8" && a.weights != "int8")
    return usage("--weights must be bf16, fp8 or int8, got " + ws::quoted(a.weights));
  if (!a.goldens.empty()) {
    struct stat st {};
    if (::stat(a.goldens.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      return usage("--goldens " + ws::quoted(a.goldens) + " is not a folder (tools/ltx_goldens.py --case block-2b)");
    const std::string g = a.goldens + "/goldens.safetensors";
    if (::stat(g.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      return usage("--goldens folder has no regular file " + ws::quoted(g));
  }
  return 0;
}

#ifdef WS_HAVE_CUDA
using ws::Result;
using ws::Status;
namespace flow = ws::flow;


double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(std::ceil(p * v.size()) - 1));
  return v[i];
}

uint16_t bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

Result<ws::cuda::DeviceBuffer> upload_bf16(const std::vector<float>& v) {
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = bf16_bits(v[i]);
  WS_ASSIGN_OR_RETURN(auto b, ws::cuda::DeviceBuffer::allocate(std::max<size_t>(16, h.size() * 2)));
  WS_RETURN_IF_ERROR(::ws::cuda::copy_to_device(b.get(), h.data(), h.size() * 2));
  return b;
}
Result<ws::cuda::DeviceBuffer> upload_f32(const std::vector<float>& v) {
  WS_ASSIGN_OR_RETURN(auto b, ws::cuda::DeviceBuffer::allocate(std::max<size_t>(16, v.size() * 4)));
  WS_RETURN_IF_ERROR(::ws::cuda::copy_to_device(b.get(), v.data(), v.size() * 4));
  return b;
}
Result<std::vector<float>> download_bf16(const void* p, int64_t rows, int64_t cols, int64_t ld) {
  std::vector<uint16_t> h(rows * ld);
  WS_CUDA_RETURN_IF_ERROR(cudaMemcpy(h.data(), p, h.size() * 2, cudaMemcpyDeviceToHost));
  std::vector<float> out(rows * cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      uint32_t u = static_cast<uint32_t>(h[r * ld + c]) << 16;
      std::memcpy(&out[r * cols + c], &u, 4);
    }
  return out;
}

int run_ltx_block(const LtxBlockArgs& a) {
#if !WS_LTX_HAVE_SAFETENSORS
  (void)a;
  return usage("this build has no safetensors reader (branch 'safetensors' not merged)");
#else
  if (int rc = validate_options(a)) return rc;
  int F = 0, H = 0, W = 0;
  parse_grid(a.grid, F, H, W);
  flow::LtxWeightFormat format = a.weights == "fp8"    ? flow::LtxWeightFormat::kFP8
                                 : a.weights == "int8" ? flow::LtxWeightFormat::kINT8
                                                       : flow::LtxWeightFormat::kBF16;
  // ---- checkpoint, prefix, config ----
  auto ckpt = ws::io::open_checkpoint(a.model);
  if (!ckpt.is_ok()) return fail("checkpoint", ckpt.status(), 2);
  std::string prefix = a.prefix;
  if (prefix.empty()) {
    prefix = "transformer_blocks." + std::to_string(a.block) + ".";
    if (ckpt->find(prefix + "attn1.to_q.weight").tensor == nullptr && ckpt->find("attn1.to_q.weight").tensor != nullptr)
      prefix = "";  // a single-block file with block-relative keys (tools/ltx_goldens.py --case block-2b)
  }
  BlockDims dims;
  if (int rc = validate_host(a, &ckpt.value(), dims)) return rc;
  flow::LtxBlockConfig cfg;
  cfg.heads = dims.heads; cfg.head_dim = dims.head_dim; cfg.cross_dim = dims.cross_dim; cfg.ff_dim = dims.ff_dim;
  cfg.norm_eps = dims.norm_eps;
  const int D = cfg.dim();
  // Names, dtypes and shapes against the config, on the checkpoint's mapping: a file whose header claims huge
  // tensors is refused before the WeightStore copies (or faults in) a byte of it.
  if (Status st = flow::LtxBlockWeights::validate(flow::ltx_source_from_checkpoint(ckpt.value()), prefix, cfg);
      !st.is_ok())
    return fail("weights", st, 2);

  // ---- weights: WeightStore (one host allocation; fp8 conversion at load) -> device ----
  std::vector<std::string> names = flow::ltx_block_tensor_names(prefix);
  ws::flow::WeightStoreOptions wopt;
  if (format != flow::LtxWeightFormat::kBF16) {
    wopt.format = format == flow::LtxWeightFormat::kFP8 ? ws::flow::WeightFormat::kFp8E4M3 : ws::flow::WeightFormat::kInt8;
    wopt.quantize = [](const ws::io::SafetensorsTensor& t) {
      const std::string& n = t.name;
      auto ends = [&](const char* s) { const std::string x = s; return n.size() >= x.size() && n.compare(n.size() - x.size(), x.size(), x) == 0; };
      return t.shape.size() == 2 && (ends("to_q.weight") || ends("to_k.weight") || ends("to_v.weight") ||
                                     ends("to_out.0.weight") || ends("ff.net.0.proj.weight") || ends("ff.net.2.weight"));
    };
  }
  auto store = ws::flow::WeightStore::load(ckpt.value(), names, wopt);
  if (!store.is_ok()) return fail("weights", store.status(), 2);
  const flow::LtxTensorSource source = flow::ltx_source_from_store(store.value(), a.model);
  // Names, dtypes and shapes are checked on the host first, so a bad checkpoint is reported before device start-up.
  if (Status st = flow::LtxBlockWeights::validate(source, prefix, cfg); !st.is_ok()) return fail("weights", st, 2);
  if (Status st = ws::cuda::init_device(0); !st.is_ok()) return fail("device", st, 2);
  auto weights = flow::LtxBlockWeights::upload(source, prefix, cfg, format);
  if (!weights.is_ok()) return fail("weights", weights.status(), 2);

  // ---- inputs: goldens or random (seeded) ----
  int64_t B = a.batch, S = (int64_t)F * H * W, T = a.text_tokens, temb_rows = a.per_token_temb ? S : 1;
  std::vector<float> hidden, enc, temb, cs, sn, mask;
  std::unique_ptr<ws::io::SafetensorsFile> gold;
  if (!a.goldens.empty()) {
    auto g = ws::io::SafetensorsFile::open(a.goldens + "/goldens.safetensors");
    if (!g.is_ok()) return fail("goldens", g.status(), 2);
    gold = std::make_unique<ws::io::SafetensorsFile>(std::move(g.value()));
    auto rd = [&](const char* n, std::vector<float>& dst) -> Status {
      WS_ASSIGN_OR_RETURN(auto t, flow::ltx_read_floats(*gold, n));
      dst = std::move(t.values);
      return Status::ok();
    };
    for (auto [n, dst] : {std::pair{"in.hidden", &hidden}, std::pair{"in.encoder", &enc}, std::pair{"in.temb", &temb},
                          std::pair{"in.rope_cos", &cs}, std::pair{"in.rope_sin", &sn}, std::pair{"in.mask_bias", &mask}})
      if (Status st = rd(n, *dst); !st.is_ok()) return fail("goldens", st, 2);
    const auto* th = gold->find("in.hidden");
    const auto* te = gold->find("in.encoder");
    const auto* tt = gold->find("in.temb");
    if (th->shape.size() != 3 || th->shape[2] != D || te->shape.size() != 3)
      return usage("goldens in.hidden " + std::to_string(th->shape.size()) + "-D does not match the block's D " +
                   std::to_string(D) + " (" + a.goldens + ")");
    B = th->shape[0]; S = th->shape[1]; T = te->shape[1];
    temb_rows = tt->shape.size() == 3 ? tt->shape[1] : 1;
    cs.resize(S * D);  // [B, S, D] tables of one shared grid -> [S, D]
    sn.resize(S * D);
    std::printf("ltx-block: goldens %s: B %lld, S %lld, T %lld (--grid/--batch/--text-tokens ignored)\n",
                a.goldens.c_str(), (long long)B, (long long)S, (long long)T);
  } else {
    std::mt19937 rng(a.seed);
    std::normal_distribution<float> nd(0.f, 1.f);
    auto fill = [&](std::vector<float>& v, size_t n, float s) { v.resize(n); for (auto& x : v) x = s * nd(rng); };
    fill(hidden, B * S * D, 1.f);
    fill(enc, B * T * cfg.cross_dim, 1.f);
    fill(temb, B * temb_rows * 6 * D, 0.5f);
    mask.assign(B * T, 0.f);
    cs.resize(S * D);
    sn.resize(S * D);
    ws::ref::LtxRopeParams rp;
    rp.dim = D;
    const float scale[3] = {8.f / 25.f, 32.f, 32.f};
    ws::ref::ltx_rope_tables(rp, F, H, W, scale, cs.data(), sn.data());
  }
  auto dx0 = upload_bf16(hidden), dx = upload_bf16(hidden), denc = upload_bf16(enc), dtemb = upload_bf16(temb),
       dmask = upload_bf16(mask), dcos = upload_f32(cs), dsin = upload_f32(sn);
  for (auto* r : {&dx0, &dx, &denc, &dtemb, &dmask, &dcos, &dsin})
    if (!r->is_ok()) return fail("inputs", r->status());

  flow::LtxBlockGeometry geo;
  geo.batch = (int)B; geo.tokens = (int)S; geo.text_tokens = (int)T; geo.temb_rows = (int)temb_rows;
  flow::LtxBlockIO io{dx->get(), dtemb->get(), denc->get(), dmask->get(), dcos->as<const float>(), dsin->as<const float>()};
  flow::LtxBlockOptions opt;
  opt.force_fallback_attention = a.fallback_attention;
  auto block = flow::LtxBlock::build(cfg, geo, weights.value(), io, opt);
  if (!block.is_ok()) return fail("build", block.status());
  flow::LtxBlock& blk = *block.value();
  std::printf("ltx-block: %s block '%s' of %s: %d heads x %d, cross %d, FF %d; B %lld, S %lld, T %lld; weights %.1f MiB, "
              "activations+workspace %.1f MiB\n", flow::ltx_weight_format_name(format), prefix.c_str(), a.model.c_str(),
              cfg.heads, cfg.head_dim, cfg.cross_dim, cfg.ff(), (long long)B, (long long)S, (long long)T,
              weights->device_bytes() / 1048576.0, blk.device_bytes() / 1048576.0);
  std::printf("  attn1: %s\n  attn2: %s\n", blk.attn1_backend().c_str(), blk.attn2_backend().c_str());
  for (const auto& l : blk.linear_report()) std::printf("  linear %s\n", l.c_str());

  auto stream_r = ws::cuda::Stream::create();
  if (!stream_r.is_ok()) return fail("stream", stream_r.status());
  cudaStream_t stream = stream_r->get();
  const size_t xbytes = (size_t)B * S * D * 2;
  auto reset_x = [&]() -> Status {
    WS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dx->get(), dx0->get(), xbytes, cudaMemcpyDeviceToDevice, stream));
    return Status::ok();
  };
  nlohmann::json report;
  report["model"] = a.model; report["prefix"] = prefix; report["weights"] = a.weights;
  report["B"] = B; report["S"] = S; report["T"] = T; report["D"] = D;
  report["attn1"] = blk.attn1_backend(); report["attn2"] = blk.attn2_backend();

  // ---- one checked run ----
  if (Status st = reset_x(); !st.is_ok()) return fail("run", st);
  if (Status st = blk.enqueue(stream); !st.is_ok()) return fail("run", st);
  if (cudaError_t e = cudaStreamSynchronize(stream); e != cudaSuccess)
    return fail("run", ws::cuda::cuda_status(e, "cudaStreamSynchronize", __FILE__, __LINE__));
  int mismatches = 0;
  if (gold) {
    const flow::LtxBlockIntermediates in = blk.intermediates();
    const int64_t M = B * S;
    struct Item { const char* name; const void* p; int64_t ld; };
    for (const Item& it : {Item{"norm1_mod", in.norm1, D}, Item{"q_rope", in.q_rope, in.q_rope_ld},
                           Item{"k_rope", in.k_rope, in.q_rope_ld}, Item{"attn1_out", in.attn1, D},
                           Item{"attn2_out", in.attn2, D}, Item{"norm2_mod", in.norm2, D}, Item{"ff_out", in.ff, D},
                           Item{"out", dx->get(), D}}) {
      auto got = download_bf16(it.p, M, D, it.ld);
      if (!got.is_ok()) return fail("check", got.status());
      auto ref = flow::ltx_read_floats(*gold, std::string("block.") + it.name);
      if (!ref.is_ok()) return fail("goldens", ref.status(), 2);
      double dot = 0, ng = 0, nr = 0, mx = 0, rmax = 0;
      for (size_t i = 0; i < ref->values.size() && i < got->size(); ++i) {
        const double g = (*got)[i], r = ref->values[i];
        dot += g * r; ng += g * g; nr += r * r; rmax = std::max(rmax, std::fabs(r));
        mx = std::max(mx, std::isfinite(g) ? std::fabs(g - r) : INFINITY);
      }
      const double cosv = ng > 0 && nr > 0 ? dot / std::sqrt(ng * nr) : 0;
      const bool ok = ref->values.size() == got->size() && cosv >= 0.999 && mx <= 0.03 * std::max(rmax, 1e-3);
      mismatches += ok ? 0 : 1;
      std::printf("  check %-10s cos %.6f  max-abs %.4g (|ref| max %.4g)  %s\n", it.name, cosv, mx, rmax,
                  ok ? "ok" : "MISMATCH");
      report["check"][it.name] = {{"cos", cosv}, {"max_abs", mx}, {"ok", ok}};
    }
  }

  // ---- timing: CUDA-graph replay of the whole block (eager enqueue, said so, if capture fails) ----
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  std::string capture_error;
  {
    cudaError_t e = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) {
      capture_error = ws::cuda::cuda_status(e, "cudaStreamBeginCapture", __FILE__, __LINE__).to_string();
    } else {
      Status cap = blk.enqueue(stream);
      cudaError_t ec = cudaStreamEndCapture(stream, &graph);
      if (!cap.is_ok()) capture_error = cap.to_string();
      else if (ec != cudaSuccess)
        capture_error = ws::cuda::cuda_status(ec, "cudaStreamEndCapture", __FILE__, __LINE__).to_string();
      else if (cudaError_t ei = cudaGraphInstantiate(&exec, graph, 0); ei != cudaSuccess)
        capture_error = ws::cuda::cuda_status(ei, "cudaGraphInstantiate", __FILE__, __LINE__).to_string();
    }
    if (!capture_error.empty()) {
      (void)cudaGetLastError();  // clear the (non-sticky) capture error before the eager fallback
      std::fprintf(stderr, "warning: ltx-block: CUDA graph capture of the block failed (%s); timing eager enqueue\n",
                   capture_error.c_str());
      report["graph_capture_error"] = capture_error;
    }
  }
  auto ev0 = ws::cuda::Event::create(), ev1 = ws::cuda::Event::create();
  if (!ev0.is_ok() || !ev1.is_ok()) return fail("events", ev0.is_ok() ? ev1.status() : ev0.status());
  std::vector<double> ms;
  for (int i = 0; i < a.warmup + a.repeat; ++i) {
    Status st = reset_x();
    if (st.is_ok() && cudaEventRecord(ev0->get(), stream) != cudaSuccess) st = ws::internal_error("cudaEventRecord");
    if (st.is_ok()) {
      if (exec != nullptr) {
        if (cudaGraphLaunch(exec, stream) != cudaSuccess) st = ws::internal_error("cudaGraphLaunch failed");
      } else {
        st = blk.enqueue(stream);
      }
    }
    if (st.is_ok() && cudaEventRecord(ev1->get(), stream) != cudaSuccess) st = ws::internal_error("cudaEventRecord");
    if (st.is_ok() && cudaStreamSynchronize(stream) != cudaSuccess) st = ws::internal_error("cudaStreamSynchronize");
    if (!st.is_ok()) return fail("timing", st);
    auto t = ws::cuda::elapsed_ms(ev0.value(), ev1.value());
    if (!t.is_ok()) return fail("timing", t.status());
    if (i >= a.warmup) ms.push_back(t.value());
  }
  if (exec != nullptr) cudaGraphExecDestroy(exec);
  if (graph != nullptr) cudaGraphDestroy(graph);
  const double med = percentile(ms, 0.5), p99 = percentile(ms, 0.99);
  // FLOP counts. issue-11 count: B·(2·S·14·D² + 4·S²·D) = the S-token linears (q,k,v,out of attn1: 4D²; q,out of
  // attn2: 2D²; FF 8D²) and attn1's two S×S products. Full count adds attn2's k/v projections of the T text tokens
  // (2·T·2·D·Dc) and its two S×T products (4·S·T·D).
  const double Dd = D, Sd = (double)S, Td = (double)T, Bd = (double)B, Dc = cfg.cross_dim;
  const double flops_issue = Bd * (2 * Sd * 14 * Dd * Dd + 4 * Sd * Sd * Dd);
  const double flops_full = flops_issue + Bd * (2 * Td * 2 * Dd * Dc + 4 * Sd * Td * Dd);
  std::printf("ltx-block: %s of the block: median %.4f ms, p99 %.4f ms (%d runs after %d warm-up)\n",
              capture_error.empty() ? "CUDA-graph replay" : "eager enqueue", med, p99, a.repeat,
              a.warmup);
  report["timed"] = capture_error.empty() ? "graph replay" : "eager enqueue";
  std::printf("  %.1f TFLOP/s on 2*S*14*D^2 + 4*S^2*D per sample (%.3f TFLOP); %.1f TFLOP/s with attn2's T terms "
              "(%.3f TFLOP)\n", flops_issue / med / 1e9, flops_issue / 1e12, flops_full / med / 1e9, flops_full / 1e12);
  report["ms_median"] = med; report["ms_p99"] = p99; report["runs"] = a.repeat;
  report["tflops_issue_count"] = flops_issue / med / 1e9; report["tflops_full_count"] = flops_full / med / 1e9;

  // ---- per-stage breakdown (separate profiling pass: one event pair per stage, eager enqueue) ----
  if (a.profile) {
    const auto& stages = blk.stages();
    std::vector<ws::cuda::Event> evs;
    for (size_t i = 0; i <= stages.size(); ++i) {
      auto e = ws::cuda::Event::create();
      if (!e.is_ok()) return fail("profile", e.status());
      evs.push_back(std::move(e.value()));
    }
    std::vector<std::vector<double>> per(stages.size());
    for (int it = 0; it < a.warmup + a.repeat; ++it) {
      if (Status st = reset_x(); !st.is_ok()) return fail("profile", st);
      for (size_t i = 0; i < stages.size(); ++i) {
        if (cudaEventRecord(evs[i].get(), stream) != cudaSuccess) return fail("profile", ws::internal_error("cudaEventRecord"));
        if (Status st = blk.enqueue_stage(i, stream); !st.is_ok()) return fail("profile", st);
      }
      if (cudaEventRecord(evs[stages.size()].get(), stream) != cudaSuccess ||
          cudaStreamSynchronize(stream) != cudaSuccess)
        return fail("profile", ws::internal_error("event record / synchronize failed"));
      if (it < a.warmup) continue;
      for (size_t i = 0; i < stages.size(); ++i) {
        auto t = ws::cuda::elapsed_ms(evs[i], evs[i + 1]);
        if (!t.is_ok()) return fail("profile", t.status());
        per[i].push_back(t.value());
      }
    }
    double sum = 0;
    std::printf("  %-30s %10s %8s %10s\n", "stage", "median ms", "share", "TFLOP/s");
    std::vector<double> meds;
    for (auto& v : per) { meds.push_back(percentile(v, 0.5)); sum += meds.back(); }
    for (size_t i = 0; i < stages.size(); ++i) {
      const double tf = stages[i].flops > 0 ? stages[i].flops / meds[i] / 1e9 : 0;
      std::printf("  %-30s %10.4f %7.1f%% %10s\n", stages[i].name.c_str(), meds[i], 100 * meds[i] / sum,
                  tf > 0 ? std::to_string((int)std::lround(tf)).c_str() : "-");
      report["stages"].push_back({{"name", stages[i].name}, {"ms_median", meds[i]}, {"flops", stages[i].flops}});
    }
    std::printf("  %-30s %10.4f (eager, event-separated; the graph replay above is the block time)\n", "sum", sum);
  }
  if (!a.json.empty()) {
    std::ofstream out(a.json);
    out << report.dump(1) << "\n";
    if (!out) return usage("cannot write --json " + a.json);
  }
  if (mismatches) {
    std::fprintf(stderr, "error: ltx-block: %d intermediate(s) outside the bf16 tolerance (cos >= 0.999, max-abs <= "
                         "0.03 * max|golden|)\n", mismatches);
    return 1;
  }
  return 0;
#endif
}
#endif  // WS_HAVE_CUDA

int run(const LtxBlockArgs& a) {
#ifndef WS_HAVE_CUDA
  // The same host-side checks as the CUDA build, so bad options and files are reported as such here too.
  if (int rc = validate_options(a)) return rc;
  auto ckpt = ws::io::open_checkpoint(a.model);
  if (!ckpt.is_ok()) return fail("checkpoint", ckpt.status(), 2);
  BlockDims dims;
  if (int rc = validate_host(a, &ckpt.value(), dims)) return rc;
  return usage("this warpstream was built without CUDA (the block runs on the GPU)");
#else
  return run_ltx_block(a);
#endif
}

}  // namespace

WS_REGISTER_COMMAND(ltx_block, "ltx-block",
                    "one LTX-Video transformer block on the GPU from safetensors: check vs goldens, time it",
                    [](CLI::App& sub) -> std::function<int()> {
                      auto a = std::make_shared<LtxBlockArgs>();
                      sub.add_option("--model", a->model, "safetensors file or diffusers folder")->required();
                      sub.add_option("--block", a->block, "block index (prefix transformer_blocks.<i>.; default 0)");
                      sub.add_option("--prefix", a->prefix, "tensor name prefix (overrides --block)");
                      sub.add_option("--grid", a->grid, "latent grid FxHxW (default 16x16x24 = 6144 tokens)");
                      sub.add_option("--text-tokens", a->text_tokens, "text tokens T (default 128)");
                      sub.add_option("--batch", a->batch, "batch (default 1; 2 = CFG)");
                      sub.add_option("--weights", a->weights, "bf16 | fp8 | int8 (block linears; per-channel scales)");
                      sub.add_option("--goldens", a->goldens, "tools/ltx_goldens.py --case block-2b folder to check");
                      sub.add_option("--repeat", a->repeat, "timed runs (>= 20; default 50)");
                      sub.add_option("--warmup", a->warmup, "warm-up runs (default 5)");
                      sub.add_option("--heads", a->heads, "override num_attention_heads");
                      sub.add_option("--head-dim", a->head_dim, "override attention_head_dim");
                      sub.add_option("--cross-dim", a->cross_dim, "override cross_attention_dim");
                      sub.add_option("--seed", a->seed, "seed of the random inputs (default 1234)");
                      sub.add_flag("--per-token-temb", a->per_token_temb, "per-token timestep embedding [B, S, 6D]");
                      sub.add_flag("--profile", a->profile, "per-stage breakdown (event pairs, separate pass)");
                      sub.add_flag("--fallback-attention", a->fallback_attention, "skip cuDNN SDPA");
                      sub.add_option("--json", a->json, "write the report as JSON here");
                      return [a] { return run(*a); };
                    });
