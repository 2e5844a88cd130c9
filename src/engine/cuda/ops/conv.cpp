// CUDA op-table entries: Conv (2-D, NCHW; 1-D NCL as the 2-D form over [N, C, 1, L], lift_1d.h; 3-D and a runtime
// weight / bias through the direct N-d kernel, kernels/conv/conv_nd.h) and ConvTranspose (1-D..3-D, direct N-d kernel). Tactics, timed at build and kept in the timing cache: cuDNN
// (cudnn_conv_plan.h: algorithm x fused/unfused epilogue) and our own fused kernels (conv_tactics.h),
// per CudaBuildOptions::tactic_sources.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // cuDNN legacy API (see cudnn_conv_plan.h)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/escape.h"
#include "engine/cuda/conv_tactics.h"
#include "engine/cuda/cudnn_conv_plan.h"
#include "kernels/conv/expand_depthwise.h"
#include "kernels/conv/mbconv.h"
#include "engine/cuda/fp8_quant.h"
#include "engine/cuda/op_util.h"
#include "engine/cuda/ops/lift_1d.h"
#include "kernels/conv/conv_nd.h"
#include "kernels/conv/conv_cutlass.h"
#include "kernels/conv/conv_nhwc.h"
#include "kernels/conv/stem_pool.h"

