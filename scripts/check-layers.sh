#!/bin/sh
# Fails when a source file includes a header of a layer above its own (docs/design.md,
# "Folders"). Each layer may include itself and the layers listed for it.
set -eu
cd "$(dirname "$0")/.."
allowed() {
  case "$1" in
    sim) echo "sim fabricsim" ;;
    solver) echo "solver" ;;
    net) echo "sim net" ;;
    models) echo "sim net models" ;;
    topo) echo "sim net models topo" ;;
    fabric) echo "sim solver net models topo fabric" ;;
    scenario) echo "sim solver net models topo fabric scenario" ;;
    validation) echo "validation" ;;
    experiments) echo "sim solver net models topo fabric scenario validation experiments" ;;
    report) echo "sim solver net models topo fabric scenario validation experiments report fabricsim" ;;
    cli) echo "sim solver net models topo fabric scenario validation experiments report cli fabricsim" ;;
  esac
}
status=0
for layer in sim solver net models topo fabric scenario validation experiments report cli; do
  ok=$(allowed "$layer")
  for f in $(find "$layer" -name '*.hpp' -o -name '*.cpp' | grep -v '/harness/' | sort); do
    for inc in $(sed -n 's/^#include "\([a-z_]*\)\/.*"/\1/p' "$f"); do
      case " $ok " in
        *" $inc "*) ;;
        *) echo "$f includes $inc/: not allowed for layer $layer (allowed: $ok)"; status=1 ;;
      esac
    done
  done
done
exit $status
