// Lanes: N preallocated (slot, context, stream, events, graph) sets over one CudaEngine; see
// include/warpstream/lanes.h. Build does every allocation, the warm enqueue and the capture; the
// per-frame calls (try_acquire, submit, wait, release) allocate nothing and never block except wait (with armed_launch,
// acquire and an unsubmitted release enqueue work: driver calls, which take the driver's locks).
// Tests: tests/gpu/lanes_*_test.cpp (ws_gpu_tests --gtest_filter='Lane*:Pipeline*').
#include "warpstream/lanes.h"

#include <cuda.h>  // types and constants only (CUstream, CU_STREAM_WAIT_VALUE_EQ): the driver call comes from its entry point
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <string>
#include <thread>
#include <utility>

#include "core/escape.h"
#include "cuda/cuda_util.h"
#include "cuda/nvtx.h"
#include "kernels/preprocess/preprocess_rgb8.h"
#include "kernels/topk/topk.h"

namespace ws {

static_assert(sizeof(TopKEntry) == sizeof(kernels::TopKPair), "TopKEntry and TopKPair must share a layout");
static_assert(offsetof(TopKEntry, score) == offsetof(kernels::TopKPair, score));
static_assert(offsetof(TopKEntry, index) == offsetof(kernels::TopKPair, index));

const char* lane_input_name(LaneInput mode) {
  switch (mode) {
    case LaneInput::kMapped: return "mapped";
    case LaneInput::kCopy: return "copy";
    case LaneInput::kDevice: return "device";
  }
  return "?";
}

Result<LaneInput> parse_lane_input(std::string_view name) {
  if (name == "mapped") return LaneInput::kMapped;
  if (name == "copy") return LaneInput::kCopy;
  if (name == "device") return LaneInput::kDevice;
  return invalid_argument("input mode '" + std::string(name) + "' is not one of mapped, copy, device");
}

const char* lane_state_name(LaneState s) {
  switch (s) {
    case LaneState::kFree: return "free";
    case LaneState::kAcquired: return "acquired";
    case LaneState::kSubmitted: return "submitted";
    case LaneState::kCompleted: return "completed";
  }
  return "?";
}

namespace {

/// Owns an instantiated graph.
class GraphExec {
 public:
  GraphExec() = default;
  ~GraphExec() { reset(); }
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;
  cudaGraphExec_t get() const { return exec_; }
  cudaGraphExec_t* out() { reset(); return &exec_; }
  void reset() {
    if (exec_) cudaGraphExecDestroy(exec_);
    exec_ = nullptr;
  }

 private:
  cudaGraphExec_t exec_ = nullptr;
};


}  // namespace

struct Pipeline::LaneSlot {
  uint32_t index = 0;
  std::atomic<uint32_t> state{static_cast<uint32_t>(LaneState::kFree)};
  std::atomic<uint32_t> generation{0};
  std::unique_ptr<ExecutionContext> context;
  cuda::Stream stream;
  cuda::Event start, end;
  cuda::PinnedBuffer input_host;   // mapped (kMapped) or plain pinned (kCopy); empty for kDevice
  cuda::DeviceBuffer input_staging;  // kCopy: the memcpy destination the preprocess reads
  const uint8_t* source = nullptr;   // device-visible address the preprocess reads
  cuda::PinnedBuffer result;       // mapped, K pairs
  kernels::TopKPair* result_device = nullptr;
  kernels::PreprocessNormalize normalize;
  RowSignal wavefront;  // the input wavefront's signal (PipelineOptions::input_wavefront), empty when off
  // armed_launch: the doorbell word (mapped pinned), its device alias, the value the armed wait expects, and whether
  // the lane's frame is enqueued behind it (set by arm, cleared by the submit that rings it)
  cuda::PinnedBuffer doorbell;
  CUdeviceptr doorbell_device = 0;
  uint32_t doorbell_seq = 0;
  bool armed = false;
  GraphExec graph;
  int64_t submitted_w = 0, submitted_h = 0;