namespace ws::cudaexec {
namespace {

using kernels::Activation;
using kernels::ActivationParams;
using kernels::ElemType;

// ------------------------------------------------------------------------------------------------
// The direct N-d path (kernels/conv/conv_nd.h): 3-D Conv, a Conv whose weight or bias is a runtime tensor, and
// ConvTranspose (1-D, 2-D, 3-D). One thread per output element, float32 accumulation, bias + residual +
// activation fused; no tactic timing (a WarpStream kernel, so it needs tactic source warpstream).

bool conv_needs_direct(const BindContext& c) {
  return in_t(c, 0).shape.size() == 5 || !in_t(c, 1).is_constant() || (has_in(c, 2) && !in_t(c, 2).is_constant());
}

Status supports_window_direct(const BindContext& c) {
  for (size_t i = 0; i < 3; ++i)
    if (has_in(c, i)) WS_RETURN_IF_ERROR(require_runtime_float(c, i));
  const size_t r = in_t(c, 0).shape.size();
  if (r < 3 || r > 5) return refuse(c, "spatial rank must be 1, 2 or 3");
  if (!(c.options.tactic_sources & kTacticWarpStream))
    return refuse(c, "the direct N-d kernel (3-D, runtime weight or transposed) needs tactic source warpstream (enabled tactic sources: " +
                         tactic_sources_string(c.options.tactic_sources) + ")");
  return Status::ok();
}

// ConvTranspose's begin pads, as analyze_conv_transpose derives them (explicit pads, VALID, or the split of
// full − out for output_shape / SAME_*, ONNX's floor-division rule); y's extents come from the analysis.
std::vector<int64_t> conv_transpose_pad_begin(const BindContext& c) {
  const ir::Shape& x = in_t(c, 0).shape;
  const ir::Shape& wt = in_t(c, 1).shape;
  const ir::Shape& y = out_shape(c);
  const size_t r = x.size() - 2;
  const std::vector<int64_t> ones(r, 1), zeros(r, 0);
  const auto strides = attr_is(c.node, "strides", ones), dil = attr_is(c.node, "dilations", ones);
  const auto pads = attr_is(c.node, "pads", std::vector<int64_t>(2 * r, 0)), out_pad = attr_is(c.node, "output_padding", zeros);
  const std::string ap = attr_s(c.node, "auto_pad", "NOTSET");
  const bool from_total = c.node.find("output_shape") != nullptr || ap == "SAME_UPPER" || ap == "SAME_LOWER";
  std::vector<int64_t> pb(r, 0);
  for (size_t i = 0; i < r; ++i) {
    const int64_t full = strides[i] * (x[i + 2] - 1) + out_pad[i] + (wt[i + 2] - 1) * dil[i] + 1;
    if (from_total) {
      const int64_t total = full - y[i + 2];
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      pb[i] = ap == "SAME_UPPER" ? half : total - half;
    } else {
      pb[i] = ap == "VALID" ? 0 : pads[i];
    }
  }
  return pb;
}

Status bind_window_direct(BindContext& c, Step& s, bool transpose) {
  const ir::Shape& x = in_t(c, 0).shape;
  const ir::Shape& wt = in_t(c, 1).shape;
  const ir::Shape& y = out_shape(c);
  kernels::ConvNdGeometry g;
  g.n = x[0]; g.c_in = x[1]; g.c_out = y[1]; g.group = attr_i(c.node, "group", 1);
  const WindowNd w = window_nd(c.node, x, y, std::vector<int64_t>(wt.begin() + 2, wt.end()));
  const std::vector<int64_t> tpb = transpose ? conv_transpose_pad_begin(c) : std::vector<int64_t>{};
  const size_t lead = 3 - (x.size() - 2);
  for (size_t a = 0; a < 3; ++a) {
    g.in[a] = w.in[a]; g.out[a] = w.out[a]; g.kernel[a] = w.k[a]; g.stride[a] = w.s[a]; g.dilation[a] = w.d[a];
    g.pad_begin[a] = transpose ? (a < lead ? 0 : tpb[a - lead]) : w.pb[a];
  }
  for (size_t k = 1; k < 3; ++k)  // constant weight / bias the engine did not upload (Conv's data_inputs is 0)
    if (has_in(c, k) && in_t(c, k).is_constant() && s.inputs[k].kind == Operand::Kind::kNone) {
      WS_ASSIGN_OR_RETURN(const void* p, c.upload(c.node.inputs[k], false));
      s.inputs[k] = Operand{Operand::Kind::kConst, 0, p};
    }
  const bool has_b = has_in(c, 2);
  const bool resid = c.node.inputs.size() > 3 && c.node.inputs[3] != ir::kNoTensor;  // fused residual Add
  const ElemType et = c.elem;
  const Activation act = c.fused_act;
  const ActivationParams ap = c.fused_params;
  c.tactics.push_back({c.node.name, c.node.op_type,
                       std::string("ws direct ") + std::to_string(x.size() - 2) + "-d " + (transpose ? "transposed conv" : "conv") +
                           " (one thread per output), " + precision_name(c.precision) + (resid ? " + residual" : ""),
                       0.0f, false});
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
    return kernels::conv_nd_direct(et, transpose, g, io.in[0], io.in[1], has_b ? io.in[2] : nullptr, resid ? io.in[3] : nullptr,
                                   io.out[0], act, ap, st);
  };
  return Status::ok();
}

Status bind_conv_transpose(BindContext& c, Step& s) { return bind_window_direct(c, s, true); }

// ------------------------------------------------------------------------------------------------
// Conv

Status supports_conv(const BindContext& c) {
  WS_RETURN_IF_ERROR(ok_float0(c));
  if (conv_needs_direct(c)) return supports_window_direct(c);
  if (in_t(c, 0).shape.size() == 3 && in_t(c, 1).shape.size() == 3) {  // 1-D: the 2-D form over [N, C, 1, L]
    auto l = lift_1d(c, true);
    return supports_conv(*l->context);
  }
  if (in_t(c, 0).shape.size() != 4) return refuse(c, "only 1-D and 2-D convolution (NCL / NCHW input) are implemented");
  if (!in_t(c, 1).is_constant()) return refuse(c, "the weight must be a build-time constant");
  if (has_in(c, 2) && !in_t(c, 2).is_constant()) return refuse(c, "the bias must be a build-time constant");
  const uint32_t src = c.options.tactic_sources;
  const std::string enabled = " (enabled tactic sources: " + tactic_sources_string(src) + ")";
  if (!(src & (kTacticCudnn | kTacticWarpStream))) return refuse(c, "Conv needs tactic source cudnn or warpstream" + enabled);
  if (!(src & kTacticCudnn)) {
    const ir::Shape& x = in_t(c, 0).shape;
    const ir::Shape& wt = in_t(c, 1).shape;
    const Status v = kernels::validate_conv2d(conv_geometry(c, x, wt, out_shape(c)));
    if (!v.is_ok()) return refuse(c, "no WarpStream conv kernel runs it (" + v.message() + ") and cudnn is not enabled" + enabled);
  }
  return Status::ok();
}

// ------------------------------------------------------------------------------------------------
// Fused-step decisions (depthwise → pointwise pairs, whole MBConv blocks): the projection conv, already bound, may
// absorb the step(s) bound just before it when one fused kernel beats their summed build-time µs. The shared part:
// the timing-cache decision under "<node key>|<suffix>" ("unfused", keeping the fastest fused µs, or the chosen
// candidate's key; an entry naming no offered candidate is timed again), timing each candidate like our other kernels
// (graph replay on scratch buffers, the residual in place), and the tactic-string notes.

// The fastest few tactics timed for one choice, fastest first: the timing-cache entry keeps the winner and, as
// "alternatives", the runners-up (TimingCache::kMaxAlternatives), which the frame-level check (CudaEngine::tune_frame)
// tries in the whole captured frame.
struct RankedTactics {
  std::vector<TimingEntry> top;
  void offer(TimingEntry e) {
    // The same tactic twice (cudnnFind lists an algorithm once per math type): its faster time only.
    auto same = std::find_if(top.begin(), top.end(), [&](const TimingEntry& t) { return t.impl == e.impl && t.algo == e.algo && t.fused == e.fused; });
    if (same != top.end()) {
      if (same->time_us <= e.time_us) return;
      top.erase(same);
    }
    auto at = std::find_if(top.begin(), top.end(), [&](const TimingEntry& t) { return e.time_us < t.time_us; });
    top.insert(at, std::move(e));
    if (top.size() > TimingCache::kMaxAlternatives + 1) top.pop_back();
  }
  // The ranked tactics other than `chosen` (same impl, algo and fused), at most kMaxAlternatives.
  std::vector<TimingEntry> others(const TimingEntry& chosen) const {
    std::vector<TimingEntry> r;
    for (const TimingEntry& t : top)
      if (!(t.impl == chosen.impl && t.algo == chosen.algo && t.fused == chosen.fused) && r.size() < TimingCache::kMaxAlternatives) r.push_back(t);
    return r;
  }
};

struct FusedCandidate {
  std::string key;               ///< timing-cache impl value
  size_t workspace_bytes = 0;    ///< scratch the run needs (c.dev buffer 2)
  /// Runs the fused kernel on x → y (y doubles as the residual when the conv has one) on stream `st`.
  std::function<Status(void* x, void* y, void* ws, cudaStream_t st)> run;
};

struct FusionDecision {
  int chosen = -1;          ///< index into the candidates; -1: stay unfused
  float fused_us = 0.0f;    ///< the chosen (or fastest, when unfused) candidate's µs
  std::string best_key;     ///< the fastest candidate timed now ("" when read from the cache or none ran)
  bool from_cache = false;
};

// `first` reads the fused kernel's input x, `last` writes its output y: the timing buffers are sized from them.
Result<FusionDecision> decide_fusion(BindContext& c, const std::string& suffix, const std::vector<FusedCandidate>& candidates, float unfused_us,
                                     const kernels::Conv2dGeometry& first, const kernels::Conv2dGeometry& last, const std::string& absorbing) {
  const size_t x_bytes = static_cast<size_t>(first.n * first.c_in * first.in_h * first.in_w) * c.elem_bytes;
  const size_t y_bytes = static_cast<size_t>(last.n * last.c_out * last.out_h * last.out_w) * c.elem_bytes;
  FusionDecision d;
  const std::string key = c.cache_key() + "|" + suffix;
  if (const TimingEntry* e = c.cache.find(key); e && e->impl) {
    if (*e->impl == "unfused") {
      d.from_cache = true;
      // The fastest fused tactic's µs: its first alternative; entries written before alternatives kept it as time_us.
      d.fused_us = e->alternatives.empty() ? e->time_us : e->alternatives.front().time_us;
    }
    for (size_t i = 0; i < candidates.size(); ++i)
      if (candidates[i].key == *e->impl) { d.chosen = int(i); d.fused_us = e->time_us; d.from_cache = true; }
  }
  if (d.from_cache) return d;
  WS_ASSIGN_OR_RETURN(void* sx, c.dev.get(0, x_bytes));
  WS_ASSIGN_OR_RETURN(void* sy, c.dev.get(1, y_bytes));
  int best = -1;
  RankedTactics ranked;
  ranked.offer({.impl = "unfused", .time_us = unfused_us});
  for (size_t i = 0; i < candidates.size(); ++i) {
    const FusedCandidate& t = candidates[i];
    void* tws = nullptr;
    if (t.workspace_bytes > 0) {
      auto got = c.dev.get(2, t.workspace_bytes);
      if (!got) continue;
      tws = *got;
    }
    auto us = c.dev.time_us([&](cudaStream_t st) { return t.run(sx, sy, tws, st); }, 0, true,
                            c.node.describe(c.graph.opset) + ": " + t.key + " (absorbing " + absorbing + ")");
    if (!us) { (void)cudaGetLastError(); continue; }  // e.g. no GPC has room for a 16-block cluster
    ranked.offer({.impl = t.key, .time_us = *us});
    if (best < 0 || *us < d.fused_us) { best = int(i); d.fused_us = *us; }
  }
  if (best >= 0) d.best_key = candidates[size_t(best)].key;
  d.chosen = best >= 0 && d.fused_us < unfused_us ? best : -1;
  TimingEntry decision;
  decision.impl = d.chosen >= 0 ? candidates[size_t(d.chosen)].key : std::string("unfused");
  decision.time_us = d.chosen >= 0 ? d.fused_us : unfused_us;  // "unfused": the pair's (or three kernels') µs
  decision.alternatives = ranked.others(decision);  // "unfused": the fused tactics, fastest first
  c.cache.put(key, std::move(decision));
  return d;
}

// Why a fusion was not taken, for the projection's tactic string:
// "; <what> fused: best <key> 9.1 us >= <unfused> 8.0 us, kept <n> kernels" (or "no fused tactic ran").
std::string unfused_note(const FusionDecision& d, const char* what, const char* unfused, float unfused_us, const char* kept) {
  if (!d.from_cache && d.best_key.empty()) return std::string("; ") + what + " fused: no fused tactic ran, kept " + kept;
  return std::string("; ") + what + " fused: best " + (d.best_key.empty() ? std::string() : d.best_key + " ") + us1(d.fused_us) + " us >= " + unfused +
         " " + us1(unfused_us) + " us, kept " + kept;
}

// The absorbed producers' tactic strings say where their work went.
void mark_fused_into(BindContext& c, std::initializer_list<const Step*> producers) {
  for (const Step* prod : producers)
    for (auto it = c.tactics.rbegin(); it != c.tactics.rend(); ++it)
      if (it->node == prod->node) { it->choice += " -> fused into " + ::ws::quoted(c.node.name); break; }
}

// `s` becomes the fused step: it does the work of the `n` steps bound just before it (the first of them `first`, whose
// input 0 it reads in place of its own), took `us` at build, launches `kernels` kernels with `workspace` bytes; it is no
// longer a step of one of our conv plans a later step may absorb (ws_conv = nullptr).
void become_fused(Step& s, const Step& first, int n, float us, size_t workspace, int kernels) {
  s.inputs[0] = first.inputs[0];
  s.absorbs_previous = n;
  s.ws_conv = nullptr;
  s.time_us = us;
  s.workspace_bytes = workspace;
  s.tile_counters = 0;
  s.kernels = kernels;
}

// Depthwise → pointwise fusion (kernels::conv2d_depthwise_pointwise): the pointwise Conv `pw` (already bound: its best
// tactic took pw_us) absorbs the depthwise step bound just before it (BindContext::depthwise_producer) when one fused
// kernel is faster than the pair (decide_fusion, cache suffix "dwpw"). Returns true when `s` became the fused step
// (absorbs_previous = 1; reading the depthwise input in place of input 0); otherwise *note says why
// ("; depthwise->pointwise fused: best ws_dwpw_32x32 9.1 us >= pair 8.0 us, kept two kernels").
Result<bool> bind_depthwise_pointwise(BindContext& c, Step& s, const WsConvPlan& pw, float pw_us, bool resid, int cc_major, std::string* note) {
  const Step& prod = *c.depthwise_producer;
  const std::shared_ptr<const WsConvPlan> dw = prod.ws_conv;
  if (cc_major < 7 || c.elem != ElemType::kFloat16 || c.nhwc || !pw.weight || !dw || !dw->weight ||
      (dw->impl != WsConv::kDepthwise && dw->impl != WsConv::kDepthwise4) || !kernels::conv2d_depthwise_pointwise_applicable(dw->g, pw.g))
    return false;
  const std::vector<DwPwTactic> tactics = dwpw_candidates(pw.g);
  std::vector<FusedCandidate> candidates;
  for (const DwPwTactic& t : tactics)
    candidates.push_back({t.key(), t.splits > 1 ? kernels::conv2d_pointwise_workspace_bytes(pw.g, t.splits) : 0,
                          [&, t](void* x, void* y, void* ws, cudaStream_t st) {
                            kernels::ConvEpilogue e = pw.epi;
                            e.residual = resid ? y : nullptr;
                            return kernels::conv2d_depthwise_pointwise(t.tile, dw->g, pw.g, x, dw->weight, dw->epi, pw.weight, y, e, st, t.splits, ws);
                          }});
  const float pair_us = prod.time_us + pw_us;
  WS_ASSIGN_OR_RETURN(const FusionDecision d, decide_fusion(c, "dwpw", candidates, pair_us, dw->g, pw.g, ::ws::quoted(prod.node)));
  if (d.chosen < 0) {
    *note = unfused_note(d, "depthwise->pointwise", "pair", pair_us, "two kernels");
    return false;
  }
  const DwPwTactic t = tactics[size_t(d.chosen)];
  auto pwp = std::make_shared<WsConvPlan>(pw);
  become_fused(s, prod, 1, d.fused_us, align_up(kernels::conv2d_pointwise_workspace_bytes(pw.g, t.splits)), t.splits > 1 ? 2 : 1);
  mark_fused_into(c, {&prod});
  std::string tiles = std::string(kernels::pointwise_tile_name(t.tile)) + (t.splits > 1 ? " split-K " + std::to_string(t.splits) + " + reduce kernel" : "");
  c.tactics.push_back({c.node.name, "Conv",
                       "ws depthwise->pointwise fused " + tiles + " (depthwise output in shared memory, wmma tensor cores; pair " + us1(pair_us) +
                           " us): [" + dw->describe(c.precision) + "] -> [" + pw.describe(c.precision) + (resid ? " + residual" : "") + "]",
                       d.fused_us, d.from_cache, false});
  // The chained input wavefront (StepIo::input_rows): the fused kernel waits on the rows of its input (the stem's output).
  s.can_wait_input_rows = dw->g.kernel_h == 3 && dw->g.kernel_w == 3 && dw->g.n == 1 && !resid;
  s.run = [dw, pwp, t, resid](const StepIo& io, const ContextLibs&, cudaStream_t st) {
    kernels::ConvEpilogue e = pwp->epi;
    e.residual = resid ? io.in[3] : nullptr;
    kernels::ConvEpilogue dwe = dw->epi;
    if (io.input_rows) dwe.input_rows = *io.input_rows;
    return kernels::conv2d_depthwise_pointwise(t.tile, dw->g, pwp->g, io.in[0], dw->weight, dwe, pwp->weight, io.out[0], e, st, t.splits,
                                               io.workspace);
  };
  return true;
}

// Fused MBConv block (kernels::conv2d_mbconv): the projection `pw` (already bound, pw_us) absorbs the depthwise step
// and the expand step before it (BindContext::expand_producer / depthwise_producer) when one cluster kernel beats the
// three (decide_fusion, cache suffix "mbconv", candidates "ws_mbconv_c8" / "ws_mbconv_c16": the cluster sizes whose
// shared memory this device gives, so a cached size it cannot hold is timed again). Returns true when `s` became the
// fused step (absorbs_previous = 2, reading the expand conv's input in place of input 0); otherwise *note says why.
Result<bool> bind_mbconv(BindContext& c, Step& s, const WsConvPlan& pw, float pw_us, bool resid, int cc_major, std::string* note) {
  const Step& dws = *c.depthwise_producer;
  const Step& exs = *c.expand_producer;
  const std::shared_ptr<const WsConvPlan> dw = dws.ws_conv, ex = exs.ws_conv;
  auto pointwise16 = [](const WsConvPlan& p) {
    return p.weight && !ws_conv_is_fp8(p.impl) && p.impl != WsConv::kDepthwise && p.impl != WsConv::kDepthwise4 && p.impl != WsConv::kDirect &&
           p.et == ElemType::kFloat16 && !p.epi.residual;
  };
  if (cc_major < 9 || c.elem != ElemType::kFloat16 || c.nhwc || !dw || !ex || !dw->weight || !pointwise16(*ex) || !pointwise16(pw) ||
      (dw->impl != WsConv::kDepthwise && dw->impl != WsConv::kDepthwise4) || !kernels::conv2d_mbconv_mismatch(ex->g, dw->g, pw.g).empty())
    return false;
  int device = 0, optin = 0;
  WS_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  WS_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  std::vector<int> sizes;
  std::vector<FusedCandidate> candidates;
  for (int g : kernels::kMbConvClusterSizes) {
    const size_t smem = kernels::conv2d_mbconv_smem_bytes(ex->g, dw->g, pw.g, g);
    if (smem == 0 || smem > size_t(optin)) continue;
    sizes.push_back(g);
    candidates.push_back({"ws_mbconv_c" + std::to_string(g), 0, [&, g](void* x, void* y, void*, cudaStream_t st) {
                            kernels::ConvEpilogue e = pw.epi;
                            e.residual = resid ? y : nullptr;
                            return kernels::conv2d_mbconv(ex->g, dw->g, pw.g, g, x, ex->weight, ex->epi, dw->weight, dw->epi, pw.weight, y, e, st);
                          }});
  }
  const float three_us = exs.time_us + dws.time_us + pw_us;
  WS_ASSIGN_OR_RETURN(const FusionDecision d,
                      decide_fusion(c, "mbconv", candidates, three_us, ex->g, pw.g, ::ws::quoted(exs.node) + ", " + ::ws::quoted(dws.node)));
  if (d.chosen < 0) {
    *note = unfused_note(d, "MBConv", "three kernels", three_us, "three");
    return false;
  }
  const int g = sizes[size_t(d.chosen)];
  auto pwp = std::make_shared<WsConvPlan>(pw);
  become_fused(s, exs, 2, d.fused_us, 0, 1);
  mark_fused_into(c, {&exs, &dws});
  c.tactics.push_back({c.node.name, "Conv",
                       "ws MBConv fused, cluster " + std::to_string(g) + " (expand, depthwise, project in one kernel; three kernels " + us1(three_us) +
                           " us): [" + ex->describe(c.precision) + "] -> [" + dw->describe(c.precision) + "] -> [" + pw.describe(c.precision) +
                           (resid ? " + residual" : "") + "]",
                       d.fused_us, d.from_cache, false});
  s.run = [ex, dw, pwp, g, resid](const StepIo& io, const ContextLibs&, cudaStream_t st) {
    kernels::ConvEpilogue e = pwp->epi;
    e.residual = resid ? io.in[3] : nullptr;
    return kernels::conv2d_mbconv(ex->g, dw->g, pwp->g, g, io.in[0], ex->weight, ex->epi, dw->weight, dw->epi, pwp->weight, io.out[0], e, st);
  };
  return true;
}

// Expand → depthwise fusion (kernels::conv2d_expand_depthwise): the depthwise Conv `dw` (already bound: its best tactic
// took dw_us) absorbs the 1×1 expand step bound just before it (BindContext::pointwise_producer) when one fused kernel
// is faster than the pair (decide_fusion, cache suffix "exdw", candidates "ws_exdw_r<rows>" and "ws_exdw_r<rows>_o4":
// the band heights whose shared memory this device gives, r0 = the whole map, each with 1 and 4 outputs per depthwise
// unit). Returns true when `s` became the fused step (absorbs_previous
// = 1, reading the expand conv's input in place of input 0); otherwise *note says why.
Result<bool> bind_expand_depthwise(BindContext& c, Step& s, const WsConvPlan& dw, float dw_us, int cc_major, std::string* note) {
  const Step& exs = *c.pointwise_producer;
  const std::shared_ptr<const WsConvPlan> ex = exs.ws_conv;
  if (cc_major < 7 || c.elem != ElemType::kFloat16 || c.nhwc || !ex || !ex->weight || !dw.weight || dw.epi.residual || ex->epi.residual ||
      ws_conv_is_fp8(ex->impl) || ex->impl == WsConv::kDepthwise || ex->impl == WsConv::kDepthwise4 || ex->impl == WsConv::kDirect ||
      ex->et != ElemType::kFloat16 || (dw.impl != WsConv::kDepthwise && dw.impl != WsConv::kDepthwise4) ||
      !kernels::conv2d_expand_depthwise_mismatch(ex->g, dw.g).empty())
    return false;
  int device = 0, optin = 0;
  WS_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  WS_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  std::vector<std::pair<int, int>> forms;  // (rows, outputs per depthwise unit) of each candidate
  std::vector<FusedCandidate> candidates;
  for (int r : kernels::kExpandDepthwiseRows) {
    if (r >= dw.g.out_h) continue;  // the same band as r0 (the whole map)
    for (int o : kernels::kExpandDepthwiseOutputs) {
      const size_t smem = kernels::conv2d_expand_depthwise_smem_bytes(ex->g, dw.g, r, o);
      if (smem == 0 || smem > size_t(optin)) continue;
      forms.emplace_back(r, o);
      candidates.push_back({"ws_exdw_r" + std::to_string(r) + (o == 1 ? "" : "_o" + std::to_string(o)), 0, [&, r, o](void* x, void* y, void*, cudaStream_t st) {
                              return kernels::conv2d_expand_depthwise(ex->g, dw.g, r, o, x, ex->weight, ex->epi, dw.weight, y, dw.epi, st);
                            }});
    }
  }
  const float pair_us = exs.time_us + dw_us;
  WS_ASSIGN_OR_RETURN(const FusionDecision d, decide_fusion(c, "exdw", candidates, pair_us, ex->g, dw.g, ::ws::quoted(exs.node)));
  if (d.chosen < 0) {
    *note = unfused_note(d, "expand->depthwise", "pair", pair_us, "two kernels");
    return false;
  }
  const int r = forms[size_t(d.chosen)].first, o = forms[size_t(d.chosen)].second;
  auto dwp = std::make_shared<WsConvPlan>(dw);
  become_fused(s, exs, 1, d.fused_us, 0, 1);  // ws_conv = nullptr: no depthwise step a later pointwise conv may absorb
  mark_fused_into(c, {&exs});
  c.tactics.push_back({c.node.name, "Conv",
                       "ws expand->depthwise fused, " + (r == 0 ? std::string("whole map") : std::to_string(r) + " output rows") +
                           " per block, " + std::to_string(o) + (o == 1 ? " output" : " outputs") +
                           " per depthwise thread (expanded tensor in shared memory, wmma tensor cores; pair " + us1(pair_us) + " us): [" +
                           ex->describe(c.precision) + "] -> [" + dw.describe(c.precision) + "]",
                       d.fused_us, d.from_cache, false});
  s.run = [ex, dwp, r, o](const StepIo& io, const ContextLibs&, cudaStream_t st) {
    return kernels::conv2d_expand_depthwise(ex->g, dwp->g, r, o, io.in[0], ex->weight, ex->epi, dwp->weight, io.out[0], dwp->epi, st);
  };
  return true;
}

// The cuDNN graph form of an NHWC fp16 conv (cudnn_fe_conv.h): conv + bias (+ residual) (+ ReLU) as one graph whose
// engine configurations are tactics. Null when it does not apply (layout, precision, group, activation, explicit pad,
// CudaBuildOptions::cudnn_graph_convs off) or cuDNN refuses the graph (the legacy algorithms then stand alone).
constexpr int kFeConvMaxPlans = 12, kFeConvMaxRtcPlans = 4;

std::shared_ptr<const FeConv> build_fe_conv(const BindContext& c, const ConvPlan& p, const ir::Shape& x, const ir::Shape& wt,
                                            const ir::Shape& y, const Window2d& win, int64_t group, std::string* why,
                                            int64_t only_graph_index = -1) {
  if (!c.nhwc || group != 1 || !half_storage(c.precision) || p.padded || !c.options.cudnn_graph_convs || !cudnn_fe_conv_built() ||
      (c.fused_act != Activation::kRelu && c.fused_act != Activation::kNone))
    return nullptr;
  const FeConvShape fs{.n = x[0], .c = x[1], .h = x[2], .w = x[3], .k = wt[0], .r = wt[2], .s = wt[3], .pad_h = win.pb[0],
                       .pad_w = win.pb[1], .stride_h = win.s[0], .stride_w = win.s[1], .dil_h = win.d[0], .dil_w = win.d[1],
                       .out_h = y[2], .out_w = y[3], .residual = p.residual, .relu = c.fused_act == Activation::kRelu};
  auto built = FeConv::build(c.dev.cudnn, fs, c.node.describe(c.graph.opset), kFeConvMaxPlans, kFeConvMaxRtcPlans,
                             static_cast<int64_t>(c.options.max_workspace_bytes), only_graph_index);
  if (!built) {
    (void)cudaGetLastError();
    if (why) *why = ", cuDNN graph refused: " + built.status().message();
    return nullptr;
  }
  return std::shared_ptr<const FeConv>(std::move(*built));
}

// Split-K scratch for timing one candidate: its fp32 partials (build scratch slot 2) and its tile counters (slot 3),
// zeroed before the first run (each run leaves them zero). ok = false: not available (the candidate is skipped).
struct SplitKScratch {
  void* ws = nullptr;
  unsigned* counters = nullptr;
  bool ok = true;
};
Result<SplitKScratch> split_k_scratch(BindContext& c, size_t workspace_bytes, size_t counters) {
  SplitKScratch k;
  if (workspace_bytes > 0) {
    auto got = c.dev.get(2, workspace_bytes);
    if (!got) return SplitKScratch{nullptr, nullptr, false};
    k.ws = *got;
  }
  if (counters > 0) {
    auto got = c.dev.get(3, counters * sizeof(unsigned));
    if (!got) return SplitKScratch{nullptr, nullptr, false};
    WS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(*got, 0, counters * sizeof(unsigned), c.dev.stream.get()));
    k.counters = static_cast<unsigned*>(*got);
  }
  return k;
}

