// CUDA executor: CudaEngine::build as named stages (device-free ones in build_stages.h; per-node tactics
// through the op table of ops/*.cpp and the TimingCache of timing_cache.h) and the ExecutionContext
// (one arena = activations + shared workspace, handles per context, addresses bound once; enqueue
// launches the bound steps only). See include/warpstream/cuda_engine.h.
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "core/escape.h"
#include "engine/cuda/build_stages.h"
#include "kernels/conv/conv.h"
#include "kernels/conv/conv_cutlass.h"
#include "kernels/conv/conv_nhwc.h"
#include "engine/cuda/cuda_ops.h"
#include "kernels/conv/stem_pool.h"
#include "engine/cuda/cudnn_fe_conv.h"
#include "engine/ir/timing_cache.h"
#include "warpstream/arena.h"

namespace ws {

const char* precision_name(Precision p) { return p == Precision::kFloat8 ? "fp8" : p == Precision::kFloat16 ? "fp16" : "fp32"; }

namespace cudaexec {
namespace {

size_t align_up(size_t v) { return arena_align_up(v); }

class ContextImpl;

class EngineImpl final : public CudaEngine {
 public:
  size_t num_inputs() const override { return inputs_.size(); }
  size_t num_outputs() const override { return outputs_.size(); }
  const TensorDesc& input_desc(size_t i) const override { return inputs_[i]; }
  const TensorDesc& output_desc(size_t i) const override { return outputs_[i]; }
  size_t arena_bytes() const override { return arena_bytes_; }
  size_t weight_bytes() const override { return weight_bytes_; }
  Precision precision() const override { return precision_; }
  const std::vector<TacticRecord>& tactics() const override { return tactics_; }
  size_t kernel_count() const override { return kernel_count_; }
  size_t folded_copies() const override { return folded_offsets_.size(); }
  const ir::Graph& graph() const override { return graph_; }
  Result<std::unique_ptr<ExecutionContext>> create_context() override;

  ir::Graph graph_;
  Precision precision_ = Precision::kFloat32;
  int device_ = 0;
  std::vector<TensorDesc> inputs_, outputs_;
  std::vector<size_t> input_offsets_, output_offsets_;
  std::vector<size_t> tensor_offsets_;  // per TensorId (ArenaPlan::kNotInArena if none)
  /// Per graph input: the (step, operand) pairs that read it (set_input_address rewrites exactly these), and
  /// whether it is also a graph output (then it cannot be re-bound).
  std::vector<std::vector<std::pair<size_t, size_t>>> input_uses_;
  std::vector<bool> input_is_output_;
  std::vector<Step> steps_;
  std::vector<cuda::DeviceBuffer> weights_;
  size_t weight_bytes_ = 0, arena_bytes_ = 0, workspace_offset_ = 0, workspace_bytes_ = 0, kernel_count_ = 0;
  size_t counters_offset_ = 0, counters_bytes_ = 0;  ///< split-K tile counters: after the workspace, zero-filled with the arena
  /// Auxiliary-stream branches (CudaBuildOptions::max_aux_streams; Step::aux_branch): how many, and the workspace range
  /// the branched steps use (after the counters; the main stream's steps keep the shared workspace).
  int aux_branches_ = 0;
  size_t aux_workspace_offset_ = 0, aux_workspace_bytes_ = 0;
  /// Per node of graph_ (bind_steps): the index of the step it became, or -1 when a fused step absorbed it (or it was a
  /// folded copy).
  std::vector<long> node_step_;
  /// Arena offsets of the folded copies' outputs (build_stages.h copy_aliases): another view of the same range, perhaps
  /// of another shape, so the input wavefront never chains through one (chain_rows).
  std::vector<size_t> folded_offsets_;
  std::vector<TacticRecord> tactics_;
};

class ContextImpl final : public ExecutionContext {
 public:
  ~ContextImpl() override {
    if (replay_) cudaGraphExecDestroy(replay_);
    prepared_.clear();  // per-context step state (Step::prepare) goes before the handles it was built with
    if (libs_.cudnn) cudnnDestroy(libs_.cudnn);
    if (aux_libs_.cudnn) cudnnDestroy(aux_libs_.cudnn);
    if (libs_.lt) cublasLtDestroy(libs_.lt);
  }
  void* input(size_t i) override {
    return bound_[i] != nullptr ? const_cast<void*>(bound_[i]) : base() + engine_->input_offsets_[i];
  }
  Status set_input_address(size_t i, const void* ptr) override {
    if (i >= bound_.size())
      return invalid_argument("set_input_address: input " + std::to_string(i) + " out of range (" +
                              std::to_string(bound_.size()) + " inputs)");
    const TensorDesc& d = engine_->inputs_[i];
    if (reinterpret_cast<uintptr_t>(ptr) % 256 != 0)
      return invalid_argument("set_input_address: input " + ::ws::quoted(d.name) + ": address is not 256-byte aligned");
    if (engine_->input_is_output_[i])
      return unsupported("set_input_address: input " + ::ws::quoted(d.name) + " is also a graph output; it cannot be re-bound");
    if (ptr == bound_[i]) return Status::ok();  // unchanged: the replay graph (if any) stays valid
    const void* p = ptr != nullptr ? ptr : base() + engine_->input_offsets_[i];
    for (const auto& [step, k] : engine_->input_uses_[i]) io_[step].in[k] = p;
    bound_[i] = ptr;
    // The replay graph holds the old address: dropped, and captured again only once this binding has served one direct
    // call (a caller re-binding before every call, as the Python binding may, keeps plain launches, never a capture per call).
    drop_replay();
    direct_calls_ = 0;
    return Status::ok();
  }
  const void* output(size_t i) const override { return base() + engine_->output_offsets_[i]; }
  void set_direct_replay(bool on) override {
    replay_enabled_ = on;
    if (!on) drop_replay();
  }
  std::string direct_replay_state() const override {
    if (!replay_enabled_) return "off: every direct enqueue launches the steps";
    if (replay_) return "on: direct enqueue replays the context's CUDA graph";
    if (!replay_note_.empty()) return "launching the steps: " + replay_note_;
    return "launching the steps until the second direct enqueue captures them";
  }
  // Direct enqueue (the caller is not capturing `stream`): the first call launches the steps (warm-up: lazy module
  // loading, library first-call work); the second captures them once on the context's own stream into a CUDA graph;
  // from then on each call is one cudaGraphLaunch on `stream`, which makes no host allocation (cuDNN's convolution
  // calls allocate on every call: device run 70, ~90 operator-new calls per legacy call). A caller capturing `stream`
  // (the lanes) gets the steps launched into its capture. If the capture or instantiation fails, every later call
  // launches the steps (as before), and direct_replay_state() says why. set_direct_replay(false) keeps plain launches.
  Status enqueue(cudaStream_t stream) override {
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (const cudaError_t e = cudaStreamIsCapturing(stream, &cs); e != cudaSuccess) {
      (void)cudaGetLastError();  // e.g. cudaErrorStreamCaptureImplicit: the legacy stream while a blocking stream captures
      return failed_precondition(std::string("enqueue: cannot use this stream now (") + cudaGetErrorName(e) +
                                 "; the legacy default stream cannot be used while another stream of the device is being captured: "
                                 "use a non-blocking stream)");
    }
    if (cs != cudaStreamCaptureStatusNone || !replay_enabled_) return launch_steps(stream);
    if (!replay_ && replay_note_.empty() && direct_calls_++ >= 1) capture_replay();
    if (!replay_) return launch_steps(stream);
    WS_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(replay_, stream));
    return Status::ok();
  }
  Result<RowSignal> enable_input_wavefront(int max_steps) override {
    if (max_steps < 1 || max_steps > 2)
      return invalid_argument("enable_input_wavefront: max_steps " + std::to_string(max_steps) + " is outside 1..2");
    const auto& steps = engine_->steps_;
    // Step 0 must be the RGB stem (waits on the input's rows, may publish its own); a fused depthwise->pointwise step
    // waits only as step 1 of a chain (the form the tests cover).
    if (steps.empty() || !steps[0].can_wait_input_rows || steps[0].publishable_output_rows <= 0)
      return unsupported("enable_input_wavefront: the first step" + (steps.empty() ? std::string() : " (node '" + steps[0].node + "')") +
                         " is not a conv on our RGB stem kernel (group 1, 3 input channels, 3x3, batch 1, no residual), the one "
                         "step that can wait on its input's rows");
    if (engine_->inputs_.size() != 1)
      return unsupported("enable_input_wavefront: the engine has " + std::to_string(engine_->inputs_.size()) + " inputs; the wavefront is for one");
    if (engine_->input_uses_[0].size() != 1 || engine_->input_uses_[0][0] != std::pair<size_t, size_t>{0, 0})
      return unsupported("enable_input_wavefront: input 0 must be read by the first step's data operand only (it is read by " +
                         std::to_string(engine_->input_uses_[0].size()) + " step operand(s))");
    const TensorDesc& in = engine_->inputs_[0];
    if (in.format != TensorFormat::kLinear || in.shape.size() != 4 || in.shape[0] != 1)
      return unsupported("enable_input_wavefront: input " + ::ws::quoted(in.name) + " must be NCHW with batch 1");
    // The chain: step 1 waits on step 0's output rows when step 0 can publish them (the stem), step 1 can wait (a fused
    // 3x3 depthwise->pointwise pair) and reads step 0's output as its input 0. Later steps start after step 1 has
    // completed, which implies step 0's completion (both end with griddepcontrol.wait).
    const int64_t out_rows = chain_rows();
    if (!rows_buffer_.get()) {  // flags [H], epoch, error, then the chain's flags [H1] and counters [H1]: one allocation, at set-up
      const size_t h = static_cast<size_t>(in.shape[2]), h1 = static_cast<size_t>(out_rows);
      WS_ASSIGN_OR_RETURN(cuda::DeviceBuffer words, cuda::DeviceBuffer::allocate((h + 2 + 2 * h1) * sizeof(uint32_t)));
      WS_RETURN_IF_ERROR(::ws::cuda::fill_device(words.get(), 0, words.bytes()));  // on failure nothing is kept
      rows_buffer_ = std::move(words);
      uint32_t* w = rows_buffer_.as<uint32_t>();
      rows_ = RowSignal{w, w + h, w + h + 1, in.shape[2]};
      if (h1 > 0) {
        chain_ = RowSignal{w + h + 2, rows_.epoch, rows_.error, out_rows};
        chain_.counters = w + h + 2 + h1;
      }
    }
    wire_wavefront(true, chain_ && max_steps >= 2);  // a second enable may change max_steps
    drop_replay();  // a replay graph captured without the wait
    direct_calls_ = 0;
    return rows_;
  }
  int input_wavefront_steps() const override {
    if (io_.empty() || !io_[0].input_rows) return 0;
    return io_.size() > 1 && io_[1].input_rows ? 2 : 1;
  }
  void disable_input_wavefront() override {
    if (!io_.empty() && io_[0].input_rows) {
      wire_wavefront(false, false);
      drop_replay();
      direct_calls_ = 0;
    }
  }
  // The steps' signals: step 0 waits on the input's rows; chained, it publishes its own and step 1 waits on them.
  void wire_wavefront(bool on, bool chained) {
    if (io_.empty()) return;
    io_[0].input_rows = on ? &rows_ : nullptr;
    io_[0].output_rows = on && chained ? &chain_ : nullptr;
    if (io_.size() > 1) io_[1].input_rows = on && chained ? &chain_ : nullptr;
  }
  // Rows of step 0's output when step 1 can wait on them (a chained wavefront), else 0.
  int64_t chain_rows() const {
    const auto& steps = engine_->steps_;
    if (steps.size() < 2 || steps[0].publishable_output_rows <= 0 || !steps[1].can_wait_input_rows) return 0;
    if (steps[0].outputs.empty() || steps[1].inputs.empty()) return 0;
    const Operand& out0 = steps[0].outputs[0];
    const Operand& in1 = steps[1].inputs[0];
    if (out0.kind != Operand::Kind::kArena || in1.kind != Operand::Kind::kArena || out0.offset != in1.offset) return 0;
    // Step 1 reads step 0's rows only in step 0's own geometry: not through a folded copy (a Reshape's view).
    const auto& folded = engine_->folded_offsets_;
    if (std::find(folded.begin(), folded.end(), out0.offset) != folded.end()) return 0;
    return steps[0].publishable_output_rows;
  }
  const void* tensor(ir::TensorId id) const override {
    if (id < 0 || static_cast<size_t>(id) >= engine_->tensor_offsets_.size()) return nullptr;
    const size_t off = engine_->tensor_offsets_[static_cast<size_t>(id)];
    return off == ArenaPlan::kNotInArena ? nullptr : base() + off;
  }