  LaneState load_state() const { return static_cast<LaneState>(state.load(std::memory_order_acquire)); }
  void store_state(LaneState s) { state.store(static_cast<uint32_t>(s), std::memory_order_release); }
};

namespace {
using StreamWaitValue32Fn = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

/// Rings a lane's doorbell with `value`: a full fence (the producer's stores into the input slot are globally visible
/// first), then one store the GPU's front end reads over the bus.
void ring_doorbell(cuda::PinnedBuffer& doorbell, uint32_t value) {
  std::atomic_thread_fence(std::memory_order_seq_cst);  // x86-64: orders the slot's stores before the doorbell's
#if defined(__aarch64__)
  asm volatile("dmb oshst" ::: "memory");  // Arm: the fence above is inner-shareable; the GPU is outer-shareable
#endif
  std::atomic_ref<uint32_t>(*static_cast<uint32_t*>(doorbell.get())).store(value, std::memory_order_seq_cst);
}
}  // namespace

Pipeline::~Pipeline() {
  // Nothing may be in flight when the buffers go away: a Submitted lane's stream is drained first, and an armed
  // lane's stream waits on its doorbell until rung (its graph then runs once more on the slot's bytes).
  for (auto& l : lanes_) {
    if (l && l->armed) ring_doorbell(l->doorbell, l->doorbell_seq);
    if (l && l->stream.get()) cudaStreamSynchronize(l->stream.get());
  }
  lanes_.clear();  // graphs, contexts, buffers, events, streams (members in reverse order)
}

size_t Pipeline::lane_count() const { return lanes_.size(); }

uint64_t Pipeline::armed_failures() const { return armed_failures_.load(std::memory_order_relaxed); }

Status Pipeline::arm(LaneSlot& l) {
  cudaStream_t s = l.stream.get();
  // A runtime call first: on a thread that has made none yet it makes the primary context current, which the driver
  // call below needs (a producer thread's first CUDA call may be this acquire).
  unsigned int stream_flags = 0;
  WS_CUDA_RETURN_IF_ERROR(cudaStreamGetFlags(s, &stream_flags));
  const uint32_t seq = l.doorbell_seq + 1;  // wraps after 2^32 frames: the wait is for equality, so that is fine
  const CUresult r = reinterpret_cast<StreamWaitValue32Fn>(wait_value32_)(reinterpret_cast<CUstream>(s), l.doorbell_device, seq,
                                                                         CU_STREAM_WAIT_VALUE_EQ);
  if (r != CUDA_SUCCESS) {
    return unsupported("armed launch: cuStreamWaitValue32 on lane " + std::to_string(l.index) + "'s doorbell (mapped host "
                       "memory) failed (CUresult " + std::to_string(static_cast<int>(r)) + ")");
  }
  l.doorbell_seq = seq;
  cudaError_t e = cudaEventRecord(l.start.get(), s);
  if (e == cudaSuccess) e = cudaGraphLaunch(l.graph.get(), s);
  if (e == cudaSuccess) e = cudaEventRecord(l.end.get(), s);
  if (e != cudaSuccess) {
    // The stream already waits on the doorbell: ring it, so that what did get enqueued runs and nothing hangs; the
    // lane stays unarmed and submit() launches as usual.
    ring_doorbell(l.doorbell, seq);
    (void)cudaGetLastError();  // the error is returned here, not left for the next caller's check
    return cuda::cuda_status(e, "armed launch (event record / cudaGraphLaunch behind the doorbell)", __FILE__, __LINE__);
  }
  l.armed = true;
  return Status::ok();
}

size_t Pipeline::input_slot_bytes() const {
  return static_cast<size_t>(options_.src_width) * static_cast<size_t>(options_.src_height) * 3;
}

LaneState Pipeline::state(size_t index) const {
  return index < lanes_.size() ? lanes_[index]->load_state() : LaneState::kFree;
}

Status Pipeline::enqueue_frame(LaneSlot& l, int64_t w, int64_t h) {
  cudaStream_t s = l.stream.get();
  if (l.wavefront && 3 * w > kernels::kPreprocessStagedMaxRowBytes) {  // before any kernel is enqueued
    return invalid_argument("submit: frame " + std::to_string(w) + "x" + std::to_string(h) + ": with the input wavefront the preprocess "
                            "stages whole source rows, up to " + std::to_string(kernels::kPreprocessStagedMaxRowBytes / 3) +
                            " pixels wide; build the pipeline without input_wavefront for wider frames");
  }
  if (options_.input == LaneInput::kCopy) {
    WS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(l.input_staging.get(), l.input_host.get(), static_cast<size_t>(w * h * 3),
                                            cudaMemcpyHostToDevice, s));
  }
  // NVTX ranges (host enqueue time of each stage; in graph mode this runs only under capture).
  {
    cuda::NvtxRange r("preprocess");
    // a mapped frame: the row-staged kernel where it pays (the widest PCIe reads); a device copy: the direct kernel
    const kernels::PreprocessPath path = options_.input == LaneInput::kCopy ? kernels::PreprocessPath::kDirect : kernels::PreprocessPath::kAuto;
    if (input_hwc8_) {  // the engine takes its input in kHWC8 (CudaBuildOptions::hwc8_input_port): fp16 [1, H, W, 8]
      WS_RETURN_IF_ERROR(kernels::preprocess_rgb8_to_nhwc8(l.source, h, w, 3 * w, l.context->input(0), DType::kFloat16, in_h_,
                                                           in_w_, l.normalize, s, path));
    } else {  // with the input wavefront, rows published as written: the network's first conv starts on them at once
      WS_RETURN_IF_ERROR(kernels::preprocess_rgb8_to_nchw(
          l.source, h, w, 3 * w, l.context->input(0),
          input_fp16_ ? DType::kFloat16 : DType::kFloat32, in_h_, in_w_, l.normalize, s, path, l.wavefront));
    }
  }
  {
    cuda::NvtxRange r("network");
    if (Status net = l.context->enqueue(s); !net.is_ok()) {
      // With the input wavefront the preprocess has published this frame's rows: the frame must still be closed (the
      // epoch bumped), or the next frame's stem would take these rows for its own.
      if (l.wavefront)
        (void)kernels::topk(static_cast<const float*>(l.context->output(0)), classes_, options_.k, l.result_device, s, l.wavefront);
      return net;
    }
  }
  cuda::NvtxRange r("topk");
  WS_RETURN_IF_ERROR(kernels::topk(static_cast<const float*>(l.context->output(0)), classes_, options_.k,
                                   l.result_device, s, l.wavefront));  // the frame's last kernel: bumps the wavefront's epoch
  return Status::ok();
}