// Our NHWC fp16 implicit-GEMM conv, split-K across a thread-block cluster (kernels/conv/conv_nhwc.h), as a tactic of
// channels-last convs on sm_90 (CudaBuildOptions::nhwc_igemm): timing-cache impl "ws_nhwc_igemm_n<tile_n>_s<splits>".
struct NhwcIgemm {
  kernels::Conv2dGeometry g;
  kernels::NhwcIgemmForm form;
  const void* weight = nullptr;  // KRSC fp16 (a build-time constant: the kernel reads it before its PDL wait)
  kernels::ConvEpilogue epi;     // bias fp32, activation, pdl; the residual is bound per run
  std::string key() const { return "ws_nhwc_igemm_" + kernels::nhwc_igemm_form_name(form); }
  Status run(const void* x, void* y, const void* residual, cudaStream_t st) const {
    kernels::ConvEpilogue e = epi;
    e.residual = residual;
    return kernels::conv2d_nhwc_igemm(g, form, x, weight, y, e, st);
  }
};

// Forms worth timing for `g`: each tile_n (32, 64) unsplit, then split counts 2, 4, 8, 16 while the grid stays within
// ~2 waves of 132 SMs, each split keeps at least 2 K tiles and no split is empty (the kernel's chunk is
// ceil(k_tiles / s)).
std::vector<kernels::NhwcIgemmForm> nhwc_igemm_forms(const kernels::Conv2dGeometry& g) {
  const int64_t m_tiles = (g.n * g.out_h * g.out_w + kernels::kNhwcTileM - 1) / kernels::kNhwcTileM;
  const int64_t k_tiles = g.kernel_h * g.kernel_w * g.c_in / kernels::kNhwcTileK;
  std::vector<kernels::NhwcIgemmForm> out;
  for (int tn : {64, 32}) {
    const int64_t tiles = m_tiles * ((g.c_out + tn - 1) / tn);
    out.push_back({tn, 1});
    for (int s = 2; s <= kernels::kNhwcMaxSplits && tiles * s <= 264 && k_tiles / s >= 2; s *= 2) {
      const int64_t chunk = (k_tiles + s - 1) / s;
      if ((s - 1) * chunk >= k_tiles) continue;
      out.push_back({tn, s});
    }
  }
  return out;
}

