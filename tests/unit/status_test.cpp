#include <gtest/gtest.h>

#include "warpstream/status.h"

namespace ws {
namespace {

Result<int> half(int x) {
  if (x % 2) return invalid_argument("odd value " + std::to_string(x));
  return x / 2;
}
Status chain(int x, int* out) {
  WS_ASSIGN_OR_RETURN(*out, half(x));
  return Status::ok();
}

TEST(Status, CarriesCodeAndMessage) {
  int v = 0;
  EXPECT_TRUE(chain(4, &v).is_ok());
  EXPECT_EQ(v, 2);
  Status s = chain(3, &v);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.to_string(), "invalid argument: odd value 3");
}

}  // namespace
}  // namespace ws
