// `warpstream transformer-kernels`: times WarpStream's LTX transformer kernels (src/kernels/transformer) at one
// block shape — a benchmark, not a test (correctness: ws_gpu_tests --gtest_filter='TransformerKernels*').
#include <cstdio>
#include <memory>
#include <string>

#include "command.h"
#ifdef WS_HAVE_CUDA
#include "cuda/device.h"
#include "kernels/transformer/transformer_bench.h"
#endif

namespace {

struct TkArgs {
  long long batch = 1, seq = 6144, text = 128, dim = 2048, heads = 32, ff = 8192;
  int iters = 20;
  bool no_simt_self = false;
};

int run_tk(const TkArgs& a) {
  if (a.batch < 1 || a.seq < 1 || a.text < 1 || a.dim < 1 || a.heads < 1 || a.ff < 1 || a.iters < 1 ||
      a.dim % a.heads != 0) {
    std::fprintf(stderr, "error: transformer-kernels: sizes and --iters must be >= 1, --dim a multiple of --heads\n");
    return 2;
  }
#ifndef WS_HAVE_CUDA
  std::fprintf(stderr, "error: transformer-kernels: this warpstream was built without CUDA\n");
  return 2;
#else
  if (ws::Status st = ws::cuda::init_device(0); !st.is_ok()) {
    std::fprintf(stderr, "error: transformer-kernels: %s\n", st.to_string().c_str());
    return 2;
  }
  ws::kernels::TransformerBenchShape sh;
  sh.batch = a.batch;
  sh.seq = a.seq;
  sh.text = a.text;
  sh.dim = a.dim;
  sh.heads = a.heads;
  sh.ff = a.ff;
  sh.iters = a.iters;
  sh.simt_self_attention = !a.no_simt_self;
  auto r = ws::kernels::bench_transformer_kernels(sh);
  if (!r) {
    std::fprintf(stderr, "error: transformer-kernels: %s\n", r.status().to_string().c_str());
    return 1;
  }
  std::printf("transformer kernels: B=%lld S=%lld T=%lld D=%lld heads=%lld FF=%lld; median/p99 of %d after 3 warm-ups\n",
              a.batch, a.seq, a.text, a.dim, a.heads, a.ff, a.iters);
  std::printf("%-40s %10s %10s %9s %9s\n", "kernel", "med_us", "p99_us", "GB/s", "TFLOP/s");
  for (const auto& k : *r)
    std::printf("%-40s %10.1f %10.1f %9.1f %9.2f\n", k.name.c_str(), k.median_us, k.p99_us,
                k.bytes > 0 ? k.bytes / (k.median_us * 1e3) : 0.0, k.flops > 0 ? k.flops / (k.median_us * 1e6) : 0.0);
  return 0;
#endif
}

}  // namespace

WS_REGISTER_COMMAND(transformer_kernels, "transformer-kernels",
                    "time the LTX transformer kernels (norm+modulation, q/k norm+RoPE, residual, GELU, SDPA)",
                    [](CLI::App& sub) -> std::function<int()> {
                      auto args = std::make_shared<TkArgs>();
                      sub.add_option("--batch", args->batch, "batch B (default 1)");
                      sub.add_option("--seq", args->seq, "video tokens S (default 6144)");
                      sub.add_option("--text", args->text, "text tokens T (default 128)");
                      sub.add_option("--dim", args->dim, "inner dim D (default 2048; 13B: 4096)");
                      sub.add_option("--heads", args->heads, "heads (default 32)");
                      sub.add_option("--ff", args->ff, "feed-forward inner dim (default 8192)");
                      sub.add_option("--iters", args->iters, "timed launches per kernel (default 20)");
                      sub.add_flag("--no-simt-self", args->no_simt_self, "skip the slow SIMT self-attention timing");
                      return [args] { return run_tk(*args); };
                    });
