#!/bin/bash
# Every example the user is shown runs as written (ctest `examples.run_as_written`): the
# "Examples:" of each command's --help (and so of the man page), and each fenced block of
# README.md and docs/*.md whose info string is `sh runnable`. They run from a scratch folder
# (one per command, one per block) that sees the source tree's scenarios/, tests/ and validation/, with the built fabricsim first
# on PATH; a failing one prints its command and output.
# Usage: test-examples.sh BUILD_DIR SOURCE_DIR
set -u
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PATH="$build:$PATH"
status=0
count=0
run_one() {  # NAME SCRIPT
  local dir
  dir=$(mktemp -d "$tmp/ex.XXXX")
  for d in scenarios tests validation docs; do ln -s "$src/$d" "$dir/$d"; done
  if ! (cd "$dir" && bash -e -o pipefail -c "$2") > "$dir/log" 2>&1; then
    echo "FAILED: $1:"
    echo "$2" | sed 's/^/    /'
    tail -20 "$dir/log" | sed 's/^/  | /'
    status=1
  fi
  count=$((count + 1))
}

commands=$(fabricsim --help | sed -n '/^Subcommands:/,$p' | tail -n +2 | awk '{print $1}')
[ -n "$commands" ] || { echo "no commands in fabricsim --help"; exit 1; }
for c in $commands; do
  examples=$(fabricsim "$c" --help | sed -n '/^Examples:/,$p' | tail -n +2 | sed 's/^  //')
  [ -n "$examples" ] || { echo "FAILED: fabricsim $c --help shows no examples"; status=1; continue; }
  # A command's examples run in order in one folder (a later one may read what an earlier wrote).
  run_one "fabricsim $c --help" "$examples"
done

for md in "$src/README.md" "$src"/docs/*.md; do
  block=""
  inside=0
  start=0
  n=0
  while IFS= read -r line; do
    n=$((n + 1))
    if [ $inside -eq 0 ] && [ "$line" = '```sh runnable' ]; then
      inside=1; block=""; start=$n
    elif [ $inside -eq 1 ] && [ "$line" = '```' ]; then
      inside=0
      run_one "${md#"$src"/}:$start" "$block"
    elif [ $inside -eq 1 ]; then
      block+="$line"$'\n'
    fi
  done < "$md"
done
echo "$count examples run"
exit $status
