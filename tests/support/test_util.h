#pragma once
// Small helpers shared by the engine / image / CLI tests: a per-test temporary directory, file
// writing, and reading float initializers back out of an ONNX ModelProto.
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ws::test {

/// A fresh directory under the system temp dir, removed (recursively) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  /// path() / name as a string.
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

void write_file(const std::string& path, const std::string& bytes);
std::string read_file(const std::string& path);
/// A valid PNG (correct CRCs) whose IHDR promises w × h RGB8, with a few bytes of IDAT: for "a huge dimension is
/// refused without allocating" tests.
std::string png_with_huge_header(uint32_t w, uint32_t h);

/// The float32 values of initializer `name` of `model` (raw_data or float_data), read straight
/// from the protobuf; fails the current test (ADD_FAILURE) and returns {} when absent.
std::vector<float> initializer_floats(const onnx::ModelProto& model, const std::string& name);

/// Deterministic pseudo-random floats in [lo, hi) from std::mt19937(seed) raw draws.
std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f);

}  // namespace ws::test