  Result<std::vector<LayerTiming>> profile_layers(cudaStream_t stream, int reps) override;

  char* base() const { return arena_.as<char>(); }
  // The steps in order on `stream`; a branched step (Step::aux_branch) forks onto aux_stream_ (an event recorded on
  // `stream`, waited on by aux_stream_) and the main stream waits for its join event before the first step that reads it
  // (Step::aux_joins). Under stream capture the branch becomes a parallel node of the graph. On an error every branch
  // forked so far is still joined back, so a capture in progress never ends with an unjoined stream.
  Status launch_steps(cudaStream_t stream) {
    const auto& steps = engine_->steps_;
    // Per branch (sized at create_context: no allocation per call): 0 not forked or joined, 1 forked (the auxiliary
    // stream waits on the fork event; the join event not yet recorded), 2 forked and the join event recorded.
    std::vector<char>& state = aux_open_;
    std::fill(state.begin(), state.end(), 0);
    auto join = [&](int b) -> cudaError_t {  // the main stream waits for branch b (records its join event first if needed)
      char& st = state[static_cast<size_t>(b)];
      if (st == 0) return cudaSuccess;
      if (st == 1) {
        const cudaError_t r = cudaEventRecord(joined_[static_cast<size_t>(b)].get(), aux_stream_.get());
        if (r != cudaSuccess) return r;
        st = 2;
      }
      const cudaError_t w = cudaStreamWaitEvent(stream, joined_[static_cast<size_t>(b)].get(), 0);
      if (w == cudaSuccess) st = 0;
      return w;
    };
    Status result = Status::ok();
    for (size_t i = 0; i < steps.size() && result.is_ok(); ++i) {
      const Step& st = steps[i];
      cudaError_t e = cudaSuccess;
      for (int b : st.aux_joins)
        if (e == cudaSuccess) e = join(b);
      Status s = Status::ok();
      if (e == cudaSuccess && st.aux_branch >= 0) {
        const size_t b = static_cast<size_t>(st.aux_branch);
        e = cudaEventRecord(forked_[b].get(), stream);
        if (e == cudaSuccess) e = cudaStreamWaitEvent(aux_stream_.get(), forked_[b].get(), 0);
        if (e == cudaSuccess) {
          state[b] = 1;
          s = st.run(io_[i], aux_libs_, aux_stream_.get());
          const cudaError_t r = cudaEventRecord(joined_[b].get(), aux_stream_.get());
          if (r == cudaSuccess) state[b] = 2;
          else if (s.is_ok()) e = r;
        }
      } else if (e == cudaSuccess) {
        s = st.run(io_[i], libs_, stream);
      }
      if (e != cudaSuccess) s = Status(StatusCode::kCuda, std::string("auxiliary stream fork/join: ") + cudaGetErrorName(e));
      if (!s.is_ok()) result = Status(s.code(), "step " + std::to_string(i) + " (node '" + st.node + "', " + st.op_type + "): " + s.message());
    }
    // Normally every branch was joined by its join step; after an error, each forked one is still joined (a capture in
    // progress must not end with the auxiliary stream unjoined).
    for (int b = 0; b < engine_->aux_branches_; ++b) {
      const cudaError_t e = join(b);
      if (e != cudaSuccess && result.is_ok())
        result = Status(StatusCode::kCuda, std::string("auxiliary stream join: ") + cudaGetErrorName(e));
    }
    return result;
  }
  // The steps captured once on capture_stream_ (thread-local mode) and instantiated; on failure replay_ stays null and
  // replay_note_ records why (direct launches from then on).
  void capture_replay() {
    cudaGraph_t graph = nullptr;
    if (cudaStreamBeginCapture(capture_stream_.get(), cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
      (void)cudaGetLastError();
      replay_note_ = "stream capture did not begin";
      return;
    }
    const Status launched = launch_steps(capture_stream_.get());
    const cudaError_t ended = cudaStreamEndCapture(capture_stream_.get(), &graph);
    cudaError_t inst = cudaSuccess;
    if (launched.is_ok() && ended == cudaSuccess && graph && (inst = cudaGraphInstantiate(&replay_, graph, 0)) != cudaSuccess) replay_ = nullptr;
    if (graph) cudaGraphDestroy(graph);
    (void)cudaGetLastError();  // a failed capture or instantiation leaves its (non-sticky) error: not the caller's
    if (!replay_)
      replay_note_ = !launched.is_ok() ? "a step failed under capture: " + launched.message()
                     : ended != cudaSuccess ? std::string("stream capture failed: ") + cudaGetErrorName(ended)
                     : !graph ? std::string("stream capture produced no graph")
                              : std::string("graph instantiation failed: ") + cudaGetErrorName(inst);
  }
  void drop_replay() {
    if (replay_) cudaGraphExecDestroy(replay_);
    replay_ = nullptr;
    replay_note_.clear();
  }
  const EngineImpl* engine_ = nullptr;
  cuda::Stream capture_stream_;        // where the replay graph is captured (created with the context)
  cudaGraphExec_t replay_ = nullptr;   // the steps as one graph, after the second direct enqueue
  std::string replay_note_;            // why there is no replay graph (empty: none tried yet, or it exists)
  int direct_calls_ = 0;
  bool replay_enabled_ = true;
  cuda::DeviceBuffer arena_;
  ContextLibs libs_;
  // The auxiliary stream (CudaBuildOptions::max_aux_streams), its own cuDNN handle (the cuBLASLt handle is shared: it keeps
  // no per-call state), and one fork and one join event per branch. Absent when the engine has no branch.
  cuda::Stream aux_stream_;
  ContextLibs aux_libs_;
  std::vector<cuda::Event> forked_, joined_;
  std::vector<char> aux_open_;  // per branch: its fork/join state within one launch_steps call
  std::vector<StepIo> io_;
  std::vector<const void*> bound_;  // per input: caller-bound address, nullptr = the arena slot
  std::vector<std::shared_ptr<const void>> prepared_;  // tokens of Step::prepare
  cuda::DeviceBuffer rows_buffer_;  // the input wavefront's words (enable_input_wavefront), allocated on first enable
  RowSignal rows_;
  RowSignal chain_;  // step 0's output rows, when step 1 waits on them (chain_rows)
};

Result<std::vector<ExecutionContext::LayerTiming>> ContextImpl::profile_layers(cudaStream_t stream, int reps) {
  if (reps < 1 || reps > 100000) return invalid_argument("profile_layers: reps = " + std::to_string(reps) + " is out of range 1..100000");
  const auto& steps = engine_->steps_;
  std::vector<cuda::Event> ev;
  for (size_t i = 0; i < 2; ++i) {
    WS_ASSIGN_OR_RETURN(cuda::Event e, cuda::Event::create());
    ev.push_back(std::move(e));
  }
  std::vector<std::vector<float>> us(steps.size());
  // Steps alone have no producer publishing the input's rows: the first steps run in their plain form here.
  struct Restore {
    ContextImpl* c;
    int steps;  // input_wavefront_steps() as it was
    ~Restore() {
      if (steps > 0) c->wire_wavefront(true, steps == 2);
    }
  } restore{this, input_wavefront_steps()};
  wire_wavefront(false, false);
  WS_RETURN_IF_ERROR(launch_steps(stream));  // warm: lazy module loading, library first-call work
  WS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  // Each step alone: kInner back-to-back copies captured into one CUDA graph (so the GPU sees them as the
  // lanes' graph replay does, ~0.5 µs per node and no host launch gap), timed by one event pair per replay;
  // a reading is the replay time / kInner. Steps are idempotent (inputs and outputs never alias).
  constexpr int kInner = 20;
  for (size_t i = 0; i < steps.size(); ++i) {
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    WS_CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    Status s = Status::ok();
    for (int k = 0; k < kInner && s.is_ok(); ++k) s = steps[i].run(io_[i], libs_, stream);
    const cudaError_t ec = cudaStreamEndCapture(stream, &graph);
    if (!s.is_ok()) {
      if (graph) cudaGraphDestroy(graph);
      return Status(s.code(), "step " + std::to_string(i) + " (node '" + steps[i].node + "'): " + s.message());
    }
    if (ec != cudaSuccess || cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) {
      if (graph) cudaGraphDestroy(graph);
      return Status(StatusCode::kCuda, "profile_layers: capturing step " + std::to_string(i) + " (node '" + steps[i].node + "') failed");
    }
    cudaError_t e = cudaGraphLaunch(exec, stream);  // upload + warm
    for (int r = 0; r < reps && e == cudaSuccess; ++r) {
      e = cudaEventRecord(ev[0].get(), stream);
      if (e == cudaSuccess) e = cudaGraphLaunch(exec, stream);
      if (e == cudaSuccess) e = cudaEventRecord(ev[1].get(), stream);
      if (e == cudaSuccess) e = cudaEventSynchronize(ev[1].get());
      float ms = 0;
      if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, ev[0].get(), ev[1].get());
      us[i].push_back(ms * 1000.0f / kInner);
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    WS_CUDA_RETURN_IF_ERROR(e);
  }
  std::map<std::string, std::string> tactic;
  for (const auto& t : engine_->tactics_) tactic[t.node] = t.choice;
  std::vector<LayerTiming> out;
  for (size_t i = 0; i < steps.size(); ++i) {
    auto& v = us[i];
    std::sort(v.begin(), v.end());
    LayerTiming lt;
    lt.node = steps[i].node;
    lt.op_type = steps[i].op_type;
    auto it = tactic.find(lt.node);
    if (it != tactic.end()) lt.tactic = it->second;
    lt.kernels = steps[i].kernels;
    lt.median_us = v[v.size() / 2];
    lt.p99_us = v[std::min(v.size() - 1, static_cast<size_t>(std::ceil(0.99 * static_cast<double>(v.size()))) - 1)];
    out.push_back(std::move(lt));
  }
  return out;
}

Result<std::unique_ptr<ExecutionContext>> EngineImpl::create_context() {
  WS_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  auto ctx = std::make_unique<ContextImpl>();
  ctx->engine_ = this;
  WS_ASSIGN_OR_RETURN(ctx->arena_, cuda::DeviceBuffer::allocate(std::max<size_t>(arena_bytes_, 256)));
  WS_RETURN_IF_ERROR(::ws::cuda::fill_device(ctx->arena_.get(), 0, ctx->arena_.bytes()));
  WS_CUDNN_RETURN_IF_ERROR(cudnnCreate(&ctx->libs_.cudnn));
  WS_CUBLAS_RETURN_IF_ERROR(cublasLtCreate(&ctx->libs_.lt));
  ctx->libs_.workspace_bytes = workspace_bytes_;
  WS_ASSIGN_OR_RETURN(ctx->capture_stream_, cuda::Stream::create());
  if (aux_branches_ > 0) {
    WS_ASSIGN_OR_RETURN(ctx->aux_stream_, cuda::Stream::create());
    WS_CUDNN_RETURN_IF_ERROR(cudnnCreate(&ctx->aux_libs_.cudnn));
    ctx->aux_libs_.lt = ctx->libs_.lt;
    ctx->aux_libs_.workspace_bytes = aux_workspace_bytes_;
    for (int b = 0; b < aux_branches_; ++b) {
      WS_ASSIGN_OR_RETURN(cuda::Event f, cuda::Event::create(cudaEventDisableTiming));
      WS_ASSIGN_OR_RETURN(cuda::Event j, cuda::Event::create(cudaEventDisableTiming));
      ctx->forked_.push_back(std::move(f));
      ctx->joined_.push_back(std::move(j));
    }
    ctx->aux_open_.assign(static_cast<size_t>(aux_branches_), 0);
  }
  char* base = ctx->base();
  for (const Step& s : steps_) {
    StepIo io;
    auto resolve = [base](const Operand& o) -> void* {
      switch (o.kind) {
        case Operand::Kind::kArena: return base + o.offset;
        case Operand::Kind::kConst: return const_cast<void*>(o.ptr);
        default: return nullptr;
      }
    };
    for (const Operand& o : s.inputs) io.in.push_back(resolve(o));
    for (const Operand& o : s.outputs) io.out.push_back(resolve(o));
    io.workspace = workspace_bytes_ ? base + workspace_offset_ : nullptr;
    if (s.aux_branch >= 0) io.workspace = aux_workspace_bytes_ ? base + aux_workspace_offset_ : nullptr;
    io.tile_counters = counters_bytes_ ? reinterpret_cast<unsigned*>(base + counters_offset_) : nullptr;
    ctx->io_.push_back(std::move(io));
  }
  ctx->bound_.assign(inputs_.size(), nullptr);
  for (const Step& s : steps_)
    if (s.prepare) {
      auto token = s.prepare(ctx->libs_);
      if (!token.is_ok()) return Status(token.status().code(), "create_context: node '" + s.node + "' (" + s.op_type + "): " + token.status().message());
      if (*token) ctx->prepared_.push_back(std::move(*token));
    }
  return std::unique_ptr<ExecutionContext>(std::move(ctx));
}

Result<nlohmann::json> cache_identity(int device, const std::string& hash, const CudaBuildOptions& o) {
  cudaDeviceProp prop{};
  WS_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, device));
  char uuid[33];
  for (int i = 0; i < 16; ++i) std::snprintf(uuid + 2 * i, 3, "%02x", static_cast<unsigned char>(prop.uuid.bytes[i]));
  int driver = 0, runtime = 0;
  WS_CUDA_RETURN_IF_ERROR(cudaDriverGetVersion(&driver));
  WS_CUDA_RETURN_IF_ERROR(cudaRuntimeGetVersion(&runtime));
  nlohmann::json id{{"gpu", prop.name}, {"uuid", uuid}, {"driver", driver}, {"cuda_runtime", runtime},
                    {"cudnn", static_cast<uint64_t>(cudnnGetVersion())}, {"cublas", static_cast<uint64_t>(cublasLtGetVersion())},
                    {"graph_hash", hash}, {"max_workspace_bytes", static_cast<uint64_t>(o.max_workspace_bytes)},
                    {"tactic_sources", tactic_sources_string(o.tactic_sources)},
                    {"split_k_reduction", o.split_k_in_kernel ? "timed: second kernel or in-kernel" : "second kernel"},
                    // entries record their runners-up ("alternatives", what CudaEngine::tune_frame flips): a cache written
                    // before them is timed again once
                    {"runners_up", 1}};
  // The opt-in tactic families widen the candidate set: a cache timed without them would keep their convs on cuDNN.
  // Only named when on, so the caches of default builds keep their identity.
  if (o.cudnn_graph_convs) id["cudnn_graph_convs"] = cudnn_fe_version();  // the frontend version: indices are per version
  if (o.split_k_cluster) id["split_k_cluster"] = kernels::kPointwiseClusterRevision;  // timed with this kernel revision
  if (o.nhwc_igemm) id["nhwc_igemm"] = kernels::kNhwcIgemmRevision;  // a cache timed with an earlier kernel is re-timed
  if (o.cutlass_convs) id["cutlass_convs"] = kernels::conv2d_cutlass_built();  // a cache from a build without it never timed it
  return id;
}


// ---- Device stages of CudaEngine::build (the device-free ones are in build_stages.h) -----------------

/// Every node validated by the CPU op table (analyze_node: shapes, attributes), then by its CUDA entry's
/// supports(): no device work, so an unsupported model fails before any handle or allocation. `view` is
/// onnx_view(...) and must outlive the result (each NodeContext refers to its node).
Result<std::vector<engine::NodeContext>> check_support(const ir::Graph& g, const std::vector<ir::Node>& view,
                                                       const CudaBuildOptions& options, BuildDevice& dev) {
  const bool half = half_storage(options.precision);
  std::vector<engine::NodeContext> analyzed;
  analyzed.reserve(view.size());
  for (const ir::Node& node : view) {
    analyzed.push_back(engine::NodeContext{g, node, {}, {}, {}});
    WS_RETURN_IF_ERROR(engine::analyze_node(analyzed.back()));
    const CudaOpDef* def = find_cuda_op(node.op_type);
    if (!def && node.op_type == "Einsum")
      return unsupported(node.describe(g.opset) + ": not lowered to MatMul form for the CUDA executor: " +
                         ir::einsum_lowering_refusal(g, node));
    if (!def) {
      std::string list;
      for (const auto& n : cuda_supported_ops()) list += (list.empty() ? "" : ", ") + n;
      return unsupported(node.describe(g.opset) + ": op type '" + node.op_type + "' has no CUDA kernel (CUDA executor supports: " + list + ")");
    }
    std::vector<TacticRecord> none;
    TimingCache no_cache;
    BindContext bc{g, node, analyzed.back(), options, options.precision,
                   half ? kernels::ElemType::kFloat16 : kernels::ElemType::kFloat32, half ? size_t{2} : size_t{4},
                   {}, {}, {}, {}, dev, no_cache, none, {}, false, {}};
    WS_RETURN_IF_ERROR(def->supports(bc));
  }
  return analyzed;
}

/// The tactic timer's device resources (handles, stream, events) on options.device.
Status open_build_device(const CudaBuildOptions& options, BuildDevice& dev) {
  WS_CUDA_RETURN_IF_ERROR(cudaSetDevice(options.device));
  WS_CUDNN_RETURN_IF_ERROR(cudnnCreate(&dev.cudnn));
  WS_CUBLAS_RETURN_IF_ERROR(cublasLtCreate(&dev.lt));
  WS_ASSIGN_OR_RETURN(dev.stream, cuda::Stream::create());
  WS_ASSIGN_OR_RETURN(dev.start, cuda::Event::create());
  WS_ASSIGN_OR_RETURN(dev.stop, cuda::Event::create());
  return Status::ok();
}

/// The timing cache of this build: this device's and libraries' identity + the graph hash; loaded from
/// options.timing_cache_path when set (a malformed file is ignored whole, with a warning on stderr).
Result<TimingCache> open_timing_cache(const ir::Graph& g, const CudaBuildOptions& options) {
  WS_ASSIGN_OR_RETURN(nlohmann::json identity, cache_identity(options.device, graph_hash(g), options));
  TimingCache cache(std::move(identity));
  if (!options.timing_cache_path.empty()) {
    cache.load(options.timing_cache_path);
    if (!cache.warning().empty()) std::fprintf(stderr, "warpstream: warning: %s\n", cache.warning().c_str());
  }
  return cache;
}

/// Uploads constants to the device once per (tensor, type) and owns them in the engine.
class ConstantUploader {
 public:
  ConstantUploader(EngineImpl& e, const ir::Graph& g, bool half) : e_(e), g_(g), half_(half) {}
  /// Host float data converted to the activation type (as_float32 false) or kept float32.
  Result<const void*> values(const std::vector<float>& v, bool as_float32) {
    const bool h = half_ && !as_float32;
    const size_t bytes = v.size() * (h ? 2 : 4);
    WS_ASSIGN_OR_RETURN(cuda::DeviceBuffer b, cuda::DeviceBuffer::allocate(std::max<size_t>(bytes, 4)));
    if (h) {
      std::vector<__half> hv(v.size());
      for (size_t i = 0; i < v.size(); ++i) hv[i] = __float2half_rn(v[i]);
      WS_RETURN_IF_ERROR(::ws::cuda::copy_to_device(b.get(), hv.data(), bytes));
    } else if (bytes) {
      WS_RETURN_IF_ERROR(::ws::cuda::copy_to_device(b.get(), v.data(), bytes));
    }
    e_.weight_bytes_ += bytes;
    const void* p = b.get();
    e_.weights_.push_back(std::move(b));
    return p;
  }
  /// Constant tensor `id` (float32 only).
  Result<const void*> tensor(ir::TensorId id, bool as_float32) {
    auto it = uploaded_.find({id, as_float32});
    if (it != uploaded_.end()) return it->second;
    const ir::Tensor& t = g_.tensor(id);
    if (t.dtype != ir::DType::kFloat32) return unsupported("constant " + ::ws::quoted(t.name) + " has element type " + ir::dtype_name(t.dtype) + " (float32 only)");
    std::vector<float> v(t.data_as<float>(), t.data_as<float>() + t.elements());
    WS_ASSIGN_OR_RETURN(const void* p, values(v, as_float32));
    uploaded_[{id, as_float32}] = p;
    return p;
  }
  /// Arbitrary host bytes (e.g. FP8 weight codes), engine-owned, 256-byte aligned (cudaMalloc).
  Result<const void*> bytes(const void* data, size_t n) {
    WS_ASSIGN_OR_RETURN(cuda::DeviceBuffer b, cuda::DeviceBuffer::allocate(std::max<size_t>(n, 16)));
    if (n) WS_RETURN_IF_ERROR(::ws::cuda::copy_to_device(b.get(), data, n));
    e_.weight_bytes_ += n;
    const void* p = b.get();
    e_.weights_.push_back(std::move(b));
    return p;
  }
  /// Constant tensor `id` as the executor stores it: float32 in the activation type, other types byte for byte.
  Result<const void*> stored(ir::TensorId id) {
    const ir::Tensor& t = g_.tensor(id);
    if (t.dtype == ir::DType::kFloat32) return tensor(id, false);
    if (auto it = raw_.find(id); it != raw_.end()) return it->second;
    const size_t bytes = t.data ? t.data->size() : 0;
    WS_ASSIGN_OR_RETURN(cuda::DeviceBuffer b, cuda::DeviceBuffer::allocate(std::max<size_t>(bytes, 8)));
    if (bytes) WS_RETURN_IF_ERROR(::ws::cuda::copy_to_device(b.get(), t.data->data(), bytes));
    e_.weight_bytes_ += bytes;
    const void* p = b.get();
    e_.weights_.push_back(std::move(b));
    raw_[id] = p;
    return p;
  }

