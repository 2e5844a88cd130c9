#pragma once
/// \file cuda_ops.h
/// The CUDA executor's op table (internal). One entry per ONNX op type, mirroring the CPU op table's
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
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cuda/cuda_util.h"
#include "engine/ir/op_table.h"
#include "kernels/elementwise/elementwise.h"
#include "warpstream/cuda_engine.h"

namespace ws::cudaexec {

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
};

/// Per-context library handles.
struct ContextLibs {
  cudnnHandle_t cudnn = nullptr;
  cublasLtHandle_t lt = nullptr;
  size_t workspace_bytes = 0;
};

using RunFn = std::function<Status(const StepIo&, const ContextLibs&, cudaStream_t)>;

struct Step {
  std::string node;
  std::string op_type;
  std::vector<Operand> inputs, outputs;
  RunFn run;
  size_t workspace_bytes = 0;
  int kernels = 1;
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

/// Build-time device resources for timing tactics: handles, a stream, events, growable scratch buffers.
struct BuildDevice {
  cudnnHandle_t cudnn = nullptr;
  cublasLtHandle_t lt = nullptr;
  cuda::Stream stream;
  cuda::Event start, stop;
  cuda::DeviceBuffer scratch[3];  ///< 0: input, 1: output, 2: workspace
  ~BuildDevice();
  /// Scratch buffer `slot` of at least `bytes` (zero-filled when (re)allocated).
  Result<void*> get(int slot, size_t bytes);
  /// Mean µs of `reps` runs of `fn` after 2 warm-up runs (events on `stream`); synchronises.
  /// capture: the reps are captured into one CUDA graph and replayed (as the lanes run; no host launch
  /// gaps), falling back to stream launches when capture fails. Used for our own kernels; cuDNN candidates
  /// are timed on the stream (capturing every cuDNN algorithm at build — FFT ones included — hung an
  /// fp32 EfficientNet build on the H200, 2026-11-29), which charges them host launch gaps on tiny convs.
  Result<float> time_us(const std::function<Status(cudaStream_t)>& fn, int reps = 10, bool capture = false);
};

/// Timing cache entries of this build (the whole file is loaded/saved by the engine).
struct TacticCache {
  nlohmann::json entries = nlohmann::json::object();
  bool dirty = false;
  const nlohmann::json* find(const std::string& key) const {
    auto it = entries.find(key);
    return it == entries.end() ? nullptr : &*it;
  }
  void put(const std::string& key, nlohmann::json v) { entries[key] = std::move(v); dirty = true; }
};

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
  TacticCache& cache;
  std::vector<TacticRecord>& tactics;
  std::string cache_key() const;  ///< "<precision>|<node name>|<op>|<input shapes>"
};

struct CudaOpDef {
  const char* op_type;
  /// Number of leading inputs the engine uploads (when constant) in the activation type before bind;
  /// -1: all inputs. Entries needing other forms (Conv/Gemm weights, Clip bounds) upload themselves.
  int data_inputs;
  Status (*supports)(const BindContext& c);
  Status (*bind)(BindContext& c, Step& step);
};

const CudaOpDef* find_cuda_op(const std::string& op_type);
std::vector<std::string> cuda_supported_ops();

/// Conv followed by these may fold the activation into the conv epilogue.
bool activation_of(const ir::Graph& g, const ir::Node& n, kernels::Activation& act, kernels::ActivationParams& p);

}  // namespace ws::cudaexec
