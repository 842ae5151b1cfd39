#!/usr/bin/env bash
# Instructions per commit of the C ABI and of the Rust derive path, counted
# by callgrind (robust on a loaded machine, unlike time): each path runs
# with two iteration counts, and the difference in total instructions over
# the difference in iterations is one commit's cost (start-up, warm-up and
# shutdown cancel out). Needs valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(cargo bench -p flightrec-capi --bench c_commit --no-run --message-format=json 2>/dev/null |
    sed -n 's/.*"executable":"\([^"]*c_commit[^"]*\)".*/\1/p' | tail -1)
lo=50000 hi=150000
count() { # path iters -> total instructions
    local out
    out=$(mktemp)
    valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" --only="$1" --iters="$2" >/dev/null 2>&1
    sed -n 's/^summary: //p' "$out"
    rm -f "$out"
}
declare -A per
for path in rust c; do
    a=$(count "$path" "$lo")
    b=$(count "$path" "$hi")
    per[$path]=$(( (b - a) / (hi - lo) ))
    echo "$path: $(( (b - a) / (hi - lo) )) instructions per commit"
done
echo "callgrind summary: {\"rust_ir\": ${per[rust]}, \"c_ir\": ${per[c]}}"
