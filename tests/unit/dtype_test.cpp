// ws::DType (include/warpstream/dtype.h): one element-type vocabulary with ONNX TensorProto numbers;
// ir::DType names the same type; BinaryOp is one type for the reference and the kernels.
#include <gtest/gtest.h>

#include <type_traits>

#include "core/binary_op.h"
#include "reference/reference.h"
#include "warpstream/dtype.h"
#include "warpstream/graph.h"

namespace ws {
namespace {

static_assert(std::is_same_v<ir::DType, DType>, "ir::DType is ws::DType");
static_assert(std::is_same_v<ref::BinaryOp, BinaryOp>, "the reference names the one BinaryOp");

TEST(DType, OnnxNumbersSizesAndNames) {
  // ONNX TensorProto.DataType values (onnx/onnx.proto3): FLOAT=1, INT8=3, INT64=7, FLOAT16=10, BFLOAT16=16,
  // FLOAT8E4M3FN=17.
  EXPECT_EQ(static_cast<int>(DType::kFloat32), 1);
  EXPECT_EQ(static_cast<int>(DType::kInt8), 3);
  EXPECT_EQ(static_cast<int>(DType::kInt64), 7);
  EXPECT_EQ(static_cast<int>(DType::kFloat16), 10);
  EXPECT_EQ(static_cast<int>(DType::kBFloat16), 16);
  EXPECT_EQ(static_cast<int>(DType::kFloat8E4M3FN), 17);

  EXPECT_EQ(dtype_size(DType::kFloat8E4M3FN), 1u);
  EXPECT_EQ(dtype_size(DType::kBFloat16), 2u);
  EXPECT_EQ(dtype_size(DType::kFloat32), 4u);
  EXPECT_EQ(dtype_size(DType::kInt64), 8u);
  EXPECT_EQ(dtype_size(DType::kString), 0u);
  EXPECT_EQ(dtype_size(DType::kUndefined), 0u);

  EXPECT_EQ(dtype_name(DType::kFloat8E4M3FN), "float8e4m3fn");
  EXPECT_EQ(dtype_name(DType::kBFloat16), "bfloat16");
  EXPECT_EQ(ir::dtype_name(DType::kFloat32), "float32");
  EXPECT_EQ(dtype_name(static_cast<DType>(14)), "dtype 14");  // COMPLEX128: no name here
}

}  // namespace
}  // namespace ws