Result<std::unique_ptr<Pipeline>> Pipeline::build(std::shared_ptr<CudaEngine> engine, const PipelineOptions& options) {
  if (!engine) return invalid_argument("Pipeline::build: no engine");
  if (options.lanes < 1 || options.lanes > 64) {
    return invalid_argument("lanes = " + std::to_string(options.lanes) + " is out of range 1..64");
  }
  if (options.src_width < 1 || options.src_height < 1 || options.src_width > kernels::kPreprocessMaxSrcExtent ||
      options.src_height > kernels::kPreprocessMaxSrcExtent ||
      options.src_width * options.src_height > kMaxImagePixels) {
    return invalid_argument("source size " + std::to_string(options.src_width) + "x" + std::to_string(options.src_height) +
                            " is out of range (each side 1.." + std::to_string(kernels::kPreprocessMaxSrcExtent) +
                            ", at most " + std::to_string(kMaxImagePixels) + " pixels)");
  }
  if (options.input_wavefront_steps < 1 || options.input_wavefront_steps > 2) {
    return invalid_argument("input_wavefront_steps = " + std::to_string(options.input_wavefront_steps) + " is out of range 1..2");
  }
  if (options.armed_launch && !options.use_cuda_graph) {
    return invalid_argument("armed_launch needs use_cuda_graph (the frame enqueued at acquire is the lane's captured graph)");
  }
  if (options.armed_launch && options.lanes > 4) {
    return invalid_argument("armed_launch with " + std::to_string(options.lanes) + " lanes: at most 4 (each armed lane's stream "
                            "holds a hardware queue while it waits for submit; CUDA_DEVICE_MAX_CONNECTIONS is 8 by default)");
  }
  if (engine->num_inputs() != 1 || engine->num_outputs() < 1) {
    return unsupported("a lane needs an engine with one input and at least one output; this one has " +
                       std::to_string(engine->num_inputs()) + " inputs, " + std::to_string(engine->num_outputs()) +
                       " outputs");
  }
  const TensorDesc& in = engine->input_desc(0);
  const TensorDesc& out = engine->output_desc(0);
  if ((in.dtype != ir::DType::kFloat32 && in.dtype != ir::DType::kFloat16) || in.shape.size() != 4 || in.shape[0] != 1 ||
      in.shape[1] != 3) {
    return unsupported("engine input " + ::ws::quoted(in.name) + " is " + ir::dtype_name(in.dtype) + " " + ir::shape_string(in.shape) +
                       "; a lane needs float32/float16 [1, 3, H, W]");
  }
  if (in.format == TensorFormat::kHWC8) {  // the NHWC8 preprocess writes fp16 [1, H, W, 8]
    const size_t want = static_cast<size_t>(in.shape[2] * in.shape[3] * kHwc8Channels) * 2;
    if (in.dtype != ir::DType::kFloat16 || in.bytes != want) {
      return unsupported("engine input " + ::ws::quoted(in.name) + " is " + ir::dtype_name(in.dtype) + " " + ir::shape_string(in.shape) +
                         " in kHWC8 (" + std::to_string(in.bytes) + " bytes); a lane writes kHWC8 in float16 only (" +
                         std::to_string(want) + " bytes): build the engine in fp16, or without CudaBuildOptions::hwc8_input_port");
    }
  }
  const int64_t classes = ir::shape_elements(out.shape);
  if (out.dtype != ir::DType::kFloat32 || out.shape.empty() || out.shape[0] != 1 || classes < 1) {
    return unsupported("engine output " + ::ws::quoted(out.name) + " is " + ir::dtype_name(out.dtype) + " " +
                       ir::shape_string(out.shape) + "; a lane needs float32 [1, classes]");
  }
  if (options.k < 1 || options.k > kernels::kTopKMax || options.k > classes) {
    return invalid_argument("top-k " + std::to_string(options.k) + " is out of range 1.." +
                            std::to_string(std::min<int64_t>(kernels::kTopKMax, classes)) + " for a model with " +
                            std::to_string(classes) + " classes");
  }
  if (options.input == LaneInput::kDevice) {
    if (options.device_inputs.size() != static_cast<size_t>(options.lanes)) {
      return invalid_argument("input mode device needs one registered device pointer per lane: " +
                              std::to_string(options.device_inputs.size()) + " for " + std::to_string(options.lanes) +
                              " lanes");
    }
    for (size_t i = 0; i < options.device_inputs.size(); ++i) {
      if (!options.device_inputs[i]) return invalid_argument("device input of lane " + std::to_string(i) + " is null");
    }
  } else if (!options.device_inputs.empty()) {
    return invalid_argument(std::string("device_inputs are only used with input mode device, not ") +
                            lane_input_name(options.input));
  }

  std::unique_ptr<Pipeline> p(new Pipeline());
  p->engine_ = std::move(engine);
  p->options_ = options;
  p->classes_ = classes;
  p->in_h_ = in.shape[2];
  p->in_w_ = in.shape[3];
  p->input_fp16_ = in.dtype == ir::DType::kFloat16;
  p->input_hwc8_ = in.format == TensorFormat::kHWC8;
  const size_t slot_bytes = p->input_slot_bytes();
  const std::string where = " (building lane ";
  if (options.armed_launch) {  // the driver's stream wait, without linking libcuda (the runtime hands out its entry points)
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
    const cudaError_t e = cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", &p->wait_value32_, 12000, cudaEnableDefault, &found);
#else  // the unversioned query (removed in CUDA 13) returns the newest version, the 12.0 signature used here
    const cudaError_t e = cudaGetDriverEntryPoint("cuStreamWaitValue32", &p->wait_value32_, cudaEnableDefault, &found);
#endif
    if (e != cudaSuccess || found != cudaDriverEntryPointSuccess || !p->wait_value32_) {
      (void)cudaGetLastError();
      return unsupported(std::string("armed_launch: the CUDA driver does not provide cuStreamWaitValue32 (") + cudaGetErrorName(e) +
                         ", query result " + std::to_string(static_cast<int>(found)) + "); build the pipeline without armed_launch");
    }
  }

  for (int i = 0; i < options.lanes; ++i) {
    auto l = std::make_unique<LaneSlot>();
    l->index = static_cast<uint32_t>(i);
    l->normalize = options.normalize;
    const std::string lane_name = where + std::to_string(i) + ")";
    auto ctx = p->engine_->create_context();
    if (!ctx) return Status(ctx.status().code(), ctx.status().message() + lane_name);
    l->context = std::move(ctx).value();
    // Non-graph mode measures the steps launched per frame (the lane's "direct" mode), not the context's own replay.
    if (!options.use_cuda_graph) l->context->set_direct_replay(false);
    WS_ASSIGN_OR_RETURN(l->stream, cuda::Stream::create(cudaStreamNonBlocking));
    WS_ASSIGN_OR_RETURN(l->start, cuda::Event::create(cudaEventDefault));
    WS_ASSIGN_OR_RETURN(l->end, cuda::Event::create(cudaEventDefault));
    switch (options.input) {
      case LaneInput::kMapped: {
        WS_ASSIGN_OR_RETURN(l->input_host, cuda::PinnedBuffer::allocate(slot_bytes, cudaHostAllocMapped));
        l->source = static_cast<const uint8_t*>(l->input_host.device_ptr());
        break;
      }
      case LaneInput::kCopy: {
        WS_ASSIGN_OR_RETURN(l->input_host, cuda::PinnedBuffer::allocate(slot_bytes, cudaHostAllocDefault));
        WS_ASSIGN_OR_RETURN(l->input_staging, cuda::DeviceBuffer::allocate(slot_bytes));
        l->source = l->input_staging.as<const uint8_t>();
        break;
      }
      case LaneInput::kDevice:
        l->source = static_cast<const uint8_t*>(options.device_inputs[static_cast<size_t>(i)]);
        break;
    }
    if (l->input_host.get()) std::memset(l->input_host.get(), 0, slot_bytes);  // defined bytes for the warm run
    WS_ASSIGN_OR_RETURN(l->result, cuda::PinnedBuffer::allocate(sizeof(kernels::TopKPair) * kernels::kTopKMax,
                                                               cudaHostAllocMapped));
    std::memset(l->result.get(), 0, l->result.bytes());
    l->result_device = static_cast<kernels::TopKPair*>(l->result.device_ptr());
    if (!l->source || !l->result_device) {
      return internal_error("lane " + std::to_string(i) + ": no device alias for a mapped buffer (init_device first)");
    }

    // The input wavefront: where the preprocess can publish rows (the row-staged path: not a device copy, not the kHWC8
    // port) and the engine's first step can wait on them; otherwise the lane runs the plain form and says why.
    if (options.input_wavefront) {
      std::string why;
      if (options.input == LaneInput::kCopy) why = "input mode copy (the preprocess reads the device copy with the direct kernel)";
      else if (p->input_hwc8_) why = "the engine takes its input in kHWC8";
      else if (!kernels::preprocess_staged_pays(options.src_width, p->in_w_)) why = "the preprocess does not take the row-staged path for this size";
      if (why.empty()) {
        auto sig = l->context->enable_input_wavefront(options.input_wavefront_steps);
        if (sig.is_ok()) l->wavefront = *sig;
        else if (sig.status().code() == StatusCode::kInvalidArgument) return Status(sig.status().code(), sig.status().message() + lane_name);
        else if (sig.status().code() == StatusCode::kUnsupported) why = sig.status().message();
        else return Status(sig.status().code(), sig.status().message() + lane_name);
      }
      if (i == 0) {
        const int n = why.empty() ? l->context->input_wavefront_steps() : 0;
        p->wavefront_note_ = why.empty() ? "on: " + std::to_string(n) + (n == 1 ? " step waits" : " steps wait") + " on rows" : "off: " + why;
      }
    }
    // Warm direct enqueue (C1, C6): every kernel of the frame runs once, un-captured, so lazy module
    // loading and any first-use work inside the engine happen here and not under capture.
    Status warm = p->enqueue_frame(*l, options.src_width, options.src_height);
    if (!warm.is_ok()) return Status(warm.code(), "warm enqueue: " + warm.message() + lane_name);
    WS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(l->stream.get()));

    if (options.use_cuda_graph) {
      cudaStream_t s = l->stream.get();
      // ThreadLocal: other threads' legal CUDA calls cannot invalidate this capture (C3), and an
      // unsafe call from this thread still fails loudly.
      WS_CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
      Status st = p->enqueue_frame(*l, options.src_width, options.src_height);
      cudaGraph_t graph = nullptr;
      const cudaError_t end_err = cudaStreamEndCapture(s, &graph);  // always end the capture
      if (!st.is_ok()) {
        if (graph) cudaGraphDestroy(graph);
        (void)cudaGetLastError();
        return Status(st.code(), "enqueue under stream capture: " + st.message() + lane_name);
      }
      if (end_err != cudaSuccess) {
        if (graph) cudaGraphDestroy(graph);
        (void)cudaGetLastError();
        return Status(StatusCode::kCuda, std::string("cudaStreamEndCapture failed: ") + cudaGetErrorName(end_err) + ": " +
                                             cudaGetErrorString(end_err) +
                                             " — some stage did work that is illegal under capture" + lane_name);
      }
      const cudaError_t inst = cudaGraphInstantiate(l->graph.out(), graph, 0);
      cudaGraphDestroy(graph);
      if (inst != cudaSuccess) return cuda::cuda_status(inst, "cudaGraphInstantiate", __FILE__, __LINE__);
      // Upload + one replay now, so the first submitted frame pays no first-launch cost.
      WS_CUDA_RETURN_IF_ERROR(cudaGraphUpload(l->graph.get(), s));
      WS_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(l->graph.get(), s));
      WS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));
    }
    if (options.armed_launch) {
      // The doorbell, and one armed round trip now (arm, ring, drain): a driver that cannot wait on mapped host memory
      // fails here, at build, with the reason, and not at the first acquire.
      WS_ASSIGN_OR_RETURN(l->doorbell, cuda::PinnedBuffer::allocate(64, cudaHostAllocMapped));
      std::memset(l->doorbell.get(), 0, l->doorbell.bytes());
      l->doorbell_device = reinterpret_cast<CUdeviceptr>(l->doorbell.device_ptr());
      if (!l->doorbell_device) return internal_error("lane " + std::to_string(i) + ": no device alias for the doorbell (init_device first)");
      if (Status st = p->arm(*l); !st.is_ok()) {
        (void)cudaStreamSynchronize(l->stream.get());  // arm rang what it had enqueued
        return Status(st.code(), st.message() + lane_name + "; build the pipeline without armed_launch");
      }
      l->armed = false;
      ring_doorbell(l->doorbell, l->doorbell_seq);
      // The round trip, with a deadline: a platform that takes the wait but never sees the host's store is refused
      // here rather than hanging the build (the lane's stream then stays blocked; the process should not reuse it).
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      cudaError_t q = cudaStreamQuery(l->stream.get());
      while (q == cudaErrorNotReady && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
        q = cudaStreamQuery(l->stream.get());
      }
      if (q == cudaErrorNotReady) {
        (void)l.release();  // never destroyed: work is still pending on its stream (leaked on purpose, with its buffers)
        return unsupported("armed_launch: lane " + std::to_string(i) + "'s GPU did not see its doorbell in mapped host memory "
                           "within 5 s; build the pipeline without armed_launch");
      }
      WS_CUDA_RETURN_IF_ERROR(q);
    }
    p->lanes_.push_back(std::move(l));
  }
  return p;
}

