// CUDA op-table entries: Gemm and MatMul (2-D B, or batched: one strided-batched GEMM) through cuBLASLt (cublaslt_gemm.h), the heuristic
// candidates timed at build and the choice kept in the timing cache.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/cuda/cublaslt_gemm.h"
#include "core/escape.h"
#include "engine/cuda/op_util.h"
#include "kernels/gemm/gemv.h"

namespace ws::cudaexec {
namespace {

using kernels::Activation;
using kernels::ActivationParams;
using kernels::ElemType;

Status supports_gemm(const BindContext& c) {
  for (size_t i = 0; i < c.node.inputs.size(); ++i)
    if (has_in(c, i)) WS_RETURN_IF_ERROR(require_runtime_float(c, i));
  // A runtime C of another shape (rank 0..2, unidirectional broadcast, validated by analyze_node) is broadcast
  // into Y before the GEMM, which then runs in place (C == D).
  if (c.node.op_type == "Gemm" && has_in(c, 2) && !in_t(c, 2).is_constant() && in_t(c, 2).shape.size() > 2)
    return refuse(c, "a runtime C of rank above 2");
  if (c.node.op_type == "MatMul") {
    const ir::Shape& as = in_t(c, 0).shape;
    const ir::Shape& bs = in_t(c, 1).shape;
    const ir::Shape& ys = out_shape(c);
    if (as.size() < 2 || bs.size() < 2) return refuse(c, "MatMul needs A and B of rank >= 2");
    if (bs.size() > 2) {  // batched: each operand's batch dims equal Y's, or all 1 (broadcast: batch stride 0)
      auto batch_ok = [&](const ir::Shape& t) {
        const size_t tb = t.size() - 2, yb = ys.size() - 2;
        bool all_one = true, equal = tb <= yb;
        for (size_t i = 0; i < tb; ++i) {
          all_one = all_one && t[i] == 1;
          if (equal) equal = t[i] == ys[yb - tb + i];
        }
        for (size_t i = 0; equal && i + tb < yb; ++i) equal = ys[i] == 1;
        return all_one || equal;
      };
      if (!batch_ok(as) || !batch_ok(bs)) return refuse(c, "batched MatMul whose batch dims broadcast only partly");
    }
  }
  if (in_t(c, 0).is_constant()) return refuse(c, "a constant A operand is not implemented");
  return Status::ok();
}

Status bind_gemm(BindContext& c, Step& s) {
  auto plan = std::make_shared<GemmPlan>();
  GemmPlan& g = *plan;
  const bool is_gemm = c.node.op_type == "Gemm";
  const ir::Shape& as = in_t(c, 0).shape;
  const ir::Shape& bs = in_t(c, 1).shape;
  const int64_t ta = is_gemm ? attr_i(c.node, "transA", 0) : 0, tb = is_gemm ? attr_i(c.node, "transB", 0) : 0;
  int64_t m, k, n;
  int64_t a_rows, a_cols;  // A's storage as a row-major 2-D matrix (one batch entry when batched)
  // Batched MatMul (B of rank > 2): one strided-batched GEMM over Y's batch dims; an operand whose batch dims
  // are all 1 is broadcast with batch stride 0 (supports_gemm refused the other cases).
  const bool batched = !is_gemm && bs.size() > 2;
  int64_t batch = 1, stride_a = 0, stride_b = 0;
  const int64_t b_r = bs[bs.size() - 2], b_c = bs.back();
  if (is_gemm) { a_rows = as[0]; a_cols = as[1]; }
  else if (!batched) { a_cols = as.back(); a_rows = ir::shape_elements(as) / std::max<int64_t>(a_cols, 1); }
  else {
    a_rows = as[as.size() - 2];
    a_cols = as.back();
    const ir::Shape& ys = out_shape(c);
    for (size_t i = 0; i + 2 < ys.size(); ++i) batch *= ys[i];
    int64_t a_batch = 1, b_batch = 1;
    for (size_t i = 0; i + 2 < as.size(); ++i) a_batch *= as[i];
    for (size_t i = 0; i + 2 < bs.size(); ++i) b_batch *= bs[i];
    stride_a = a_batch == 1 ? 0 : a_rows * a_cols;
    stride_b = b_batch == 1 ? 0 : b_r * b_c;
  }
  m = ta ? a_cols : a_rows; k = ta ? a_rows : a_cols;
  n = tb ? b_r : b_c;
  g.alpha = is_gemm ? attr_f(c.node, "alpha", 1.0f) : 1.0f;
  g.beta = is_gemm ? attr_f(c.node, "beta", 1.0f) : 0.0f;
  const cudaDataType_t dt = half_storage(c.precision) ? CUDA_R_16F : CUDA_R_32F;
  WS_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescCreate(&g.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t opa = tb ? CUBLAS_OP_T : CUBLAS_OP_N, opb = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  WS_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof(opa)));
  WS_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof(opb)));
  WS_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&g.a, dt, uint64_t(b_c), uint64_t(b_r), int64_t(b_c)));
  WS_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&g.b, dt, uint64_t(a_cols), uint64_t(a_rows), int64_t(a_cols)));
  WS_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&g.cd, dt, uint64_t(n), uint64_t(m), int64_t(n)));
  if (batched) {
    if (batch > INT32_MAX) return refuse(c, "batch count above 2^31 - 1");
    const int32_t count = static_cast<int32_t>(batch);
    const int64_t sa = stride_b, sb = stride_a, sc = m * n;  // cuBLASLt's A is our B (see cublaslt_gemm.h)
    for (auto [layout, stride] : {std::pair{g.a, sa}, std::pair{g.b, sb}, std::pair{g.cd, sc}}) {
      WS_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
      WS_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
    }
  }
  if (in_t(c, 1).is_constant()) {
    WS_ASSIGN_OR_RETURN(g.weight, c.upload(c.node.inputs[1], false));
  }
  if (is_gemm && has_in(c, 2)) {
    const ir::Tensor& ct = in_t(c, 2);
    if (ct.is_constant()) {
      // Materialise C broadcast to [M, N] once at build (unidirectional broadcast of rank 0..2).
      std::vector<float> full(static_cast<size_t>(m * n));
      const ir::Shape& cs = ct.shape;
      const int64_t cr = cs.size() == 2 ? cs[0] : 1, cc = cs.empty() ? 1 : cs.back();
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j)
          full[static_cast<size_t>(i * n + j)] = ct.data_as<float>()[(cr == 1 ? 0 : i) * cc + (cc == 1 ? 0 : j)];
      WS_ASSIGN_OR_RETURN(g.cmat, c.upload_values(full, false));
    } else {
      g.c_runtime = true;
    }
  }
  const size_t ws_limit = std::min<size_t>(c.options.max_workspace_bytes, size_t{32} << 20);
  cublasLtMatmulPreference_t pref = nullptr;
  WS_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceCreate(&pref));
  std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, decltype(&cublasLtMatmulPreferenceDestroy)> pref_owner(pref, cublasLtMatmulPreferenceDestroy);
  const uint64_t wsl = ws_limit;
  WS_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsl, sizeof(wsl)));
  cublasLtMatmulHeuristicResult_t heur[8];
  int returned = 0;
  WS_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulAlgoGetHeuristic(c.dev.lt, g.op, g.a, g.b, g.cd, g.cd, pref, 8, heur, &returned));
  if (returned == 0) return refuse(c, "cuBLASLt has no algorithm for this GEMM");

  // The few-row tactic (kernels/gemm/gemv.h): a classifier head at batch 1 is a matrix-vector product that
  // cuBLASLt's tiles cover with a few blocks (ResNet-50's fc: 7.2 µs, run 71). Timed beside cuBLASLt's choice, both
  // captured in a CUDA graph as the lanes replay them; the cache keeps the winner ("impl": "ws_gemv" or "cublaslt").
  // B with transB = 1 is used as stored ([N, K]); otherwise a transposed copy is uploaded, only when the tactic is chosen.
  const ir::Tensor& b_t = in_t(c, 1);
  const bool gemv_ok = (c.options.tactic_sources & kTacticWarpStream) && !batched && m <= kernels::kGemvMaxRows && (ta == 0 || m == 1) &&
                       g.weight != nullptr && !g.c_runtime && n <= kernels::kGemvMaxN && k <= kernels::kGemvMaxK &&
                       (tb || (b_t.dtype == ir::DType::kFloat32 && b_t.data));

  const std::string key = c.cache_key();
  int choice = 0;
  float best_us = 0;
  // A cached entry without a usable heuristic index (another op's entry, or an index beyond what cuBLASLt
  // returns now) is a miss: the node is timed again and the entry replaced. So is, for a node the few-row tactic
  // applies to, an entry that does not say which of the two won (written before that tactic existed).
  auto usable = [&](const TimingEntry* t) {
    return t && t->heuristic_index && *t->heuristic_index < returned && (!gemv_ok || (t->impl && (*t->impl == "ws_gemv" || *t->impl == "cublaslt")));
  };
  const std::string problem = c.problem_key();
  // This node's entry from the file, else the entry an earlier node of the same problem chose in this build.
  const TimingEntry* cached = c.cache.find(key);
  if (!usable(cached)) cached = nullptr;
  const bool same_problem = cached == nullptr && (cached = c.cache.find_problem(problem)) != nullptr;
  if (!usable(cached)) cached = nullptr;
  if (cached) {
    choice = static_cast<int>(*cached->heuristic_index);
    best_us = cached->time_us;
    if (same_problem) c.cache.put(key, *cached);  // the file names every node
    else c.cache.put_problem(problem, *cached);
  } else {
    const size_t eb = c.elem_bytes;
    const size_t bt = static_cast<size_t>(batch);  // batched: every operand sized for the full batch
    WS_ASSIGN_OR_RETURN(void* sx, c.dev.get(0, bt * static_cast<size_t>(m * k) * eb));
    WS_ASSIGN_OR_RETURN(void* sy, c.dev.get(1, bt * static_cast<size_t>(m * n) * eb * (g.c_runtime ? 2 : 1) + bt * static_cast<size_t>(k * n) * eb));
    WS_ASSIGN_OR_RETURN(void* sws, c.dev.get(2, ws_limit));
    void* sw = static_cast<char*>(sy) + bt * static_cast<size_t>(m * n) * eb * (g.c_runtime ? 2 : 1);
    const void* cptr = g.cmat ? g.cmat : (g.c_runtime ? static_cast<char*>(sy) + static_cast<size_t>(m * n) * eb : nullptr);
    bool found = false;
    for (int i = 0; i < returned; ++i) {
      if (heur[i].state != CUBLAS_STATUS_SUCCESS) continue;
      g.algo = heur[i].algo;
      g.ws = heur[i].workspaceSize;
      auto t = c.dev.time_us([&](cudaStream_t st) { return g.run(c.dev.lt, sx, g.weight ? g.weight : sw, cptr, sy, sws, st); }, 0, false,
                             c.node.describe(c.graph.opset) + ": cublasLt heuristic " + std::to_string(i));
      if (!t) { (void)cudaGetLastError(); continue; }
      if (!found || *t < best_us) { best_us = *t; choice = i; found = true; }
    }
    if (!found) return refuse(c, "no cuBLASLt algorithm ran");
    if (!gemv_ok) {  // otherwise the entry is written below, once the few-row tactic has been timed against this choice
      c.cache.put_problem(problem, TimingEntry{.heuristic_index = choice, .time_us = best_us});
      c.cache.put(key, TimingEntry{.heuristic_index = choice, .time_us = best_us});
    }
  }
  g.algo = heur[choice].algo;
  g.ws = heur[choice].workspaceSize;
  const std::string lt_choice = "cublasLt heuristic #" + std::to_string(choice) + " of " + std::to_string(returned) + " (M=" + std::to_string(m) +
                                " N=" + std::to_string(n) + " K=" + std::to_string(k) + ", " + precision_name(c.precision) +
                                ", fp32 accumulate, workspace " + std::to_string(g.ws) + " B)";

  bool use_gemv = false;
  bool gemv_pdl = false;
  std::string gemv_note;
  if (gemv_ok) {
    int cc_major = 0;
    WS_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&cc_major, cudaDevAttrComputeCapabilityMajor, c.options.device));
    gemv_pdl = c.options.programmatic_dependent_launch && cc_major >= 9;
    if (cached) {
      use_gemv = *cached->impl == "ws_gemv";
    } else {
      const size_t eb = c.elem_bytes;
      WS_ASSIGN_OR_RETURN(void* sx, c.dev.get(0, static_cast<size_t>(m * k) * eb));
      WS_ASSIGN_OR_RETURN(void* sy, c.dev.get(1, static_cast<size_t>(m * n) * eb));
      WS_ASSIGN_OR_RETURN(void* sws, c.dev.get(2, ws_limit));
      const void* w_timed = g.weight;  // [N, K] as stored, or a scratch of that size (the values do not change the time)
      if (!tb) { WS_ASSIGN_OR_RETURN(w_timed, c.dev.get(3, static_cast<size_t>(n * k) * eb)); }
      const float alpha = g.alpha, beta = g.beta;
      const void* cm = g.cmat;
      const kernels::ElemType et = c.elem;
      auto tg = c.dev.time_us([&](cudaStream_t st) { return kernels::gemv_rows(et, sx, w_timed, cm, sy, m, n, k, alpha, beta, gemv_pdl, st); }, 0,
                              true, c.node.describe(c.graph.opset) + ": ws gemv");
      if (!tg) (void)cudaGetLastError();
      auto tl = c.dev.time_us([&](cudaStream_t st) { return g.run(c.dev.lt, sx, g.weight, cm, sy, sws, st); }, 0, true,
                              c.node.describe(c.graph.opset) + ": cublasLt heuristic " + std::to_string(choice) + " captured");
      if (!tl) (void)cudaGetLastError();
      if (tg && (!tl || *tg < *tl)) {
        use_gemv = true;
        gemv_note = "; cublasLt's choice " + (tl ? us1(*tl) + " us" : std::string("failed when captured"));
        best_us = *tg;
      } else {
        if (tl) best_us = *tl;
        if (tg) gemv_note = "; ws gemv " + us1(*tg) + " us";
      }
      const TimingEntry entry{.impl = use_gemv ? "ws_gemv" : "cublaslt", .heuristic_index = choice, .time_us = best_us};
      c.cache.put_problem(problem, entry);
      c.cache.put(key, entry);
    }
  }
  const void* gemv_w = nullptr;  // the weight as [N, K] rows
  if (use_gemv) {
    if (tb) {
      gemv_w = g.weight;
    } else {
      std::vector<float> tr(static_cast<size_t>(n * k));
      const float* src = b_t.data_as<float>();
      for (int64_t r = 0; r < k; ++r)
        for (int64_t j = 0; j < n; ++j) tr[static_cast<size_t>(j * k + r)] = src[r * n + j];
      WS_ASSIGN_OR_RETURN(gemv_w, c.upload_values(tr, false));
    }
  }
  // The pooled head (CudaBuildOptions::fuse_pooled_head, build_stages.h pooled_heads): where the GEMV won and the
  // GlobalAveragePool feeding A is the step just before this one, one kernel pools and multiplies (kernels::pooled_gemv)
  // and this step absorbs the pool's. Not timed apart: it does the GEMV's weight reads plus the pool's, in one node.
  const BindContext::PooledInput pin = c.pooled_input;
  if (use_gemv && c.pool_producer && m == 1 && ta == 0 && pin.channels == k && pin.hw >= 1 && k <= kernels::kPooledGemvMax &&
      n <= kernels::kPooledGemvMax && pin.channels * pin.hw <= kernels::kPooledGemvMax &&
      kernels::pooled_gemv_slices_k(k) <= kernels::kPooledGemvMaxSlices && kernels::pooled_gemv_slices_n(n) <= kernels::kPooledGemvMaxSlices) {
    c.tactics.push_back({c.node.name, c.node.op_type,
                         "ws pooled gemv: GlobalAveragePool " + ::ws::quoted(c.pool_producer->node) + " fused (" + (pin.nhwc ? "NHWC" : "NCHW") +
                             ", C=" + std::to_string(pin.channels) + " HW=" + std::to_string(pin.hw) + ", pooled in fp32 in shared memory), N=" +
                             std::to_string(n) + ", " + precision_name(c.precision) + ", split-K " + std::to_string(kernels::pooled_gemv_slices_k(k)) +
                             " reduced in-kernel" + (gemv_pdl ? ", pdl" : "") + "; gemv alone " + us1(best_us) + " us" + gemv_note,
                         best_us, cached != nullptr && !same_problem, cached != nullptr && same_problem});
    s.absorbs_previous = 1;
    s.inputs[0] = Operand{Operand::Kind::kArena, pin.offset, nullptr};
    s.workspace_bytes = align_up(static_cast<size_t>(kernels::pooled_gemv_partials_bytes(k, n)));
    s.tile_counters = static_cast<size_t>(kernels::pooled_gemv_slices_n(n));
    const float alpha = g.alpha, beta = g.beta;
    const void* cm = g.cmat;
    const kernels::ElemType et = c.elem;
    const bool nhwc = pin.nhwc;
    const int64_t hw = pin.hw;
    auto run = [plan, gemv_w, cm, alpha, beta, et, n, k, hw, nhwc, gemv_pdl](bool y32) {
      return [=](const StepIo& io, const ContextLibs&, cudaStream_t st) {
        return kernels::pooled_gemv(et, io.in[0], nhwc, k, hw, gemv_w, cm, io.out[0], n, alpha, beta, io.workspace, io.tile_counters, gemv_pdl,
                                    st, y32);
      };
    };
    s.run = run(false);
    if (et == kernels::ElemType::kFloat16) s.run_float32_out = run(true);  // a float32 output port written directly
    return Status::ok();
  }
  c.tactics.push_back({c.node.name, c.node.op_type,
                       use_gemv ? "ws gemv, one warp per output (M=" + std::to_string(m) + " N=" + std::to_string(n) + " K=" + std::to_string(k) + ", " +
                                      precision_name(c.precision) + ", fp32 accumulate" + (gemv_pdl ? ", pdl" : "") + ")" + gemv_note
                                : lt_choice + gemv_note,
                       best_us, cached != nullptr && !same_problem, cached != nullptr && same_problem});
  if (use_gemv) {
    const float alpha = g.alpha, beta = g.beta;
    const void* cm = g.cmat;
    const kernels::ElemType et = c.elem;
    s.run = [plan, gemv_w, cm, alpha, beta, et, m, n, k, gemv_pdl](const StepIo& io, const ContextLibs&, cudaStream_t st) {
      return kernels::gemv_rows(et, io.in[0], gemv_w, cm, io.out[0], m, n, k, alpha, beta, gemv_pdl, st);
    };
    if (et == kernels::ElemType::kFloat16)  // a float32 output port written directly (bind_ports folds the cast)
      s.run_float32_out = [plan, gemv_w, cm, alpha, beta, et, m, n, k, gemv_pdl](const StepIo& io, const ContextLibs&, cudaStream_t st) {
        return kernels::gemv_rows(et, io.in[0], gemv_w, cm, io.out[0], m, n, k, alpha, beta, gemv_pdl, st, true);
      };
    return Status::ok();
  }
  s.workspace_bytes = align_up(g.ws);
  // Runtime C not of Y's shape: broadcast into Y first (a strided copy, stride 0 on broadcast axes), then C = Y.
  const bool c_broadcast = g.c_runtime && in_t(c, 2).shape != ir::Shape{m, n};
  kernels::TransposeDims cb;
  if (c_broadcast) {
    const ir::Shape& cs = in_t(c, 2).shape;
    const int64_t cr = cs.size() == 2 ? cs[0] : 1, cc = cs.empty() ? 1 : cs.back();
    cb.rank = 2;
    cb.y_dims[0] = m;
    cb.y_dims[1] = n;
    cb.x_strides[0] = cr == 1 ? 0 : cc;
    cb.x_strides[1] = cc == 1 ? 0 : 1;
    s.kernels += 1;
  }
  const int eb = static_cast<int>(c.elem_bytes);
  s.run = [plan, c_broadcast, cb, eb](const StepIo& io, const ContextLibs& libs, cudaStream_t st) {
    const GemmPlan& p = *plan;
    const void* cptr = p.cmat ? p.cmat : (p.c_runtime ? io.in[2] : nullptr);
    if (c_broadcast) {
      WS_RETURN_IF_ERROR(kernels::transpose(eb, io.in[2], io.out[0], cb, st));
      cptr = io.out[0];
    }
    return p.run(libs.lt, io.in[0], p.weight ? p.weight : io.in[1], cptr, io.out[0], io.workspace, st);
  };
  return Status::ok();
}