 private:
  EngineImpl& e_;
  const ir::Graph& g_;
  const bool half_;
  std::map<std::pair<ir::TensorId, bool>, const void*> uploaded_;
  std::map<ir::TensorId, const void*> raw_;
};

/// Binds every node: its arena / constant operands, then its entry's bind() — which chooses the tactic
/// through the timing cache (timing candidates on `dev` on a miss) and returns the step's run function.
/// Returns the largest workspace a step needs (bytes) and the most split-K tile counters one needs (uint32).
Result<std::pair<size_t, size_t>> bind_steps(EngineImpl& e, const OptimizedGraph& og, const std::vector<engine::NodeContext>& analyzed,
                          const ArenaPlan& plan, const CudaBuildOptions& options, BuildDevice& dev, TimingCache& cache) {
  const ir::Graph& g = e.graph_;
  const bool half = half_storage(options.precision);
  e.input_uses_.assign(g.inputs.size(), {});
  e.input_is_output_.assign(g.inputs.size(), false);
  for (size_t gi = 0; gi < g.inputs.size(); ++gi)
    for (ir::TensorId o : g.outputs) e.input_is_output_[gi] = e.input_is_output_[gi] || o == g.inputs[gi];
  ConstantUploader up(e, g, half);
  auto upload = [&up](ir::TensorId id, bool as_float32) { return up.tensor(id, as_float32); };
  auto upload_values = [&up](const std::vector<float>& v, bool as_float32) { return up.values(v, as_float32); };
  auto upload_stored = [&up](ir::TensorId id) { return up.stored(id); };
  auto upload_bytes = [&up](const void* data, size_t n) { return up.bytes(data, n); };
  size_t workspace = 0, counters = 0;
  e.node_step_.assign(g.nodes.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& node = g.nodes[i];
    const CudaOpDef* def = find_cuda_op(node.op_type);
    BindContext bc{g, node, analyzed[i], options, options.precision,
                   half ? kernels::ElemType::kFloat16 : kernels::ElemType::kFloat32, half ? size_t{2} : size_t{4},
                   kernels::Activation::kNone, {}, upload, upload_values, dev, cache, e.tactics_, upload_stored, false, upload_bytes};
    bc.nhwc = i < og.nhwc_nodes.size() && og.nhwc_nodes[i];  // the plan of assign_layouts (build_stages.h)
    // A depthwise → pointwise candidate (build_stages.h depthwise_pointwise_pairs) whose depthwise conv is on our kernel.
    // The step bound `back` steps ago when it is node i − back on one of our own conv kernels (not itself fused).
    auto own_step_of = [&](size_t back) -> const Step* {
      if (i < back || e.steps_.size() < back) return nullptr;
      const Step& st = e.steps_[e.steps_.size() - back];
      return st.node == g.nodes[i - back].name && st.ws_conv ? &st : nullptr;
    };
    if (og.depthwise_pointwise.count(node.name)) bc.depthwise_producer = own_step_of(1);
    // An expand → depthwise candidate (build_stages.h expand_depthwise_pairs) whose expand conv is on our kernel.
    if (og.expand_depthwise.count(node.name)) bc.pointwise_producer = own_step_of(1);
    // ... and the expand conv before it, when the three are an MBConv block (build_stages.h mbconv_blocks).
    if (bc.depthwise_producer && og.mbconv.count(node.name)) bc.expand_producer = own_step_of(2);
    // A pooled head (build_stages.h pooled_heads) whose GlobalAveragePool is the step bound just before it (the copies
    // between them folded away).
    if (auto h = og.pooled_heads.find(i); h != og.pooled_heads.end() && !e.steps_.empty() && h->second.pool_node < i &&
        e.node_step_[h->second.pool_node] == static_cast<long>(e.steps_.size()) - 1 && e.steps_.back().op_type == "GlobalAveragePool" &&
        plan.offsets[static_cast<size_t>(h->second.input)] != ArenaPlan::kNotInArena) {
      const ir::Shape& xs = g.tensor(h->second.input).shape;
      bc.pool_producer = &e.steps_.back();
      bc.pooled_input = {plan.offsets[static_cast<size_t>(h->second.input)], h->second.nhwc, xs[1], xs[2] * xs[3]};
    }
    if (auto f = og.fused_activation.find(node.name); f != og.fused_activation.end())
      if (!activation_of(g, f->second, bc.fused_act, bc.fused_params))
        return internal_error(node.describe(g.opset) + ": fused activation " + ::ws::quoted(f->second.name) + " has no epilogue form");
    // The fused stem (build_stages.h stem_pools): the Conv binds a placeholder, the MaxPool right after it absorbs it.
    // The layout plan depends on the fusion, so a pool that cannot absorb its Conv is an internal error.
    const bool stem_conv = node.op_type == "Conv" && node.outputs.size() == 1 && og.stem_pools.count(node.outputs[0]) != 0;
    if (node.op_type == "MaxPool" && !node.inputs.empty() && og.stem_pools.count(node.inputs[0])) {
      const ir::Node* conv = i > 0 ? &g.nodes[i - 1] : nullptr;
      if (!conv || conv->outputs.empty() || conv->outputs[0] != node.inputs[0] || e.steps_.empty() ||
          e.node_step_[i - 1] != static_cast<long>(e.steps_.size()) - 1)
        return internal_error(node.describe(g.opset) + ": the fused stem's Conv is not the step bound just before its MaxPool");
      bc.stem_producer = &e.steps_.back();
      bc.stem_conv = conv;
      if (auto f = og.fused_activation.find(conv->name); f != og.fused_activation.end())
        if (!activation_of(g, f->second, bc.stem_act, bc.stem_params))
          return internal_error(node.describe(g.opset) + ": the stem's activation " + ::ws::quoted(f->second.name) + " has no epilogue form");
    }
    Step s;
    s.node = node.name;
    s.op_type = node.op_type;
    s.output_ids = node.outputs;
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      Operand o;
      const ir::TensorId id = node.inputs[k];
      if (id != ir::kNoTensor) {
        const ir::Tensor& t = g.tensor(id);
        if (!t.is_constant()) {
          o.kind = Operand::Kind::kArena;
          o.offset = plan.offsets[static_cast<size_t>(id)];
          for (size_t gi = 0; gi < g.inputs.size(); ++gi)
            if (g.inputs[gi] == id) e.input_uses_[gi].emplace_back(e.steps_.size(), k);
        } else if (def->data_inputs < 0 || static_cast<int>(k) < def->data_inputs) {
          o.kind = Operand::Kind::kConst;
          WS_ASSIGN_OR_RETURN(o.ptr, up.tensor(id, false));
        }
      }
      s.inputs.push_back(o);
    }
    for (ir::TensorId id : node.outputs) {
      Operand o;
      if (id != ir::kNoTensor) { o.kind = Operand::Kind::kArena; o.offset = plan.offsets[static_cast<size_t>(id)]; }
      s.outputs.push_back(o);
    }
    const size_t records_before = e.tactics_.size();
    WS_RETURN_IF_ERROR(node.find(kReformatAttr) ? bind_reformat(bc, s)
                       : stem_conv           ? bind_stem_conv(bc, s)
                       : bc.stem_producer    ? bind_stem_pool(bc, s)
                                             : def->bind(bc, s));
    if (s.folded) {  // a copy the arena folded away (build_stages.h copy_aliases): no step, node_step_ stays -1
      if (e.tactics_.size() != records_before || s.absorbs_previous > 0)
        return internal_error(node.describe(g.opset) + ": a folded copy recorded a tactic or absorbed steps");
      for (auto& uses : e.input_uses_)  // graph-input operands recorded for the step it would have been (e.g. a Dropout ratio)
        std::erase_if(uses, [&](const std::pair<size_t, size_t>& u) { return u.first == e.steps_.size(); });
      e.folded_offsets_.push_back(s.outputs[0].offset);
      continue;
    }
    if (e.tactics_.size() > records_before) s.tactic_record = static_cast<long>(e.tactics_.size() - 1);
    if (s.absorbs_previous > 0) {  // the fused step replaces the N steps bound just before it (depthwise or expand; expand + depthwise)
      const size_t n = static_cast<size_t>(s.absorbs_previous);
      if ((!bc.depthwise_producer && !bc.pointwise_producer && !bc.pool_producer && !bc.stem_producer) || (n == 2 && !bc.expand_producer) ||
          n > 2 || e.steps_.size() < n || ((bc.pool_producer || bc.stem_producer) && n != 1))
        return internal_error(node.describe(g.opset) + ": absorbs steps that are not its fused producers");
      const size_t self = e.steps_.size(), first = self - n;
      for (size_t k = 0; k < n; ++k) {
        e.kernel_count_ -= static_cast<size_t>(e.steps_.back().kernels);
        e.steps_.pop_back();
      }
      for (long& st : e.node_step_)  // the absorbed nodes' steps are gone
        if (st >= static_cast<long>(first)) st = -1;
      // graph-input operands: the fused step lands at `first`; its input 0 is the first absorbed step's input 0
      // (whose use, if a graph input, is already recorded at `first`); the absorbed steps' other operands are
      // constants or tensors now internal to the fused kernel.
      for (auto& uses : e.input_uses_) {
        std::vector<std::pair<size_t, size_t>> kept;
        for (auto [step, k] : uses) {
          if (step == self) step = first;
          else if (step > first && step < self) continue;
          kept.emplace_back(step, k);
        }
        uses = std::move(kept);
      }
    }
    workspace = std::max(workspace, s.workspace_bytes);
    counters = std::max(counters, s.tile_counters);
    e.kernel_count_ += static_cast<size_t>(s.kernels);
    e.node_step_[i] = static_cast<long>(e.steps_.size());
    e.steps_.push_back(std::move(s));
  }
  return std::make_pair(workspace, counters);
}