// CUTLASS's implicit-GEMM conv2d fprop with serial split-K (kernels/conv/conv_cutlass.h) as a tactic of channels-last
// convs without a residual (CudaBuildOptions::cutlass_convs, opt-in until run on a GPU): timing-cache impl
// "cutlass_conv_<tile>_split<splits>" (e.g. "cutlass_conv_64x64x32_s4_split2": s4 = 4 pipeline stages). Its semaphores
// are the step's tile counters (zero in the arena, left zero by each run).
struct CutlassConv {
  kernels::Conv2dGeometry g;
  kernels::CutlassConvTile tile = kernels::CutlassConvTile::k64x64x32s4;
  int splits = 1;
  Activation act = Activation::kNone;
  const void* weight = nullptr;  // KRSC fp16
  const void* bias = nullptr;    // fp16 [c_out]; zeros when the node has none
  bool pdl = false;              // programmatic dependent launch (as our kernels: CudaBuildOptions, sm_90)
  std::string key() const { return std::string("cutlass_conv_") + kernels::cutlass_conv_tile_name(tile) + "_split" + std::to_string(splits); }
  size_t semaphores() const {
    size_t n = 0;
    return kernels::conv2d_cutlass_check(g, tile, act, splits, &n).is_ok() ? n : 0;
  }
  Status run(const void* x, void* y, unsigned* counters, cudaStream_t st) const {
    static_assert(sizeof(unsigned) == sizeof(int));
    return kernels::conv2d_cutlass(g, tile, splits, x, weight, bias, y, act, reinterpret_cast<int*>(counters), st, pdl);
  }
};

// (tile, split count) pairs worth timing for `g`: every tile at split 1, then powers of two while the grid stays within
// ~2 waves of 132 SMs and CUTLASS accepts the split (each slice takes whole K-deep channel chunks).
std::vector<std::pair<kernels::CutlassConvTile, int>> cutlass_conv_forms(const kernels::Conv2dGeometry& g, Activation act) {
  std::vector<std::pair<kernels::CutlassConvTile, int>> out;
  const int64_t tiles = ((g.n * g.out_h * g.out_w + 63) / 64) * ((g.c_out + 63) / 64);  // both tiles are 64 x 64
  for (kernels::CutlassConvTile t : kernels::kCutlassConvTiles)
    for (int sp = 1; sp <= kernels::kCutlassConvMaxSplits && (sp == 1 || tiles * sp <= 264); sp *= 2)
      if (kernels::conv2d_cutlass_check(g, t, act, sp).is_ok()) out.emplace_back(t, sp);
  return out;
}

