#!/bin/sh
# The install rules and the .deb (ctest `install.prefix_and_deb`): `cmake --install` into a
# fresh prefix gives a binary that runs the installed scenarios, its man page and completion;
# `cpack -G DEB` gives a package holding the same files, with its library dependencies.
# Usage: test-install.sh BUILD_DIR
set -eu
build=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log"
p=$tmp/prefix
"$p/bin/fabricsim" --version | grep -q '^fabricsim [0-9.]* (git '
"$p/bin/fabricsim" check "$p/share/fabricsim/scenarios/default.toml" | grep -q 'is valid'
"$p/bin/fabricsim" check "$p/share/fabricsim/scenarios/fat-tree-256/roce-400g-2to1-rail.toml" \
  | grep -q 'is valid'  # an `extends` chain resolves inside the installed tree
grep -q '^\.TH FABRICSIM 1' "$p/share/man/man1/fabricsim.1"
grep -q 'complete -o default -F _fabricsim fabricsim' \
  "$p/share/bash-completion/completions/fabricsim"
test -f "$p/share/doc/fabricsim/README.md"
(cd "$build" && cpack -G DEB -B "$tmp/deb" > "$tmp/cpack.log") || { cat "$tmp/cpack.log"; exit 1; }
deb=$(ls "$tmp"/deb/fabricsim_*.deb)
dpkg-deb -c "$deb" > "$tmp/contents"
for f in ./usr/bin/fabricsim ./usr/share/man/man1/fabricsim.1 \
         ./usr/share/fabricsim/scenarios/default.toml; do
  grep -q " $f\$" "$tmp/contents" || { echo "missing in the .deb: $f"; cat "$tmp/contents"; exit 1; }
done
dpkg-deb -f "$deb" Depends | grep -q 'libfmt' || { dpkg-deb -f "$deb" Depends; exit 1; }
echo "install and .deb: ok ($(basename "$deb"))"