/// The step that writes graph output `id` when it offers Step::run_float32_out, writes that output as its only
/// output and no step reads it (so the fp16 slot may stay unwritten); nullptr otherwise, or when every tensor must be
/// kept (debug_keep_all_tensors: tensor() reads the fp16 slot).
Step* fold_candidate(EngineImpl& e, ir::TensorId id, bool keep_all_tensors) {
  if (keep_all_tensors) return nullptr;
  const ir::Graph& g = e.graph_;
  for (const ir::Node& n : g.nodes)
    for (ir::TensorId in : n.inputs)
      if (in == id) return nullptr;
  if (std::count(g.outputs.begin(), g.outputs.end(), id) != 1) return nullptr;  // listed twice: two ports, two slots
  for (Step& s : e.steps_)
    if (s.output_ids.size() == 1 && s.output_ids[0] == id && s.outputs.size() == 1) return s.run_float32_out ? &s : nullptr;
  return nullptr;
}

/// The input ports, in graph-input order: in the activation type (fp16 in fp16 / fp8 mode), in the arena slot of the
/// graph input. A kHWC8 port (OptimizedGraph::hwc8_ports) binds the padded copy (graph.inputs[i] after port_hwc8) and
/// describes it by the model's input: its name and logical [N, C, H, W] shape, format kHWC8, the copy's bytes; it is
/// listed in tactics() as op "Port".
void bind_inputs(EngineImpl& e, const OptimizedGraph& og, const ArenaPlan& plan) {
  const ir::Graph& g = e.graph_;
  const bool half = half_storage(e.precision_);
  const size_t elem = half ? 2 : 4;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const ir::TensorId id = g.inputs[i];
    const ir::Tensor& t = g.tensor(id);
    TensorDesc d{t.name, half ? ir::DType::kFloat16 : ir::DType::kFloat32, t.shape, tensor_bytes(t, elem)};
    if (auto p = og.hwc8_ports.find(i); p != og.hwc8_ports.end()) {
      const ir::Tensor& model = g.tensor(p->second);
      d.name = model.name;
      d.shape = model.shape;
      d.format = TensorFormat::kHWC8;
      const ir::Shape stored = {t.shape[0], t.shape[2], t.shape[3], t.shape[1]};
      e.tactics_.push_back({"input_port(" + model.name + ")", "Port",
                            "input " + ::ws::quoted(model.name) + " " + ir::shape_string(model.shape) + " taken in kHWC8: stored " +
                                ir::shape_string(stored) + ", channels " + std::to_string(model.shape[1]) + " zero-padded to " +
                                std::to_string(t.shape[1]) + " by the producer (its reformat removed), " + precision_name(e.precision_),
                            0.0f, false});
    }
    e.inputs_.push_back(std::move(d));
    e.input_offsets_.push_back(plan.offsets[static_cast<size_t>(id)]);
  }
}