Status Pipeline::check(Lane lane, LaneState expected, const char* call) const {
  if (lane.index >= lanes_.size()) {
    return failed_precondition(std::string(call) + ": lane " + std::to_string(lane.index) + " does not exist (" +
                               std::to_string(lanes_.size()) + " lanes)");
  }
  const LaneSlot& l = *lanes_[lane.index];
  const LaneState s = l.load_state();
  if (l.generation.load(std::memory_order_acquire) != lane.generation || s == LaneState::kFree) {
    return failed_precondition(std::string(call) + ": lane " + std::to_string(lane.index) +
                               " handle is not current (the lane was released" +
                               (s == LaneState::kFree ? "" : " and acquired again") + ")");
  }
  if (s != expected) {
    return failed_precondition(std::string(call) + ": lane " + std::to_string(lane.index) + " is " + lane_state_name(s) +
                               ", needs " + lane_state_name(expected));
  }
  return Status::ok();
}

Lane Pipeline::acquired(LaneSlot& l) {
  const uint32_t gen = l.generation.fetch_add(1, std::memory_order_acq_rel) + 1;
  // armed_launch: enqueue the frame now (a Free lane is never armed: release rings an unsubmitted one)
  if (options_.armed_launch && !arm(l).is_ok()) armed_failures_.fetch_add(1, std::memory_order_relaxed);
  return Lane{l.index, gen};
}

