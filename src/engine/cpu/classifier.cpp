// CPU classification pipeline: preprocess → CPU engine → Top-K; see warpstream/classifier.h.
#include "warpstream/classifier.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "core/escape.h"
#include "core/file_io.h"
#include "core/json_parse.h"
#include "reference/reference.h"

namespace ws {

Result<ModelConfig> load_model_config(const std::string& json_path) {
  WS_ASSIGN_OR_RETURN(std::vector<char> text, read_regular_file(json_path, "model config (JSON)", size_t{1} << 24));
  WS_ASSIGN_OR_RETURN(nlohmann::json j, parse_json_bounded(std::string_view(text.data(), text.size()), json_path));
  if (!j.is_object()) return invalid_argument(json_path + ": not a JSON object");
  ModelConfig c;
  for (const char* key : {"mean", "std"}) {
    if (!j.contains(key)) continue;
    const auto& v = j[key];
    if (!v.is_array() || v.size() != 3 || !v[0].is_number() || !v[1].is_number() || !v[2].is_number()) {
      return invalid_argument(json_path + ": field '" + key + "' must be an array of 3 numbers");
    }
    for (int i = 0; i < 3; ++i) {
      const double x = v[static_cast<size_t>(i)].get<double>();
      if (!std::isfinite(x)) return invalid_argument(json_path + ": field '" + key + "' values must be finite");
      if (std::string(key) == "mean") c.normalize.mean[i] = static_cast<float>(x);
      else if (!(x > 0)) return invalid_argument(json_path + ": field 'std' values must be > 0");
      else c.normalize.inv_std[i] = static_cast<float>(1.0 / x);
    }
  }
  c.source = json_path;
  return c;
}

Result<ModelConfig> model_config_for(const std::string& model_path) {
  std::filesystem::path p(model_path);
  p.replace_extension(".json");
  std::error_code ec;
  if (std::filesystem::is_regular_file(p, ec)) return load_model_config(p.string());
  return ModelConfig{};
}

Result<std::vector<std::string>> load_labels(const std::string& path) {
  WS_ASSIGN_OR_RETURN(std::vector<char> text, read_regular_file(path, "labels file", size_t{1} << 26));
  std::istringstream f(std::string(text.begin(), text.end()));
  std::vector<std::string> labels;
  std::string line;
  while (std::getline(f, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    labels.push_back(line);
  }
  if (labels.empty()) return invalid_argument(path + ": labels file is empty");
  return labels;
}

Result<std::unique_ptr<CpuClassifier>> CpuClassifier::build(const std::string& model_path, const ModelConfig& config,
                                                             const ir::Shape& input_shape) {
  ir::ImportOptions options;
  if (!input_shape.empty()) options.input_shapes["*"] = input_shape;
  WS_ASSIGN_OR_RETURN(ir::Graph graph, ir::import_onnx(model_path, options));
  WS_ASSIGN_OR_RETURN(std::unique_ptr<CpuEngine> engine, CpuEngine::build(std::move(graph)));
  if (engine->num_inputs() != 1 || engine->num_outputs() < 1) {
    return unsupported(model_path + ": a classifier needs exactly one input, found " + std::to_string(engine->num_inputs()));
  }
  const TensorDesc& in = engine->input_desc(0);
  if (in.dtype != ir::DType::kFloat32 || in.shape.size() != 4 || in.shape[0] != 1 || in.shape[1] != 3) {
    return unsupported(model_path + ": input '" + in.name + "' is " + ir::dtype_name(in.dtype) + " " +
                       ir::shape_string(in.shape) + "; a classifier needs float32 [1, 3, H, W]");
  }
  const TensorDesc& out = engine->output_desc(0);
  const int64_t classes = ir::shape_elements(out.shape);
  if (out.dtype != ir::DType::kFloat32 || out.shape.empty() || out.shape[0] != 1 || classes < 1) {
    return unsupported(model_path + ": output '" + out.name + "' is " + ir::dtype_name(out.dtype) + " " +
                       ir::shape_string(out.shape) + "; a classifier needs float32 [1, classes]");
  }
  auto c = std::make_unique<CpuClassifier>();
  c->engine_ = std::move(engine);
  c->config_ = config;
  c->height_ = in.shape[2];
  c->width_ = in.shape[3];
  c->classes_ = classes;
  return c;
}

Status CpuClassifier::run_tensor(const float* nchw) {
  std::memcpy(engine_->input(0), nchw, static_cast<size_t>(input_elements()) * sizeof(float));
  return engine_->run();
}

Result<std::vector<ref::TopKEntry>> CpuClassifier::classify(const ImageRgb8& image, int k) {
  WS_RETURN_IF_ERROR(check_image_size(image.width, image.height));
  if (static_cast<int64_t>(image.pixels.size()) != image.width * image.height * 3)
    return invalid_argument("image: " + std::to_string(image.pixels.size()) + " bytes for " + std::to_string(image.width) +
                            "×" + std::to_string(image.height) + " RGB8 (width·height·3 expected)");
  if (k < 1 || k > ref::kMaxTopK || k > classes_) {
    return invalid_argument("top-k " + std::to_string(k) + " is out of range: 1.." +
                            std::to_string(std::min<int64_t>(ref::kMaxTopK, classes_)));
  }
  WS_RETURN_IF_ERROR(ref::preprocess_rgb8_to_nchw(image.pixels.data(), image.height, image.width, image.width * 3,
                                                  static_cast<float*>(engine_->input(0)), height_, width_,
                                                  config_.normalize));
  WS_RETURN_IF_ERROR(engine_->run());
  std::vector<ref::TopKEntry> top(static_cast<size_t>(k));
  WS_RETURN_IF_ERROR(ref::topk(logits(), classes_, k, top.data()));
  return top;
}

Status accumulate_activation_amax(CpuClassifier& c, const ImageRgb8& image, std::map<std::string, float>& amax) {
  const CpuEngine& e = c.engine();
  const ir::Graph& g = e.graph();
  auto observe = [&](ir::TensorId id) {
    const ir::Tensor& t = g.tensor(id);
    if (t.dtype != ir::DType::kFloat32) return;
    const float* v = static_cast<const float*>(e.tensor_data(id));
    if (!v) return;
    float m = 0.0f;
    for (int64_t i = 0, n = t.elements(); i < n; ++i)
      if (!std::isnan(v[i])) m = std::max(m, std::fabs(v[i]));
    float& slot = amax[t.name];
    slot = std::max(slot, m);
  };
  WS_RETURN_IF_ERROR(check_image_size(image.width, image.height));
  if (static_cast<int64_t>(image.pixels.size()) != image.width * image.height * 3)
    return invalid_argument("calibration frame: " + std::to_string(image.pixels.size()) + " bytes for " + std::to_string(image.width) + "x" +
                            std::to_string(image.height) + " RGB8");
  WS_RETURN_IF_ERROR(ref::preprocess_rgb8_to_nchw(image.pixels.data(), image.height, image.width, image.width * 3,
                                                  static_cast<float*>(c.mutable_engine().input(0)), c.input_height(), c.input_width(),
                                                  c.config().normalize));
  for (ir::TensorId id : g.inputs) observe(id);
  return c.mutable_engine().run_with_hook([&](size_t, const ir::Node& node) {
    for (ir::TensorId id : node.outputs)
      if (id != ir::kNoTensor) observe(id);
  });
}

Result<std::map<std::string, float>> calibrate_activation_amax(CpuClassifier& c, const std::vector<ImageRgb8>& frames) {
  if (frames.empty()) return invalid_argument("calibration: no frames");
  std::map<std::string, float> amax;
  for (size_t f = 0; f < frames.size(); ++f) {
    const Status s = accumulate_activation_amax(c, frames[f], amax);
    if (!s.is_ok()) return Status(s.code(), "calibration frame " + std::to_string(f) + ": " + s.message());
  }
  return amax;
}

Result<std::vector<std::string>> list_calibration_files(const std::string& dir, size_t max_files, size_t* found) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return not_found("--calibration " + ::ws::quoted(dir) + ": does not exist");
  if (!fs::is_directory(dir, ec)) return invalid_argument("--calibration " + ::ws::quoted(dir) + ": not a directory");
  std::vector<std::string> files;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string ext = it->path().extension().string();
    for (char& ch : ext) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (ext != ".png" && ext != ".jpg" && ext != ".jpeg") continue;
    // An image name that is not a readable regular file (a dangling link, a folder named x.png) is refused, not
    // skipped: silently calibrating on fewer frames than the folder shows would hide it.
    std::error_code fe, le;
    if (!it->is_regular_file(fe)) {
      const std::string why = it->is_symlink(le) ? " is a link to no readable file (a dangling link?" + (fe ? ": " + fe.message() : std::string()) + ")"
                              : fe           ? " cannot be inspected (" + fe.message() + ")"
                                             : " is not a regular file (a folder?)";
      return invalid_argument("--calibration " + ::ws::quoted(dir) + ": " + ::ws::quoted(it->path().filename().string()) + why);
    }
    files.push_back(it->path().string());
  }
  if (ec) return invalid_argument("--calibration " + ::ws::quoted(dir) + ": " + ec.message());
  if (files.empty()) return invalid_argument("--calibration " + ::ws::quoted(dir) + ": no .png / .jpg / .jpeg file in it");
  std::sort(files.begin(), files.end());
  if (found) *found = files.size();
  if (files.size() > max_files) files.resize(max_files);
  return files;
}

