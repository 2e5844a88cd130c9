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

namespace {
uint32_t crc32_of(const uint8_t* p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

void put_be32(std::string& s, uint32_t v) {
  for (int i = 3; i >= 0; --i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

std::string png_chunk(const char type[4], const std::string& data) {
  std::string c;
  put_be32(c, static_cast<uint32_t>(data.size()));
  std::string body = std::string(type, 4) + data;
  c += body;
  put_be32(c, crc32_of(reinterpret_cast<const uint8_t*>(body.data()), body.size()));
  return c;
}
}  // namespace

std::string png_with_huge_header(uint32_t w, uint32_t h) {
  std::string png("\x89PNG\r\n\x1a\n", 8);
  std::string ihdr;
  put_be32(ihdr, w);
  put_be32(ihdr, h);
  ihdr += std::string("\x08\x02\x00\x00\x00", 5);  // 8-bit, RGB, deflate, adaptive filter, no interlace
  png += png_chunk("IHDR", ihdr);
  png += png_chunk("IDAT", std::string("\x78\x9c\x03\x00\x00\x00\x00\x01", 8));
  png += png_chunk("IEND", "");
  return png;
}

}  // namespace ws::test