Status bind_conv(BindContext& c, Step& s) {
  if (conv_needs_direct(c)) return bind_window_direct(c, s, false);
  if (in_t(c, 0).shape.size() == 3) {  // 1-D: the 2-D form over [N, C, 1, L] (lift_1d.h)
    auto l = lift_1d(c, true);
    return bind_conv(*l->context, s);
  }
  auto plan = std::make_shared<ConvPlan>();
  ConvPlan& p = *plan;
  const ir::Shape& x = in_t(c, 0).shape;
  const ir::Shape& wt = in_t(c, 1).shape;
  const ir::Shape& y = out_shape(c);
  const int64_t group = attr_i(c.node, "group", 1);
  const Window2d win = window_of(c.node, x, y, {wt[2], wt[3]});
  const cudnnDataType_t dt = half_storage(c.precision) ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
  const uint32_t sources = c.options.tactic_sources;
  bool use_cudnn = (sources & kTacticCudnn) != 0;
  p.et = c.elem;
  p.act = c.fused_act;
  p.act_params = c.fused_params;
  p.count = ir::shape_elements(y); p.channels = y[1]; p.inner = y[2] * y[3];
  // A fused residual Add (engine pass fuse_conv_residual_adds) rides as input 3 (runtime tensor of y's shape).
  p.residual = c.node.inputs.size() > 3 && c.node.inputs[3] != ir::kNoTensor;
  const bool resid = p.residual;

  // Our own kernels: padding by bounds checks (no pad kernel, no workspace), bias + activation fused.
  auto own = std::make_shared<WsConvPlan>();
  own->g = conv_geometry(c, x, wt, y);
  own->et = c.elem;
  own->epi.act = c.fused_act;
  own->epi.params = c.fused_params;
  int cc_major = 0, cc_minor = 0;
  WS_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&cc_major, cudaDevAttrComputeCapabilityMajor, c.options.device));
  WS_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&cc_minor, cudaDevAttrComputeCapabilityMinor, c.options.device));
  own->epi.pdl = c.options.programmatic_dependent_launch && cc_major >= 9;  // kernels/pdl.cuh
  // Split-K tactics come in two forms, both timed when CudaBuildOptions::split_k_in_kernel allows: partials reduced
  // by a second kernel, or inside the GEMM kernel by each tile's last block ("_serial"). Neither wins everywhere: on
  // EfficientNet-Lite0's 7x7 and 14x14 convs the serial form, reducing one tile per block, ran ~4.6 µs slower per conv
  // (10.8 against 6.2 µs) than the reduce kernel's whole-GPU pass (device run 50 of 2026-12-04: 388.0 against 322.0 µs end to end p50).
  // Since 2026-12-06 a third form reduces across each tile's thread-block cluster (CudaBuildOptions::split_k_cluster;
  // fp16 on compute capability 9.0+): one kernel like the serial form, but every block of the tile shares the sum.
  auto split_forms = [&](WsConv o) {
    std::vector<SplitKForm> f{SplitKForm::kReduceKernel};
    if (ws_conv_splits(o) <= 1) return f;
    if (c.options.split_k_in_kernel) f.push_back(SplitKForm::kSerial);
    if (c.options.split_k_cluster && cc_major >= 9 && c.elem == ElemType::kFloat16 && !ws_conv_is_fp8(o)) f.push_back(SplitKForm::kCluster);
    return f;
  };
  // Channels-last (BindContext::nhwc): cuDNN only — our own conv kernels read NCHW.
  std::vector<WsConv> own_candidates = c.nhwc ? std::vector<WsConv>{} : ws_conv_candidates(c, own->g, cc_major >= 7);
  // Precision fp8 (cuda_engine.h Precision::kFloat8): an NCHW pointwise conv whose input has a calibrated range may
  // run our FP8 tactics — E4M3 weight codes with per-output-channel scales (fp8_quant.h), the input quantised in the
  // kernel with scale amax / 448. They are timed beside the fp16 tactics and the fastest wins (TensorRT's FP8 flag:
  // a permission); with fp8_obey_precision only the FP8 tactics are timed. Any other conv runs as in fp16 mode.
  const std::vector<WsConv> fp8_candidates = c.precision == Precision::kFloat8 && !c.nhwc && cc_major * 10 + cc_minor >= 89
                                                 ? ws_conv_fp8_candidates(c, own->g) : std::vector<WsConv>{};
  const std::optional<float> calibrated = fp8_candidates.empty() ? std::nullopt : c.fp8_input_scale();
  const bool fp8 = calibrated.has_value();
  const float x_scale = calibrated.value_or(0.0f);
  if (fp8) {
    const float* wsrc = c.graph.tensor(c.node.inputs[1]).data_as<float>();
    WS_ASSIGN_OR_RETURN(const Fp8RowCodes q, quantize_rows_e4m3(wsrc, wt[0], wt[1] * wt[2] * wt[3], kernels::kFp8KAlign, c.node.describe(c.graph.opset)));
    std::vector<float> out_scale(q.scale);
    for (float& v : out_scale) v *= x_scale;
    WS_ASSIGN_OR_RETURN(const void* codes, c.upload_bytes(q.codes.data(), q.codes.size()));
    WS_ASSIGN_OR_RETURN(const void* os, c.upload_values(out_scale, true));
    own->fp8 = kernels::PointwiseFp8Weights{static_cast<const uint8_t*>(codes), q.stride, static_cast<const float*>(os), 1.0f / x_scale};
    if (c.options.fp8_obey_precision) {
      own_candidates = fp8_candidates;
      use_cudnn = false;
    } else {
      own_candidates.insert(own_candidates.end(), fp8_candidates.begin(), fp8_candidates.end());
    }
  }
  const bool fp16_weights = !fp8 || !c.options.fp8_obey_precision;
  if (c.nhwc && !use_cudnn) return internal_error(c.node.describe(c.graph.opset) + ": an NHWC conv needs tactic source cudnn");
  if (c.nhwc) p.inner = 1;  // the epilogue's channel index is i % C in NHWC
  if (!use_cudnn && own_candidates.empty())
    return refuse(c, "no WarpStream conv kernel runs it and cudnn is not enabled (enabled tactic sources: " + tactic_sources_string(sources) + ")");

  // cuDNN: pads — symmetric ones go to cuDNN; asymmetric ones are applied by an explicit zero-pad kernel.
  int64_t sym[2] = {win.pb[0], win.pb[1]};
  int64_t xin[2] = {x[2], x[3]};
  if (win.pb[0] != win.pe[0] || win.pb[1] != win.pe[1]) {
    p.padded = true;
    p.planes = x[0] * x[1]; p.in_h = x[2]; p.in_w = x[3]; p.top = win.pb[0]; p.left = win.pb[1];
    p.ph = x[2] + win.pb[0] + win.pe[0]; p.pw = x[3] + win.pb[1] + win.pe[1];
    p.pad_bytes = align_up(static_cast<size_t>(p.planes * p.ph * p.pw) * c.elem_bytes);
    sym[0] = sym[1] = 0;
    xin[0] = p.ph; xin[1] = p.pw;
    if (c.nhwc) return internal_error(c.node.describe(c.graph.opset) + ": asymmetric pads in an NHWC segment (assign_layouts admits symmetric pads only)");
  }
  const cudnnTensorFormat_t fmt = c.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  if (use_cudnn) {
    WS_CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&p.x));
    WS_CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&p.y));
    WS_CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&p.bias));
    WS_CUDNN_RETURN_IF_ERROR(cudnnCreateFilterDescriptor(&p.w));
    WS_CUDNN_RETURN_IF_ERROR(cudnnCreateConvolutionDescriptor(&p.conv));
    WS_CUDNN_RETURN_IF_ERROR(cudnnCreateActivationDescriptor(&p.act_desc));
    WS_CUDNN_RETURN_IF_ERROR(cudnnSetTensor4dDescriptor(p.x, fmt, dt, int(x[0]), int(x[1]), int(xin[0]), int(xin[1])));
    WS_CUDNN_RETURN_IF_ERROR(cudnnSetTensor4dDescriptor(p.y, fmt, dt, int(y[0]), int(y[1]), int(y[2]), int(y[3])));
    WS_CUDNN_RETURN_IF_ERROR(cudnnSetTensor4dDescriptor(p.bias, fmt, dt, 1, int(y[1]), 1, 1));
    WS_CUDNN_RETURN_IF_ERROR(cudnnSetFilter4dDescriptor(p.w, dt, fmt, int(wt[0]), int(wt[1]), int(wt[2]), int(wt[3])));
    WS_CUDNN_RETURN_IF_ERROR(cudnnSetConvolution2dDescriptor(p.conv, int(sym[0]), int(sym[1]), int(win.s[0]), int(win.s[1]), int(win.d[0]),
                                                             int(win.d[1]), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    WS_CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionGroupCount(p.conv, int(group)));
    // fp32: plain FMA math (no TF32), so results track the CPU executor; fp16: tensor cores, fp32 accumulate.
    const cudnnMathType_t math = half_storage(c.precision) ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
    WS_CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionMathType(p.conv, math));
    WS_CUDNN_RETURN_IF_ERROR(cudnnSetActivationDescriptor(p.act_desc, c.fused_act == Activation::kRelu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY,
                                                          CUDNN_PROPAGATE_NAN, 0.0));
    int on = 0, oc = 0, oh = 0, ow = 0;
    WS_CUDNN_RETURN_IF_ERROR(cudnnGetConvolution2dForwardOutputDim(p.conv, p.x, p.w, &on, &oc, &oh, &ow));
    if (on != y[0] || oc != y[1] || oh != y[2] || ow != y[3]) return internal_error(c.node.describe(c.graph.opset) + ": cuDNN output shape disagrees with shape inference");
  }

  if (!fp16_weights) {
    // only FP8 tactics: the fp16 weight is not needed (they read the codes)
  } else if (c.nhwc) {  // cuDNN's NHWC filter is [K, R, S, C/g] (KRSC)
    const ir::Tensor& wt_t = c.graph.tensor(c.node.inputs[1]);
    const float* src = wt_t.data_as<float>();
    const int64_t K = wt[0], C = wt[1], R = wt[2], S = wt[3];
    std::vector<float> krsc(static_cast<size_t>(K * C * R * S));
    for (int64_t k = 0; k < K; ++k)
      for (int64_t ch = 0; ch < C; ++ch)
        for (int64_t r = 0; r < R; ++r)
          for (int64_t q = 0; q < S; ++q) krsc[static_cast<size_t>(((k * R + r) * S + q) * C + ch)] = src[((k * C + ch) * R + r) * S + q];
    WS_ASSIGN_OR_RETURN(p.weight, c.upload_values(krsc, false));
  } else {
    WS_ASSIGN_OR_RETURN(p.weight, c.upload(c.node.inputs[1], false));
  }
  own->weight = p.weight;
  if (has_in(c, 2)) {
    WS_ASSIGN_OR_RETURN(const void* b32, c.upload(c.node.inputs[2], true));
    p.bias32 = static_cast<const float*>(b32);
    if (use_cudnn) {
      WS_ASSIGN_OR_RETURN(p.bias_act, c.upload(c.node.inputs[2], false));
    }
  } else if (use_cudnn) {
    WS_ASSIGN_OR_RETURN(p.bias_act, c.upload_values(std::vector<float>(static_cast<size_t>(y[1]), 0.0f), false));
  }
  own->epi.bias = p.bias32;
  std::shared_ptr<NhwcIgemm> nhwc_ig;  // our NHWC implicit-GEMM tactic, when it applies and is enabled
  if (c.nhwc && half_storage(c.precision) && c.options.nhwc_igemm && (sources & kTacticWarpStream) && cc_major >= 9 && fp16_weights &&
      kernels::conv2d_nhwc_igemm_applicable(own->g)) {
    nhwc_ig = std::make_shared<NhwcIgemm>();
    nhwc_ig->g = own->g;
    nhwc_ig->weight = p.weight;
    nhwc_ig->epi = own->epi;
  }
  std::shared_ptr<CutlassConv> cutlass;  // CUTLASS's conv, when it applies and is enabled
  std::vector<std::pair<kernels::CutlassConvTile, int>> cutlass_forms;
  if (c.nhwc && half_storage(c.precision) && c.options.cutlass_convs && (sources & kTacticWarpStream) && cc_major * 10 + cc_minor == 90 &&
      fp16_weights && !resid && kernels::conv2d_cutlass_built() &&
      !(cutlass_forms = cutlass_conv_forms(own->g, c.fused_act)).empty()) {
    cutlass = std::make_shared<CutlassConv>();
    cutlass->g = own->g;
    cutlass->act = c.fused_act;
    cutlass->pdl = own->epi.pdl;
    cutlass->weight = p.weight;
    cutlass->bias = p.bias_act;  // fp16 [c_out], zeros without a bias input (uploaded for cuDNN above)
    if (!cutlass->bias) return internal_error(c.node.describe(c.graph.opset) + ": no fp16 bias for the CUTLASS conv");
  }
  // The fused cuDNN path expresses bias + ReLU / bias only (identity only with IMPLICIT_PRECOMP_GEMM).
  const bool fusable = c.fused_act == Activation::kRelu || c.fused_act == Activation::kNone;

  // Timing-cache entry: {"impl": "cudnn" | WsConvPlan::key(), "algo", "fused", "time_us"}; entries written
  // before our kernels existed lack "impl" and mean cuDNN. An entry naming a tactic this build cannot use
  // (e.g. another source set — normally excluded by the cache identity) is ignored and re-timed.
  const std::string key = c.cache_key();
  const std::string problem = c.problem_key();
  float best_us = 0;
  std::string impl;  // chosen: "cudnn" or a WsConvPlan::key()
  float ig_best_us = -1.0f, cu_best_us = -1.0f;  // the opt-in NHWC families' fastest form, when timed this build
  std::string ig_best_key, cu_best_key;
  std::string fe_note;     // why the cuDNN graph form was not timed or its cache entry not used (appended to the tactic string)
  float legacy_us = -1.0f;  // the best legacy cuDNN algorithm's time when a graph engine was timed beside it
  // This node's entry from the file, else the entry an earlier node of the same problem chose in this build.
  const TimingEntry* e = c.cache.find(key);
  const bool same_problem = e == nullptr && (e = c.cache.find_problem(problem)) != nullptr;
  if (e) {
    const std::string ci = e->impl.value_or("cudnn");
    // An algo outside cuDNN's enum (a hand-edited or foreign cache) is a miss: the node is timed again.
    if (ci == "cudnn" && use_cudnn && e->algo && e->fused && *e->algo < CUDNN_CONVOLUTION_FWD_ALGO_COUNT) {
      p.algo = static_cast<cudnnConvolutionFwdAlgo_t>(*e->algo);
      p.fused = *e->fused;
      WS_CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionForwardWorkspaceSize(c.dev.cudnn, p.x, p.w, p.conv, p.y, p.algo, &p.cudnn_ws));
      impl = ci;
    }
    if (ci == "cudnn_fe" && use_cudnn && e->algo) {  // a cuDNN graph engine: rebuilt, its plan index reused when it still builds
      std::string why;
      if (auto f = *e->algo >= 0 ? build_fe_conv(c, p, x, wt, y, win, group, &why, *e->algo) : nullptr; f && f->plan_count() == 1) {
        p.fe = f;
        p.fe_plan = 0;
        p.cudnn_ws = static_cast<size_t>(f->workspace_bytes(p.fe_plan));
        impl = ci;
      } else {
        fe_note = "; timing-cache entry cudnn_fe #" + std::to_string(*e->algo) + " no longer builds, re-timed" + why;
      }
    }
    for (WsConv o : own_candidates)
      for (SplitKForm f : split_forms(o))
        if (ci == ws_conv_form_key(o, f)) { own->impl = o; own->split_form = f; impl = ci; }
    if (nhwc_ig)
      for (const kernels::NhwcIgemmForm& f : nhwc_igemm_forms(nhwc_ig->g)) {
        NhwcIgemm trial = *nhwc_ig;
        trial.form = f;
        if (ci == trial.key()) { *nhwc_ig = trial; impl = ci; }
      }
    if (cutlass)
      for (const auto& [t, sp] : cutlass_forms) {
        CutlassConv trial = *cutlass;
        trial.tile = t;
        trial.splits = sp;
        if (ci == trial.key()) { *cutlass = trial; impl = ci; }
      }
    if (!impl.empty()) {
      best_us = e->time_us;
      if (same_problem) c.cache.put(key, *e);  // the file names every node
      else c.cache.put_problem(problem, *e);
    }
  }
  const bool from_cache = !impl.empty() && !same_problem;
  const bool reused = !impl.empty() && same_problem;
  RankedTactics ranked;  // every tactic timed below (the winner's runners-up go into its cache entry)
  if (impl.empty()) {
    const size_t xb_own = static_cast<size_t>(ir::shape_elements(x)) * c.elem_bytes;
    const size_t xb = std::max(xb_own, static_cast<size_t>(x[0] * x[1] * xin[0] * xin[1]) * c.elem_bytes);
    const size_t yb = static_cast<size_t>(p.count) * c.elem_bytes;
    WS_ASSIGN_OR_RETURN(void* sx, c.dev.get(0, xb));
    WS_ASSIGN_OR_RETURN(void* sy, c.dev.get(1, yb));
    bool found = false;
    if (use_cudnn) {
      // Workspace scratch as at enqueue: [explicit-pad buffer][cuDNN workspace], so timed runs include the pad kernel.
      WS_ASSIGN_OR_RETURN(void* sws, c.dev.get(2, c.options.max_workspace_bytes + p.pad_bytes));
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      int returned = 0;
      // cudnnFind…Ex times every algorithm; should it refuse this configuration, the heuristic list of
      // cudnnGet…_v7 is timed by us instead (each candidate below is re-timed either way).
      if (cudnnFindConvolutionForwardAlgorithmEx(c.dev.cudnn, p.x, sx, p.w, p.weight, p.conv, p.y, sy, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                 &returned, perf, sws, c.options.max_workspace_bytes) != CUDNN_STATUS_SUCCESS) {
        (void)cudaGetLastError();
        if (cudnnGetConvolutionForwardAlgorithm_v7(c.dev.cudnn, p.x, p.w, p.conv, p.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf) !=
            CUDNN_STATUS_SUCCESS) {
          returned = 0;
          if (own_candidates.empty()) WS_CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionForwardAlgorithm_v7(c.dev.cudnn, p.x, p.w, p.conv, p.y,
                                                                                                      CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf));
        }
        for (int i = 0; i < returned; ++i) {
          if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
          size_t ws = 0;
          if (cudnnGetConvolutionForwardWorkspaceSize(c.dev.cudnn, p.x, p.w, p.conv, p.y, perf[i].algo, &ws) == CUDNN_STATUS_SUCCESS) perf[i].memory = ws;
        }
      }
      int tried = 0;
      const bool graph_timed = c.nhwc && group == 1;
      cudnnConvolutionFwdAlgo_t best_algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
      bool best_fused = false;
      size_t best_ws = 0;
      // Timed as enqueued: explicit pad kernel (asymmetric pads) + convolution + epilogue, so the comparison with
      // our single fused kernels is fair.
      // Pass 0: deterministic algorithms, fp32 on FMA math (no TF32); pass 1 (only when pass 0 found nothing): any.
      for (int pass = 0; pass < 2 && !found; ++pass)
      for (int i = 0; i < returned && tried < 4; ++i) {
        if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > c.options.max_workspace_bytes) continue;
        if (pass == 0 && c.precision == Precision::kFloat32 && perf[i].mathType != CUDNN_FMA_MATH) continue;
        if (pass == 0 && perf[i].determinism != CUDNN_DETERMINISTIC) continue;  // replay must equal direct bitwise
        // Multi-kernel algorithms (transforms + GEMM) only when nothing else runs: timed on the stream they
        // looked fastest, yet in the lanes' graph replay they cost ~55 µs per ResNet-50 3x3 conv against
        // ~11-18 µs average for IMPLICIT_PRECOMP_GEMM (H200 per-layer profiles, docs/results/H200.md, 2026-11-29;
        // chosen after that evidence run, not yet measured on the device).
        if (pass == 0 && (perf[i].algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT || perf[i].algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
                          perf[i].algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED))
          continue;
        ++tried;
        for (int variant = 0; variant < 2; ++variant) {
          const bool fused = variant == 1;
          if (fused && (!fusable || (c.fused_act == Activation::kNone && perf[i].algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM))) continue;
          p.algo = perf[i].algo;
          p.fused = fused;
          p.cudnn_ws = perf[i].memory;
          // a residual is timed in place (z = y: cuDNN and our epilogue read each element before writing it)
          // Channels-last (dense convs only): timed as CUDA-graph replay, as the lanes run it and as our kernels are timed.
          // On the stream, NHWC IMPLICIT_PRECOMP_GEMM timed 30 us per ResNet-50 3x3 conv and replayed in 7.5 us, so the
          // slower IMPLICIT_GEMM won every 1x1 conv (14-75 us replayed; device run 33 of 2026-12-02). NCHW and grouped
          // convs stay on the stream: capturing every cuDNN candidate hung an fp32 EfficientNet build (grouped).
          auto t = c.dev.time_us([&](cudaStream_t st) { return p.run(c.dev.cudnn, sx, sy, sws, st, resid ? sy : nullptr); }, 0, graph_timed,
                                 c.node.describe(c.graph.opset) + ": cudnn algo " + std::to_string(static_cast<int>(p.algo)) + (fused ? " fused" : ""));
          if (!t) { (void)cudaGetLastError(); continue; }  // e.g. the fused call refuses this algo
          ranked.offer({.impl = "cudnn", .algo = int(p.algo), .fused = fused, .time_us = *t});
          if (!found || *t < best_us) { best_us = *t; found = true; best_algo = p.algo; best_fused = fused; best_ws = p.cudnn_ws; }
        }
      }
      p.algo = best_algo;
      p.fused = best_fused;
      p.cudnn_ws = best_ws;
      if (found) impl = "cudnn";
      // The same conv + epilogue as one cuDNN graph: each engine configuration timed as graph replay, like the above.
      if (auto f = build_fe_conv(c, p, x, wt, y, win, group, &fe_note)) {
        legacy_us = found ? best_us : -1.0f;
        // The residual gets its own buffer: the runtime never aliases z and y, and cuDNN does not promise graph engines
        // in-place operands.
        void* sz = nullptr;
        if (resid) { WS_ASSIGN_OR_RETURN(sz, c.dev.get(4, yb)); }
        int best_plan = -1;
        for (int i = 0; i < f->plan_count(); ++i) {
          if (static_cast<size_t>(f->workspace_bytes(i)) > c.options.max_workspace_bytes) continue;
          p.fe = f;
          p.fe_plan = i;
          auto t = c.dev.time_us([&](cudaStream_t st) { return p.run(c.dev.cudnn, sx, sy, sws, st, resid ? sz : nullptr); }, 0, true,
                                 c.node.describe(c.graph.opset) + ": cudnn graph " + f->plan_name(i));
          if (!t) { (void)cudaGetLastError(); continue; }
          ranked.offer({.impl = "cudnn_fe", .algo = f->graph_index(i), .time_us = *t});
          if (!found || *t < best_us) { best_us = *t; found = true; best_plan = i; }
        }
        p.fe = nullptr;
        p.fe_plan = -1;
        if (best_plan >= 0) {
          p.fe = f;
          p.fe_plan = best_plan;
          p.cudnn_ws = static_cast<size_t>(f->workspace_bytes(best_plan));
          impl = "cudnn_fe";
        }
      }
    }
    for (WsConv o : own_candidates)
      for (SplitKForm f : split_forms(o)) {
      WsConvPlan trial = *own;
      trial.impl = o;
      trial.split_form = f;
      WS_ASSIGN_OR_RETURN(const SplitKScratch sk, split_k_scratch(c, trial.workspace_bytes(), trial.tile_counters()));
      if (!sk.ok) continue;
      auto t = c.dev.time_us([&](cudaStream_t st) { return trial.run(sx, sy, st, resid ? sy : nullptr, sk.ws, sk.counters); }, 0, true,
                             c.node.describe(c.graph.opset) + ": " + trial.key());
      if (!t) { (void)cudaGetLastError(); continue; }
      ranked.offer({.impl = trial.key(), .time_us = *t});
      if (!found || *t < best_us) { best_us = *t; found = true; own->impl = o; own->split_form = trial.split_form; impl = trial.key(); }
    }
    if (nhwc_ig) {  // our NHWC implicit GEMM in each form, as graph replay, against the best so far
      void* sz = nullptr;
      if (resid) { WS_ASSIGN_OR_RETURN(sz, c.dev.get(4, yb)); }
      for (const kernels::NhwcIgemmForm& f : nhwc_igemm_forms(nhwc_ig->g)) {
        NhwcIgemm trial = *nhwc_ig;
        trial.form = f;
        // Timed without PDL: replayed back to back, each copy would start during the previous one's tail and load its
        // weights early — an overlap the graph gives only behind a kernel that triggers, never behind cuDNN's (run 78:
        // layer4's 3×3 n64_s8 8.28 µs with PDL, 9.55 without; the frame got slower with the convs PDL-timing chose).
        trial.epi.pdl = false;
        auto t = c.dev.time_us([&](cudaStream_t st) { return trial.run(sx, sy, resid ? sz : nullptr, st); }, 0, true,
                               c.node.describe(c.graph.opset) + ": " + trial.key());
        if (!t) { (void)cudaGetLastError(); continue; }  // e.g. a 16-CTA cluster this GPU cannot schedule
        ranked.offer({.impl = trial.key(), .time_us = *t});
        if (ig_best_us < 0 || *t < ig_best_us) { ig_best_us = *t; ig_best_key = trial.key(); }
        if (!found || *t < best_us) { best_us = *t; found = true; nhwc_ig->form = f; impl = trial.key(); }
      }
    }
    if (cutlass) {  // CUTLASS's conv at each tile and split count, as graph replay, against the best so far
      for (const auto& [t, sp] : cutlass_forms) {
        CutlassConv trial = *cutlass;
        trial.tile = t;
        trial.splits = sp;
        WS_ASSIGN_OR_RETURN(const SplitKScratch sk, split_k_scratch(c, 0, trial.semaphores()));
        if (!sk.ok) continue;
        auto t_us = c.dev.time_us([&](cudaStream_t st) { return trial.run(sx, sy, sk.counters, st); }, 0, true,
                                  c.node.describe(c.graph.opset) + ": " + trial.key());
        if (!t_us) { (void)cudaGetLastError(); continue; }
        ranked.offer({.impl = trial.key(), .time_us = *t_us});
        if (cu_best_us < 0 || *t_us < cu_best_us) { cu_best_us = *t_us; cu_best_key = trial.key(); }
        if (!found || *t_us < best_us) { best_us = *t_us; found = true; *cutlass = trial; impl = trial.key(); }
      }
    }
    if (!found) {
      if (!use_cudnn) return refuse(c, "no WarpStream conv kernel ran (enabled tactic sources: " + tactic_sources_string(sources) + ")");
      return refuse(c, "no cuDNN forward algorithm runs within max_workspace_bytes = " + std::to_string(c.options.max_workspace_bytes) +
                           (own_candidates.empty() ? std::string() : " and no WarpStream conv kernel ran"));
    }
    TimingEntry entry{.impl = impl, .time_us = best_us};
    if (impl == "cudnn") { entry.algo = int(p.algo); entry.fused = p.fused; }
    if (impl == "cudnn_fe") entry.algo = p.fe->graph_index(p.fe_plan);
    entry.alternatives = ranked.others(entry);
    c.cache.put_problem(problem, entry);
    c.cache.put(key, std::move(entry));
  }
  // The opt-in NHWC families' best form when it did not win (timed this build only): by how much they lost.
  std::string lost_note;
  if (ig_best_us >= 0 && !(nhwc_ig && impl == nhwc_ig->key())) lost_note += "; best " + ig_best_key + " " + us1(ig_best_us) + " us";
  if (cu_best_us >= 0 && !(cutlass && impl == cutlass->key())) lost_note += "; best " + cu_best_key + " " + us1(cu_best_us) + " us";
  std::string dwpw_note = lost_note;  // why a depthwise -> pointwise pair stayed two kernels (appended to the tactic string)
  const bool on_cudnn = impl == "cudnn" || impl == "cudnn_fe";
  const bool on_nhwc_igemm = nhwc_ig && impl == nhwc_ig->key();
  const bool on_cutlass = cutlass && impl == cutlass->key();
  const bool on_own_nchw = !on_cudnn && !on_nhwc_igemm && !on_cutlass;  // one of our NCHW kernels (WsConvPlan): what the fusions absorb
  if (c.pointwise_producer && on_own_nchw && !resid) {  // a depthwise conv after a 1x1 expand on our kernel: one fused kernel if faster
    WS_ASSIGN_OR_RETURN(const bool fused, bind_expand_depthwise(c, s, *own, best_us, cc_major, &dwpw_note));
    if (fused) return Status::ok();
  }
  if (c.depthwise_producer && c.expand_producer && on_own_nchw) {  // a whole MBConv block on our kernels: one cluster kernel if faster
    WS_ASSIGN_OR_RETURN(const bool fused, bind_mbconv(c, s, *own, best_us, resid, cc_major, &dwpw_note));
    if (fused) return Status::ok();
  }
  if (c.depthwise_producer && !on_nhwc_igemm && !on_cutlass) {  // a pointwise conv after a depthwise one on our kernel: one fused kernel if faster
    std::string pair_note;
    WS_ASSIGN_OR_RETURN(const bool fused, bind_depthwise_pointwise(c, s, *own, best_us, resid, cc_major, &pair_note));
    dwpw_note += pair_note;
    if (fused) return Status::ok();
  }
  if (on_nhwc_igemm) {
    s.time_us = best_us;
    s.kernels = 1;
    c.tactics.push_back({c.node.name, "Conv", "ws nhwc implicit GEMM 64x" + std::to_string(nhwc_ig->form.tile_n) +
                                                  " (mma.sync tensor cores), split-K " + std::to_string(nhwc_ig->form.splits) +
                                                  (nhwc_ig->form.splits > 1 ? " over a cluster (DSMEM reduction)" : "") + ", NHWC, " +
                                                  precision_name(c.precision) +
                                                  ", fused bias+" + kernels::activation_name(c.fused_act) + (resid ? "+residual" : "") + lost_note,
                         best_us, from_cache, reused});
    std::shared_ptr<const NhwcIgemm> ig = nhwc_ig;
    s.run = [ig, resid](const StepIo& io, const ContextLibs&, cudaStream_t st) {
      return ig->run(io.in[0], io.out[0], resid ? io.in[3] : nullptr, st);
    };
    return Status::ok();
  }
  if (on_cutlass) {
    s.time_us = best_us;
    s.tile_counters = cutlass->semaphores();
    s.kernels = 1;
    c.tactics.push_back({c.node.name, "Conv", std::string("cutlass implicit GEMM ") + kernels::cutlass_conv_tile_name(cutlass->tile) +
                                                  " (mma.sync tensor cores), split-K " + std::to_string(cutlass->splits) +
                                                  (cutlass->splits > 1 ? " serial" : "") + ", NHWC, " + precision_name(c.precision) +
                                                  ", fused bias+" + kernels::activation_name(c.fused_act) + lost_note,
                         best_us, from_cache, reused});
    std::shared_ptr<const CutlassConv> cc = cutlass;
    s.run = [cc](const StepIo& io, const ContextLibs&, cudaStream_t st) { return cc->run(io.in[0], io.out[0], io.tile_counters, st); };
    return Status::ok();
  }
  if (!on_cudnn) {
    s.ws_conv = own;
    s.time_us = best_us;
    s.workspace_bytes = align_up(own->workspace_bytes());
    s.tile_counters = own->tile_counters();
    s.kernels = own->kernels();
    c.tactics.push_back({c.node.name, "Conv", own->describe(c.precision) + (resid ? " + residual" : "") + dwpw_note, best_us, from_cache, reused});
    s.can_wait_input_rows = own->impl == WsConv::kDirect && kernels::conv2d_stem3x3_applicable(own->g) && own->g.n == 1 && !resid;
    s.publishable_output_rows = s.can_wait_input_rows ? own->g.out_h : 0;
    s.run = [own, resid](const StepIo& io, const ContextLibs&, cudaStream_t st) {
      return own->run(io.in[0], io.out[0], st, resid ? io.in[3] : nullptr, io.workspace, io.tile_counters, io.input_rows, io.output_rows);
    };
    return Status::ok();
  }
  s.workspace_bytes = p.pad_bytes + align_up(p.cudnn_ws);
  s.kernels = 1 + (p.padded ? 1 : 0) + (p.epilogue() ? 1 : 0);
  const std::string epi = p.fused ? std::string(resid ? "cuDNN fused bias+residual" : "cuDNN fused bias") + (c.fused_act == Activation::kRelu ? "+relu" : "")
                                  : (p.epilogue() ? std::string("epilogue bias+") + (resid ? "residual+" : "") + kernels::activation_name(p.act) : "no epilogue");
  if (p.fe) {
    c.tactics.push_back({c.node.name, "Conv", "cudnn graph " + p.fe->plan_name(p.fe_plan) + ", NHWC, " + precision_name(c.precision) +
                                                  ", bias" + (resid ? "+residual" : "") + (c.fused_act == Activation::kRelu ? "+relu" : "") +
                                                  " in the graph" + (legacy_us >= 0 ? " (best legacy algorithm " + us1(legacy_us) + " us)" : "") +
                                                  dwpw_note,
                         best_us, from_cache, reused});
  } else {
  c.tactics.push_back({c.node.name, "Conv", "cudnn algo " + std::to_string(int(p.algo)) + " (" + algo_name(p.algo) + (c.nhwc ? "), NHWC, " : "), NCHW, ") +
                                                precision_name(c.precision) + (p.padded ? ", explicit pad" : "") + ", " + epi + dwpw_note + fe_note,
                       best_us, from_cache, reused});
  }
  s.run = [plan](const StepIo& io, const ContextLibs& libs, cudaStream_t st) {
    return plan->run(libs.cudnn, io.in[0], io.out[0], io.workspace, st, plan->residual ? io.in[3] : nullptr);
  };
  if (p.fe)  // each context builds its own execution plan with its own handle: no plan shared by concurrent contexts
    s.prepare = [plan](const ContextLibs& libs) { return plan->fe->prepare(libs.cudnn, plan->fe_plan); };
  return Status::ok();
}

