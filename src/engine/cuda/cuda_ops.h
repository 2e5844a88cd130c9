#pragma once
/// \file cuda_ops.h
/// The CUDA executor's op table (internal). One entry per ONNX op type, defined in the family files
/// src/engine/cuda/ops/<family>.cpp and assembled by cuda_op_table.cpp, mirroring the CPU op table's
/// names (src/engine/ir/op_table.cpp, whose analyze_node validates every node and infers its shapes
/// first). Each entry holds both halves: `supports` (CUDA-specific limits, checked for every node before
/// any device work, so an unsupported node fails the build naming node, op and reason) and `bind` (chooses
/// tactics — timed on the device, persisted in the timing cache — uploads constants and returns the
/// step's enqueue function). No parallel switches elsewhere.

#include <cublasLt.h>
#include <cudnn.h>
#include <cuda_runtime.h>

#include <functional>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cuda/cuda_util.h"
#include "engine/cuda/tactic_timer.h"
#include "engine/ir/timing_cache.h"
#include "engine/ir/op_table.h"
#include "kernels/elementwise/elementwise.h"
#include "warpstream/cuda_engine.h"
#include "warpstream/row_signal.h"

namespace ws::cudaexec {

// The timing cache is device-free and lives in engine_ir (engine/ir/timing_cache.h).
using ir::TimingCache;
using ir::TimingEntry;

/// Where a step operand lives: a range of the context's arena, an engine-owned constant, or absent.
struct Operand {
  enum class Kind { kNone, kArena, kConst };
  Kind kind = Kind::kNone;
  size_t offset = 0;          ///< kArena
  const void* ptr = nullptr;  ///< kConst
};

/// Addresses one step sees at enqueue (bound once per context).
struct StepIo {
  std::vector<const void*> in;
  std::vector<void*> out;
  void* workspace = nullptr;  ///< the context's shared workspace (steps run in order on one stream)
  /// The context's split-K tile counters (kernels::conv2d_pointwise tile_counters): zero at context creation, used
  /// by no other kind of step, left zero by every step that uses them; shared by the steps (they run in order).
  unsigned* tile_counters = nullptr;
  /// The input wavefront (ExecutionContext::enable_input_wavefront; warpstream/row_signal.h): set on step 0 when it is our
  /// RGB stem conv reading input 0, and on step 1 in a chain (Step::can_wait_input_rows); the step then waits for its
  /// producer's rows.
  const RowSignal* input_rows = nullptr;
  /// A chained wavefront: set only on step 0 (Step::publishable_output_rows) when step 1 waits on its output's rows
  /// (step 1's input_rows is then this signal); the step publishes its output rows.
  const RowSignal* output_rows = nullptr;
};

/// Per-context library handles.
struct ContextLibs {
  cudnnHandle_t cudnn = nullptr;
  cublasLtHandle_t lt = nullptr;
  size_t workspace_bytes = 0;
};

using RunFn = std::function<Status(const StepIo&, const ContextLibs&, cudaStream_t)>;

struct WsConvPlan;  // conv_tactics.h

struct Step {
  std::string node;
  std::string op_type;
  std::vector<Operand> inputs, outputs;
  /// The graph tensors the step writes, in `outputs` order (its node's outputs; empty for the ports' own steps): what
  /// bind_ports matches a graph output against (node names need not be unique).
  std::vector<ir::TensorId> output_ids;
  RunFn run;
  /// The same work writing output 0 as float32 instead of the activation type (empty: not offered). In fp16 mode
  /// bind_ports uses it for a float32 graph output no other step reads: the step then writes the port's float32
  /// slot itself and the port's fp16 → fp32 cast step is not added (one kernel less; the value is not rounded to fp16).
  RunFn run_float32_out;
  /// Called once per ExecutionContext at create_context, with that context's libraries, before any run: per-context
  /// state a step must not share with concurrent contexts (a cuDNN graph conv's own execution plan, cudnn_fe_conv.h).
  /// The context keeps the returned token until it is destroyed (before its library handles). Empty: nothing to do.
  std::function<Result<std::shared_ptr<const void>>(const ContextLibs&)> prepare;
  size_t workspace_bytes = 0;
  size_t tile_counters = 0;  ///< uint32 split-K tile counters the step needs (StepIo::tile_counters)
  int kernels = 1;
  /// A Conv bound to one of our own kernels: its plan and the build-time µs it was chosen with (a later step may
  /// absorb it: BindContext::depthwise_producer).
  std::shared_ptr<const WsConvPlan> ws_conv;
  float time_us = 0.0f;
  /// This step also does the work of the N steps bound just before it and reads the first one's input in its place;
  /// bind_steps drops them. 1: the depthwise conv of a fused depthwise → pointwise pair, or the expand conv of a fused
  /// expand → depthwise pair (kernels::conv2d_expand_depthwise); 2: the expand and depthwise
  /// convs of a fused MBConv block (kernels::conv2d_mbconv). 0: none.
  int absorbs_previous = 0;
  /// The step's run honours StepIo::input_rows on its input 0: a Conv bound to kernels::conv2d_direct's RGB stem form,
  /// or a fused 3x3 depthwise -> pointwise pair (kernels::conv2d_depthwise_pointwise); batch 1, no residual.
  bool can_wait_input_rows = false;
  /// > 0: the step's run honours StepIo::output_rows (with input_rows; the RGB stem form), a signal of this many rows
  /// (its output's H).
  int64_t publishable_output_rows = 0;
  /// Set after binding (CudaBuildOptions::max_aux_streams; build_stages.h aux_branches): >= 0, the step runs on the
  /// context's auxiliary stream as branch `aux_branch` (forked from the main stream just before it, with its own
  /// workspace range); -1: on the main stream.
  int aux_branch = -1;
  /// The branches the main stream joins (waits for) before this step runs.
  std::vector<int> aux_joins;
  /// Index in the engine's tactics() of the last record its bind appended (its choice), or -1 (bind_steps).
  long tactic_record = -1;
  /// The step has nothing to do: a byte copy whose output shares its input's arena range (build_stages.h
  /// copy_aliases). bind_steps drops it, so it is no node of the captured graph.
  bool folded = false;
};

/// Status for a failed cuDNN / cuBLAS call.
Status cudnn_status(cudnnStatus_t s, const char* what, const char* file, int line);
Status cublas_status(cublasStatus_t s, const char* what, const char* file, int line);
#define WS_CUDNN_RETURN_IF_ERROR(call)                                                                 \
  do {                                                                                                 \
    cudnnStatus_t ws_cudnn_s_ = (call);                                                                \
    if (ws_cudnn_s_ != CUDNN_STATUS_SUCCESS) return ::ws::cudaexec::cudnn_status(ws_cudnn_s_, #call, __FILE__, __LINE__); \
  } while (0)
#define WS_CUBLAS_RETURN_IF_ERROR(call)                                                                \
  do {                                                                                                 \
    cublasStatus_t ws_cublas_s_ = (call);                                                              \
    if (ws_cublas_s_ != CUBLAS_STATUS_SUCCESS) return ::ws::cudaexec::cublas_status(ws_cublas_s_, #call, __FILE__, __LINE__); \
  } while (0)

/// What an entry sees while binding one node.
struct BindContext {
  const ir::Graph& graph;
  const ir::Node& node;
  const engine::NodeContext& analyzed;  ///< analyze_node's result (output shapes)
  const CudaBuildOptions& options;
  Precision precision;
  kernels::ElemType elem;
  size_t elem_bytes;
  kernels::Activation fused_act = kernels::Activation::kNone;  ///< Conv: activation folded into its epilogue
  kernels::ActivationParams fused_params;
  /// Device copy of constant tensor `id`: in the activation type (as_float32 false) or float32.
  std::function<Result<const void*>(ir::TensorId, bool as_float32)> upload;
  /// Device copy of arbitrary host float data converted to the activation type (engine-owned).
  std::function<Result<const void*>(const std::vector<float>&, bool as_float32)> upload_values;
  BuildDevice& dev;
  TimingCache& cache;
  std::vector<TacticRecord>& tactics;
  /// Device copy of constant tensor `id` in the type the executor stores it in: float32 in the activation
  /// type, any other element type (bool, int64, ...) byte for byte. Empty in supports() (nothing is uploaded there).
  std::function<Result<const void*>(ir::TensorId)> upload_stored;
  /// The node's 4-D activations are stored channels-last (CudaBuildOptions::layout, build_stages.h
  /// assign_layouts): Conv / pools bind their NHWC form; part of cache_key and problem_key.
  bool nhwc = false;
  /// Device copy of arbitrary host bytes (FP8 weight codes), engine-owned. Empty in supports().
  std::function<Result<const void*>(const void* data, size_t bytes)> upload_bytes;
  std::string cache_key() const;  ///< "<precision>|<node name>|<op>|<input shapes>"
  /// The node's problem without its name: "<precision>|<op>|<input shape, c(onstant)/r(untime) or ->...|act=<>|
  /// <attributes, sorted by name>" — equal for two nodes that every tactic treats alike (TimingCache::find_problem).
  std::string problem_key() const;
  /// Precision fp8: the E4M3 quantisation scale of input 0 (amax / 448, fp8_quant.h fp8_activation_scale) when
  /// CudaBuildOptions::fp8_activation_amax holds a usable range for it; nullopt otherwise (no input 0, no entry,
  /// a zero / NaN / infinite amax). The one lookup behind the FP8 tactics' operands and the "|fp8cal" timing key.
  std::optional<float> fp8_input_scale() const;
  /// A pointwise Conv whose input 0 is the output of the step bound just before it, a depthwise Conv on one of our
  /// own kernels whose output nothing else reads (OptimizedGraph::depthwise_pointwise, build_stages.h): that step, so
  /// bind_conv may time the fused depthwise → pointwise kernel against the pair. nullptr otherwise.
  const Step* depthwise_producer = nullptr;
  /// With depthwise_producer: the step bound before it when it is the MBConv block's expand conv (a 1×1 conv on our
  /// own kernel whose output only the depthwise conv reads; OptimizedGraph::mbconv), so bind_conv may time the whole
  /// block as one kernel (kernels::conv2d_mbconv). nullptr otherwise.
  const Step* expand_producer = nullptr;
  /// A depthwise Conv whose input 0 is the output of the step bound just before it, a 1×1 expand Conv on one of our own
  /// kernels whose output nothing else reads (OptimizedGraph::expand_depthwise, build_stages.h): that step, so bind_conv
  /// may time the fused expand → depthwise kernel (kernels::conv2d_expand_depthwise) against the pair. nullptr otherwise.
  const Step* pointwise_producer = nullptr;
  /// A Gemm / MatMul of OptimizedGraph::pooled_heads whose GlobalAveragePool is the step bound just before it: that
  /// step, so bind_gemm may absorb it (kernels::pooled_gemv), reading `pooled_input` in place of input 0. nullptr otherwise.
  const Step* pool_producer = nullptr;
  /// With pool_producer: the pool's input [1, C, H, W] — its arena offset, layout and shape.
  struct PooledInput {
    size_t offset = 0;
    bool nhwc = false;
    int64_t channels = 0, hw = 0;
  } pooled_input{};
  /// A MaxPool of OptimizedGraph::stem_pools: the stem Conv's step bound just before it (bind_stem_conv's placeholder),
  /// which bind_stem_pool absorbs; the Conv node and the activation folded into it. nullptr otherwise.
  const Step* stem_producer = nullptr;
  const ir::Node* stem_conv = nullptr;
  kernels::Activation stem_act = kernels::Activation::kNone;
  kernels::ActivationParams stem_params{};
};

/// A tensor of an OpSample graph: a runtime input, or a constant (float32, int64, or bool from `ints`).
struct OpSampleTensor {
  enum class Kind { kRuntime, kConstant, kConstantInt64, kConstantBool };
  std::string name;
  std::vector<int64_t> shape;
  Kind kind = Kind::kRuntime;
  std::vector<float> values;  ///< kConstant: these exact values; empty = uniform random in [-scale, scale)
  std::vector<int64_t> ints;  ///< kConstantInt64; kConstantBool (nonzero = true)
  float scale = 1.0f;
  bool nonzero = false;       ///< random values kept at |v| >= 0.5 (divisors)
};
/// An attribute of an OpSample node.
struct OpSampleAttr {
  enum class Kind { kInt, kFloat, kInts, kString };
  std::string name;
  Kind kind = Kind::kInt;
  int64_t i = 0;
  float f = 0.0f;
  std::vector<int64_t> ints;
  std::string s;
  static OpSampleAttr integer(std::string n, int64_t v) { return {std::move(n), Kind::kInt, v, 0.0f, {}, {}}; }
  static OpSampleAttr real(std::string n, float v) { return {std::move(n), Kind::kFloat, 0, v, {}, {}}; }
  static OpSampleAttr integers(std::string n, std::vector<int64_t> v) { return {std::move(n), Kind::kInts, 0, 0.0f, std::move(v), {}}; }
  static OpSampleAttr text(std::string n, std::string v) { return {std::move(n), Kind::kString, 0, 0.0f, {}, std::move(v)}; }
};
struct OpSampleNode {
  std::string op_type;
  std::vector<std::string> inputs;  ///< "" = an omitted optional input
  std::vector<std::string> outputs;
  std::vector<OpSampleAttr> attrs;
};
/// One form an entry accepts (an attribute combination, constant vs runtime operands, a fused epilogue), as a
/// small graph whose only output is "y": the CPU-vs-CUDA consistency test (tests/gpu/cuda_engine_ops_test.cpp)
/// builds and compares one graph per sample of every entry of cuda_op_table(). Host data only.
struct OpSample {
  std::string label;
  std::vector<OpSampleTensor> tensors;
  std::vector<OpSampleNode> nodes;
  int64_t opset = 13;
};

struct CudaOpDef {
  const char* op_type;
  /// Number of leading inputs the engine uploads (when constant) in the activation type before bind;
  /// -1: all inputs. Entries needing other forms (Conv/Gemm weights, Clip bounds) upload themselves.
  int data_inputs;
  Status (*supports)(const BindContext& c);
  Status (*bind)(BindContext& c, Step& step);
  /// The forms of `op_type` this entry accepts, for the consistency test (at least one per entry).
  std::vector<OpSample> (*samples)(const std::string& op_type);
};

/// The whole table, sorted by op type (cuda_op_table.cpp assembles it from the family files).
const std::vector<CudaOpDef>& cuda_op_table();
const CudaOpDef* find_cuda_op(const std::string& op_type);
std::vector<std::string> cuda_supported_ops();

/// The entries of each family file (src/engine/cuda/ops/<family>.cpp); only cuda_op_table() calls them.
std::vector<CudaOpDef> conv_ops();         ///< ops/conv.cpp: Conv
std::vector<CudaOpDef> elementwise_ops();  ///< ops/elementwise.cpp: unary activations, broadcast binary ops
std::vector<CudaOpDef> gemm_ops();         ///< ops/gemm.cpp: Gemm, MatMul
std::vector<CudaOpDef> pool_ops();         ///< ops/pool.cpp: MaxPool, AveragePool, GlobalAveragePool
std::vector<CudaOpDef> shape_ops();        ///< ops/shape.cpp: Reshape-like copies, Transpose, Concat
std::vector<CudaOpDef> softmax_ops();      ///< ops/softmax.cpp: Softmax
std::vector<CudaOpDef> reduce_ops();       ///< ops/reduce.cpp: Reduce*, LogSoftmax, LayerNormalization, InstanceNormalization
std::vector<CudaOpDef> indexing_ops();     ///< ops/indexing.cpp: Gather, Slice, Split, Expand, Tile, Cast
std::vector<CudaOpDef> logic_ops();        ///< ops/logic.cpp: Equal/Less/Greater/..., And/Or/Xor/Not, Where
std::vector<CudaOpDef> math_ops();         ///< ops/math.cpp: unary math family, BatchNormalization, PRelu, Pow, Sum/Max/Min/Mean

/// Binds a reformat node of assign_layouts (an Identity carrying kReformatAttr): one transpose (ops/shape.cpp).
Status bind_reformat(BindContext& c, Step& step);

/// The stem fusion (ops/conv.cpp; build_stages.h stem_pools, kernels::stem7x7_maxpool). bind_stem_conv: the stem Conv's
/// placeholder step — its tactic record, no kernel; the MaxPool after it absorbs it. bind_stem_pool: that MaxPool
/// (BindContext::stem_producer set) as the one fused step, reading the Conv's NCHW input, writing its own output NHWC;
/// times the kernel once for the record (timing cache suffix "|stempool"). Errors: the kernel's launch errors at build
/// (e.g. kUnsupported below compute capability 8.0), internal_error for a Conv that is not the stem form.
Status bind_stem_conv(BindContext& c, Step& s);
Status bind_stem_pool(BindContext& c, Step& s);

/// Conv followed by these may fold the activation into the conv epilogue.
bool activation_of(const ir::Graph& g, const ir::Node& n, kernels::Activation& act, kernels::ActivationParams& p);

}  // namespace ws::cudaexec
