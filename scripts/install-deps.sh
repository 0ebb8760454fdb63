#!/usr/bin/env bash
# Installs the Debian packages fabricsim builds with, if any are missing.
# As root it runs apt-get; otherwise it prints the exact command and fails,
# so `make run` / `make test` never half-configure on a machine without them.
set -euo pipefail
pkgs=(cmake ninja-build g++ make pkg-config
      libboost-graph-dev libeigen3-dev libtomlplusplus-dev libcli11-dev
      libfmt-dev libgtest-dev libbenchmark-dev)
# Extra packages for optional targets (make fuzz) are passed as arguments.
pkgs+=("$@")
missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0
cmd="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "fabricsim: missing Debian packages: ${missing[*]}" >&2
  echo "fabricsim: run as root:  apt-get update && $cmd" >&2
  exit 1
fi
echo "fabricsim: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
