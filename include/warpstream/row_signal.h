#pragma once
/// \file row_signal.h
/// Row-by-row hand-off of one tensor between a producer kernel and the consumer kernel that runs at the same time
/// (a wavefront): the lanes' preprocess publishes each row of the network input as it is written, and the network's
/// first convolution starts on the rows that are ready while the rest of the frame still crosses PCIe
/// (docs/lanes-plan.md, lever (a); measured in experiments/wavefront_00_rows.cu). Measured slower than the plain form
/// on an H100 (device runs 90–91: EfficientNet-Lite0 GPU p50 +11 µs with a mapped 1080p frame): every row of a frame
/// crosses PCIe within the preprocess's last ~10 µs, so there are no early rows to start on; the lanes keep it opt-in.
///
/// Protocol (all words in device memory, owned by one execution context, so one lane):
///   - `epoch` counts frames. Producer and consumer read it when they start; the frame's *last* kernel (the lanes'
///     Top-K, which runs only after both have completed) adds 1. Nothing is reset between frames.
///   - `flags[r]` (r < rows, rows = the tensor's H) is stored as epoch + 1 by the producer once row r of the frame is in
///     memory: the block's stores, then __syncthreads, __threadfence and st.release.gpu by one thread.
///   - A consumer block reads row r only after it has seen flags[r] == epoch + 1 (ld.acquire.gpu by one thread, then
///     __syncthreads), and reads it through L2 (never the read-only path: the producer is still running).
///   - A producer whose rows are written by several blocks (the network's own steps: the RGB stem publishing its output
///     rows to the next conv) counts them in `counters[r]`: after each of its pieces of row r is stored (a tile of the
///     stem: barrier, __threadfence), a block adds 1; the add that completes the row's count of pieces (tiles × channel
///     groups for the stem) resets the counter to 0 and stores the flag as above (the CUDA programming guide's
///     last-block pattern, "Memory Fence Functions"). Counters are 0 between frames; the producer alone touches them.
///   - A consumer that waits longer than ~kRowWaitMaxPolls polls gives up, stores 1 to `error`, and goes on (a bug, never
///     a hang); the frame's last kernel reports it (the lanes' Top-K marks the frame's result invalid) and clears it.
/// Deadlock freedom: the consumer is launched with programmatic dependent launch after a producer that triggers its
/// dependents at block start, so every producer block has started before any consumer block waits; a consumer block
/// waits only on producer blocks. Without PDL (below compute capability 9.0, or PDL off) the consumer starts after the
/// producer has finished, and finds every flag set.
/// Chains: a consumer may publish its own output rows on a second signal (same epoch and error words) for the step
/// after it, if it also triggers its dependents at block start and ends with griddepcontrol.wait (so its completion
/// still implies its producer's); the engine chains the stem and the depthwise→pointwise conv after it.
/// Units: rows of the tensor's H axis (NCHW: a row of every channel plane; N must be 1).

#include <cstdint>

namespace ws {

struct RowSignal {
  uint32_t* flags = nullptr;  ///< [rows] device words
  uint32_t* epoch = nullptr;  ///< one device word: the frame counter
  uint32_t* error = nullptr;  ///< one device word: nonzero once a wait gave up
  int64_t rows = 0;           ///< H of the tensor
  /// [rows] device words, 0 between frames: per-row arrivals of pieces, for a producer that writes a row in several
  /// pieces (the engine's stem publishing its output rows: tiles × channel groups); nullptr for one that writes each row
  /// from one block (the lanes' preprocess).
  uint32_t* counters = nullptr;
  /// Whether the signal is in use (a default-constructed one is not: producer and consumer run in stream order).
  explicit operator bool() const { return flags != nullptr; }
};

/// Polls before a consumer's wait gives up. Each poll is an L2 round trip (~0.5 µs) plus a __nanosleep(100) (0–200 ns,
/// PTX ISA): about 2–3 s in all, far above any frame (~0.1 ms; ~10 ms under compute-sanitizer).
inline constexpr uint32_t kRowWaitMaxPolls = 1u << 22;

}  // namespace ws
