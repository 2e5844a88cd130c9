#pragma once
/// \file op_table_ext.h
/// Internal: analyzers of the ops added for the torchvision zoo and ONNX's suites (issue 14),
/// implemented in op_table_ext.cpp and listed in op_table.cpp's one table. Same contract as every
/// OpDef::analyze (see op_table.h): validate, infer output dtypes/shapes, bind the CPU kernel
/// (src/reference/ops_ext.h). Index-like operands (Gather indices, Slice starts…, Reshape-like
/// shapes, Reduce axes, Resize scales/sizes) must be constant at build.

#include "engine/ir/op_table.h"

namespace ws::engine::ext {

Status analyze_gather(NodeContext& c);
Status analyze_slice(NodeContext& c);
Status analyze_split(NodeContext& c);
Status analyze_expand(NodeContext& c);
Status analyze_tile(NodeContext& c);
Status analyze_cast(NodeContext& c);
Status analyze_cast_like(NodeContext& c);
Status analyze_where(NodeContext& c);
Status analyze_constant_of_shape(NodeContext& c);
Status analyze_gather_elements(NodeContext& c);
Status analyze_scatter_nd(NodeContext& c);
Status analyze_trilu(NodeContext& c);
Status analyze_cum_sum(NodeContext& c);
Status analyze_hardmax(NodeContext& c);
Status analyze_depth_to_space(NodeContext& c);
Status analyze_space_to_depth(NodeContext& c);
Status analyze_range(NodeContext& c);

Status analyze_equal(NodeContext& c);
Status analyze_less(NodeContext& c);
Status analyze_greater(NodeContext& c);
Status analyze_less_or_equal(NodeContext& c);
Status analyze_greater_or_equal(NodeContext& c);
Status analyze_and(NodeContext& c);
Status analyze_or(NodeContext& c);
Status analyze_xor(NodeContext& c);
Status analyze_not(NodeContext& c);

Status analyze_erf(NodeContext& c);
Status analyze_tanh(NodeContext& c);
Status analyze_exp(NodeContext& c);
Status analyze_log(NodeContext& c);
Status analyze_sqrt(NodeContext& c);
Status analyze_neg(NodeContext& c);
Status analyze_abs(NodeContext& c);
Status analyze_reciprocal(NodeContext& c);
Status analyze_floor(NodeContext& c);
Status analyze_ceil(NodeContext& c);
Status analyze_leaky_relu(NodeContext& c);
Status analyze_elu(NodeContext& c);
Status analyze_selu(NodeContext& c);
Status analyze_softplus(NodeContext& c);
Status analyze_softsign(NodeContext& c);
Status analyze_gelu(NodeContext& c);
Status analyze_celu(NodeContext& c);
Status analyze_sin(NodeContext& c);
Status analyze_cos(NodeContext& c);
Status analyze_tan(NodeContext& c);
Status analyze_asin(NodeContext& c);
Status analyze_acos(NodeContext& c);
Status analyze_atan(NodeContext& c);
Status analyze_sinh(NodeContext& c);
Status analyze_cosh(NodeContext& c);
Status analyze_asinh(NodeContext& c);
Status analyze_acosh(NodeContext& c);
Status analyze_atanh(NodeContext& c);
Status analyze_sign(NodeContext& c);
Status analyze_round(NodeContext& c);
Status analyze_thresholded_relu(NodeContext& c);
Status analyze_shrink(NodeContext& c);
Status analyze_is_nan(NodeContext& c);
Status analyze_is_inf(NodeContext& c);
Status analyze_size(NodeContext& c);
Status analyze_mod(NodeContext& c);
Status analyze_global_max_pool(NodeContext& c);
Status analyze_pow(NodeContext& c);
Status analyze_prelu(NodeContext& c);
Status analyze_einsum(NodeContext& c);
Status analyze_sum(NodeContext& c);
Status analyze_mean(NodeContext& c);
Status analyze_max(NodeContext& c);
Status analyze_min(NodeContext& c);

Status analyze_reduce_sum(NodeContext& c);
Status analyze_reduce_mean(NodeContext& c);
Status analyze_reduce_max(NodeContext& c);
Status analyze_reduce_min(NodeContext& c);
Status analyze_reduce_prod(NodeContext& c);
Status analyze_reduce_l1(NodeContext& c);
Status analyze_reduce_l2(NodeContext& c);
Status analyze_reduce_log_sum(NodeContext& c);
Status analyze_reduce_log_sum_exp(NodeContext& c);
Status analyze_reduce_sum_square(NodeContext& c);
Status analyze_arg_max(NodeContext& c);
Status analyze_arg_min(NodeContext& c);
Status analyze_layer_normalization(NodeContext& c);
Status analyze_instance_normalization(NodeContext& c);
Status analyze_log_softmax(NodeContext& c);

Status analyze_conv_transpose(NodeContext& c);
Status analyze_resize(NodeContext& c);
Status analyze_upsample(NodeContext& c);

/// Int64 Add/Sub/Mul/Div (shape arithmetic, folded at build): called by the float analyzers
/// when both operands are int64.
Status bind_binary_i64(NodeContext& c, int op /* ref::Binary2Op */, const ir::Shape& a, const ir::Shape& b);

}  // namespace ws::engine::ext
