#pragma once
/// \file classifier.h
/// Batch-1 image classification on the CPU executor: RGB8 image → fused resize+normalise written
/// straight into the network's input tensor → network → Top-K. The same stages the GPU lane runs.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "warpstream/classification.h"
#include "warpstream/engine.h"
#include "warpstream/image.h"

namespace ws {

/// How a model expects its input; read from the JSON sidecar next to the model
/// (`<model>.json`, written by tools/fetch_assets.py) or given explicitly.
struct ModelConfig {
  Normalize normalize;   ///< per-channel mean and 1/std in 0..1 units (default ImageNet)
  std::string source = "default ImageNet mean/std";  ///< where the values came from, for reports
};

/// Reads {"mean": [r,g,b], "std": [r,g,b]} from `json_path`. Errors: unreadable file, bad JSON,
/// wrong lengths, std <= 0 (kInvalidArgument naming the file and field).
Result<ModelConfig> load_model_config(const std::string& json_path);
/// `model_path` with ".onnx" replaced by ".json" when that file exists, else the defaults.
Result<ModelConfig> model_config_for(const std::string& model_path);

/// Reads one class name per line. Errors: unreadable file, empty file.
Result<std::vector<std::string>> load_labels(const std::string& path);

class CpuClassifier {
 public:
  /// Imports and builds `model_path`. The model must take one float32 input [1, 3, H, W] and give one
  /// float32 output with 1 × classes elements. Errors name the file and the offending shape.
  /// `input_shape` fixes symbolic input dims (e.g. a dynamic batch) at build; empty = as declared.
  static Result<std::unique_ptr<CpuClassifier>> build(const std::string& model_path, const ModelConfig& config,
                                                      const ir::Shape& input_shape = {});

  /// Preprocesses `image` into the input tensor, runs the network and returns the top-k
  /// (descending; ties → lower index). Errors: k outside 1..min(32, classes).
  Result<std::vector<TopKEntry>> classify(const ImageRgb8& image, int k);
  /// Runs the network on an already-preprocessed NCHW float32 tensor (input_elements() floats).
  Status run_tensor(const float* nchw);
  /// Logits of the last run (classes() floats).
  const float* logits() const { return static_cast<const float*>(engine_->output(0)); }

  int64_t classes() const { return classes_; }
  int64_t input_height() const { return height_; }
  int64_t input_width() const { return width_; }
  int64_t input_elements() const { return 3 * height_ * width_; }
  const CpuEngine& engine() const { return *engine_; }
  CpuEngine& mutable_engine() { return *engine_; }
  const ModelConfig& config() const { return config_; }

 private:
  std::unique_ptr<CpuEngine> engine_;
  ModelConfig config_;
  int64_t height_ = 0, width_ = 0, classes_ = 0;
};

/// FP8 calibration ("max" calibration, as TensorRT's FP8 / Transformer Engine's amax): runs the CPU executor on
/// each frame (preprocessed exactly as classify() does) and returns, by tensor name, the largest |value| over all
/// frames of the graph input and of every float32 tensor a node writes — what CudaBuildOptions::fp8_activation_amax
/// takes. NaN values are skipped. Errors: no frames, an image classify() would refuse (names the frame's index).
Result<std::map<std::string, float>> calibrate_activation_amax(CpuClassifier& classifier, const std::vector<ImageRgb8>& frames);
/// One frame of calibrate_activation_amax, folded into `amax` (so frames need not be held at once). Errors as there.
Status accumulate_activation_amax(CpuClassifier& classifier, const ImageRgb8& frame, std::map<std::string, float>& amax);

/// The image files of a calibration directory: every regular file (symlinks followed) ending in .png, .jpg or .jpeg
/// (any case), sorted by name, at most `max_files`; `found` (optional) gets how many there were. Errors: kNotFound
/// (the path does not exist); kInvalidArgument: not a directory, no image file in it, an image name that is not a
/// regular file (a dangling link, a folder named x.png: refused naming it, never skipped).
Result<std::vector<std::string>> list_calibration_files(const std::string& dir, size_t max_files, size_t* found = nullptr);

/// The frames of a calibration directory (`--calibration DIR`): every regular file ending in .png, .jpg or .jpeg
/// (any case), sorted by name, at most `max_frames` of them, decoded (decode_image_file). Errors: not a
/// directory, no image file in it, a file that fails to decode (the decoder's message names it).
inline constexpr size_t kMaxCalibrationFrames = 64;
Result<std::vector<ImageRgb8>> load_calibration_frames(const std::string& dir, size_t max_frames = kMaxCalibrationFrames);

/// `--precision fp8 --calibration DIR` for a classifier model: list_calibration_files(dir, kMaxCalibrationFrames), a
/// CpuClassifier of `model_path` (fp32, `input_shape` as CpuClassifier::build), then each file decoded and folded in
/// one at a time (one frame in memory). `frames_used` (optional) gets the number of frames used. Errors: those steps'.
Result<std::map<std::string, float>> calibrate_classifier(const std::string& model_path, const ModelConfig& config, const std::string& dir,
                                                          const ir::Shape& input_shape = {}, size_t* frames_used = nullptr);

}  // namespace ws
