#pragma once
/// \file lanes.h
/// The latency rail: a Pipeline of N preallocated lanes built from one CudaEngine (host-only header).
///
///   producer RGB8 ──► input(lane)   (mapped pinned slot; or pinned slot + copy; or a device pointer)
///     submit(lane):  record start event ─► graph launch (or direct enqueue) ─► record end event
///       graph = [memcpy H2D (copy mode)] ─► preprocess_rgb8_to_nchw ─► ExecutionContext::enqueue ─► topk
///               (preprocess_rgb8_to_nhwc8 instead when the engine takes its input in TensorFormat::kHWC8:
///               CudaBuildOptions::hwc8_input_port; the preprocess then writes fp16 [1, H, W, 8], channels 3..7 zero,
///               and the engine runs no reformat of it)
///     wait(lane):    end event sync ─► span<const TopKEntry> read from the mapped result slot
///     armed_launch:  acquire enqueues [doorbell wait ─► start event ─► graph ─► end event]; submit rings the doorbell
///
/// Everything that allocates, chooses or may fail for a reason other than misuse happens in
/// Pipeline::build: per lane one ExecutionContext (its own arena; its input tensor is the lane's device
/// input tensor, its output the lane's device logits), a non-blocking stream, two timing events, the
/// input slot, the mapped result slot (K pairs) and — in graph mode — one instantiated CUDA Graph,
/// captured (cudaStreamCaptureModeThreadLocal) after one warm direct enqueue has run every kernel once
/// (latency-anchors C1: a fresh context's first enqueue may do work that is illegal under capture;
/// C6: lazily loaded modules must be loaded before capture). try_acquire / submit / wait / release
/// allocate nothing (host heap or CUDA), which tests/gpu/lanes_zero_alloc_test.cpp proves.
///
/// Lane state machine:  Free ─try_acquire/acquire─► Acquired ─submit─► Submitted ─wait─► Completed
///                      ─release─► Free.  (release is also accepted from Acquired: a frame abandoned
///                      before submit.) Every other transition is refused with kFailedPrecondition and
///                      changes nothing. A Lane handle carries a generation, so a handle kept after its
///                      release (released twice, or used after the lane was re-acquired) is refused too.
/// Backpressure: try_acquire returns nothing when every lane is busy; there is no queue.
///
/// Source size: a CUDA Graph fixes the preprocess kernel's arguments, so the graph of every lane is
/// captured for one source size (PipelineOptions::src_width × src_height, which is also the input
/// slot's capacity). In graph mode submit() refuses any other size (kInvalidArgument); direct-enqueue
/// mode accepts any size whose pixels fit in the slot. To serve another size in graph mode build another
/// Pipeline from the same engine (cheap next to the engine build: contexts + one capture per lane);
/// LaneClassifier does exactly that when the image size changes. There is no run-time recapture.
///
/// Threads: try_acquire may be called from any thread (lock-free). The calls on one acquired lane
/// (input, submit, wait, release …) must come from one thread at a time — the lane's owner.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "warpstream/classification.h"
#include "warpstream/cuda_engine.h"
#include "warpstream/image.h"
#include "warpstream/status.h"

