#!/usr/bin/env bash
# The loom suite (issue 5): models of the rotation protocol over the
# recorder's real code (loom-tests/), then the negative controls, each
# against its deliberately weakened build. Called by scripts/test.sh.
#
#   bash ci/loom.sh
#
# Release mode, debug assertions on, own target directories (the cfgs would
# otherwise invalidate the normal build). Preemption bound: each model's own
# default (3; 2 for rotation_commit's two-writer model), unless
# LOOM_MAX_PREEMPTIONS is set.
#
# Measured on 2 cores, executions per model at its bound: rotation_commit
# 11k (one writer, bound 3) + 10k (two writers, bound 2), thread_exit 3.4k,
# sealed_drain 1.4k, constants 0.5k, sampler_queue 0.5k, settings 0.1k.
# Measured on 2 cores with clean target dirs (2026-05): models build 2m32s,
# run 4 s (rotation_commit 3.3 s); relaxed_commit build 2m45s, controls
# 0.07 s; skip_section_wait build 2m53s, controls 0.2 s. Whole suite 8m15s
# clean (builds dominate: each cfg rebuilds the dependencies), ~10 s warm.
# The skip_stack_tag control build (2026-05, a loaded machine, load ~10):
# 5m56s clean, control 0.07 s; the suite is now four builds, ~11 min clean.
# stop_commit (2026-12): 9.5k (one writer, bound 3) + 14k (two writers,
# bound 2) executions, 84 s on a machine at load 10+ (comparable to
# rotation_commit's counts, so a few seconds on a quiet one).
# Budget: 12 minutes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

target=${LOOM_TARGET_DIR:-target/loom}
base="--cfg flightrec_loom -C debug_assertions"

echo "--> loom models (LOOM_MAX_PREEMPTIONS=${LOOM_MAX_PREEMPTIONS:-per model})"
RUSTFLAGS="$base" CARGO_TARGET_DIR="$target/models" \
    cargo test -p flightrec-loom-tests --release

# Negative controls: `control_*` tests expect their model to FAIL against the
# weakened protocol (they panic if it passes). Only the controls are run:
# the regular models are expected to fail in these builds. Weakenings of
# disjoint code share one build (each build recompiles the dependencies):
# relaxed_commit (the block's commit store) and skip_retire_wait (the
# sampler's slot release) touch nothing in common, and each control drives
# only its own model. skip_stack_tag (the section's stack tag, model 4)
# gets its own build: its model also runs the commit store and the section
# wait, so sharing a build with those weakenings could fail it for their
# sake. two_tag_slots (the constants' tag words, model 4b) shares it: model
# 4 sees two epochs only, and model 4b's events carry no stack. So does
# skip_pool_close (the last stop's pool close, model 7): model 7's events
# carry no stack and its constants are not checked, and models 4 and 4b
# never stop.
for weakens in "relaxed_commit skip_retire_wait" skip_section_wait "skip_stack_tag two_tag_slots skip_pool_close"; do
    flags=""
    for weaken in $weakens; do
        flags="$flags --cfg flightrec_loom_weaken=\"$weaken\""
    done
    echo "--> loom negative controls: $weakens"
    RUSTFLAGS="$base$flags" \
        CARGO_TARGET_DIR="$target/weaken-${weakens%% *}" \
        cargo test -p flightrec-loom-tests --release -- control_
done