std::optional<Lane> Pipeline::try_acquire() {
  for (auto& l : lanes_) {
    uint32_t expected = static_cast<uint32_t>(LaneState::kFree);
    if (l->state.compare_exchange_strong(expected, static_cast<uint32_t>(LaneState::kAcquired),
                                         std::memory_order_acq_rel)) {
      return acquired(*l);
    }
  }
  return std::nullopt;
}

Result<Lane> Pipeline::acquire(size_t index) {
  if (index >= lanes_.size()) {
    return invalid_argument("acquire: lane " + std::to_string(index) + " does not exist (" + std::to_string(lanes_.size()) +
                            " lanes)");
  }
  LaneSlot& l = *lanes_[index];
  uint32_t expected = static_cast<uint32_t>(LaneState::kFree);
  if (!l.state.compare_exchange_strong(expected, static_cast<uint32_t>(LaneState::kAcquired), std::memory_order_acq_rel)) {
    return failed_precondition("acquire: lane " + std::to_string(index) + " is busy (" +
                               lane_state_name(static_cast<LaneState>(expected)) + ")");
  }
  return acquired(l);
}

std::span<uint8_t> Pipeline::input(Lane lane) {
  if (!check(lane, LaneState::kAcquired, "input").is_ok() || options_.input == LaneInput::kDevice) return {};
  LaneSlot& l = *lanes_[lane.index];
  return {static_cast<uint8_t*>(l.input_host.get()), input_slot_bytes()};
}