/// The output ports. fp16: each float32 output gets a float32 copy written by a cast step
/// placed after `arena_end` (int / bool outputs are read where they are; a constant output gets a slot there and a
/// copy step). Returns the new arena end.
Result<size_t> bind_ports(EngineImpl& e, const ArenaPlan& plan, size_t arena_end, bool keep_all_tensors) {
  const ir::Graph& g = e.graph_;
  const bool half = half_storage(e.precision_);
  for (ir::TensorId id : g.outputs) {
    const ir::Tensor& t = g.tensor(id);
    if (t.is_constant()) {
      // An output folded to a constant at build (e.g. a comparison of constant operands): its bytes are uploaded
      // with the weights (float32 stays float32, also in fp16 mode) and a copy step writes them into the output's
      // own arena slot on every enqueue (the caller may overwrite an output between enqueues).
      const size_t bytes = t.data->size();
      WS_ASSIGN_OR_RETURN(cuda::DeviceBuffer b, cuda::DeviceBuffer::allocate(std::max<size_t>(bytes, 8)));
      if (bytes) WS_RETURN_IF_ERROR(::ws::cuda::copy_to_device(b.get(), t.data->data(), bytes));
      e.weight_bytes_ += bytes;
      const void* src = b.get();
      e.weights_.push_back(std::move(b));
      e.outputs_.push_back(TensorDesc{t.name, t.dtype, t.shape, bytes});
      e.output_offsets_.push_back(arena_end);
      Step s;
      s.node = t.name + "_constant";
      s.op_type = "Identity";
      s.inputs.push_back({Operand::Kind::kConst, 0, src});
      s.outputs.push_back({Operand::Kind::kArena, arena_end, nullptr});
      s.run = [bytes](const StepIo& io, const ContextLibs&, cudaStream_t st) {
        if (bytes) WS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(io.out[0], io.in[0], bytes, cudaMemcpyDeviceToDevice, st));
        return Status::ok();
      };
      arena_end += align_up(std::max<size_t>(bytes, 1));
      e.kernel_count_ += 1;
      e.steps_.push_back(std::move(s));
      continue;
    }
    if (t.dtype != ir::DType::kFloat32) {  // int / bool outputs (cuda_output_dtype): the arena slot as it is
      e.outputs_.push_back(TensorDesc{t.name, t.dtype, t.shape, tensor_bytes(t, ir::dtype_size(t.dtype))});
      e.output_offsets_.push_back(plan.offsets[static_cast<size_t>(id)]);
      continue;
    }
    e.outputs_.push_back(TensorDesc{t.name, ir::DType::kFloat32, t.shape, tensor_bytes(t, 4)});
    if (!half) {
      e.output_offsets_.push_back(plan.offsets[static_cast<size_t>(id)]);
      continue;
    }
    // The producing step can write float32 itself (Step::run_float32_out) and no other step reads this output: it
    // writes the port's slot directly, no cast step.
    if (Step* producer = fold_candidate(e, id, keep_all_tensors)) {
      producer->outputs[0] = {Operand::Kind::kArena, arena_end, nullptr};
      producer->run = std::move(producer->run_float32_out);
      producer->run_float32_out = nullptr;
      e.output_offsets_.push_back(arena_end);
      arena_end += align_up(tensor_bytes(t, 4));
      for (auto r = e.tactics_.rbegin(); r != e.tactics_.rend(); ++r)  // the last record of its node name (a report note only)
        if (r->node == producer->node) {
          r->choice += "; writes the float32 output " + ::ws::quoted(t.name) + " itself (no cast step)";
          break;
        }
      continue;
    }
    Step s;
    s.node = t.name + "_cast_fp32";
    s.op_type = "Cast";
    s.inputs.push_back({Operand::Kind::kArena, plan.offsets[static_cast<size_t>(id)], nullptr});
    s.outputs.push_back({Operand::Kind::kArena, arena_end, nullptr});
    e.output_offsets_.push_back(arena_end);
    const int64_t count = t.elements();
    s.run = [count](const StepIo& io, const ContextLibs&, cudaStream_t st) { return kernels::cast_f16_to_f32(io.in[0], static_cast<float*>(io.out[0]), count, st); };
    arena_end += align_up(tensor_bytes(t, 4));
    e.kernel_count_ += 1;
    e.steps_.push_back(std::move(s));
  }
  return arena_end;
}

