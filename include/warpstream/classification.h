#pragma once
/// \file classification.h
/// The two value types of the image-classification API, shared by the CPU classifier
/// (classifier.h), the GPU lanes (lanes.h), the preprocess/Top-K kernels and their CPU reference.

#include <cstdint>

namespace ws {

/// Per-channel normalisation applied after x1/255: out = (x - mean[c]) * inv_std[c], c in R, G, B.
/// Defaults: ImageNet mean/std as torchvision uses them.
struct Normalize {
  float mean[3] = {0.485f, 0.456f, 0.406f};
  float inv_std[3] = {1.0f / 0.229f, 1.0f / 0.224f, 1.0f / 0.225f};
};

/// One Top-K result: the class index and its logit. 8 bytes (float, int32), the layout the GPU
/// Top-K kernel writes into the lane's mapped result slot.
struct TopKEntry {
  float score;
  int32_t index;
};

/// The largest K any Top-K (CPU reference or GPU kernel) accepts.
inline constexpr int kMaxTopK = 32;

}  // namespace ws