// ---- consistency-test forms ----
using A = OpSampleAttr;

// x [xs] -> Conv (w [ws], optional bias, attrs) -> optional Relu / Clip(0, 0.3) (fused into the epilogue).
OpSample conv_sample(std::string label, std::vector<int64_t> xs, std::vector<int64_t> ws, bool bias, std::vector<OpSampleAttr> attrs,
                     const std::string& act) {
  int64_t fan_in = 1;
  for (size_t i = 1; i < ws.size(); ++i) fan_in *= ws[i];  // [M, C/g, kh, kw] or 1-D [M, C/g, k]
  const float wscale = 1.0f / std::sqrt(static_cast<float>(fan_in));
  OpSample s{std::move(label), {runtime("x", xs), constant("w", ws, wscale)}, {}};
  std::vector<std::string> in{"x", "w"};
  if (bias) {
    s.tensors.push_back(constant("b", {ws[0]}, 0.2f));
    in.push_back("b");
  }
  s.nodes.push_back(sample_node("Conv", in, {act.empty() ? "y" : "c"}, std::move(attrs)));
  if (act == "Relu") s.nodes.push_back(sample_node("Relu", {"c"}, {"y"}));
  if (act == "Clip") {
    s.tensors.push_back(constant_values("lo", {}, {0.0f}));
    s.tensors.push_back(constant_values("hi", {}, {0.3f}));
    s.nodes.push_back(sample_node("Clip", {"c", "lo", "hi"}, {"y"}));
  }
  return s;
}