/// The auxiliary-stream branches (build_stages.h aux_branches) on the bound steps: a candidate runs on the auxiliary
/// stream when its node and its join node are still steps of their own (not absorbed by a fusion; EngineImpl::node_step_),
/// the join's step follows it by two or more steps, and it needs no split-K tile counters (shared by all steps) and no
/// per-context preparation (a cuDNN graph conv's plan is built with the main handle). Sets Step::aux_branch / aux_joins,
/// notes the choice in the step's tactic record, and returns the auxiliary workspace's size (the largest a branched step
/// needs).
size_t assign_aux_branches(EngineImpl& e, const std::vector<AuxBranch>& candidates) {
  size_t workspace = 0;
  auto& steps = e.steps_;
  for (const AuxBranch& b : candidates) {
    if (b.node >= e.node_step_.size() || b.join >= e.node_step_.size()) continue;
    const long s = e.node_step_[b.node], j = e.node_step_[b.join];
    if (s < 0 || j < s + 2 || static_cast<size_t>(j) >= steps.size()) continue;
    Step& st = steps[static_cast<size_t>(s)];
    if (st.tile_counters > 0 || st.prepare || st.absorbs_previous > 0 || st.aux_branch >= 0) continue;
    st.aux_branch = e.aux_branches_++;
    steps[static_cast<size_t>(j)].aux_joins.push_back(st.aux_branch);
    workspace = std::max(workspace, align_up(st.workspace_bytes));
    if (st.tactic_record >= 0 && static_cast<size_t>(st.tactic_record) < e.tactics_.size())
      e.tactics_[static_cast<size_t>(st.tactic_record)].choice += "; on the auxiliary stream, joined before " + ::ws::quoted(b.join_name);
  }
  return workspace;
}

}  // namespace
}  // namespace cudaexec