namespace ws {

/// Where a lane's preprocess reads the source frame from.
enum class LaneInput {
  kMapped,  ///< mapped pinned host slot (cudaHostAllocMapped); the kernel reads it over the bus (zero-copy)
  kCopy,    ///< pinned host slot; cudaMemcpyAsync (inside the graph) into a preallocated device buffer
  kDevice,  ///< a device pointer the producer registered at build (PipelineOptions::device_inputs)
};
const char* lane_input_name(LaneInput mode);  ///< "mapped" / "copy" / "device"
/// Parses "mapped" / "copy" / "device". Errors: anything else (kInvalidArgument).
Result<LaneInput> parse_lane_input(std::string_view name);

struct PipelineOptions {
  int lanes = 2;                 ///< number of lanes, 1..64
  /// Source frame size the graphs are captured for; also the input slot's capacity (RGB8, tightly
  /// packed rows: 3 · src_width bytes per row). 1..kPreprocessMaxSrcExtent each.
  int64_t src_width = 0, src_height = 0;
  int k = 5;                     ///< Top-K pairs per frame, 1..min(32, classes)
  LaneInput input = LaneInput::kMapped;
  bool use_cuda_graph = true;    ///< false: submit() enqueues the stages directly (--no-cuda-graph)
  Normalize normalize;      ///< preprocess mean / inv_std (the model's sidecar, see classifier.h)
  /// kDevice only: one device pointer per lane (device memory holding RGB8 [src_height, src_width, 3]),
  /// owned by the producer, fixed at build and read by the captured graph. The producer must have
  /// finished writing it (e.g. synchronised its own stream) before submit(), and must not write it
  /// while the lane is Submitted (with armed_launch: write it before acquire, and keep it alive as long as the
  /// Pipeline; see armed_launch).
  std::vector<const void*> device_inputs;
  /// The input wavefront (warpstream/row_signal.h, docs/lanes-plan.md lever (a)): the preprocess publishes each row of
  /// the network input as it is written (its rows in order, on fewer blocks) and the network's first conv, launched
  /// early through programmatic dependent launch, starts on the rows already written while the rest of the frame still
  /// crosses PCIe. Same results, bit for bit. Applies where the preprocess takes its row-staged path (mapped or device
  /// input, not copy) into an NCHW input and the engine's first step is our RGB stem conv; elsewhere the lanes run the
  /// plain form and wavefront_state() says why. **Off by default: measured slower** (device runs 90–91, H100,
  /// EfficientNet-Lite0: GPU p50 +11 µs with a mapped 1080p frame, +14 µs with a device frame; docs/lanes-plan.md says
  /// why). Gains, if any, only with PDL (compute capability 9.0+). Where the engine's second
  /// step is our fused 3x3 depthwise->pointwise kernel on the stem's output (EfficientNet-Lite0), the chain goes one
  /// step further: the stem publishes its output rows and that step waits on them (ExecutionContext::
  /// enable_input_wavefront).
  bool input_wavefront = false;
  /// With input_wavefront: how many of the network's steps may wait on rows, 1 (the stem alone) or 2 (the chain; the
  /// default). For side-by-side measurements (`warpstream bench --input-wavefront-steps`). Checked by Pipeline::build
  /// whether or not input_wavefront is set: outside 1..2 is kInvalidArgument.
  int input_wavefront_steps = 2;
  /// Armed launch (graph mode only): the lane's frame is enqueued when the lane is acquired — a stream wait on the
  /// lane's doorbell (a 32-bit word in mapped pinned host memory; cuStreamWaitValue32, CU_STREAM_WAIT_VALUE_EQ), then
  /// the start event, the graph launch and the end event — and submit() only rings the doorbell (one host store after
  /// a full fence; on aarch64 also an outer-shareable store barrier). The graph launch's host time (~5 µs, with a tail
  /// of ~15 µs on a busy host: `enqueue_us` in `warpstream bench`) then runs while the producer writes the frame, not
  /// between the frame and its result; the GPU starts the frame when its front end sees the doorbell. Same graph, same
  /// results, bit for bit.
  /// Measured (device runs 104, 107, 108, H100, docs/lanes-plan.md): **no 1-lane gain** — submit drops from ~4.5 to
  /// 0.1 µs, but the GPU front end's poll of the doorbell costs what the launch did (ResNet-50 host p50 366.9 against
  /// 367.1 µs, frames/s −2 %); at 4 lanes +5 % frames/s on ResNet-50, −2…−5 % on EfficientNet-Lite0.
  /// Caveats, which is why it is off by default:
  ///   - between acquire and submit the lane's stream waits on the host: a cudaDeviceSynchronize (or a sync of that
  ///     stream) in that window waits for the submit, i.e. forever on a thread that would submit after it;
  ///   - a stream wait holds the hardware queue its stream is mapped to; once the process has more streams than
  ///     CUDA_DEVICE_MAX_CONNECTIONS (8 by default) — each lane has 2–3 (its own, its context's capture stream, the
  ///     auxiliary stream when the engine has one), and the libraries and the application add theirs — an unrelated
  ///     stream can share that queue and wait for the submit too. Build refuses more than 4 lanes (kInvalidArgument),
  ///     which narrows this but does not rule it out: submit soon after acquire, and never wait on other GPU work
  ///     between an acquire and its submit;
  ///   - a lane released without a submit is rung by release() (its graph runs once on the slot's bytes, the result
  ///     unread), so a Free lane never waits; the Pipeline's destructor rings a lane still Acquired the same way. Both
  ///     read the input: with LaneInput::kDevice the registered device buffers must outlive the Pipeline;
  ///   - with LaneInput::kDevice the frame's bytes must be in the device buffer before submit() as usual, and a copy
  ///     made between acquire and submit may itself wait behind the armed stream (previous caveat): write it before
  ///     acquire.
  /// A failed arm (a CUDA error in acquire) leaves the lane unarmed and submit() launches as usual; armed_failures()
  /// counts them. Errors at build: use_cuda_graph false, lanes > 4 (kInvalidArgument); the driver without stream memory
  /// operations on mapped host memory, or a doorbell round trip made at build not seen within 5 s (kUnsupported); a
  /// CUDA error of that round trip (kCuda).
  bool armed_launch = false;
};

/// Handle of an acquired lane: a plain value (index + generation), cheap to copy.
struct Lane {
  uint32_t index = 0;
  uint32_t generation = 0;
};

enum class LaneState : uint32_t { kFree = 0, kAcquired, kSubmitted, kCompleted };
const char* lane_state_name(LaneState s);  ///< "free" / "acquired" / "submitted" / "completed"

class Pipeline {
 public:
  /// Builds `options.lanes` lanes on `engine` (kept alive by the pipeline). The engine must have one
  /// input of logical shape [1, 3, H, W] — float32 or float16 in TensorFormat::kLinear (NCHW), or float16 in kHWC8
  /// (stored [1, H, W, 8]: an engine built with CudaBuildOptions::hwc8_input_port) — and one float32 output of
  /// `classes` elements.
  /// Call ws::cuda::init_device (cuda/device.h) before the engine is built (mapped memory needs the
  /// map-host flag before the context exists).
  /// Errors: bad options (kInvalidArgument: lanes, sizes, k, device_inputs count / null), an engine of
  /// the wrong shape, type or format (kUnsupported naming the input; e.g. a float32 kHWC8 input), CUDA failures
  /// incl. a failed capture (kCuda, names the stage).
  static Result<std::unique_ptr<Pipeline>> build(std::shared_ptr<CudaEngine> engine, const PipelineOptions& options);
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  /// A Free lane, now Acquired; nothing when every lane is busy (backpressure). Lock-free, except that with
  /// armed_launch the acquiring thread then enqueues the lane's frame behind its doorbell (driver calls: the graph
  /// launch's host time is spent here); a failure to arm leaves the lane unarmed and submit() launches as usual
  /// (armed_failures() counts them).
  std::optional<Lane> try_acquire();
  /// Acquires lane `index` specifically. Errors: index out of range (kInvalidArgument); the lane is
  /// busy (kFailedPrecondition, names its state).
  Result<Lane> acquire(size_t index);

