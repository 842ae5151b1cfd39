#!/usr/bin/env bash
# Runs the peer bench (benches/peers.rs) and writes its table into
# docs/performance.md between the `<!-- peers:begin -->` and `<!-- peers:end -->` markers, with
# the machine and the date it was measured on.
#
#   bash scripts/peers-table.sh            # run the bench, update docs/performance.md
#   bash scripts/peers-table.sh OUTPUT     # use a saved `cargo bench --bench peers` output
#
# The JDK 25 row needs a JDK with javac (scripts/find-jdk.sh's search).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [[ $# -ge 1 ]]; then
    out=$(cat "$1")
else
    FLIGHTREC_JDK=${FLIGHTREC_JDK:-$(bash scripts/find-jdk.sh)}
    export FLIGHTREC_JDK
    out=$(cargo bench --bench peers 2>/dev/null)
fi

table=$(printf '%s\n' "$out" | sed -n '/^peers table begin$/,/^peers table end$/p' | sed '1d;$d')
if [[ -z $table ]]; then
    echo "peers-table: no table in the bench output" >&2
    exit 1
fi
summary=$(printf '%s\n' "$out" | grep '^peers summary: ' | tail -n 1)
cpu=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
machine="${cpu:-unknown CPU}, $(nproc) cores, $(uname -sr)"
when=$(date -u +%Y-%m-%d)

block=$(mktemp)
trap 'rm -f "$block"' EXIT
{
    echo "<!-- peers:begin -->"
    echo "Measured $when on $machine by \`bash scripts/peers-table.sh\`:"
    echo
    printf '%s\n' "$table"
    echo
    echo "\`${summary}\`"
    echo "<!-- peers:end -->"
} >"$block"

page=docs/performance.md
if ! grep -q '^<!-- peers:begin -->$' "$page"; then
    echo "peers-table: $page has no <!-- peers:begin --> marker" >&2
    exit 1
fi
awk -v block="$block" '
    /^<!-- peers:begin -->$/ { while ((getline line < block) > 0) print line; skip = 1; next }
    /^<!-- peers:end -->$/ { skip = 0; next }
    !skip { print }
' "$page" >"$page.new"
mv "$page.new" "$page"
echo "peers-table: $page updated ($when, $machine)"