Status CudaEngine::check_support(ir::Graph graph, const CudaBuildOptions& options, LayoutPlan* plan) {
  using namespace cudaexec;
  WS_ASSIGN_OR_RETURN(OptimizedGraph og, optimize_for_cuda(std::move(graph), options));
  BuildDevice dev;  // never opened: supports() does no device work
  const std::vector<ir::Node> view = onnx_view(og.graph, og.residual_convs);
  WS_RETURN_IF_ERROR(cudaexec::check_support(og.graph, view, options, dev).status());
  if (plan) {
    *plan = LayoutPlan{};
    plan->layout = og.layout;
    plan->reformats = static_cast<size_t>(og.reformats);
    plan->hwc8_pads = static_cast<size_t>(og.hwc8_pads);
    plan->hwc8_ports = og.hwc8_ports.size();
    for (size_t i = 0; i < og.graph.nodes.size(); ++i) {
      const bool nhwc = i < og.nhwc_nodes.size() && og.nhwc_nodes[i];
      plan->nhwc_nodes += nhwc;
      if (og.graph.nodes[i].op_type == "Conv") {
        ++plan->convs;
        plan->nhwc_convs += nhwc;
      }
    }
  }
  return Status::ok();
}

// The stages, in order: optimize (build_stages.h) -> check support (no device work) -> plan the arena
// (build_stages.h) -> input ports -> choose tactics through the TimingCache while binding each node -> output ports ->
// save the cache.
Result<std::unique_ptr<CudaEngine>> CudaEngine::build(ir::Graph graph, const CudaBuildOptions& requested) {
  using namespace cudaexec;
  CudaBuildOptions options = requested;
  if (options.fuse_stem_pool) {  // an mma.sync f16 kernel: unfused where the device or this build's code for it cannot run it
    if (cudaSetDevice(options.device) == cudaSuccess) {
      const Result<bool> runnable = kernels::stem_pool_runnable();
      if (!runnable.is_ok() || !*runnable) options.fuse_stem_pool = false;
    }
    (void)cudaGetLastError();  // no device here: the build's device stages report it
  }
  WS_ASSIGN_OR_RETURN(OptimizedGraph og, optimize_for_cuda(std::move(graph), options));
  auto e = std::make_unique<EngineImpl>();
  e->precision_ = options.precision;
  e->device_ = options.device;
  e->graph_ = std::move(og.graph);
  og.graph = ir::Graph{};  // moved into the engine; og keeps the fusion records
  const ir::Graph& g = e->graph_;
  const bool half = half_storage(options.precision);

  BuildDevice dev;  // handles created after the support checks
  const std::vector<ir::Node> view = onnx_view(g, og.residual_convs);
  WS_ASSIGN_OR_RETURN(std::vector<engine::NodeContext> analyzed, cudaexec::check_support(g, view, options, dev));

  std::set<std::string> reads_previous_input = og.depthwise_pointwise;  // fused pairs read node i − 1's input
  reads_previous_input.insert(og.expand_depthwise.begin(), og.expand_depthwise.end());
  for (const ir::Node& n : g.nodes)  // a fused stem's pool reads its Conv's input (the graph input, live anyway: made explicit)
    if (n.op_type == "MaxPool" && !n.inputs.empty() && og.stem_pools.count(n.inputs[0])) reads_previous_input.insert(n.name);
  const ArenaPlan plan =
      plan_cuda_arena(g, half, options.debug_keep_all_tensors, reads_previous_input, og.mbconv, og.aux_branches, og.pooled_heads);
  e->tensor_offsets_ = plan.offsets;

  if (options.tactic_timing_iterations < 1 || options.tactic_timing_iterations > 1000)
    return invalid_argument("CudaBuildOptions::tactic_timing_iterations = " + std::to_string(options.tactic_timing_iterations) +
                            " (1..1000)");
  dev.timing_reps = options.tactic_timing_iterations;
  dev.timing_warmups = std::min(2, options.tactic_timing_iterations);
  WS_RETURN_IF_ERROR(open_build_device(options, dev));
  if (options.precision == Precision::kFloat8) {  // FP8 tensor cores: mma.sync e4m3 needs sm_89 (Ada) or sm_90 (Hopper)
    cudaDeviceProp prop{};
    WS_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, options.device));
    if (prop.major * 10 + prop.minor < 89)
      return unsupported("precision fp8 needs FP8 tensor cores (compute capability 8.9+: Ada or Hopper); device " + std::to_string(options.device) +
                         " '" + prop.name + "' is sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ": use --precision fp16");
    WS_ASSIGN_OR_RETURN(const int arch, kernels::conv2d_pointwise_fp8_arch());
    if (arch < 89)
      return unsupported("precision fp8: this build has no FP8 code for device " + std::to_string(options.device) + " '" + prop.name + "' (sm_" +
                         std::to_string(prop.major) + std::to_string(prop.minor) + " runs the kernels' compute_" + std::to_string(arch) +
                         " code); rebuild with -DCMAKE_CUDA_ARCHITECTURES including " + std::to_string(prop.major) + std::to_string(prop.minor));
  }
  WS_ASSIGN_OR_RETURN(TimingCache cache, open_timing_cache(g, options));
  bind_inputs(*e, og, plan);
  WS_ASSIGN_OR_RETURN(const auto bound, bind_steps(*e, og, analyzed, plan, options, dev, cache));
  const size_t workspace = bound.first;
  if (options.precision == Precision::kFloat8 && options.fp8_obey_precision) {  // as TensorRT's obey: a constraint no conv meets fails
    size_t fp8_convs = 0;
    for (const TacticRecord& t : e->tactics_) fp8_convs += t.choice.rfind("ws pointwise FP8", 0) == 0;
    if (fp8_convs == 0)
      return invalid_argument(std::string("--fp8-obey: no Conv can run FP8 (the FP8 kernels take NCHW pointwise convs with a calibrated input and "
                                          "tactic source warpstream; this build's layout is ") + layout_name(og.layout) +
                              (og.layout == Layout::kNhwc ? ": use --layout nchw)" : "; check the calibration's tensor names and --tactic-sources)"));
  }
  WS_ASSIGN_OR_RETURN(const size_t arena_end, bind_ports(*e, plan, align_up(plan.bytes), options.debug_keep_all_tensors));
  e->workspace_offset_ = arena_end;
  // Auxiliary-stream branches: their steps use their own workspace range, so the shared one covers the others only.
  e->aux_workspace_bytes_ = assign_aux_branches(*e, og.aux_branches);
  size_t main_workspace = 0;
  for (const Step& s : e->steps_)
    if (s.aux_branch < 0) main_workspace = std::max(main_workspace, s.workspace_bytes);
  e->workspace_bytes_ = e->aux_branches_ > 0 ? main_workspace : workspace;
  e->counters_offset_ = align_up(arena_end + e->workspace_bytes_);
  e->counters_bytes_ = align_up(bound.second * sizeof(unsigned));
  e->aux_workspace_offset_ = e->counters_offset_ + e->counters_bytes_;
  e->arena_bytes_ = e->aux_workspace_offset_ + e->aux_workspace_bytes_;

  // The timing cache is rewritten when it did not match or gained entries (temp file + rename, locked).
  if (!options.timing_cache_path.empty() && cache.needs_save()) WS_RETURN_IF_ERROR(cache.save(options.timing_cache_path));
  WS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(dev.stream.get()));
  return std::unique_ptr<CudaEngine>(std::move(e));
}

}  // namespace ws
