#!/usr/bin/env bash
# Gathers what `fabricsim calibrate / validate / diagnose` read, on one node of a real cluster,
# into one folder. Everything is optional: what is not installed is skipped, saying so.
#
#   validation/collect.sh OUT_DIR [--peer HOST] [--bench PATH] [--nccl-tests DIR] [-e MAXBYTES]
#                         [--mpi "MPIRUN ARGS"]
#
#   --peer HOST       also run fabricsim-verbs-bench, ib_write_bw and ib_write_lat against HOST
#                     (start the server sides there first: `fabricsim-verbs-bench --server`,
#                     `ib_write_bw -a --report_gbits`, `ib_write_lat -a`: every size, 2 B to
#                     8 MiB, for the NIC's message rate, overhead and link efficiency)
#   --bench PATH      fabricsim-bench (default: build/fabricsim-bench)
#   --nccl-tests DIR  folder of the nccl-tests binaries (default: on PATH)
#   -e MAXBYTES       largest collective size (default 1G)
#   --mpi "ARGS"      also run fabricsim-bench across nodes: `mpirun ARGS fabricsim-bench -g 1`
#                     (one process per GPU), e.g. --mpi "-np 16 -H node1:8,node2:8"; its files
#                     are saved as mpi-OP_perf.txt and fabricsim-bench-mpi.json
# For multi-node nccl-tests run them under mpirun yourself and save their output into the
# same folder (any file name; fabricsim recognises the format).
set -uo pipefail
out=${1:?usage: collect.sh OUT_DIR [--peer HOST] [--bench PATH] [--nccl-tests DIR] [-e MAXBYTES]}
shift
peer="" bench="build/fabricsim-bench" ntdir="" maxbytes="1G" mpi=""
while [ $# -gt 0 ]; do
  case "$1" in
    --peer) peer=$2; shift 2 ;;
    --bench) bench=$2; shift 2 ;;
    --nccl-tests) ntdir=$2/; shift 2 ;;
    -e) maxbytes=$2; shift 2 ;;
    --mpi) mpi=$2; shift 2 ;;
    *) echo "collect.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
note() { echo "collect.sh: $*" | tee -a "$out/collect.log" >&2; }
have() { command -v "$1" >/dev/null 2>&1; }

if have nvidia-smi; then
  nvidia-smi topo -m >"$out/nvidia-smi-topo.txt" 2>&1 || note "nvidia-smi topo -m failed"
  nvidia-smi -q >"$out/nvidia-smi-q.txt" 2>&1 || true
else
  note "no nvidia-smi: skipping the topology matrix"
fi

if [ -x "$bench" ]; then
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH,TUNING "$bench" --op all -b 8 -e "$maxbytes" -f 2 \
    --micro --out-dir "$out" --json "$out/fabricsim-bench.json" >/dev/null 2>"$out/nccl-debug.log" ||
    note "fabricsim-bench failed: see $out/nccl-debug.log"
else
  note "no fabricsim-bench at $bench (build it where CUDA and NCCL are installed): skipped"
fi

if [ -n "$mpi" ] && [ -x "$bench" ]; then
  if have mpirun; then
    tmp="$out/.mpi"
    mkdir -p "$tmp"
    # shellcheck disable=SC2086  # the user's mpirun arguments, split as they typed them
    mpirun $mpi "$bench" -g 1 --op all -b 8 -e "$maxbytes" -f 2 --out-dir "$tmp" \
      --json "$out/fabricsim-bench-mpi.json" >/dev/null 2>"$out/mpi.log" ||
      note "mpirun fabricsim-bench failed (was it built with MPI?): see $out/mpi.log"
    for f in "$tmp"/*; do [ -e "$f" ] && mv "$f" "$out/mpi-$(basename "$f")"; done
    rmdir "$tmp"
  else
    note "no mpirun: skipping the multi-node fabricsim-bench run"
  fi
fi

for t in all_reduce_perf all_gather_perf reduce_scatter_perf alltoall_perf; do
  if have "${ntdir}$t"; then
    "${ntdir}$t" -b 8 -e "$maxbytes" -f 2 -g "$(nvidia-smi -L 2>/dev/null | wc -l)" \
      >"$out/nccl-tests-$t.txt" 2>&1 || note "$t failed"
  else
    note "no nccl-tests $t: skipped"
  fi
done

if [ -n "$peer" ]; then
  verbs="$(dirname "$bench")/fabricsim-verbs-bench"
  if [ -x "$verbs" ]; then  # needs `fabricsim-verbs-bench --server` running on the peer
    "$verbs" --client "$peer" -s 1048576 -n 5000 >"$out/verbs-write-bw.txt" 2>&1 ||
      note "fabricsim-verbs-bench failed (is the --server side running on $peer?)"
  fi
  if have ib_write_bw; then
    ib_write_bw -a --report_gbits "$peer" >"$out/ib_write_bw.txt" 2>&1 || note "ib_write_bw failed"
    ib_write_lat -a "$peer" >"$out/ib_write_lat.txt" 2>&1 || note "ib_write_lat failed"
  else
    note "no perftest (ib_write_bw): skipped"
  fi
fi

if have ethtool; then
  for dev in /sys/class/infiniband/*/device/net/*; do
    [ -e "$dev" ] || continue
    netdev=$(basename "$dev")
    ethtool -S "$netdev" >"$out/ethtool-$netdev.txt" 2>&1 || note "ethtool -S $netdev failed"
  done
fi
echo "collected into $out; next: fabricsim calibrate --measurements $out --scenario YOUR.toml"
