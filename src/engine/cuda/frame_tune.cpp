// The frame-level tactic check (CudaEngine::tune_frame; include/warpstream/cuda_engine.h FrameTuneOptions): the build
// times each step's tactics alone; this times the whole captured frame with one contested choice flipped at a time
// (a runner-up the timing cache recorded beside the winner, TimingEntry::alternatives) and keeps the flips that make
// the frame faster. Every engine here is built from an edited timing cache, so nothing is re-timed alone; the frames
// are timed as direct enqueue replays of each context's captured graph, alternating the two plans round by round.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include "cuda/cuda_util.h"
#include "engine/ir/timing_cache.h"
#include "warpstream/cuda_engine.h"

namespace ws {
namespace {

using ir::TimingCache;
using ir::TimingEntry;
using Clock = std::chrono::steady_clock;

// "ws_pointwise_32x32_split4", "cudnn:algo 1:fused", "cudnn_fe:algo 3", "unfused".
std::string tactic_key(const TimingEntry& e) {
  std::string k = e.impl.value_or("cudnn");
  if (e.algo) k += ":algo " + std::to_string(*e.algo);
  if (e.fused && *e.fused) k += ":fused";
  if (e.heuristic_index) k += ":heuristic " + std::to_string(*e.heuristic_index);
  return k;
}

// One built plan with a context whose inputs hold a fixed pattern, ready to time.
struct Plan {
  std::unique_ptr<CudaEngine> engine;
  std::unique_ptr<ExecutionContext> ctx;
  std::vector<std::string> choices;  // "node|op|choice" per tactic record: equal lists = the same plan
};

Result<Plan> make_plan(const ir::Graph& graph, const CudaBuildOptions& options, cudaStream_t stream) {
  Plan p;
  WS_ASSIGN_OR_RETURN(p.engine, CudaEngine::build(graph, options));
  WS_ASSIGN_OR_RETURN(p.ctx, p.engine->create_context());
  for (size_t i = 0; i < p.engine->num_inputs(); ++i) {  // float inputs ~1.06 (fp16) / ~0.0115 (fp32); others zero
    const TensorDesc& d = p.engine->input_desc(i);
    const bool floating = d.dtype == ir::DType::kFloat16 || d.dtype == ir::DType::kFloat32;
    WS_RETURN_IF_ERROR(cuda::fill_device(p.ctx->input(i), floating ? 0x3c : 0, d.bytes));
  }
  for (const TacticRecord& t : p.engine->tactics()) p.choices.push_back(t.node + "|" + t.op_type + "|" + t.choice);
  for (int k = 0; k < 3; ++k) WS_RETURN_IF_ERROR(p.ctx->enqueue(stream));  // launch, capture, first replay
  WS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  return p;
}

float median(std::vector<float> v) {
  if (v.empty()) return 0.0f;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

struct Timer {
  cudaStream_t stream;
  cuda::Event start, stop;
  // n frames of `p`, the host waiting for each (as a lane does): GPU µs per frame.
  Status frames(Plan& p, int n, std::vector<float>& us) {
    for (int i = 0; i < n; ++i) {
      WS_CUDA_RETURN_IF_ERROR(cudaEventRecord(start.get(), stream));
      WS_RETURN_IF_ERROR(p.ctx->enqueue(stream));
      WS_CUDA_RETURN_IF_ERROR(cudaEventRecord(stop.get(), stream));
      WS_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(stop.get()));
      float ms = 0;
      WS_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start.get(), stop.get()));
      us.push_back(ms * 1000.0f);
    }
    return Status::ok();
  }
};

struct Duel {
  float a_us = 0, b_us = 0;  // pooled medians
  int b_won = 0;             // rounds whose b median was lower
};

// a against b, `rounds` alternated rounds of `replays` frames each (a first in even rounds, b first in odd ones).
Result<Duel> duel(Timer& t, Plan& a, Plan& b, const FrameTuneOptions& o) {
  std::vector<float> all_a, all_b;
  Duel d;
  for (int r = 0; r < o.rounds; ++r) {
    std::vector<float> ra, rb;
    if (r % 2 == 0) {
      WS_RETURN_IF_ERROR(t.frames(a, o.replays, ra));
      WS_RETURN_IF_ERROR(t.frames(b, o.replays, rb));
    } else {
      WS_RETURN_IF_ERROR(t.frames(b, o.replays, rb));
      WS_RETURN_IF_ERROR(t.frames(a, o.replays, ra));
    }
    d.b_won += median(rb) < median(ra);
    all_a.insert(all_a.end(), ra.begin(), ra.end());
    all_b.insert(all_b.end(), rb.begin(), rb.end());
  }
  d.a_us = median(std::move(all_a));
  d.b_us = median(std::move(all_b));
  return d;
}

