// Auxiliary-stream branches (CudaBuildOptions::max_aux_streams; build_stages.h hoist_shortcut_convs / aux_branches,
// cuda_engine.cpp launch_steps): a ResNet-shaped net with two downsample blocks and one identity block, whose shortcut
// convs run on the context's auxiliary stream beside the main branch.
//   - DownsampleBlocksMatchCpu: fp32 and fp16, every tactic-source set, against the CPU executor (the oracle, unfused,
//     no branches); each shortcut conv's tactic says it runs on the auxiliary stream.
//   - DirectReplayCaptureAndConcurrentContextsAgreeBitwise: the same engine's output from a direct enqueue (events
//     between two live streams), from the context's own replay graph, from a caller's stream capture (the lanes' way),
//     and from two contexts enqueued at once on two streams with different inputs, each equal bit for bit to its own
//     direct result; every run starts from a poisoned output.
//   - ResNet50MatchesCpu: torchvision's ResNet-50 ($WS_RESNET50_ONNX, from tools/export_resnet50.py; skipped without it) in
//     fp16 with the branches against the CPU executor, tolerance 2e-2 * max|ref|.
// Run: ws_gpu_tests --gtest_filter='CudaEngineAuxStream.*'
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cuda_engine_test_support.h"
#include "engine/ir/model_builder.h"
#include "lanes_gpu_support.h"
#include "warpstream/cuda_engine.h"