  /// The lane's host input slot (src_width · src_height · 3 bytes) for the producer to fill while the
  /// lane is Acquired; empty for LaneInput::kDevice, for a handle that is not current, or a lane that
  /// is not Acquired.
  std::span<uint8_t> input(Lane lane);
  /// Device-visible address the lane's preprocess reads (mapped alias, device staging buffer, or the
  /// registered device pointer); nullptr for a stale handle.
  const void* device_input(Lane lane) const;

  /// Runs one frame of src_width × src_height pixels (rows tightly packed) on the lane.
  /// Errors: lane not Acquired / stale handle (kFailedPrecondition, nothing enqueued); a size other than
  /// the captured one in graph mode (kInvalidArgument), a frame larger than the slot (kResourceExhausted);
  /// a CUDA launch failure (kCuda; the lane stays Acquired). With input_wavefront: a frame wider than the row-staged
  /// preprocess takes (kPreprocessStagedMaxRowBytes / 3 pixels; kInvalidArgument, nothing enqueued); when the network's
  /// enqueue fails after the preprocess, the frame is still closed (its Top-K runs) before the error is returned.
  Status submit(Lane lane, int64_t src_width, int64_t src_height);
  /// Waits for the lane's end event and returns the K pairs (descending; ties → lower index) read from
  /// the mapped result slot; valid until release. Waiting again on a Completed lane returns the same
  /// pairs. Errors: lane never submitted / not current (kFailedPrecondition); kCuda from the device; kInternal when a step of the input wavefront gave up waiting for rows (no result for that frame).
  Result<std::span<const TopKEntry>> wait(Lane lane);
  /// GPU time of the lane's last frame (start → end event), milliseconds. Lane must be Completed.
  Result<float> gpu_time_ms(Lane lane) const;
  /// Copies the lane's device logits (classes() floats) to `out` (synchronous; for tests and reports,
  /// not the hot path). Lane must be Completed. Errors: out.size() != classes() (kInvalidArgument); kInternal for a
  /// frame whose input wavefront failed (see wait).
  Status copy_logits(Lane lane, std::span<float> out) const;
  /// Completed (or Acquired) → Free. With armed_launch, releasing an Acquired lane rings its doorbell (its graph runs once,
  /// unread). Errors: lane Free, Submitted (wait first) or handle stale.
  Status release(Lane lane);