Status check_options(const CudaBuildOptions& options, const FrameTuneOptions& o) {
  if (options.timing_cache_path.empty())
    return invalid_argument("tune_frame: CudaBuildOptions::timing_cache_path is empty (the check edits the timing cache and keeps its "
                            "result there: give a cache file, e.g. bench --timing-cache FILE)");
  if (o.max_flips < 0 || o.max_flips > 256) return invalid_argument("FrameTuneOptions::max_flips = " + std::to_string(o.max_flips) + " (0..256)");
  if (!(o.max_gap >= 0.0f && o.max_gap <= 10.0f)) return invalid_argument("FrameTuneOptions::max_gap = " + std::to_string(o.max_gap) + " (0..10)");
  if (o.replays < 10 || o.replays > 10000) return invalid_argument("FrameTuneOptions::replays = " + std::to_string(o.replays) + " (10..10000)");
  if (o.rounds < 1 || o.rounds > 51 || o.rounds % 2 == 0)
    return invalid_argument("FrameTuneOptions::rounds = " + std::to_string(o.rounds) + " (odd, 1..51)");
  if (!(o.min_gain_us >= 0.0f && o.min_gain_us <= 1000.0f))
    return invalid_argument("FrameTuneOptions::min_gain_us = " + std::to_string(o.min_gain_us) + " (0..1000)");
  return Status::ok();
}

struct Candidate {
  std::string key;
  TimingEntry alt;  // the runner-up to try
  float gap = 0;    // (alt µs - chosen µs) / chosen µs
};

}  // namespace