std::vector<OpSample> conv_samples(const std::string&) {
  std::vector<OpSample> r = {
      conv_sample("Conv3x3_pad1_bias", {1, 8, 12, 12}, {16, 8, 3, 3}, true, {A::integers("pads", {1, 1, 1, 1})}, ""),
      conv_sample("Conv1x1_relu", {1, 16, 7, 7}, {24, 16, 1, 1}, true, {}, "Relu"),
      conv_sample("ConvDepthwise_s2_asympad_clip", {1, 8, 11, 11}, {8, 1, 3, 3}, true,
                  {A::integer("group", 8), A::integers("strides", {2, 2}), A::integers("pads", {0, 0, 1, 1})}, "Clip"),
      conv_sample("Conv_nobias_dil2_s2", {1, 4, 13, 10}, {6, 4, 3, 3}, false,
                  {A::integers("strides", {2, 2}), A::integers("dilations", {2, 2}), A::integers("pads", {2, 1, 2, 1})}, ""),
      conv_sample("Conv_group2_sameupper_relu", {1, 8, 9, 9}, {6, 4, 3, 3}, true,
                  {A::integer("group", 2), A::text("auto_pad", "SAME_UPPER"), A::integers("strides", {2, 2})}, "Relu"),
      conv_sample("Conv7x7_s2_resnet_stem_relu", {1, 3, 32, 32}, {8, 3, 7, 7}, true,
                  {A::integers("strides", {2, 2}), A::integers("pads", {3, 3, 3, 3})}, "Relu"),
      conv_sample("Conv_valid_batch2", {2, 3, 9, 8}, {5, 3, 3, 2}, true, {A::text("auto_pad", "VALID")}, ""),
      conv_sample("Conv_pointwise_deep_c256", {1, 256, 7, 7}, {32, 256, 1, 1}, true, {}, "Relu"),
      // 1-D (NCL), bound as the 2-D form over [N, C, 1, L].
      conv_sample("Conv1d_k3_pad1_bias", {2, 4, 17}, {6, 4, 3}, true, {A::integers("pads", {1, 1})}, ""),
      conv_sample("Conv1d_s2_dil2_asympad_group2_relu", {1, 6, 20}, {4, 3, 3}, false,
                  {A::integer("group", 2), A::integers("strides", {2}), A::integers("dilations", {2}), A::integers("pads", {2, 1})}, "Relu"),
  };
  // A residual Add folded into the Conv's epilogue: y = Relu(conv(x) + b + x).
  OpSample res = conv_sample("Conv3x3_residual_add_relu", {1, 8, 6, 6}, {8, 8, 3, 3}, true, {A::integers("pads", {1, 1, 1, 1})}, "");
  res.nodes[0].outputs = {"c"};
  res.nodes.push_back(sample_node("Add", {"c", "x"}, {"s"}));
  res.nodes.push_back(sample_node("Relu", {"s"}, {"y"}));
  r.push_back(std::move(res));
  // The direct N-d kernel (kernels/conv/conv_nd.h): 3-D, and a runtime weight / bias.
  r.push_back(conv_sample("Conv3d_s2_pad1_bias", {1, 3, 5, 6, 7}, {4, 3, 3, 3, 3}, true,
                          {A::integers("strides", {2, 2, 2}), A::integers("pads", {1, 1, 1, 1, 1, 1})}, ""));
  r.push_back(conv_sample("Conv3d_group2_dil_asympad", {1, 4, 6, 5, 5}, {4, 2, 2, 3, 3}, false,
                          {A::integer("group", 2), A::integers("dilations", {2, 1, 1}), A::integers("pads", {0, 1, 0, 1, 0, 2})}, ""));
  r.push_back({"Conv2d_runtime_weight_bias", {runtime("x", {1, 3, 6, 6}), runtime("w", {4, 3, 3, 3}), runtime("b", {4})},
               {sample_node("Conv", {"x", "w", "b"}, {"y"}, {A::integers("pads", {1, 1, 1, 1})})}});
  return r;
}