const void* Pipeline::device_input(Lane lane) const {
  if (lane.index >= lanes_.size()) return nullptr;
  const LaneSlot& l = *lanes_[lane.index];
  if (l.generation.load(std::memory_order_acquire) != lane.generation) return nullptr;
  return l.source;
}

Status Pipeline::submit(Lane lane, int64_t w, int64_t h) {
  WS_RETURN_IF_ERROR(check(lane, LaneState::kAcquired, "submit"));
  if (w < 1 || h < 1) {
    return invalid_argument("submit: frame " + std::to_string(w) + "x" + std::to_string(h) + " has an empty side");
  }
  if (w * h * 3 > static_cast<int64_t>(input_slot_bytes())) {
    return resource_exhausted("submit: frame " + std::to_string(w) + "x" + std::to_string(h) + " (" +
                              std::to_string(w * h * 3) + " bytes) is larger than the lane's slot (" +
                              std::to_string(options_.src_width) + "x" + std::to_string(options_.src_height) + ", " +
                              std::to_string(input_slot_bytes()) + " bytes)");
  }
  if (options_.use_cuda_graph && (w != options_.src_width || h != options_.src_height)) {
    return invalid_argument("submit: frame " + std::to_string(w) + "x" + std::to_string(h) +
                            " differs from the size the lane's CUDA Graph was captured for (" +
                            std::to_string(options_.src_width) + "x" + std::to_string(options_.src_height) +
                            "); build a Pipeline for that size, or use direct enqueue");
  }
  LaneSlot& l = *lanes_[lane.index];
  if (l.armed) {  // the frame is enqueued behind the lane's doorbell (armed_launch): ring it (a fence, then the store)
    ring_doorbell(l.doorbell, l.doorbell_seq);
    l.armed = false;
  } else {
    cudaStream_t s = l.stream.get();
    // The producer's stores into the input slot (mapped: read by the kernel over the bus; copy: read by the
    // DMA engine) must be globally visible before the launch's doorbell write: a full fence.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    WS_CUDA_RETURN_IF_ERROR(cudaEventRecord(l.start.get(), s));
    if (options_.use_cuda_graph) {
      WS_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(l.graph.get(), s));
    } else {
      WS_RETURN_IF_ERROR(enqueue_frame(l, w, h));
    }
    WS_CUDA_RETURN_IF_ERROR(cudaEventRecord(l.end.get(), s));
  }
  l.submitted_w = w;
  l.submitted_h = h;
  l.store_state(LaneState::kSubmitted);
  return Status::ok();
}

