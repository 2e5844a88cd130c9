#include "support/test_util.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <random>
#include <unistd.h>

namespace ws::test {

TempDir::TempDir() {
  static std::atomic<int> counter{0};
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string tag = info ? std::string(info->test_suite_name()) + "." + info->name() : "ws";
  for (char& c : tag)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.') c = '_';
  path_ = std::filesystem::temp_directory_path() /
          ("ws_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" + tag);
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << "cannot write " << path;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

std::vector<float> initializer_floats(const onnx::ModelProto& model, const std::string& name) {
  for (const auto& t : model.graph().initializer()) {
    if (t.name() != name) continue;
    if (t.data_type() != onnx::TensorProto::FLOAT) break;
    if (t.has_raw_data()) {
      std::vector<float> v(t.raw_data().size() / 4);
      if (!v.empty()) std::memcpy(v.data(), t.raw_data().data(), v.size() * 4);
      return v;
    }
    return std::vector<float>(t.float_data().begin(), t.float_data().end());
  }
  ADD_FAILURE() << "no float initializer '" << name << "'";
  return {};
}

std::vector<float> random_floats(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 gen(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = lo + static_cast<float>(static_cast<double>(gen()) / 4294967296.0) * (hi - lo);
  return v;
}

}  // namespace ws::test
