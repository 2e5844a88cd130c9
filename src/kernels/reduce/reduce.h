#pragma once
/// \file reduce.h
/// Host-only launchers of the CUDA executor's row kernels (src/kernels/reduce/reduce.cu). Every one views
/// its input as [outer, len, inner] (row-major, contiguous) and works on the middle axis:
///  - reduce: y[o, i] = R_l x[o, l, i] for Sum, Mean, Max, Min, Prod, L1, L2, SumSquare, LogSum (ONNX Reduce*-13/18
///    over a contiguous block of axes; the executor flattens the block into `len`). Empty rows (len 0) give
///    the identity: 0, NaN for Mean, −inf for Max, +inf for Min, 1 for Prod.
///  - log_softmax: y = x − max − log Σ e^(x − max) along the middle axis (LogSoftmax-13); hardmax (Hardmax-13).
///  - row_norm: LayerNormalization-17 / InstanceNormalization-6 over rows of `len` values (inner = 1):
///    y = (x − mean)/√(var + eps)·scale + bias, var the biased variance.
/// Element type float32 or float16 storage, float32 arithmetic. All launchers enqueue on `stream`, allocate
/// nothing, synchronise nothing and are capturable. Errors: kUnsupported for another element type,
/// kInvalidArgument for negative dims.

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/elementwise/elementwise.h"

namespace ws::kernels {

enum class ReduceKind { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kSumSquare, kLogSum };

Status reduce(ElemType t, ReduceKind k, const void* x, void* y, int64_t outer, int64_t len, int64_t inner, cudaStream_t stream);

Status log_softmax(ElemType t, const void* x, void* y, int64_t outer, int64_t len, int64_t inner, cudaStream_t stream);

/// ArgMax / ArgMin along the middle axis of x [outer, len, inner] (float32 or float16): y int64 [outer, inner], the
/// index of the first extreme of each row (the last one with `last`: select_last_index). len >= 1.
Status arg_extreme(ElemType t, const void* x, int64_t* y, int64_t outer, int64_t len, int64_t inner, bool is_min, bool last,
                   cudaStream_t stream);
/// Hardmax-13 along the middle axis: 1 at the first maximum of each row, 0 elsewhere.
Status hardmax(ElemType t, const void* x, void* y, int64_t outer, int64_t len, int64_t inner, cudaStream_t stream);

/// rows × len values. channels == 0 (LayerNormalization): scale[j] / bias[j] per column j < len;
/// channels > 0 (InstanceNormalization): scale[r % channels] / bias[r % channels] per row r. scale and
/// bias are device arrays in the element type `t`; bias may be nullptr (0). mean_out / inv_std_out (nullable,
/// element type `t`, `rows` values): each row's mean and 1/√(var + eps) (LayerNormalization's optional outputs).
Status row_norm(ElemType t, const void* x, void* y, const void* scale, const void* bias, int64_t rows, int64_t len,
                int64_t channels, float epsilon, cudaStream_t stream, void* mean_out = nullptr, void* inv_std_out = nullptr);

}  // namespace ws::kernels
