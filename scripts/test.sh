#!/usr/bin/env bash
# The project's test command (README "Testing"; .ci/run calls exactly this).
#
#   bash scripts/test.sh
#
# Steps: locate or install JDK 25 (its `jfr` is the oracle the tests run),
# formatting, clippy with warnings denied, the C ABI's libraries, every test
# in one release build (the root package's dev-dependencies turn the
# Pyroscope uploader on, so its tests run there), the thread-hook feature's
# test, lints of the recorder as users build it by default (no uploader),
# the API docs with broken links and bare URLs denied, and a build of every bench. Prints the time each step took. Budget: a clean
# clone must pass within 90 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

timings=()
step() {
    local name=$1 start=$SECONDS
    shift
    echo "==> $name: $*"
    "$@"
    local took=$((SECONDS - start))
    timings+=("$(printf '%-12s %5d s' "$name" "$took")")
    echo "<== $name: ${took} s"
}
report() {
    local status=$?
    echo
    echo "Step timings:"
    if ((${#timings[@]})); then printf '  %s\n' "${timings[@]}"; fi
    echo "  total        $(printf '%5d' "$SECONDS") s ($([[ $status == 0 ]] && echo passed || echo "FAILED, exit $status"))"
}
trap report EXIT

find_jdk() {
    FLIGHTREC_JDK=$(bash scripts/find-jdk.sh)
    export FLIGHTREC_JDK
    echo "FLIGHTREC_JDK=$FLIGHTREC_JDK ($("$FLIGHTREC_JDK/bin/jfr" --version 2>&1))"
}

step jdk find_jdk
# The `flightrec` command's tests hand its pprof output to Go's own
# reader (`go tool pprof`, Debian's golang-go) and render its flame graphs
# in headless Chromium (Debian's chromium).
tools() {
    local missing=()
    command -v go >/dev/null || missing+=(golang-go)
    command -v chromium >/dev/null || missing+=(chromium)
    if ((${#missing[@]})); then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
    go version
    chromium --version
}
step tools tools
step fmt cargo fmt --all -- --check
step clippy cargo clippy --workspace --all-targets -- -D warnings
# The C ABI's tests compile C and C++ programs against libflightrec.so and
# libflightrec.a: `cargo test` builds a package's rlib for its tests, never
# its cdylib or staticlib, so they are built first.
step capi-libs cargo build --release -p flightrec-capi
step test cargo test --workspace --release
# Sampling from birth needs the opt-in `pthread_create` hook (docs/sampling.md).
step thread-hook cargo test --release -p flightrec --features thread-hook --test sampling_from_birth
# Users build the recorder without the opt-in uploader; the steps above
# have it on (dev-dependencies unify features), so lint that build too.
step default-features cargo clippy -p flightrec-recorder --all-targets -- -D warnings
# Docs with broken links and bare URLs denied: as users read them, and as
# maintainers do (private items too: the engine modules' docs link to
# them). The C ABI's library shares the facade's name, so it is documented
# on its own. The facade's pages (what users read, the `tracing` feature's
# module included) must show no link that rendered as literal `[text]`: a
# link to a private item does that in the public view, with no warning.
docs() {
    local p=(-p flightrec -p flightrec-recorder -p flightrec-format -p flightrec-tracing)
    local deny="-D warnings -D rustdoc::broken_intra_doc_links -D rustdoc::bare_urls"
    RUSTDOCFLAGS="$deny" cargo doc --no-deps "${p[@]}"
    RUSTDOCFLAGS="$deny" cargo doc --no-deps "${p[@]}" --document-private-items
    RUSTDOCFLAGS="$deny" cargo doc --no-deps -p flightrec-capi --document-private-items
    RUSTDOCFLAGS="$deny" cargo doc --no-deps -p flightrec --features tracing
    python3 scripts/doc-literal-links.py "${CARGO_TARGET_DIR:-target}/doc/flightrec"
}
step docs docs
# Every bench compiles. Without the bench profile's LTO: whether they
# compile does not depend on it, and the bench profile is then the release
# profile the test step built, so the dependencies are not built again
# (fat LTO of each bench binary took 8-12 of CI's minutes). `cargo bench`
# itself still measures with LTO.
step bench-build env CARGO_PROFILE_BENCH_LTO=false cargo bench --workspace --no-run

# --- loom suite ---------------------------------------------------------------
# Loom models of the rotation protocol and their negative controls (issue 5),
# in their own target directories (target/loom/*) so the cfgs do not
# invalidate the build above. Times and bounds: ci/loom.sh header.
step loom bash ci/loom.sh
# ------------------------------------------------------------------------------