Result<FrameTuneReport> CudaEngine::tune_frame(const ir::Graph& graph, const CudaBuildOptions& options, const FrameTuneOptions& o) {
  WS_RETURN_IF_ERROR(check_options(options, o));
  const auto t0 = Clock::now();
  FrameTuneReport rep;
  int caller_device = 0;  // put back on every return: the check must not move the caller's thread to options.device
  WS_CUDA_RETURN_IF_ERROR(cudaGetDevice(&caller_device));
  struct DeviceRestore {
    int d;
    ~DeviceRestore() { (void)cudaSetDevice(d); }
  } device_restore{caller_device};
  WS_CUDA_RETURN_IF_ERROR(cudaSetDevice(options.device));
  WS_ASSIGN_OR_RETURN(cuda::Stream stream, cuda::Stream::create());
  WS_ASSIGN_OR_RETURN(cuda::Event ev0, cuda::Event::create());
  WS_ASSIGN_OR_RETURN(cuda::Event ev1, cuda::Event::create());
  Timer timer{stream.get(), std::move(ev0), std::move(ev1)};
  const std::string path = options.timing_cache_path;
  // per process, so two checks on one cache (two processes) do not write each other's trial caches
  const std::string trial_path = path + ".tune." + std::to_string(::getpid()) + ".json";
  struct Cleanup {
    std::string p;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove(p, ec);
      std::filesystem::remove(p + ".lock", ec);
    }
  } cleanup{trial_path};

  WS_ASSIGN_OR_RETURN(Plan base, make_plan(graph, options, stream.get()));
  ++rep.builds;
  TimingCache cache = TimingCache::load_as_is(path);
  if (cache.origin() != TimingCache::Origin::kMatched)
    return invalid_argument("tune_frame: the timing cache '" + path + "' could not be read back after the build" +
                            (cache.warning().empty() ? std::string() : ": " + cache.warning()));
  rep.entries = cache.size();

  std::vector<Candidate> candidates;
  for (const auto& [key, e] : cache.entries())
    for (const TimingEntry& alt : e.alternatives) {
      const float gap = e.time_us > 0 ? (alt.time_us - e.time_us) / e.time_us : 0.0f;
      if (gap <= o.max_gap) candidates.push_back({key, alt, gap});
    }
  {
    std::vector<std::string> keys;
    for (const Candidate& c : candidates) keys.push_back(c.key);
    std::sort(keys.begin(), keys.end());
    rep.contested = static_cast<size_t>(std::unique(keys.begin(), keys.end()) - keys.begin());
  }
  std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) { return a.gap < b.gap; });
  if (candidates.size() > static_cast<size_t>(o.max_flips)) candidates.resize(static_cast<size_t>(o.max_flips));

  // Greedy: each flip is tried on top of the flips kept so far (`current`).
  Plan* current = &base;
  Plan kept_plan;
  for (const Candidate& cand : candidates) {
    FrameTuneFlip f;
    f.cache_key = cand.key;
    const TimingEntry* now = cache.find(cand.key);
    if (!now) continue;
    f.from = tactic_key(*now);
    f.to = tactic_key(cand.alt);
    f.from_us = now->time_us;
    f.to_us = cand.alt.time_us;
    if (f.from == f.to) {  // an earlier kept flip of this entry already chose it
      f.note = "already the choice";
      rep.flips.push_back(std::move(f));
      continue;
    }
    // The flipped entry: the runner-up as the choice, the old choice among its alternatives (fastest first).
    TimingEntry flipped = cand.alt;
    flipped.alternatives.clear();
    TimingEntry old = *now;
    old.alternatives.clear();
    flipped.alternatives.push_back(old);
    for (const TimingEntry& a : now->alternatives)
      if (tactic_key(a) != f.to) flipped.alternatives.push_back(a);
    std::stable_sort(flipped.alternatives.begin(), flipped.alternatives.end(),
                     [](const TimingEntry& a, const TimingEntry& b) { return a.time_us < b.time_us; });
    if (flipped.alternatives.size() > TimingCache::kMaxAlternatives) flipped.alternatives.resize(TimingCache::kMaxAlternatives);
    TimingCache trial = cache;
    trial.put(cand.key, flipped);
    WS_RETURN_IF_ERROR(trial.save(trial_path));
    CudaBuildOptions bo = options;
    bo.timing_cache_path = trial_path;
    auto built = make_plan(graph, bo, stream.get());
    ++rep.builds;
    if (!built) {
      f.note = "the flipped plan did not build: " + built.status().message();
      rep.flips.push_back(std::move(f));
      continue;
    }
    const TimingCache after = TimingCache::load_as_is(trial_path);
    const TimingEntry* used = after.find(cand.key);
    if (!used || tactic_key(*used) != f.to) {
      f.note = "the build could not use it and timed the node again";
      rep.flips.push_back(std::move(f));
      continue;
    }
    if (built->choices == current->choices) {
      f.note = "no effect on the plan (e.g. the step was absorbed by a fused kernel)";
      rep.flips.push_back(std::move(f));
      continue;
    }
    f.retimed_entries = after.size() > trial.size() ? static_cast<int>(after.size() - trial.size()) : 0;
    auto dueled = duel(timer, *current, *built, o);
    if (!dueled) {  // a failed frame: this flip is dropped; a sticky error ends the check (the flips kept so far are saved)
      f.note = "timing the flipped plan failed: " + dueled.status().message();
      rep.flips.push_back(std::move(f));
      (void)cudaGetLastError();
      if (cudaDeviceSynchronize() != cudaSuccess) {
        if (current != &base) (void)cache.save(path);
        return dueled.status();
      }
      continue;
    }
    const Duel& d = *dueled;
    f.frame_us = d.a_us;
    f.flipped_frame_us = d.b_us;
    f.rounds_won = d.b_won;
    f.kept = d.a_us - d.b_us >= o.min_gain_us && d.b_won * 2 > o.rounds;
    if (!f.kept) f.note = d.b_us >= d.a_us ? "the frame was not faster" : "the frame's gain was below min_gain_us or won too few rounds";
    if (f.kept) {
      cache = after;  // the trial cache as the build left it (the flip, and anything it re-timed)
      kept_plan.ctx.reset();  // the old kept plan's context before its engine
      kept_plan.engine.reset();
      kept_plan = std::move(*built);
      current = &kept_plan;
    }
    rep.flips.push_back(std::move(f));
  }

  // The kept plan against the build's own, once more; the cache keeps the faster.
  if (current != &base) {
    WS_ASSIGN_OR_RETURN(const Duel d, duel(timer, base, *current, o));
    rep.frame_before_us = d.a_us;
    rep.frame_after_us = d.b_us;
    rep.final_rounds_won = d.b_won;
    rep.reverted = !(d.b_us < d.a_us && d.b_won * 2 > o.rounds);
  } else {
    std::vector<float> us;
    for (int r = 0; r < o.rounds; ++r) WS_RETURN_IF_ERROR(timer.frames(base, o.replays, us));
    rep.frame_before_us = rep.frame_after_us = median(std::move(us));
  }
  if (current != &base && !rep.reverted) WS_RETURN_IF_ERROR(cache.save(path));  // reverted: the file is the build's, untouched
  rep.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return rep;
}

}  // namespace ws
