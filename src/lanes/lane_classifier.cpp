// `warpstream classify --device cuda`: one CudaEngine, a one-lane Pipeline per source size; see
// include/warpstream/lanes.h (LaneClassifier).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>

#include "core/escape.h"
#include "cuda/cuda_util.h"
#include "cuda/device.h"
#include "warpstream/lanes.h"

namespace ws {

struct LaneClassifier::DeviceFrame {
  cuda::DeviceBuffer buffer;  // the producer-registered device input (kDevice)
};

LaneClassifier::~LaneClassifier() {
  pipeline_.reset();  // before the registered device buffer it reads
  device_frame_.reset();
}

Status cuda_device_available() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return Status(StatusCode::kCuda, std::string("no usable CUDA device: cudaGetDeviceCount: ") + cudaGetErrorName(e) +
                                         ": " + cudaGetErrorString(e));
  }
  if (n == 0) return Status(StatusCode::kCuda, "no CUDA device present (cudaGetDeviceCount = 0)");
  return Status::ok();
}

Result<std::unique_ptr<LaneClassifier>> LaneClassifier::build(const std::string& model_path,
                                                              const LaneClassifierOptions& options) {
  WS_RETURN_IF_ERROR(cuda::init_device(options.build.device));
  std::unique_ptr<LaneClassifier> c(new LaneClassifier());
  c->options_ = options;
  if (auto r = cuda::device_report(options.build.device); r.is_ok()) c->device_ = r->to_string();
  ir::ImportOptions import;
  if (!options.input_shape.empty()) import.input_shapes["*"] = options.input_shape;
  WS_ASSIGN_OR_RETURN(ir::Graph graph, ir::import_onnx(model_path, import));
  WS_ASSIGN_OR_RETURN(std::unique_ptr<CudaEngine> engine, CudaEngine::build(std::move(graph), options.build));
  c->engine_ = std::move(engine);
  if (c->engine_->num_outputs() < 1) return unsupported(model_path + ": the model has no output");
  if (c->engine_->output_desc(0).dtype != ir::DType::kFloat32)
    return unsupported(model_path + ": output " + ::ws::quoted(c->engine_->output_desc(0).name) + " is " +
                       ir::dtype_name(c->engine_->output_desc(0).dtype) + "; a classifier needs float32 logits");
  const int64_t classes = ir::shape_elements(c->engine_->output_desc(0).shape);
  if (options.k < 1 || options.k > kMaxTopK || options.k > classes) {
    return invalid_argument("top-k " + std::to_string(options.k) + " is out of range 1.." +
                            std::to_string(std::min<int64_t>(kMaxTopK, classes)) + " for a model with " +
                            std::to_string(classes) + " classes");
  }
  return c;
}

int64_t LaneClassifier::classes() const { return ir::shape_elements(engine_->output_desc(0).shape); }
int64_t LaneClassifier::input_height() const { return engine_->input_desc(0).shape.at(2); }
int64_t LaneClassifier::input_width() const { return engine_->input_desc(0).shape.at(3); }

Result<LaneClassification> LaneClassifier::classify(const ImageRgb8& image) {
  if (image.width < 1 || image.height < 1 ||
      image.pixels.size() != static_cast<size_t>(image.width * image.height * 3)) {
    return invalid_argument("image " + std::to_string(image.width) + "x" + std::to_string(image.height) +
                            " is empty or its pixel count does not match");
  }
  const size_t bytes = image.pixels.size();
  // A new source size: a new one-lane pipeline (contexts + capture; the engine is kept).
  if (!pipeline_ || pipeline_->options().src_width != image.width || pipeline_->options().src_height != image.height) {
    pipeline_.reset();
    PipelineOptions po;
    po.lanes = 1;
    po.src_width = image.width;
    po.src_height = image.height;
    po.k = options_.k;
    po.input = options_.input;
    po.use_cuda_graph = options_.use_cuda_graph;
    po.normalize = options_.normalize;
    if (options_.input == LaneInput::kDevice) {
      device_frame_ = std::make_unique<DeviceFrame>();
      WS_ASSIGN_OR_RETURN(device_frame_->buffer, cuda::DeviceBuffer::allocate(bytes));
      WS_RETURN_IF_ERROR(::ws::cuda::fill_device(device_frame_->buffer.get(), 0, bytes));
      po.device_inputs = {device_frame_->buffer.get()};
    }
    WS_ASSIGN_OR_RETURN(pipeline_, Pipeline::build(engine_, po));
  }
  Pipeline& p = *pipeline_;
  const auto lane = p.try_acquire();
  if (!lane) return internal_error("the classifier's only lane is busy");
  if (options_.input == LaneInput::kDevice) {
    // The producer's part: put the frame into the registered device buffer, finished before submit.
    WS_RETURN_IF_ERROR(::ws::cuda::copy_to_device(device_frame_->buffer.get(), image.pixels.data(), bytes));
  } else {
    std::span<uint8_t> slot = p.input(*lane);
    std::memcpy(slot.data(), image.pixels.data(), bytes);
  }
  LaneClassification out;
  const auto t0 = std::chrono::steady_clock::now();
  Status st = p.submit(*lane, image.width, image.height);
  if (!st.is_ok()) {
    (void)p.release(*lane);
    return st;
  }
  auto top = p.wait(*lane);
  out.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!top) return top.status();  // the lane stays Submitted: the pipeline is unusable after a device error
  out.top.assign(top->begin(), top->end());
  if (auto ms = p.gpu_time_ms(*lane); ms.is_ok()) out.gpu_ms = *ms;
  WS_RETURN_IF_ERROR(p.release(*lane));
  return out;
}

}  // namespace ws