// ---- consistency-test forms ----
using A = OpSampleAttr;

std::vector<OpSample> gemm_samples(const std::string& op) {
  if (op == "MatMul")
    return {{"MatMul_3d_x_2d_const", {runtime("a", {2, 3, 8}), constant("w", {8, 5}, 0.35f)}, {sample_node(op, {"a", "w"}, {"y"})}},
            {"MatMul_2d_runtime", {runtime("a", {4, 6}), runtime("w", {6, 3})}, {sample_node(op, {"a", "w"}, {"y"})}},
            // Batched (attention-style q·kᵀ, both runtime), a broadcast 2-D A, and a constant batched B.
            {"MatMul_batched_4d_runtime", {runtime("a", {2, 3, 5, 8}), runtime("w", {2, 3, 8, 4})}, {sample_node(op, {"a", "w"}, {"y"})}},
            {"MatMul_batched_B_broadcast_A", {runtime("a", {5, 6}), runtime("w", {3, 6, 2})}, {sample_node(op, {"a", "w"}, {"y"})}},
            {"MatMul_batched_const_B", {runtime("a", {2, 4, 6}), constant("w", {2, 6, 3}, 0.4f)}, {sample_node(op, {"a", "w"}, {"y"})}}};
  return {{"Gemm_transB_bias", {runtime("a", {1, 64}), constant("w", {10, 64}, 0.125f), constant("c", {10})},
           {sample_node(op, {"a", "w", "c"}, {"y"}, {A::integer("transB", 1)})}},
          {"Gemm_transA_alpha_beta", {runtime("a", {16, 3}), constant("w", {16, 7}, 0.25f), constant("c", {1, 7})},
           {sample_node(op, {"a", "w", "c"}, {"y"}, {A::integer("transA", 1), A::real("alpha", 0.5f), A::real("beta", 2.0f)})}},
          {"Gemm_noC_runtimeB", {runtime("a", {5, 12}), runtime("w", {12, 9})}, {sample_node(op, {"a", "w"}, {"y"})}},
          {"Gemm_runtimeC_full_shape", {runtime("a", {4, 6}), constant("w", {6, 5}, 0.4f), runtime("c", {4, 5})},
           {sample_node(op, {"a", "w", "c"}, {"y"})}},
          {"Gemm_scalar_C", {runtime("a", {3, 4}), constant("w", {4, 2}), constant("c", {})}, {sample_node(op, {"a", "w", "c"}, {"y"})}},
          // Runtime C broadcast into Y before an in-place GEMM.
          {"Gemm_runtimeC_row_beta", {runtime("a", {4, 6}), constant("w", {6, 5}, 0.4f), runtime("c", {5})},
           {sample_node(op, {"a", "w", "c"}, {"y"}, {A::real("beta", 0.5f)})}},
          {"Gemm_runtimeC_column", {runtime("a", {4, 6}), constant("w", {6, 5}, 0.4f), runtime("c", {4, 1})}, {sample_node(op, {"a", "w", "c"}, {"y"})}},
          {"Gemm_runtimeC_scalar_runtimeB", {runtime("a", {3, 4}), runtime("w", {4, 2}), runtime("c", {})}, {sample_node(op, {"a", "w", "c"}, {"y"})}}};
}

}  // namespace

std::vector<CudaOpDef> gemm_ops() {
  return {
      {"Gemm", 1, supports_gemm, bind_gemm, gemm_samples},
      {"MatMul", 1, supports_gemm, bind_gemm, gemm_samples},
  };
}

}  // namespace ws::cudaexec
