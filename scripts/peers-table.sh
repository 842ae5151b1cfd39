#!/usr/bin/env bash
# Runs the peer bench (benches/peers.rs) and writes its table into
# docs/performance.md between the `<!-- peers:begin -->` and `<!-- peers:end -->` markers, with
# the machine and the date it was measured on.
#
#   bash scripts/peers-table.sh            # run the bench, update docs/performance.md
#   bash scripts/peers-table.sh OUTPUT...  # use saved `cargo bench --bench peers` outputs
#
# The bench runs PEERS_RUNS times (5 unless set); the table is that of the
# run whose commit/rdtsc ratio is the median, and a line under it gives
# every run's commit, end-to-end and disabled-commit figures and their
# medians (one run's medians of paired rounds still move with the host's
# load from run to run). Where valgrind is installed it also counts the
# instructions of one commit (scripts/callgrind-commit.sh). The JDK 25 row
# needs a JDK with javac (scripts/find-jdk.sh's search).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

outs=()
cleanup() { rm -f "${outs[@]}"; }
trap cleanup EXIT
if [[ $# -ge 1 ]]; then
    for f in "$@"; do
        t=$(mktemp)
        cp "$f" "$t"
        outs+=("$t")
    done
else
    FLIGHTREC_JDK=${FLIGHTREC_JDK:-$(bash scripts/find-jdk.sh)}
    export FLIGHTREC_JDK
    cargo bench --bench peers --no-run 2>/dev/null
    for ((i = 0; i < ${PEERS_RUNS:-5}; i++)); do
        t=$(mktemp)
        outs+=("$t")
        cargo bench --bench peers 2>/dev/null >"$t"
    done
fi
# The median run (by commit/rdtsc), and the runs' figures.
picked=$(python3 - "${outs[@]}" <<'PY'
import json, statistics, sys
runs = []
for path in sys.argv[1:]:
    text = open(path).read()
    line = [l for l in text.splitlines() if l.startswith("peers summary: ")]
    if line:
        runs.append((json.loads(line[-1].split(": ", 1)[1]), path))
if not runs:
    sys.exit(1)
runs.sort(key=lambda r: r[0]["flightrec_over_rdtsc"])
median_run = runs[(len(runs) - 1) // 2][1]
def figures(key, fmt):
    values = [r[0][key] for r in runs if r[0].get(key) is not None]
    return "median " + fmt.format(statistics.median(values)) + " (" + ", ".join(fmt.format(v) for v in sorted(values)) + ")"
print(median_run)
print(
    f"Over {len(runs)} runs: commit/rdtsc {figures('flightrec_over_rdtsc', '{:.3f}')}; "
    f"end to end/rdtsc {figures('end_to_end_over_rdtsc', '{:.3f}')}; "
    f"disabled commit ns {figures('disabled_ns', '{:.2f}')}."
)
PY
) || { echo "peers-table: no summary in the bench output" >&2; exit 1; }
out=$(cat "$(printf '%s\n' "$picked" | head -n 1)")
over_runs=$(printf '%s\n' "$picked" | sed -n 2p)
instructions=""
if command -v valgrind >/dev/null && [[ $# -eq 0 ]]; then
    instructions=$(bash scripts/callgrind-commit.sh 2>/dev/null | sed -n 's/^rust: //p')
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
    echo "$over_runs"
    if [[ -n $instructions ]]; then
        echo "The derive commit of \`c_commit\` (callgrind, \`scripts/callgrind-commit.sh\`): $instructions."
    fi
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
