#pragma once
/// \file einsum.h
/// Einsum (ONNX Einsum-12, https://onnx.ai/onnx/operators/onnx__Einsum.html, which follows numpy.einsum):
/// the equation parser both executors share, and the CPU reference kernel.
///
/// Equation grammar: `term ("," term)* ["->" term]`, a term being letters a-z / A-Z with at most one `...`;
/// spaces are ignored. Each letter is a label; `...` stands for the operand's dims not named by letters
/// (right-aligned across operands and broadcast numpy-style: a dim of 1 or a missing leading dim). Implicit
/// output (no `->`): the ellipsis dims, then every label used exactly once, in alphabetical order (numpy's
/// rule, upper case before lower case). A label repeated within one operand takes that operand's diagonal.
/// Labels absent from the output are summed over.
///
/// Errors (kInvalidModel, message naming the equation position or operand): a bad character, a second `...`,
/// a term count that differs from the operand count, a term whose letters outnumber its operand's rank, a label
/// whose extents disagree across operands other than by broadcasting from 1 (numpy broadcasts named labels and
/// ellipsis dims alike), a label repeated within one operand with two extents, an output label not in any input
/// or used twice, an ellipsis among the inputs but not in an explicit output.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "warpstream/status.h"

namespace ws::ref {

/// A resolved equation for operands of known shapes. Labels are numbered 0..sizes.size()-1 (ellipsis dims
/// get their own labels, before the letters); sizes are the broadcast extents.
struct EinsumSpec {
  std::vector<std::vector<int>> inputs;   ///< per operand, per dim: its label
  std::vector<int> output;                ///< per output dim: its label (no repeats)
  std::vector<int64_t> sizes;             ///< per label: its extent
  std::vector<std::string> names;         ///< per label: "a".."Z" or "...0", "...1" (messages)
  /// Per operand, per label: the label's stride in that operand, in elements (0 where the operand lacks the label
  /// or broadcasts it; a label repeated within one operand sums its strides: the diagonal).
  std::vector<std::vector<int64_t>> strides;
  std::vector<int64_t> output_shape() const;
  /// Multiply-adds of the direct evaluation (product of every label's extent), saturating at INT64_MAX.
  int64_t work() const;
};

/// Parses `equation` for operands of `shapes` (ranks <= 12). Errors as in the file comment.
Result<EinsumSpec> parse_einsum(const std::string& equation, const std::vector<std::vector<int64_t>>& shapes);

/// Direct evaluation: out[o] = sum over the labels not in the output of prod_k in_k[...]; accumulates in
/// double. T = float or double; `inputs` are dense row-major with the shapes the spec was parsed for. Does
/// not allocate.
template <typename T>
void einsum(const EinsumSpec& spec, std::span<const T* const> inputs, T* out);

}  // namespace ws::ref
