#pragma once
/// \file einsum_lowering.h
/// Einsum as the batched GEMM it is (the rewrite ONNX Runtime's and TensorRT's einsum support also perform):
/// each Einsum node with one or two float32 operands becomes
///   per operand: ReduceSum over the labels only it has (keepdims 0), then
///   one operand: Transpose to the output order;
///   two operands A, B: Transpose A to [batch, left, contract] and B to [batch, contract, right], Reshape to
///   [nb, L, K] and [nb, K, R] (rank 2 for an operand whose batch dims are all 1: MatMul broadcasts it),
///   MatMul, Reshape to [batch..., left..., right...], Transpose to the output order
/// (batch = labels of A, B and the output; contract = A and B only; left = A and the output; right = B and the
/// output). Identity transposes and reshapes are not emitted. The nodes use the graph's opset (ReduceSum's axes as
/// an attribute before opset 13, an input from 13). Used by the CUDA executor, whose kernels are those ops; the
/// CPU executor evaluates Einsum directly (reference/einsum.h), so the two stay independent.
///
/// Left as Einsum, with the reason from einsum_lowering_refusal(): more than two operands, a label repeated within
/// one operand (a diagonal), a non-float32 operand, batch dims that broadcast only partly (some 1, some not).
#include <string>

#include "warpstream/graph.h"

namespace ws::ir {

/// Empty when `node` (an Einsum whose input shapes are known) lowers, else why not (for a refusal message).
std::string einsum_lowering_refusal(const Graph& g, const Node& node);

/// Rewrites every Einsum that lowers (shapes must be known: run after infer_shapes; run infer_shapes again after
/// it). Returns how many nodes were rewritten. Errors only for an equation analyze_node would refuse.
Result<int> lower_einsum(Graph& g);

}  // namespace ws::ir
