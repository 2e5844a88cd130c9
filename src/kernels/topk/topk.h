#pragma once
/// \file topk.h
/// Host-only launcher of the device Top-K over one logits vector (batch 1): the K largest, descending,
/// ties → lower index, NaN ranks as −∞ but a selected NaN keeps its NaN score — exactly
/// ws::ref::topk (src/reference/topk.cpp), bit for bit.

#include <cuda_runtime.h>

#include <cstdint>

#include "warpstream/row_signal.h"
#include "warpstream/status.h"

namespace ws::kernels {

/// One result entry; the same layout as ws::ref::TopKEntry (8 bytes: float score, int32 index).
struct TopKPair {
  float score;
  int32_t index;
};
static_assert(sizeof(TopKPair) == 8, "TopKPair must be {float, int32} with no padding");

inline constexpr int kTopKMax = 32;           ///< largest K (one warp holds the selection)
inline constexpr int kTopKBlockThreads = 256; ///< one block of 256 threads

/// Enqueue Top-K on `stream`: one 256-thread block; no allocation, no synchronisation, capturable.
///   logits: device-visible float32 [classes].
///   out:    device-visible pointer to K TopKPair (may be the device alias of mapped pinned host
///           memory: the host reads it after the stream / an event recorded after it has completed).
///           Only out[0..k) is written.
/// Errors (kInvalidArgument, nothing enqueued): k < 1, k > kTopKMax, k > classes, classes >= 2^31 − 1,
/// null pointer. kCuda: the launch failed.
/// `frame_end` (optional; the lanes' input wavefront, warpstream/row_signal.h): this kernel is the frame's last: it
/// bumps the signal's epoch, and when the error word is set (a wait of the frame gave up) writes every entry as
/// {NaN, kTopKInvalidIndex} and clears the word. Needs the epoch and error words (kInvalidArgument otherwise). A signal
/// without flags is off, as for the producer and the consumer: nothing is read or bumped.
Status topk(const float* logits, int64_t classes, int k, TopKPair* out, cudaStream_t stream, const RowSignal& frame_end = {});

/// The index of every entry of a frame whose input wavefront failed (topk's frame_end): never a class.
inline constexpr int32_t kTopKInvalidIndex = -1;

}  // namespace ws::kernels