  LaneState state(size_t index) const;
  size_t lane_count() const;
  int k() const { return options_.k; }
  int64_t classes() const { return classes_; }
  int64_t input_height() const { return in_h_; }
  int64_t input_width() const { return in_w_; }
  const PipelineOptions& options() const { return options_; }
  const CudaEngine& engine() const { return *engine_; }
  /// Bytes of the input slot (src_width · src_height · 3).
  size_t input_slot_bytes() const;
  /// PipelineOptions::input_wavefront as built: "on: 1 step waits on rows", "on: 2 steps wait on rows" (chained),
  /// "off: <why>", or "" when not asked for.
  const std::string& wavefront_state() const { return wavefront_note_; }
  /// With armed_launch: how many acquires could not arm their lane (a CUDA error while enqueuing; submit launched as
  /// usual for those frames). Always 0 without armed_launch.
  uint64_t armed_failures() const;

  struct LaneSlot;  // defined in src/lanes/pipeline.cpp

 private:
  Pipeline() = default;
  Status check(Lane lane, LaneState expected, const char* call) const;
  Status enqueue_frame(LaneSlot& slot, int64_t src_width, int64_t src_height);

  std::shared_ptr<CudaEngine> engine_;
  PipelineOptions options_;
  int64_t classes_ = 0, in_h_ = 0, in_w_ = 0;
  bool input_fp16_ = false;
  bool input_hwc8_ = false;  ///< the engine's input is TensorFormat::kHWC8: the NHWC8 preprocess writes it
  std::string wavefront_note_;
  void* wait_value32_ = nullptr;  ///< armed_launch: the driver's cuStreamWaitValue32 (cudaGetDriverEntryPointByVersion)
  std::vector<std::unique_ptr<LaneSlot>> lanes_;
  /// armed_launch: enqueues the lane's frame behind its doorbell; on failure the lane is left unarmed (rung if needed).
  Status arm(LaneSlot& slot);
  /// The lane just taken by a CAS (Free → Acquired): its next generation, armed with armed_launch; the handle.
  Lane acquired(LaneSlot& slot);
  std::atomic<uint64_t> armed_failures_{0};
};

/// Result of one LaneClassifier::classify call.
struct LaneClassification {
  std::vector<TopKEntry> top;
  float gpu_ms = 0;       ///< start → end event of the frame
  double wall_ms = 0;     ///< submit → wait returned, host clock
};

struct LaneClassifierOptions {
  CudaBuildOptions build;              ///< precision, device, timing cache
  LaneInput input = LaneInput::kMapped;
  bool use_cuda_graph = true;
  int k = 5;
  Normalize normalize;
  /// Fixed input shape at import (e.g. {1,3,224,224} for a symbolic batch); empty = as declared.
  ir::Shape input_shape;
};

/// `warpstream classify --device cuda`: one CudaEngine and a one-lane Pipeline, rebuilt (contexts +
/// capture, not the engine) whenever the source size changes. In kDevice mode it owns the device buffer
/// it registers, and uploads each image into it before submit (the producer's role).
class LaneClassifier {
 public:
  /// Calls ws::cuda::init_device(options.build.device) first, then imports and builds the model.
  static Result<std::unique_ptr<LaneClassifier>> build(const std::string& model_path, const LaneClassifierOptions& options);
  ~LaneClassifier();
  /// Errors: k out of range for the model, image empty, CUDA failures.
  Result<LaneClassification> classify(const ImageRgb8& image);
  const CudaEngine& engine() const { return *engine_; }
  int64_t classes() const;
  int64_t input_height() const;
  int64_t input_width() const;
  /// One line: "NVIDIA H200 (device 0, sm_90 …)" for the CLI.
  const std::string& device_description() const { return device_; }

 private:
  LaneClassifier() = default;
  std::shared_ptr<CudaEngine> engine_;
  LaneClassifierOptions options_;
  std::unique_ptr<Pipeline> pipeline_;
  struct DeviceFrame;
  std::unique_ptr<DeviceFrame> device_frame_;
  std::string device_;
};

/// OK when a CUDA device can be used; else the reason (for `--device auto`). Creates no context.
Status cuda_device_available();

}  // namespace ws
