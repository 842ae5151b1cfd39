#!/usr/bin/env bash
# Instructions per operation of the allocation wrapper against the bare
# allocator (System), counted by callgrind (robust on a loaded machine,
# unlike time): benches/alloc.rs --count=<mode> runs the same 2000 batches
# (64 allocations, 16 reallocations, 64 frees each) through each, and the
# two monomorphs of its `segment` are told apart by their mangled names.
# The wrapper's cost is the wrapped monomorph's own instructions (the loop
# and whatever of the wrapper is inlined into it) less the bare one's, plus
# the wrapper's out-of-line functions it called: the C allocator's own
# instructions are left out, as they depend on its heap's state, not on the
# wrapper. Modes: `off` (no recording) and `counting` (a recording that asks
# for allocation statistics only: the countdown runs, nothing is sampled;
# what a sample costs is timed by the bench's 512k row). Needs valgrind.
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
    # Rows "cost (pct) file:function [object]": a function's own cost is
    # split over the files its inlined code came from.
    own=$(callgrind_annotate --auto=no --inclusive=no --threshold=100 "$out" 2>/dev/null |
        sed 's/,//g' | awk -v f="$wrapped" '
            $1 ~ /^[0-9]+$/ && /:_ZN5alloc7segment/ { if (index($0, f)) w += $1; else b += $1 }
            END { print w + 0, b + 0 }')
    # The wrapper's out-of-line functions (slow path, watched paths):
    # inclusive, once each (the largest of a function's rows).
    calls=$(callgrind_annotate --auto=no --inclusive=yes --threshold=100 "$out" 2>/dev/null |
        sed 's/,//g' | awk '$1 ~ /^[0-9]+$/ && /SamplingAllocator/ {
                n = $0; sub(/.*:/, "", n); sub(/ .*/, "", n)
                if ($1 > m[n]) m[n] = $1
            }
            END { for (n in m) s += m[n]; print s + 0 }')
    bare=$(callgrind_annotate --auto=no --inclusive=yes --threshold=100 "$out" 2>/dev/null |
        sed 's/,//g' | awk -v f="$wrapped" '$1 ~ /^[0-9]+$/ && /alloc\.rs:_ZN5alloc7segment/ && !index($0, f) && !seen { print $1; seen = 1 }')
    rm -f "$out"
    read -r w b <<<"$own"
    per[$mode]=$(awk -v w="$w" -v b="$b" -v c="$calls" -v n="$ops" 'BEGIN { printf "%.2f", (w + c - b) / n }')
    echo "$mode: bare $(awk -v b="$bare" -v n="$ops" 'BEGIN { printf "%.2f", b / n }') instructions per operation (the C allocator's included), wrapper +${per[$mode]} ($(awk -v x="${per[$mode]}" -v b="$bare" -v n="$ops" 'BEGIN { printf "%.4f", 1 + x * n / b }')x)"
done
echo "callgrind summary: {\"off_extra_ir\": ${per[off]}, \"counting_extra_ir\": ${per[counting]}}"
