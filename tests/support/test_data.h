#pragma once
// Where the test data lives (tests/data): $WS_TEST_DATA_DIR when set, else the data folder beside this header's
// support/ folder (the GPU tests are not given WS_TEST_DATA_DIR at compile time). Header-only, plain C++.
#include <cstdlib>
#include <string>

namespace ws::test {

inline std::string test_data_dir() {
  if (const char* e = std::getenv("WS_TEST_DATA_DIR"); e != nullptr && *e) return e;
  const std::string f = __FILE__;
  const size_t p = f.rfind("/support/");
  return (p == std::string::npos ? std::string("tests") : f.substr(0, p)) + "/data";
}

}  // namespace ws::test