Result<std::span<const TopKEntry>> Pipeline::wait(Lane lane) {
  if (lane.index < lanes_.size() && lanes_[lane.index]->load_state() == LaneState::kCompleted) {
    WS_RETURN_IF_ERROR(check(lane, LaneState::kCompleted, "wait"));
  } else {
    WS_RETURN_IF_ERROR(check(lane, LaneState::kSubmitted, "wait"));
    LaneSlot& l = *lanes_[lane.index];
    WS_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(l.end.get()));
    l.store_state(LaneState::kCompleted);
  }
  // The end event completed after the Top-K kernel's stores to the mapped slot (same stream, recorded
  // after it); acquire ordering keeps the reads below from being hoisted above the synchronisation.
  std::atomic_thread_fence(std::memory_order_acquire);
  const LaneSlot& l = *lanes_[lane.index];
  if (l.wavefront && static_cast<const kernels::TopKPair*>(l.result.get())[0].index == kernels::kTopKInvalidIndex)
    return internal_error("wait: lane " + std::to_string(lane.index) + ": a step gave up waiting on rows (the input wavefront: the "
                          "stem on the preprocess's rows, or the step after it on the stem's); this frame has no result (rebuild the pipeline with input_wavefront off)");
  return std::span<const TopKEntry>(static_cast<const TopKEntry*>(l.result.get()),
                                         static_cast<size_t>(options_.k));
}

