#!/usr/bin/env bash
# Instructions per operation of the allocation wrapper against the bare
# allocator (System), counted by callgrind (robust on a loaded machine,
# unlike time): benches/alloc.rs --count=<mode> runs the same 2000 batches
# (64 allocations, 16 reallocations, 64 frees each) through each, and the
# two monomorphs of its `segment` are told apart by their mangled names.
# Modes: `off` (no recording) and `counting` (a recording that asks for
# allocation statistics only: the countdown runs, nothing is sampled; what
# a sample costs is timed by the bench's 512k row). Needs valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(cargo bench --bench alloc --no-run --message-format=json 2>/dev/null |
    sed -n 's/.*"executable":"\([^"]*alloc-[^"]*\)".*/\1/p' | tail -1)
ops=$((2000 * (64 + 16 + 64)))
# The wrapped monomorph is the one that reads the wrapper's mode word.
wrapped=$(objdump -d --no-show-raw-insn "$bin" |
    awk '/^[0-9a-f]+ </ { f = "" } /^[0-9a-f]+ <_ZN5alloc7segment/ { f = $2 } /sampler4MODE/ && f && !done { print f; done = 1 }' |
    tr -d '<>:')
declare -A per
for mode in off counting; do
    out=$(mktemp)
    valgrind --tool=callgrind --demangle=no --callgrind-out-file="$out" "$bin" --count="$mode" >/dev/null 2>&1
    # Inclusive cost of each `segment` monomorph.
    rows=$(callgrind_annotate --inclusive=yes --threshold=100 "$out" |
        grep -E "alloc\.rs:_ZN5alloc7segment" | sed 's/,//g' | awk '{ print $1, $3 }')
    rm -f "$out"
    w=$(awk -v f="$wrapped" 'index($2, f) { print $1 }' <<<"$rows" | head -1)
    b=$(awk -v f="$wrapped" '!index($2, f) { print $1 }' <<<"$rows" | head -1)
    per[$mode]=$(awk -v w="$w" -v b="$b" -v n="$ops" 'BEGIN { printf "%.2f", (w - b) / n }')
    echo "$mode: bare $(awk -v b="$b" -v n="$ops" 'BEGIN { printf "%.2f", b / n }') instructions per operation, wrapper +${per[$mode]} ($(awk -v w="$w" -v b="$b" 'BEGIN { printf "%.4f", w / b }')x)"
done
echo "callgrind summary: {\"off_extra_ir\": ${per[off]}, \"counting_extra_ir\": ${per[counting]}}"
