#!/usr/bin/env bash
# Makes docs/images/report.png, the report shown in README.md: records the
# `cpu_profile` example for 5 s, writes its report with `flightrec report`
# and renders the page in headless Chromium, 1,400 px wide and 2,400 tall (the overview, findings, heatmap and flame graph).
#
#     bash scripts/report-screenshot.sh [OUT.png]
#
# Needs Debian's chromium (installed here if missing, as scripts/test.sh
# does); no JDK.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/images/report.png}
if ! command -v chromium >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
cargo build --release -p flightrec-cli --bin flightrec
cargo build --release --example cpu_profile
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
target/release/examples/cpu_profile --out "$work/cpu.jfr" --seconds 5 >/dev/null
target/release/flightrec report "$work/cpu.jfr" -o "$work/report.html"
chromium --headless --no-sandbox --disable-gpu --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --hide-scrollbars --window-size=1400,2400 \
    --run-all-compositor-stages-before-draw --virtual-time-budget=10000 \
    --user-data-dir="$work/profile" \
    --screenshot="$PWD/$out" "file://$work/report.html" 2>/dev/null
echo "wrote $out from the report of cpu_profile ($(du -h "$work/report.html" | cut -f1) of HTML)"