namespace ws {
namespace {

// x [1,16,32,32] -> Relu -> MaxPool 3x3 s1 -> block A (conv1 1x1 16->16, conv2 3x3 s2, conv3 1x1 16->64; shortcut a_ds 1x1
// s2 16->64, exported after the main branch) -> Relu -> block B (identity: 64->16->16->64, + its input) -> Relu -> block C
// (64->32->32->128, shortcut c_ds 1x1 64->128) -> Relu -> GlobalAveragePool -> Flatten -> Gemm -> y [1, 10].
ir::Graph resnet_blocks() {
  ir::ModelBuilder b{13, "aux_stream"};
  b.input("x", ir::DType::kFloat32, {1, 16, 32, 32});
  b.node("Relu", {"x"}, {"x1"}, "in_relu");
  b.node("MaxPool", {"x1"}, {"p"}, "pool").ints("kernel_shape", {3, 3}).ints("pads", {1, 1, 1, 1});
  auto block = [&](const std::string& n, const std::string& in, const std::string& out, int64_t cin, int64_t mid, int64_t cout,
                   int64_t stride, bool shortcut_conv) {
    test::add_random_conv(b, n + "_c1", in, n + "_a", {mid, cin, 1, 1}, {1, 1}, {0, 0, 0, 0});
    b.node("Relu", {n + "_a"}, {n + "_ar"}, n + "_r1");
    test::add_random_conv(b, n + "_c2", n + "_ar", n + "_b", {mid, mid, 3, 3}, {stride, stride}, {1, 1, 1, 1});
    b.node("Relu", {n + "_b"}, {n + "_br"}, n + "_r2");
    test::add_random_conv(b, n + "_c3", n + "_br", n + "_m", {cout, mid, 1, 1}, {1, 1}, {0, 0, 0, 0});
    std::string shortcut = in;
    if (shortcut_conv) {
      test::add_random_conv(b, n + "_ds", in, n + "_d", {cout, cin, 1, 1}, {stride, stride}, {0, 0, 0, 0});
      shortcut = n + "_d";
    }
    b.node("Add", {n + "_m", shortcut}, {n + "_s"}, n + "_add");
    b.node("Relu", {n + "_s"}, {out}, n + "_r3");
  };
  block("a", "p", "ya", 16, 16, 64, 2, true);
  block("b", "ya", "yb", 64, 16, 64, 1, false);
  block("c", "yb", "yc", 64, 32, 128, 1, true);
  b.node("GlobalAveragePool", {"yc"}, {"g"}, "gap");
  b.node("Flatten", {"g"}, {"f"}, "flatten");
  b.initializer("fc_w", {10, 128}, test::random_values(1280, test::seed_for("aux_fc_w"), -0.1f, 0.1f));
  b.node("Gemm", {"f", "fc_w"}, {"y"}, "fc").i("transB", 1);
  b.output("y");
  return test::import_builder(b);
}

TEST(CudaEngineAuxStream, DownsampleBlocksMatchCpu) {
  WS_REQUIRE_LANES_GPU();
  const uint32_t source_sets[] = {kAllTacticSources, uint32_t{kTacticCudnn | kTacticCublasLt}, uint32_t{kTacticWarpStream}};
  for (uint32_t sources : source_sets) {
    for (Precision p : {Precision::kFloat32, Precision::kFloat16}) {
      const std::string what = std::string("aux_stream ") + precision_name(p) + " sources=" + tactic_sources_string(sources);
      SCOPED_TRACE(what);
      CudaBuildOptions opt;
      opt.tactic_sources = sources;
      opt.max_aux_streams = 1;
      opt.split_k_in_kernel = false;  // a tactic needing the shared split-K tile counters would keep its step on the main stream
      const double tol = p == Precision::kFloat32 ? 1e-4 : 2e-2;
      std::string err;
      const auto cmp = test::run_both(resnet_blocks(), p, tol, tol, test::seed_for(what), &err, opt);
      ASSERT_TRUE(err.empty()) << err;
      EXPECT_TRUE(test::near_dump_inputs(what, cmp, {tol, tol}));
      opt.precision = p;
      auto e = CudaEngine::build(resnet_blocks(), opt);
      ASSERT_TRUE(e.is_ok()) << e.status().to_string();
      size_t branched = 0;
      for (const TacticRecord& t : (*e)->tactics()) {
        const bool aux = t.choice.find("on the auxiliary stream") != std::string::npos;
        branched += aux;
        if (t.node == "a_ds" || t.node == "c_ds") EXPECT_TRUE(aux) << t.node << ": " << t.choice;
        else EXPECT_FALSE(aux) << t.node << ": " << t.choice;
        if (t.node == "a_c3" || t.node == "c_c3") EXPECT_NE(t.choice.find("residual"), std::string::npos) << t.node << ": " << t.choice;
      }
      EXPECT_EQ(branched, 2u);
      std::printf("[ aux      ] %-48s max|diff| %.3g (max|ref| %.3g), %zu steps on the auxiliary stream\n", what.c_str(), cmp.max_abs,
                  cmp.max_ref, branched);
    }
  }
}

std::vector<unsigned char> read_output(ExecutionContext& ctx, size_t bytes) {
  std::vector<unsigned char> v(bytes);
  EXPECT_EQ(cudaMemcpy(v.data(), ctx.output(0), bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  return v;
}

TEST(CudaEngineAuxStream, DirectReplayCaptureAndConcurrentContextsAgreeBitwise) {
  WS_REQUIRE_LANES_GPU();
  for (Precision p : {Precision::kFloat32, Precision::kFloat16}) {
    SCOPED_TRACE(precision_name(p));
    CudaBuildOptions opt;
    opt.precision = p;
    opt.max_aux_streams = 1;
    opt.split_k_in_kernel = false;
    auto built = CudaEngine::build(resnet_blocks(), opt);
    ASSERT_TRUE(built.is_ok()) << built.status().to_string();
    CudaEngine& e = **built;
    auto c0 = e.create_context(), c1 = e.create_context();
    ASSERT_TRUE(c0.is_ok() && c1.is_ok());
    ExecutionContext& a = **c0;
    ExecutionContext& b = **c1;
    const size_t n = 16 * 32 * 32, bytes = e.output_desc(0).bytes;
    const uint64_t seed = test::seed_for(std::string("aux_bitwise_") + precision_name(p));
    std::printf("[ aux      ] seed %llu\n", static_cast<unsigned long long>(seed));
    ASSERT_TRUE(test::write_input(e, a, 0, test::random_values(n, seed)).is_ok());
    ASSERT_TRUE(test::write_input(e, b, 0, test::random_values(n, seed + 1)).is_ok());
    cuda::Stream s0 = std::move(cuda::Stream::create()).value(), s1 = std::move(cuda::Stream::create()).value();
    auto poison = [&](ExecutionContext& c) { WS_EXPECT_CUDA(test::memset_sync(const_cast<void*>(c.output(0)), 0xFF, bytes)); };

    // Direct (first call: the steps launched, events joining the auxiliary stream), per context alone.
    a.set_direct_replay(false);
    b.set_direct_replay(false);
    poison(a);
    ASSERT_TRUE(a.enqueue(s0.get()).is_ok());
    WS_ASSERT_CUDA(cudaStreamSynchronize(s0.get()));
    const auto ref_a = read_output(a, bytes);
    poison(b);
    ASSERT_TRUE(b.enqueue(s1.get()).is_ok());
    WS_ASSERT_CUDA(cudaStreamSynchronize(s1.get()));
    const auto ref_b = read_output(b, bytes);
    EXPECT_NE(ref_a, ref_b) << "different inputs must give different outputs (else the comparisons below prove nothing)";

    // The context's own replay graph (the second direct call captures, later calls replay).
    a.set_direct_replay(true);
    for (int i = 0; i < 4; ++i) {
      poison(a);
      ASSERT_TRUE(a.enqueue(s0.get()).is_ok());
      WS_ASSERT_CUDA(cudaStreamSynchronize(s0.get()));
      EXPECT_EQ(read_output(a, bytes), ref_a) << "replay call " << i << " (" << a.direct_replay_state() << ")";
    }

    // A caller's capture of its own stream (as the lanes capture each lane): the branch becomes a parallel graph node.
    cudaGraph_t graph = nullptr;
    ASSERT_EQ(cudaStreamBeginCapture(s1.get(), cudaStreamCaptureModeThreadLocal), cudaSuccess);
    const Status captured = b.enqueue(s1.get());
    ASSERT_EQ(cudaStreamEndCapture(s1.get(), &graph), cudaSuccess);
    ASSERT_TRUE(captured.is_ok()) << captured.to_string();
    // A chain of N nodes has N - 1 edges; each branch adds one (its node hangs off the fork point and feeds the join).
    size_t nodes = 0, edges = 0, branched = 0;
    WS_EXPECT_CUDA(cudaGraphGetNodes(graph, nullptr, &nodes));
    WS_EXPECT_CUDA(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &edges));
    for (const TacticRecord& t : e.tactics()) branched += t.choice.find("on the auxiliary stream") != std::string::npos;
    EXPECT_EQ(branched, 2u);
    EXPECT_GE(edges + 1, nodes + branched) << "the captured graph has no parallel branch: " << nodes << " nodes, " << edges << " edges";
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    std::printf("[ aux      ] %s: captured graph of %zu nodes, %zu edges, %zu branches (engine kernel_count %zu)\n", precision_name(p), nodes,
                edges, branched, e.kernel_count());

    // Both contexts at once, many times: each context's output equals its own direct result.
    b.set_direct_replay(false);
    for (int i = 0; i < 50; ++i) {
      poison(a);
      poison(b);
      ASSERT_TRUE(a.enqueue(s0.get()).is_ok());
      ASSERT_EQ(cudaGraphLaunch(exec, s1.get()), cudaSuccess);
      WS_ASSERT_CUDA(cudaStreamSynchronize(s0.get()));
      WS_ASSERT_CUDA(cudaStreamSynchronize(s1.get()));
      ASSERT_EQ(read_output(a, bytes), ref_a) << "context 0, concurrent run " << i;
      ASSERT_EQ(read_output(b, bytes), ref_b) << "context 1 (caller's graph), concurrent run " << i;
    }
    WS_EXPECT_CUDA(cudaGraphExecDestroy(exec));
    WS_EXPECT_CUDA(cudaGraphDestroy(graph));
  }
}

TEST(CudaEngineAuxStream, ResNet50MatchesCpu) {
  WS_REQUIRE_LANES_GPU();
  WS_RESNET50_GRAPH_OR_SKIP(g);
  CudaBuildOptions opt;
  opt.max_aux_streams = 1;
  opt.split_k_in_kernel = false;
  const uint64_t seed = test::seed_for("aux_resnet50");
  std::string err;
  auto cmp = test::run_both(*g, Precision::kFloat16, 1e30, 0, seed, &err, opt);  // tolerance applied below, from max|ref|
  ASSERT_TRUE(err.empty()) << err;
  const double tol = 2e-2 * cmp.max_ref;
  cmp = [&] {
    test::Comparison c = test::compare(cmp.got, cmp.ref, tol, 0);
    c.got = cmp.got, c.ref = cmp.ref, c.input_names = cmp.input_names, c.inputs = cmp.inputs;
    return c;
  }();
  EXPECT_TRUE(test::near_dump_inputs("resnet50 fp16 aux streams", cmp, {tol, 0}));
  opt.precision = Precision::kFloat16;
  auto e = CudaEngine::build(*g, opt);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  size_t branched = 0;
  for (const TacticRecord& t : (*e)->tactics()) branched += t.choice.find("on the auxiliary stream") != std::string::npos;
  EXPECT_EQ(branched, 4u) << "ResNet-50 has four downsample shortcuts";
  std::printf("[ aux      ] resnet50 fp16 seed %llu: max|diff| %.3g (max|ref| %.3g, tolerance %.3g), %zu steps on the auxiliary stream\n",
              static_cast<unsigned long long>(seed), cmp.max_abs, cmp.max_ref, tol, branched);
}

}  // namespace
}  // namespace ws