std::vector<OpSample> conv_transpose_samples(const std::string& op) {
  auto sample = [&](std::string label, std::vector<int64_t> xs, std::vector<int64_t> ws, bool bias, std::vector<OpSampleAttr> attrs) {
    int64_t fan_in = ws[0];
    for (size_t i = 2; i < ws.size(); ++i) fan_in *= ws[i];
    OpSample s{std::move(label), {runtime("x", xs), constant("w", ws, 1.0f / std::sqrt(static_cast<float>(fan_in)))}, {}};
    std::vector<std::string> in{"x", "w"};
    if (bias) {
      const int64_t group = [&] { for (const auto& a : attrs) if (a.name == "group") return a.i; return int64_t{1}; }();
      s.tensors.push_back(constant("b", {ws[1] * group}, 0.2f));
      in.push_back("b");
    }
    s.nodes.push_back(sample_node(op, in, {"y"}, std::move(attrs)));
    return s;
  };
  return {sample("ConvTranspose2d_s2_pad1_outpad1_bias", {1, 4, 5, 5}, {4, 3, 3, 3}, true,
                 {A::integers("strides", {2, 2}), A::integers("pads", {1, 1, 1, 1}), A::integers("output_padding", {1, 1})}),
          sample("ConvTranspose2d_group2_dil2_asympad", {1, 4, 4, 5}, {4, 2, 3, 2}, true,
                 {A::integer("group", 2), A::integers("dilations", {2, 1}), A::integers("pads", {0, 1, 2, 0})}),
          sample("ConvTranspose1d_s3_batch2", {2, 3, 7}, {3, 2, 4}, false, {A::integers("strides", {3})}),
          sample("ConvTranspose3d_s2_bias", {1, 2, 3, 4, 3}, {2, 3, 2, 2, 2}, true, {A::integers("strides", {2, 2, 2})}),
          sample("ConvTranspose2d_same_upper_s2", {1, 2, 4, 4}, {2, 2, 3, 3}, false,
                 {A::integers("strides", {2, 2}), A::text("auto_pad", "SAME_UPPER")}),
          sample("ConvTranspose2d_output_shape", {1, 2, 4, 4}, {2, 3, 3, 3}, true,
                 {A::integers("strides", {2, 2}), A::integers("output_shape", {8, 9})}),
          {"ConvTranspose2d_runtime_weight", {runtime("x", {1, 3, 4, 3}), runtime("w", {3, 2, 2, 3})},
           {sample_node(op, {"x", "w"}, {"y"}, {A::integers("strides", {2, 1})})}}};
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// The fused stem (build_stages.h stem_pools; kernels::stem7x7_maxpool)

Status bind_stem_conv(BindContext& c, Step& s) {
  const ir::Node& conv = c.node;
  if (conv.inputs.size() < 2 || c.graph.tensor(conv.inputs[1]).shape != ir::Shape{64, 3, 7, 7})
    return internal_error(conv.describe(c.graph.opset) + ": not the stem form the fused stem takes");
  c.tactics.push_back({conv.name, conv.op_type, "ws stem: conv 7x7/2 3->64 in the max pool's kernel", 0.0f, false});
  s.kernels = 0;  // absorbed by the MaxPool bound next (bind_stem_pool)
  const std::string who = conv.describe(c.graph.opset);
  s.run = [who](const StepIo&, const ContextLibs&, cudaStream_t) { return internal_error(who + ": the fused stem's placeholder ran"); };
  return Status::ok();
}

Status bind_stem_pool(BindContext& c, Step& s) {
  const ir::Node& conv = *c.stem_conv;
  const ir::Tensor& wt = c.graph.tensor(conv.inputs[1]);
  const ir::Shape& x = c.graph.tensor(conv.inputs[0]).shape;
  if (wt.shape != ir::Shape{64, 3, 7, 7} || x.size() != 4 || c.elem != ElemType::kFloat16 || !kernels::stem_pool_activation_supported(c.stem_act))
    return internal_error(c.node.describe(c.graph.opset) + ": the fused stem's Conv " + ::ws::quoted(conv.name) + " is not the form it takes");
  const int64_t in_h = x[2], in_w = x[3];
  WS_ASSIGN_OR_RETURN(const void* w, c.upload_values(kernels::stem_pool_pack_weights(wt.data_as<float>()), false));
  const float* bias = nullptr;
  if (conv.inputs.size() > 2 && conv.inputs[2] != ir::kNoTensor) {
    WS_ASSIGN_OR_RETURN(const void* b, c.upload(conv.inputs[2], true));
    bias = static_cast<const float*>(b);
  }
  int cc_major = 0;
  WS_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&cc_major, cudaDevAttrComputeCapabilityMajor, c.options.device));
  const bool pdl = c.options.programmatic_dependent_launch && cc_major >= 9;
  const kernels::Activation act = c.stem_act;
  const kernels::ActivationParams params = c.stem_params;
  // Timed once for the record (tactics(), the per-layer profile's note); whether the device can run it was settled before
  // the plan (CudaEngine::build: kernels::stem_pool_runnable).
  const std::string key = c.cache_key() + "|stempool";
  float us = 0.0f;
  bool from_cache = false;
  if (const TimingEntry* e = c.cache.find(key); e && e->impl && *e->impl == "ws_stem_pool") {
    us = e->time_us;
    from_cache = true;
  } else {
    const size_t x_bytes = static_cast<size_t>(3 * in_h * in_w) * 2;
    const size_t y_bytes = static_cast<size_t>(kernels::kStemPoolCout * kernels::stem_pool_out_extent(in_h) * kernels::stem_pool_out_extent(in_w)) * 2;
    WS_ASSIGN_OR_RETURN(void* sx, c.dev.get(0, x_bytes));
    WS_ASSIGN_OR_RETURN(void* sy, c.dev.get(1, y_bytes));
    WS_ASSIGN_OR_RETURN(us, c.dev.time_us([&](cudaStream_t st) { return kernels::stem7x7_maxpool(sx, w, bias, act, params, sy, in_h, in_w, false, st); }, 0,
                                          true, c.node.describe(c.graph.opset) + ": ws stem conv 7x7 + max pool"));
    c.cache.put(key, TimingEntry{.impl = std::string("ws_stem_pool"), .time_us = us});
  }
  c.tactics.push_back({c.node.name, c.node.op_type,
                       "ws stem: conv " + ::ws::quoted(conv.name) + " 7x7/2 3->64 (activation " + kernels::activation_name(act) +
                           ") + max pool 3x3/2 in one kernel (mma.sync fp16, fp32 accumulate; NCHW in, NHWC out)",
                       us, from_cache});
  mark_fused_into(c, {c.stem_producer});
  become_fused(s, *c.stem_producer, 1, us, 0, 1);
  s.run = [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
    return kernels::stem7x7_maxpool(io.in[0], w, bias, act, params, io.out[0], in_h, in_w, pdl, st);
  };
  return Status::ok();
}

std::vector<CudaOpDef> conv_ops() {
  return {
      {"Conv", 0, supports_conv, bind_conv, conv_samples},
      {"ConvTranspose", -1, supports_window_direct, bind_conv_transpose, conv_transpose_samples},
  };
}

}  // namespace ws::cudaexec
