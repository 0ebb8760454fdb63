#!/usr/bin/env bash
# The harness on a machine with a GPU, in one go (what docs/validation.md records as "run on a
# GPU machine"): builds fabricsim-bench with nvcc alone (CUDA + NCCL only, so it works where
# the simulator's Debian packages are missing), runs a one-GPU sweep of every collective with
# --micro, an all-GPU sweep when there are more, and, when the simulator builds there too,
# calibrates on the one-GPU JSON.
#
#   validation/gpu-check.sh OUT_DIR [SCENARIO]     (SCENARIO default tests/data/calibration.toml)
#
# OUT_DIR receives: one-gpu/ (nccl-tests text and bench.json), all-gpus/ (the same), the
# logs, and calibrated.toml when the simulator was built. Exit status: the harness's (2: no
# GPU; 1: a CUDA/NCCL failure or wrong results).
set -uo pipefail
out=${1:?usage: gpu-check.sh OUT_DIR [SCENARIO]}
scenario=${2:-tests/data/calibration.toml}
cuda=${CUDA_HOME:-/usr/local/cuda}
build=${BUILD_DIR:-build-gpu}
mkdir -p "$out/one-gpu" "$out/all-gpus" "$build"
log() { echo "gpu-check: $*" | tee -a "$out/gpu-check.log" >&2; }

bench="$build/fabricsim-bench"
if ! "$cuda/bin/nvcc" -O2 -std=c++17 -arch=compute_80 -code=compute_80 \
    -I"$cuda/include" validation/harness/fabricsim_bench.cu -L"$cuda/lib64" -lnccl \
    -o "$bench" 2>"$out/nvcc.log"; then
  log "building fabricsim-bench failed: see $out/nvcc.log"
  exit 1
fi
"$bench" --probe | tee "$out/probe.txt" || { log "no GPU: see $out/probe.txt"; exit 2; }
gpus=$(grep -c '^GPU' "$out/probe.txt")

"$bench" -g 1 --op all -b 8 -e 256M -f 4 --micro --out-dir "$out/one-gpu" \
  --json "$out/one-gpu/bench.json" >"$out/one-gpu.log" 2>&1
rc=$?
log "one GPU: exit $rc; $(grep '^# micro' "$out/one-gpu.log" || echo 'no micro line')"
if [ "$gpus" -gt 1 ]; then
  "$bench" -g "$gpus" --op all -b 8 -e 1G -f 4 --out-dir "$out/all-gpus" \
    --json "$out/all-gpus/bench.json" >"$out/all-gpus.log" 2>&1
  log "$gpus GPUs: exit $?"
fi

# The simulator, where its packages are installed: calibrate on the JSON alone.
if cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >"$out/cmake.log" 2>&1 &&
  cmake --build "$build" --target fabricsim -j "$(nproc)" >>"$out/cmake.log" 2>&1; then
  mkdir -p "$out/json"
  cp "$out/one-gpu/bench.json" "$out/json/"
  "$build/fabricsim" calibrate --measurements "$out/json" --scenario "$scenario" \
    --out "$out/calibrated.toml" >"$out/calibrate.log" 2>&1
  log "fabricsim calibrate on the one-GPU JSON: exit $? (see $out/calibrate.log)"
else
  log "the simulator did not build here (see $out/cmake.log): calibrate $out/one-gpu elsewhere"
fi
exit $rc