Result<std::vector<ImageRgb8>> load_calibration_frames(const std::string& dir, size_t max_frames) {
  WS_ASSIGN_OR_RETURN(const std::vector<std::string> files, list_calibration_files(dir, max_frames));
  std::vector<ImageRgb8> frames;
  for (const std::string& f : files) {
    WS_ASSIGN_OR_RETURN(ImageRgb8 img, decode_image_file(f));
    frames.push_back(std::move(img));
  }
  return frames;
}

Result<std::map<std::string, float>> calibrate_classifier(const std::string& model_path, const ModelConfig& config, const std::string& dir,
                                                          const ir::Shape& input_shape, size_t* frames_used) {
  WS_ASSIGN_OR_RETURN(const std::vector<std::string> files, list_calibration_files(dir, kMaxCalibrationFrames));
  WS_ASSIGN_OR_RETURN(std::unique_ptr<CpuClassifier> cpu, CpuClassifier::build(model_path, config, input_shape));
  std::map<std::string, float> amax;
  for (const std::string& f : files) {  // one decoded frame in memory at a time
    WS_ASSIGN_OR_RETURN(const ImageRgb8 img, decode_image_file(f));
    const Status s = accumulate_activation_amax(*cpu, img, amax);
    if (!s.is_ok()) return Status(s.code(), f + ": " + s.message());
  }
  if (frames_used) *frames_used = files.size();
  return amax;
}

}  // namespace ws
