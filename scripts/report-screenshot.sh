#!/bin/sh
# Regenerates docs/report.png, the README's picture: the HTML report of `make run`'s comparison
# (the case study before and after its fixes), rendered by headless Chromium.
# Usage: scripts/report-screenshot.sh [BUILD_DIR]
set -eu
build=${1:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/fabricsim" compare scenarios/case-study-32gpu/before.toml \
  scenarios/case-study-32gpu/after.toml --html "$tmp/report.html" > /dev/null
chromium --headless=new --no-sandbox --disable-gpu --hide-scrollbars --window-size=1150,1100 \
  --screenshot="$tmp/report.png" "file://$tmp/report.html" 2> /dev/null
cp "$tmp/report.png" docs/report.png
echo "wrote docs/report.png"