Result<float> Pipeline::gpu_time_ms(Lane lane) const {
  WS_RETURN_IF_ERROR(check(lane, LaneState::kCompleted, "gpu_time_ms"));
  const LaneSlot& l = *lanes_[lane.index];
  return cuda::elapsed_ms(l.start, l.end);
}

Status Pipeline::copy_logits(Lane lane, std::span<float> out) const {
  WS_RETURN_IF_ERROR(check(lane, LaneState::kCompleted, "copy_logits"));
  if (out.size() != static_cast<size_t>(classes_)) {
    return invalid_argument("copy_logits: " + std::to_string(out.size()) + " floats for " + std::to_string(classes_) +
                            " classes");
  }
  const LaneSlot& l = *lanes_[lane.index];
  if (l.wavefront && static_cast<const kernels::TopKPair*>(l.result.get())[0].index == kernels::kTopKInvalidIndex)
    return internal_error("copy_logits: lane " + std::to_string(lane.index) + ": this frame's input wavefront failed (see wait); no logits");
  WS_CUDA_RETURN_IF_ERROR(cudaMemcpy(out.data(), l.context->output(0), out.size() * sizeof(float), cudaMemcpyDeviceToHost));
  return Status::ok();
}

Status Pipeline::release(Lane lane) {
  if (lane.index < lanes_.size() && lanes_[lane.index]->load_state() == LaneState::kAcquired) {
    WS_RETURN_IF_ERROR(check(lane, LaneState::kAcquired, "release"));
  } else {
    WS_RETURN_IF_ERROR(check(lane, LaneState::kCompleted, "release"));
  }
  LaneSlot& l = *lanes_[lane.index];
  if (l.armed) {  // abandoned before submit: ring, so that no Free lane holds a stream (and its hardware queue) waiting
    ring_doorbell(l.doorbell, l.doorbell_seq);  // the graph runs once on the slot's bytes; its result is never read
    l.armed = false;
  }
  l.store_state(LaneState::kFree);
  return Status::ok();
}

}  // namespace ws
