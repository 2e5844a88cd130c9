#pragma once
/// \file cuda_engine.h
/// The CUDA executor for the engine's fixed-shape IR (host-only header; no device code).
/// Build once: passes, per-node kernel choice (tactics timed on the device, persisted in a timing
/// cache), weights uploaded, one arena size fixed. Then any number of ExecutionContexts (one per
/// lane), each owning its own arena; ExecutionContext::enqueue allocates nothing in the steady state when replay is on
/// and its capture worked, or when the caller captures it into a CUDA Graph (see there),
/// synchronises nothing and is capturable into a CUDA Graph.
///
/// Precision: fp32, fp16 or fp8, chosen at build. In fp16 mode the network input tensor is fp16 (the fused
/// preprocess writes fp16 directly); the network output is always float32 (a cast is appended), so Top-K and
/// callers read float32 logits in every mode. fp8 is fp16 storage with FP8 (E4M3) tensor-core math where a kernel
/// has it: see Precision::kFloat8.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "warpstream/arena.h"
#include "warpstream/dtype.h"
#include "warpstream/graph.h"
#include "warpstream/row_signal.h"
#include "warpstream/status.h"

typedef struct CUstream_st* cudaStream_t;

namespace ws {

/// A build setting of the CUDA executor (the element type its activations and weights are built in),
/// not a tensor element type: precision_dtype() names the DType it stores activations in.
///  - kFloat32, kFloat16: everything in that type (fp16: fp32 accumulation).
///  - kFloat8 (Hopper / Ada, compute capability 8.9+; build() refuses it below with kUnsupported, and also when this
///    build has no FP8 code for the device — e.g. an sm_89 GPU with a library built for sm_75 + sm_90 only, whose
///    kernels would run compute_75 PTX; kernels::conv2d_pointwise_fp8_arch): activations
///    stay fp16 between kernels, as in fp16 mode; every NCHW pointwise (1×1, stride 1, group 1) Conv whose input
///    has a calibrated range (CudaBuildOptions::fp8_activation_amax) may run on FP8 tensor cores — E4M3 weights
///    with a per-output-channel scale, the input quantised in the kernel with a per-tensor scale amax / 448, fp32
///    accumulation, fp16 out (kernels::conv2d_pointwise_fp8; TensorRT's FP8 with "max" calibration): timed beside
///    the fp16 tactics, fastest wins, unless CudaBuildOptions::fp8_obey_precision. Every other node runs as in fp16
///    mode; tactics() says which Convs run FP8 ("ws pointwise FP8 ..."). The FP8 kernels are NCHW: the layout kAuto
///    chooses as for fp16, so a model it runs channels-last (no grouped conv: ResNet-50) gets no FP8 conv unless
///    built with Layout::kNchw. Accuracy against fp32: docs/results/latency/fp8-accuracy.md.
enum class Precision { kFloat32, kFloat16, kFloat8 };
const char* precision_name(Precision p);  ///< "fp32" / "fp16" / "fp8"
/// True for the modes that store activations in float16 (fp16, fp8).
inline constexpr bool half_storage(Precision p) { return p != Precision::kFloat32; }
inline constexpr DType precision_dtype(Precision p) { return half_storage(p) ? DType::kFloat16 : DType::kFloat32; }
/// Parses "fp32", "fp16" or "fp8". Errors: kInvalidArgument naming the text.
inline Result<Precision> parse_precision(const std::string& text) {
  if (text == "fp32") return Precision::kFloat32;
  if (text == "fp16") return Precision::kFloat16;
  if (text == "fp8") return Precision::kFloat8;
  return invalid_argument("--precision: unknown precision '" + text + "' (expected fp32, fp16 or fp8)");
}

/// Tactic sources (as TensorRT's IBuilderConfig::setTacticSources): the kernel families a build may time
/// and choose from; CudaBuildOptions::tactic_sources is a bitmask of these.
///  - kTacticCudnn: cuDNN convolutions (legacy API; + our bias/activation epilogue kernel where needed).
///  - kTacticCublasLt: cuBLASLt GEMM/MatMul. Gemm/MatMul always time cuBLASLt (it covers every form); the bit is
///    reserved for when it may be left out.
///  - kTacticWarpStream: our own fused convolution kernels (src/kernels/conv: depthwise, pointwise GEMM,
///    direct), each one kernel with padding, bias and activation fused; and the few-row Gemm/MatMul (M ≤ 4, constant
///    B: a classifier head at batch 1, src/kernels/gemm/gemv.h), timed beside cuBLASLt.
/// A Conv for which no enabled source has a kernel fails the build (kUnsupported naming the node).
enum TacticSource : uint32_t { kTacticCudnn = 1, kTacticCublasLt = 2, kTacticWarpStream = 4 };
inline constexpr uint32_t kAllTacticSources = kTacticCudnn | kTacticCublasLt | kTacticWarpStream;

/// "cudnn,cublaslt,warpstream" order, enabled ones only ("none" for 0).
inline std::string tactic_sources_string(uint32_t s) {
  std::string r;
  const std::pair<uint32_t, const char*> names[] = {{kTacticCudnn, "cudnn"}, {kTacticCublasLt, "cublaslt"}, {kTacticWarpStream, "warpstream"}};
  for (const auto& [bit, name] : names)
    if (s & bit) r += (r.empty() ? "" : ",") + std::string(name);
  return r.empty() ? "none" : r;
}

/// Parses a comma-separated list of "cudnn", "cublaslt", "warpstream" or "all" (case-sensitive, no
/// spaces, no empty items, at least one item). Errors: kInvalidArgument naming the bad item.
inline Result<uint32_t> parse_tactic_sources(const std::string& text) {
  if (text.empty()) return invalid_argument("--tactic-sources: empty list (use e.g. cudnn,warpstream)");
  uint32_t r = 0;
  size_t pos = 0;
  while (true) {
    const size_t comma = text.find(',', pos);
    const std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (item == "cudnn") r |= kTacticCudnn;
    else if (item == "cublaslt") r |= kTacticCublasLt;
    else if (item == "warpstream") r |= kTacticWarpStream;
    else if (item == "all") r |= kAllTacticSources;
    else return invalid_argument("--tactic-sources: unknown source '" + item + "' (expected cudnn, cublaslt, warpstream or all, comma-separated)");
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return r;
}

/// Memory layout of the 4-D activations inside the engine (the ports stay NCHW, as the model declares, except an input
/// taken in TensorFormat::kHWC8: CudaBuildOptions::hwc8_input_port).
///   kNchw: every tensor as ONNX declares it (NCHW).
///   kNhwc: channels-last segments. Every Conv that cuDNN runs in NHWC (2-D, constant weight, symmetric or VALID
///          pads) and every 2-D MaxPool / AveragePool (symmetric pads, floor mode, no Indices) runs channels-last;
///          same-shape elementwise ops follow their input; GlobalAveragePool reads NHWC and writes [N, C, 1, 1]
///          (the same bytes in both layouts). A reformat step (a transpose) is planned at build only where a
///          segment meets an NCHW-only op or a port, as TensorRT's reformatting layers; each is listed in
///          tactics() as op "Reformat". Convs of a channels-last segment run on cuDNN only (our own conv
///          kernels are NCHW): without tactic source cudnn, build() refuses kNhwc (kInvalidArgument).
///   kAuto: kNhwc for float16 and fp8 builds with tactic source cudnn and no grouped Conv in the graph (tensor-core
///          convs want channels-last; our own depthwise / pointwise kernels are NCHW); otherwise kNchw.
enum class Layout { kAuto, kNchw, kNhwc };
inline const char* layout_name(Layout l) { return l == Layout::kNchw ? "nchw" : l == Layout::kNhwc ? "nhwc" : "auto"; }
/// Parses "auto", "nchw" or "nhwc". Errors: kInvalidArgument naming the text.
inline Result<Layout> parse_layout(const std::string& text) {
  if (text == "auto") return Layout::kAuto;
  if (text == "nchw") return Layout::kNchw;
  if (text == "nhwc") return Layout::kNhwc;
  return invalid_argument("--layout: unknown layout '" + text + "' (expected auto, nchw or nhwc)");
}

/// The layout stage's plan for one build (CudaEngine::check_support): the layout that runs (kNchw or kNhwc), how
/// many Convs there are and how many of them run channels-last, how many nodes run channels-last, and the reformat
/// steps inserted.
struct LayoutPlan {
  Layout layout = Layout::kNchw;
  /// nhwc_convs / nhwc_nodes: the nodes bound in their channels-last form (cuDNN NHWC). A fused ResNet stem's Conv
  /// (fuse_stem_pool) reads NCHW and writes NHWC in our kernel, so it is not among them, though kAuto's reformat rule
  /// counts it as a channels-last conv (its output is stored channels-last).
  size_t convs = 0, nhwc_convs = 0, nhwc_nodes = 0;
  size_t reformats = 0;  ///< reformat steps in the plan (a reformat replaced by a kHWC8 input port is not one)
  /// Copies padded to 8 channels (CudaBuildOptions::hwc8_input): written by a reformat step, or by the producer at a
  /// kHWC8 input port (those are also counted in hwc8_ports).
  size_t hwc8_pads = 0;
  /// Graph inputs the engine takes in TensorFormat::kHWC8 (CudaBuildOptions::hwc8_input_port): their padding reformat
  /// was removed from the plan.
  size_t hwc8_ports = 0;
};

struct CudaBuildOptions {
  Precision precision = Precision::kFloat32;
  /// Precision kFloat8: the calibrated absolute maximum of each activation tensor, by tensor name (as the ONNX
  /// model names it), e.g. from calibrate_activation_amax (classifier.h) over a few representative frames. A
  /// pointwise Conv whose input is listed (finite, > 0) runs FP8 with scale amax / 448; one whose input is not
  /// runs fp16 (tactics() says so). build() and check_support() refuse kFloat8 with an empty map
  /// (kInvalidArgument: FP8 needs calibration). Ignored in the other precisions. Changes the kernels' arithmetic,
  /// not their timing: not part of the timing-cache identity.
  std::map<std::string, float> fp8_activation_amax;
  /// Precision kFloat8: false (default) times the FP8 tactics of each calibrated pointwise Conv beside its fp16 ones
  /// and keeps the fastest (TensorRT's BuilderFlag::kFP8: a permission, so fp8 is never slower than fp16 by choice);
  /// true runs every such Conv in FP8 (TensorRT's kOBEY_PRECISION_CONSTRAINTS; `--fp8-obey`): what the accuracy
  /// report measures; a build in which no Conv can run FP8 (channels-last layout, no calibrated input, tactic source
  /// warpstream off) fails with kInvalidArgument naming the option instead of silently running fp16. Part of the graph's timing problem keys (the precision), not of the cache identity: an entry
  /// naming a tactic this build may not use is re-timed.
  bool fp8_obey_precision = false;
  /// Activation layout inside the engine (see Layout). Changes the graph hash (the reformat steps are part
  /// of the bound graph), so a timing cache is kept per layout.
  Layout layout = Layout::kAuto;
  int device = 0;
  /// Timing cache file (JSON). Keyed by GPU name + UUID, driver, CUDA runtime, cuDNN and cuBLAS
  /// versions, the model's graph hash, max_workspace_bytes and tactic_sources; a mismatching cache is
  /// ignored (and rewritten); a malformed one (bad JSON, any wrong-typed entry) is ignored whole with a
  /// warning on stderr. Written to a temporary file renamed over it, under flock("<path>.lock"). Empty:
  /// no persistence (tactics timed each build).
  std::string timing_cache_path;
  /// Upper bound on per-conv cuDNN workspace considered during tactic selection, bytes.
  size_t max_workspace_bytes = size_t{256} << 20;
  /// Debug: give every runtime tensor its own arena range (no reuse) so tensor(id) stays valid after
  /// enqueue for node-by-node comparisons with the CPU executor.
  bool debug_keep_all_tensors = false;
  /// Fold a residual Add (and a following Relu/Clip) into the Conv producing one of its operands:
  /// y = act(conv(x) + bias + residual) in one epilogue (ResNet/EfficientNet skip connections).
  bool fuse_residual = true;
  /// Bitmask of TacticSource: which kernel families the build times and chooses from (default: all).
  /// Part of the timing-cache identity, so caches built with other sources are not reused.
  uint32_t tactic_sources = kAllTacticSources;
  /// Timed runs per candidate tactic at build (after min(2, n) warm-up runs); the mean is compared, as
  /// TensorRT's avgTiming iterations. 1..1000; fewer = a faster build and noisier choices (the GPU tests'
  /// small form under compute-sanitizer uses 1). Not part of the timing-cache identity.
  int tactic_timing_iterations = 10;
  /// Programmatic dependent launch (CUDA 12+, compute capability 9.0+; ignored below it): our own conv kernels
  /// (depthwise, pointwise, split-K reduction, direct) are launched so that each may be scheduled while its
  /// predecessor drains, and wait on the device (griddepcontrol.wait) before their first memory access; in the
  /// lanes' CUDA graphs these become programmatic edges. Same results bit for bit; only the gaps between
  /// kernels change. Not part of the timing-cache identity (it does not change which tactic is correct).
  /// On by default since 2026-12-04. Each kernel triggers its dependents after its main loop (kernels/pdl.cuh):
  /// EfficientNet-Lite0 fp16 (1 lane, CUDA graph, 1080p mapped -> Top-5) 298.9 / 302.5 µs end to end p50 / p99 with
  /// it, 321.1 / 331.6 without (device run 52); ResNet-50, whose convs are cuDNN's, unchanged (400.3 / 400.2 p50).
  /// When the kernels triggered at their first instruction it lost (run 40: 340.7 / 359.1 against 320.0 / 333.6):
  /// the successors' blocks took the SM slots the predecessor still needed.
  bool programmatic_dependent_launch = true;
  /// Split-K pointwise convs (our tactics "split-K N") may also reduce their partials inside the GEMM kernel: the
  /// block that finishes a tile last sums the tile's partials and runs the epilogue (CUTLASS's serial split-K; one
  /// kernel per conv, timing-cache impl "..._serial"). true: that form is timed beside the two-kernel form (a second
  /// kernel reduces the partials over the whole GPU) and the faster wins per conv, as any tactic. false: the
  /// two-kernel form only. Same results bit for bit (the same summation order); only kernel count and time change.
  /// Always-serial lost on the H200: EfficientNet-Lite0 fp16 388.0 µs end to end p50 against 322.0 with the reduce
  /// kernel (device run 50 of 2026-12-04: one block reducing a 7x7 tile of 16 splits is slower than a whole-GPU pass).
  /// Part of the timing-cache identity.
  bool split_k_in_kernel = true;
  /// Split-K pointwise convs may also reduce across a thread-block cluster (fp16 on compute capability 9.0+): the
  /// `splits` blocks of an output tile form one cluster and sum the tile through distributed shared memory, each block a
  /// slice, then run the epilogue (kernels::conv2d_pointwise_cluster; one kernel, no workspace, no counters;
  /// timing-cache impl "..._cluster"). true: that form is timed beside the others and the fastest wins per conv. Same
  /// bits as the other forms. Part of the timing-cache identity when on.
  /// Default off: timed alone it wins (EfficientNet-Lite0: 14 convs pick it, 8 kernels fewer, per-step medians 7.3 µs
  /// lower, device run 82), but in the frame's graph it loses ~5 µs (runs 84 and 85, H100, frame in device memory,
  /// alternated rows: GPU p50 230.7 against 225.5 µs, then 230.0 against 224.9). Without PDL it wins by ~10 µs (run 83).
  /// A cluster launch itself keeps PDL's early start (experiments/pdl_cluster_00_launch.cu, run 86: clusters of 4, 8
  /// and 16 behind a shared-memory-heavy predecessor cost ≤ 0.05 µs per edge): why it loses in the graph is open.
  bool split_k_cluster = false;
  /// Depthwise → pointwise fusion (fp16 / fp8 precision, channels-first): the depthwise conv of an MBConv block and
  /// the 1×1 projection reading its output may run as one kernel that computes the depthwise output into shared memory
  /// as the projection GEMM's operand, never storing it (kernels::conv2d_depthwise_pointwise). Timed at build against
  /// the two kernels chosen for the pair, and used only when faster (timing-cache entry "<node key>|dwpw"); results
  /// equal the unfused pair's bit for bit when the same GEMM tile and split-K win. Where a 1×1 expand conv feeds the
  /// depthwise conv, the whole block (expand → depthwise → project) is also timed as one thread-block-cluster kernel on
  /// compute capability 9.0+ (kernels::conv2d_mbconv, timing-cache entry "<node key>|mbconv"), used only when faster than
  /// the three kernels. false: neither fusion, every conv its own step (for side-by-side benchmarks:
  /// `warpstream bench --no-dwpw-fusion`). Not part of the timing-cache identity.
  bool fuse_depthwise_pointwise = true;
  /// Expand → depthwise fusion (with fuse_depthwise_pointwise; fp16 / fp8 precision, channels-first): the 1×1 expand
  /// conv of an MBConv block and the depthwise conv reading its output may run as one kernel that keeps the expanded
  /// tensor in shared memory (kernels::conv2d_expand_depthwise; each block recomputes the expand for its band's halo
  /// rows). Timed at build against the two kernels (timing-cache entry "<depthwise node key>|exdw"), used only when
  /// faster; decided before the depthwise → pointwise and whole-block fusions, which then no longer apply to that
  /// block. false: not tried (`warpstream bench --no-exdw-fusion`). Not part of the timing-cache identity.
  bool fuse_expand_depthwise = true;
  /// Pooled-head fusion (OFF by default: measured slower): GlobalAveragePool → (Flatten / Reshape / Squeeze) → Gemm or
  /// MatMul at batch 1 with a constant weight — the classifier head of ResNet, EfficientNet, MobileNet — runs as one
  /// kernel that pools into shared memory and does the GEMV (kernels::pooled_gemv), when the Gemm's timed choice is the
  /// few-row GEMV tactic and the pool's output has no other reader. Two graph nodes become one; the pooled values stay
  /// fp32 (the unfused path rounds them to the storage type). Tactic source warpstream only; not with
  /// debug_keep_all_tensors. Correct (PooledGemv.*, device run 110), but the one kernel takes 10.2 µs on ResNet-50's
  /// head and 13.5 on EfficientNet-Lite0's against 3.3 + 2.35 and 1.8 + 2.2 for the two it replaces (run 110, H100:
  /// frame GPU p50 +7.1 and +9.7 µs): its three dependent memory phases (pool, split-K dot, last-block reduction) each
  /// pay L2 latency where the two kernels overlap through PDL. `warpstream bench --pooled-head`. Not part of the
  /// timing-cache identity (the Gemm's choice is timed unfused).
  bool fuse_pooled_head = false;
  /// ResNet stem fusion (on by default): Conv 7×7 / stride 2 / pad 3 from the 3-channel graph input to 64 channels, its
  /// folded Relu / Clip, and the MaxPool 3×3 / stride 2 / pad 1 reading it — the stem of ResNet-18…152, ResNeXt,
  /// Wide-ResNet — run as one kernel of ours (kernels::stem7x7_maxpool: tensor cores, fp32 accumulation) that reads the
  /// input NCHW and writes the pool's output channels-last. In the NHWC plan this turns three graph nodes of the frame
  /// (the input's reformat to NHWC, cuDNN's conv, cuDNN's pool: 2.9 + 12.4 + 3.1 µs alone) into one (8.5 µs alone).
  /// Measured (device run 111, H100, ResNet-50 fp16, 1 lane, rows alternated, one timing cache per side): GPU p50
  /// 312.8 → 307.2 µs with the frame in device memory (3 pairs), 362.3 → 358.1 µs mapped (2 pairs), 57 → 55 kernels.
  /// Applies at batch 1, precision fp16, channels-last plan (layout nhwc or auto choosing it), tactic sources
  /// warpstream and cudnn, compute capability 8.0+ and sm_80+ code for it in this build (mma.sync f16; the default
  /// CMAKE_CUDA_ARCHITECTURES 75;90 runs compute_75 PTX on an A100 or Ada GPU: there the build leaves the stem unfused), input
  /// extents 7…16384, the conv's output read only by the pool, the pool writing no graph output and no Indices; not
  /// with hwc8_input (which pads that reformat instead) or debug_keep_all_tensors. Where it applies it is
  /// unconditional (the layout plan depends on it: nothing is timed against it). `warpstream bench --no-stem-pool`
  /// turns it off. Not part of the timing-cache identity (the fused step keeps its own entry, "|stempool"; the plan
  /// without the input's reformat hashes differently, so the two plans keep separate caches anyway).
  bool fuse_stem_pool = true;
  /// cuDNN graph convs (channels-last fp16 dense convs with a bias and ReLU / no activation; OFF by default): besides
  /// cuDNN's legacy algorithms, the same conv + bias (+ residual) (+ ReLU) is expressed as one cuDNN graph through
  /// cudnn-frontend (src/engine/cuda/cudnn_fe_conv.h) and each deterministic engine configuration cuDNN's heuristics list
  /// for it (up to 12 precompiled and 4 runtime-compiled ones, modes A and FALLBACK) is timed as a tactic (timing-cache
  /// impl "cudnn_fe", algo = the heuristic index). Needs a build with the cudnn-frontend headers
  /// (scripts/fetch-cudnn-frontend.sh). Measured (H100, device run 71): ResNet-50 fp16, 1 lane, 382.5 / 391.9 µs end to
  /// end p50 / p99 against 391.0 / 397.0 with the legacy algorithms only (45 of 53 convs on a graph engine).
  /// Off by default because 4 lanes running concurrently gave 3 of 4000 frames another top-1 in that run (one lane: every
  /// frame equal) while every ExecutionContext shared the execution plans built at build: some engine keeps state outside
  /// the workspace we give it (in the plan or in the handle it was built with). Since then each context builds its own plan
  /// with its own handle at create_context (cudnn_fe_conv.h FeConv::prepare; CudnnFeConv.ConcurrentContextsMatchOneContext),
  /// which passes (device run 72); but ResNet-50 at 4 lanes still gave 16 of 1000 frames another top-1 (run 73), so it
  /// stays off until a 4-lane bench passes (`warpstream bench --cudnn-graph`).
  /// Part of the timing-cache identity when on (a cache timed without the graph engines would never try them).
  bool cudnn_graph_convs = false;
  /// Our NHWC fp16 implicit-GEMM conv with split-K across a thread-block cluster, reduced through distributed shared
  /// memory (kernels/conv/conv_nhwc.h; channels-last dense convs with c_in % 64 == 0 and c_out % 8 == 0, tactic source
  /// warpstream, compute capability >= 9.0) timed as a tactic beside cuDNN in each form: 32 or 64 output channels per
  /// CTA × split counts 1, 2, 4, 8, 16 (timing-cache impl "ws_nhwc_igemm_n<tile_n>_s<splits>"). Aimed at ResNet-50's
  /// batch-1 convs, where cuDNN's engines keep few tiles in flight (3×3 convs on 14×14 and 7×7 maps: 7.5–11 µs).
  /// OFF by default until a device run shows it faster (`warpstream bench --nhwc-igemm`; the earlier serial split-K
  /// kernel lost every ResNet-50 conv to cuDNN in device run 72). Part of the timing-cache identity when on.
  bool nhwc_igemm = false;
  /// CUTLASS's implicit-GEMM conv2d fprop (kernels/conv/conv_cutlass.h: the CUTLASS 2.x conv API's multistage mma.sync
  /// kernels with serial split-K, bias + ReLU in the epilogue; tiles 64×64×32 / 64×64×64) timed as a tactic of
  /// channels-last dense fp16 convs without a fused residual, c_in and c_out multiples of 8, tactic source warpstream,
  /// compute capability 9.0, at split counts 1, 2, 4, ... (timing-cache impl "cutlass_conv_<tile>_split<splits>", e.g.
  /// "cutlass_conv_64x64x32_s4_split2"). Needs a
  /// build with the CUTLASS headers (scripts/fetch-cutlass-headers.sh); without them the option binds nothing. The split
  /// slices add into y in fp16 (one rounding per slice). OFF by default: correct
  /// (ConvCutlass.*, device run 72); on ResNet-50 it won only the kHWC8-padded stem (12.7 -> 9.2 µs, tile
  /// 64x64x32_s4_c8), no 3×3 conv; `warpstream bench --cutlass-conv`. Part of the timing-cache identity when on.
  bool cutlass_convs = false;
  /// First-layer channel padding (TensorRT's kHWC8 format): where a channels-last plan reformats a tensor with fewer
  /// than 8 channels (an RGB network input) and every reader of the reformatted copy is a dense Conv, the reformat writes
  /// NHWC with the channels zero-padded to 8 (kernels::nchw_to_nhwc_pad_channels) and those Convs get weights zero-padded
  /// to [K, 8, R, S]: the same sums, with 16-byte pixels that tensor-core conv kernels take (ResNet-50's 7×7 stem, c_in 3;
  /// CUTLASS needs c_in % 8 == 0). LayoutPlan::hwc8_pads counts them. OFF by default: correct
  /// (CudaEngineLayout.*, device run 72); with cuDNN alone no faster, the gain is CUTLASS's c8 tile; `warpstream bench --hwc8`. The padded convs are other problems for the
  /// timing cache (their input shapes differ), so it is not part of the cache identity.
  bool hwc8_input = false;
  /// kHWC8 input port (TensorRT's ITensor::setAllowedFormats(kHWC8) on a network input; needs hwc8_input): each graph
  /// input whose only reader is a reformat hwc8_input padded (and that is no graph output) is taken by the engine in
  /// TensorFormat::kHWC8 — input_desc(i) says format kHWC8, the model's name and logical [N, C, H, W] shape, and bytes
  /// N·H·W·8 · element size — and that reformat is removed from the plan (one kernel less per enqueue): the producer
  /// writes the padded channels-last tensor itself (the lanes' preprocess does: kernels::preprocess_rgb8_to_nhwc8).
  /// Every other input stays TensorFormat::kLinear, silently (the stage did not pad it: a non-conv reader, more than 7
  /// channels, a channels-first plan, the build limits; or the input has other readers); LayoutPlan::hwc8_ports and the
  /// tactic list (op "Port", "... kHWC8 ...") say which were taken. Changes the plan, so the graph hash (timing-cache
  /// identity) differs from the same build without it. Errors: set without hwc8_input, kInvalidArgument from build()
  /// and check_support(). OFF by default (it changes the input's
  /// layout contract): its tests passed on the GPU (device run 72); `warpstream bench --hwc8-port`.
  bool hwc8_input_port = false;
  /// Auxiliary streams for parallel branches (TensorRT's IBuilderConfig::setMaxAuxStreams). 0 (default): every step
  /// runs in order on the caller's stream. >= 1: one auxiliary stream per ExecutionContext (more are not used yet).
  /// A residual Add whose two operands are Convs, one of which reads only tensors produced before the other branch
  /// starts (ResNet's downsample shortcut), runs that shortcut Conv on the auxiliary stream beside the main branch: the
  /// plan moves it to where its input is ready and folds the Add into the main branch's last Conv instead (the shortcut's
  /// output becomes the residual operand). Any other step whose output is first read two or more steps later is also
  /// eligible. The branch forks from the caller's stream with an event and joins it (cudaStreamWaitEvent) before its
  /// first reader, so in a captured CUDA graph it is a parallel node; its inputs stay live in the arena until the join,
  /// and it has its own workspace range. A step whose tactic needs split-K tile counters stays on the caller's stream.
  /// tactics() marks each branched step ("on the auxiliary stream, joined before ..."). Results: the same math, but the
  /// Add folds into the other Conv, so fp16 roundings differ from a build without (each within the CPU tolerance).
  /// Changes the plan, so the graph hash (timing-cache identity) differs from the same build without it.
  /// Errors: a negative value, kInvalidArgument from build() and check_support(). OFF by default: correct (device run 96:
  /// CudaEngineAuxStream.*, ResNet-50 against the CPU executor) but no faster on ResNet-50 fp16 (1 lane, CUDA graph: GPU
  /// p50 363.4 against 362.1 µs with a mapped frame, 2 alternated reps each; docs/cuda-executor.md).
  int max_aux_streams = 0;
};

/// One build-time choice, for reports ("node 'conv_3' Conv: cudnn algo 1 (IMPLICIT_PRECOMP_GEMM), NHWC, 12.3 µs").
struct TacticRecord {
  std::string node;
  std::string op_type;
  std::string choice;
  float time_us = 0;       ///< measured at build (or as recorded in the timing cache); 0 when not timed
  bool from_cache = false;  ///< the choice came from the timing cache file (nothing was timed this build)
  /// The choice was timed for an earlier node of this build with the same problem (op, precision, input shapes
  /// and constness, attributes, fused activation) and reused, as TensorRT's timing cache keys layers by problem.
  bool same_problem = false;
};

class ExecutionContext;

/// The frame-level tactic check (CudaEngine::tune_frame). The build chooses each step's tactic timed alone (the tactic
/// timer replays one kernel on scratch buffers); inside the captured frame a step runs behind its real predecessor (PDL
/// overlap, what is resident in L2, carveout), and a choice faster alone can be slower there (docs/lanes-plan.md: the
/// cluster split-K, the 4-output expand->depthwise form and the auxiliary stream each won alone and not in the frame).
/// The check flips contested choices one at a time and keeps a flip only when the whole frame got faster.
struct FrameTuneOptions {
  /// Contested choices tried, closest runner-up first (0..256; 0 only times the plan as it is).
  int max_flips = 16;
  /// A choice is contested when a runner-up's build-time µs is within this fraction above its own (0..10).
  float max_gap = 0.15f;
  /// Timed frames per plan per round (10..10000) and alternated rounds (1..51, odd: a majority decides).
  int replays = 100;
  int rounds = 5;
  /// A flip is kept when the frame's median (all rounds pooled) is at least this much lower and it won a majority of
  /// the rounds' medians (0..1000 µs).
  float min_gain_us = 0.3f;
};

/// One flip tried by tune_frame.
struct FrameTuneFlip {
  std::string cache_key;         ///< the timing-cache entry (BindContext::cache_key, "|exdw" etc. for a fusion decision)
  std::string from, to;          ///< tactic keys: impl, then ":algo N" / ":fused" where cuDNN's ("unfused" for a fusion kept apart)
  float from_us = 0, to_us = 0;  ///< their build-time µs, each timed alone
  float frame_us = 0;            ///< the frame's GPU median µs with the current choices (0: not timed)
  float flipped_frame_us = 0;    ///< ... with this flip
  int rounds_won = 0;            ///< rounds whose median was lower with the flip
  /// Entries the flipped build timed alone (decisions the flip made reachable, e.g. a depthwise -> pointwise fusion once an
  /// expand -> depthwise pair is split): their effect is measured with the flip's.
  int retimed_entries = 0;
  bool kept = false;
  std::string note;  ///< why it was not timed or not kept ("no effect on the plan", "the build re-timed it", ...)
};

/// What tune_frame did. Frame times are the GPU time of one enqueue (direct replay of the context's captured graph,
/// input in device memory, the host waiting for each frame as a lane does), medians over every round's replays.
struct FrameTuneReport {
  float frame_before_us = 0;  ///< the plan the build chose, in the final alternated comparison
  float frame_after_us = 0;   ///< the plan kept
  int final_rounds_won = 0;   ///< rounds (of FrameTuneOptions::rounds) the kept plan won in that comparison
  bool reverted = false;      ///< the kept flips together were not faster: the build's own choices were kept
  size_t entries = 0, contested = 0;  ///< timing-cache entries, and those with a runner-up within max_gap
  std::vector<FrameTuneFlip> flips;
  int builds = 0;             ///< engines built (after the first, from the edited timing cache; see FrameTuneFlip::retimed_entries)
  double seconds = 0;
};

class CudaEngine {
 public:
  /// Optimises `graph`, chooses tactics, uploads weights (device memory owned by the engine).
  /// Errors: a node no CUDA kernel supports (kUnsupported naming node, op type and the reason),
  /// CUDA/cuDNN/cuBLAS failures (kCuda).
  static Result<std::unique_ptr<CudaEngine>> build(ir::Graph graph, const CudaBuildOptions& options);
  /// The device-free first half of build(): optimises `graph` and checks every node (CPU op-table analysis, then
  /// its CUDA entry's limits) without touching a device, so it runs on a machine with no GPU. OK when build()
  /// would get past its support checks; otherwise the error build() would return (kUnsupported naming node, op
  /// type and reason; kInvalidModel for a model the spec rules out).
  /// With `plan`: also what the build's layout stage (CudaBuildOptions::layout) planned, filled when OK. It assumes a
  /// device that runs the fused stem (fuse_stem_pool: compute capability 8.0+ and sm_80+ code in this build); on one that
  /// does not, build() leaves the stem unfused, so its plan has the input's reformat (and kAuto may choose otherwise).
  static Status check_support(ir::Graph graph, const CudaBuildOptions& options, LayoutPlan* plan = nullptr);
  /// The frame-level tactic check (FrameTuneOptions): builds `graph` with `options` (timing what the timing cache lacks),
  /// then for each contested choice in the cache — a runner-up (TimingEntry::alternatives) within max_gap of the
  /// winner's build-time µs, closest first — builds the engine again from the cache with that one choice flipped, times
  /// the whole frame against the current plan in alternated rounds, and keeps the flip when the frame got faster
  /// (greedy: later flips are tried on top of kept ones). Finally the kept plan is timed against the build's own; the
  /// cache file keeps the faster of the two, so every later build() with that cache (bench, the lanes) uses it.
  /// (A cache written before runners-up were recorded has another identity and is timed again.) Needs options.timing_cache_path; writes
  /// temporary caches beside it ("<path>.tune.<pid>.json", removed at the end; the calling thread's current device is put back). Seconds per flip: one build from the cache
  /// plus rounds × replays × 2 frames.
  /// Errors: no timing_cache_path or an option out of range (kInvalidArgument naming it); the cache cannot be read
  /// back after the build (kInvalidArgument with the reason); build() and enqueue() errors as they are.
  static Result<FrameTuneReport> tune_frame(const ir::Graph& graph, const CudaBuildOptions& options, const FrameTuneOptions& tune = {});
  virtual ~CudaEngine() = default;

  virtual size_t num_inputs() const = 0;
  virtual size_t num_outputs() const = 0;
  /// Device-side descriptors: dtype is float16 for the input in fp16 mode; outputs are float32. An input's format is
  /// TensorFormat::kLinear (NCHW for an image), or kHWC8 where CudaBuildOptions::hwc8_input_port took it padded
  /// ([N, H, W, 8] in memory; shape stays the model's [N, C, H, W], bytes the padded size). Outputs are kLinear.
  virtual const TensorDesc& input_desc(size_t i) const = 0;
  virtual const TensorDesc& output_desc(size_t i) const = 0;
  /// Bytes of activation + workspace memory each ExecutionContext allocates (one arena).
  virtual size_t arena_bytes() const = 0;
  /// Bytes of weights held on the device.
  virtual size_t weight_bytes() const = 0;
  virtual Precision precision() const = 0;
  virtual const std::vector<TacticRecord>& tactics() const = 0;
  /// Number of kernels one enqueue launches (for the launch-cost floor in benchmarks).
  virtual size_t kernel_count() const = 0;
  /// Byte copies (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout) whose output shares its input's arena range,
  /// so that they have no step and launch nothing (docs/cuda-executor.md, Build step 4). They have no TacticRecord.
  virtual size_t folded_copies() const = 0;
  virtual const ir::Graph& graph() const = 0;

  /// Allocates one arena (and per-context library handles/workspaces) and binds every address.
  /// All device allocation for running happens here. Direct enqueue's second call captures and instantiates its replay
  /// graph (see ExecutionContext::enqueue); after that, nothing is allocated.
  virtual Result<std::unique_ptr<ExecutionContext>> create_context() = 0;
};

class ExecutionContext {
 public:
  virtual ~ExecutionContext() = default;
  /// Device pointer where input i lives (write it before enqueue, e.g. with the preprocess kernel): the
  /// context's own arena slot, or the caller's memory after set_input_address(i, ptr). It holds input_desc(i).bytes in
  /// input_desc(i).format: a kHWC8 input is written [N, H, W, 8] with channels C..7 zero (see TensorFormat).
  virtual void* input(size_t i) = 0;
  /// Binds input i to caller-owned device memory (TensorRT's IExecutionContext::setTensorAddress): every later
  /// enqueue() reads input i from `ptr` instead of the arena slot, so a producer's tensor is used in place (no
  /// device-to-device copy). nullptr restores the arena slot. A cheap host call (rewrites the bound addresses of
  /// the steps that read the input, no allocation; a new address destroys direct enqueue's replay graph, the one CUDA
  /// call); not concurrent with enqueue() on this context.
  /// Contract: `ptr` holds input_desc(i).bytes of the input's dtype in input_desc(i).format (kLinear: dense row-major;
  /// kHWC8: [N, H, W, 8], padding channels zero), on the engine's device, and
  /// is 256-byte aligned (as arena slots are; kernels may use vector loads). The context only reads it; it must
  /// stay valid and unmodified until the enqueued work that reads it has completed (stream order).
  /// CUDA graphs captured from enqueue() keep the addresses bound at capture: re-capture after re-binding (the
  /// lanes' Pipeline owns its contexts and never re-binds).
  /// Errors: i out of range, ptr not 256-byte aligned (kInvalidArgument); the input is also a graph output
  /// (kUnsupported: its output would not follow the binding).
  virtual Status set_input_address(size_t i, const void* ptr) = 0;
  /// Device pointer of output i (valid after the enqueued work completes).
  virtual const void* output(size_t i) const = 0;
  /// Enqueues the whole network on `stream`. No device allocation, no synchronisation; capturable. When `stream` is being
  /// captured (the lanes capture one enqueue into their CUDA graph), the steps are launched into that capture. Otherwise
  /// (direct enqueue) the first call launches the steps (warm-up: lazy module loading, library first-call work), the second
  /// captures them once on the context's own stream into a CUDA graph, and every later call is one cudaGraphLaunch on
  /// `stream`: no host allocation in the steady state (launching the steps themselves would allocate: cuDNN's convolution
  /// calls make ~90 operator-new calls each, device run 70). set_input_address with a new address drops that graph (the
  /// second call with the new binding captures again). If capture or instantiation fails, every later call launches the
  /// steps, as the first does (direct_replay_state() says why). Errors: a failed step (named); kFailedPrecondition when
  /// `stream` cannot be used now (the legacy stream while another stream of the device is being captured).
  virtual Status enqueue(cudaStream_t stream) = 0;
  /// Direct enqueue's graph replay (above) on (default) or off: off, every direct enqueue launches the steps (what the
  /// lanes' non-graph mode measures, `bench --no-cuda-graph`). Not concurrent with enqueue() on this context.
  virtual void set_direct_replay(bool on) = 0;
  /// Where direct enqueue stands: "on: ... replays ...", "off: ...", or "launching the steps: <why the capture failed>".
  virtual std::string direct_replay_state() const = 0;
  /// The input wavefront (warpstream/row_signal.h; the lanes' PipelineOptions::input_wavefront): from the next enqueue
  /// on, the first step waits for each row of input 0 to be published instead of for the kernel before it, so it starts
  /// on the rows already written while the producer still writes the rest. Returns the signal the producer must publish
  /// into (kernels: preprocess_rgb8_to_nchw's `publish`) on every frame, and the epoch / error words the frame's last
  /// kernel must bump and check (the lanes' Top-K). Contract: on the enqueue's stream, the kernel launched immediately
  /// before enqueue() is that producer (the first step neither waits for anything else before writing its output nor
  /// reads anything else unguarded), and a kernel launched after the whole network, without PDL, closes the frame. Without
  /// a producer that publishes, the first step gives up after seconds and sets the error word. Allocates the
  /// signal's words once (set-up, not steady state); drops direct enqueue's replay graph. profile_layers runs the
  /// plain form. Chained: when the first step is our RGB stem and the second our fused 3x3 depthwise->pointwise kernel
  /// reading the stem's output (EfficientNet's first block), the stem also publishes its output rows and the second
  /// step waits on those (input_wavefront_steps() == 2). Errors: kUnsupported (nothing changes) when the first step is
  /// not our RGB stem conv (group 1, 3 input channels, 3x3, batch 1, no residual) or fused 3x3 depthwise->pointwise
  /// kernel, another step also reads input 0, or input 0 is not NCHW with batch 1; kInvalidArgument for max_steps
  /// outside 1..2; kCuda. `max_steps` 1 keeps the chain off (the first step alone waits on rows).
  virtual Result<RowSignal> enable_input_wavefront(int max_steps = 2) = 0;
  /// Steps that wait on rows instead of on the kernel before them: 0 (the plain form), 1 (the first step) or 2 (the
  /// first two: a chained wavefront).
  virtual int input_wavefront_steps() const = 0;
  /// Back to the plain form (the first step waits for the kernel before it); drops direct enqueue's replay graph.
  virtual void disable_input_wavefront() = 0;
  /// Debug: device pointer of a runtime tensor by id (valid after enqueue only when built with
  /// debug_keep_all_tensors); its dtype is the engine precision's activation type.
  virtual const void* tensor(ir::TensorId id) const = 0;

  /// One step of the plan timed alone (like TensorRT's IProfiler / trtexec --dumpProfile).
  struct LayerTiming {
    std::string node;     ///< ONNX node name
    std::string op_type;  ///< ONNX op type
    std::string tactic;   ///< the build's choice for this node ("" for ops without tactics)
    int kernels = 0;      ///< kernels this step launches
    float median_us = 0;  ///< median over reps of one step's GPU time, µs
    float p99_us = 0;     ///< p99 (nearest rank) over reps, µs
  };
  /// Diagnostics, not a steady-state call: times each step of the plan alone — 20 back-to-back copies of
  /// the step captured into one CUDA graph, replayed `reps` times (1..100000) with an event pair around
  /// each replay; a reading is replay time / 20 (so ~0.5 µs of per-node graph overhead is included, as in
  /// the lanes' replay). Returns per-step median / p99 in plan order; synchronises `stream`.
  /// Allocates (events, graphs, result). Errors: kInvalidArgument for reps out of range; kCuda.
  virtual Result<std::vector<LayerTiming>> profile_layers(cudaStream_t stream, int reps) = 0;
};

}  // namespace ws
