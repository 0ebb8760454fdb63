#!/usr/bin/env bash
# Runs each fuzz target for a bounded time on a corpus seeded from scenarios/ and tests/.
# A crash leaves its input in fuzz-corpus/crashes/; turn it into a regression file under
# tests/regressions/ (the scenario tests load every file there and expect a clean error).
set -euo pipefail
build=${1:-build-fuzz}
seconds=${2:-60}
formats="nccl_tests perftest nvidia_smi ethtool nccl_log nccl_xml harness_json"
mkdir -p fuzz-corpus/scenario fuzz-corpus/units fuzz-corpus/crashes
for f in $formats; do mkdir -p "fuzz-corpus/$f"; done
cp tests/data/validation/nccl_tests_* fuzz-corpus/nccl_tests/
cp tests/data/validation/ib_* fuzz-corpus/perftest/
cp tests/data/validation/nvidia_smi_* fuzz-corpus/nvidia_smi/
cp tests/data/validation/ethtool_* fuzz-corpus/ethtool/
cp tests/data/validation/nccl_debug* fuzz-corpus/nccl_log/
cp tests/data/validation/*.json tests/data/golden_results.json fuzz-corpus/harness_json/
find scenarios tests/data -name '*.xml' -exec cp {} fuzz-corpus/nccl_xml/ \;
cp scenarios/*.toml tests/data/*.toml tests/regressions/*.toml fuzz-corpus/scenario/ 2>/dev/null || true
printf '1.2us' > fuzz-corpus/units/a; printf '64KiB' > fuzz-corpus/units/b
printf '450GB/s' > fuzz-corpus/units/c; printf '2e-3ms' > fuzz-corpus/units/d
for t in scenario units $formats; do
  echo "fuzz_$t: ${seconds}s"
  "$build/fuzz/fuzz_$t" -max_total_time="$seconds" -artifact_prefix=fuzz-corpus/crashes/ \
    -print_final_stats=1 "fuzz-corpus/$t" 2>&1 | grep -E "^(stat::number_of_executed_units|#[0-9]+ +DONE)|ERROR|SUMMARY" || true
  if ls fuzz-corpus/crashes/* >/dev/null 2>&1; then echo "fuzz_$t found a crash: see fuzz-corpus/crashes/" >&2; exit 1; fi
done
