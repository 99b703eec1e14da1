#!/usr/bin/env bash
# Installs NVIDIA perf_analyzer for the suite, idempotently; safe to re-run.
#
#   * .venv-pa (git-ignored): its own venv, so tritonclient 2.50.0 (the last wheel
#     that ships bin/perf_analyzer) does not clash with the suite's tritonclient
#     in .venv. No extras: the binary is native and needs none of the Python
#     client's dependencies.
#   * nvidia-cuda-runtime-cu12: provides libcudart.so.12, a NEEDED library of the
#     binary even on a machine without a GPU. bench/perf_analyzer puts it on
#     LD_LIBRARY_PATH.
#   * Debian's libb64-0d: provides libb64.so.0d, the other NEEDED library that
#     the base image lacks (libssl3 and zlib1g are checked too).
#
# Ends by running bench/perf_analyzer --version. Works from any cwd; runs as
# root without stdin (CI) or as a user with passwordless sudo.
# See docs/perf_analyzer.md.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

die() {
    echo "install_perf_analyzer: ERROR: $*" >&2
    exit 1
}

VENV=.venv-pa
PYTHON="${PYTHON:-python3}"
# Every package pip installs, pinned (tritonclient's own dependencies included).
PIP_PINS=(
    tritonclient==2.50.0
    nvidia-cuda-runtime-cu12==12.6.77
    numpy==1.26.4
    python-rapidjson==1.25
    urllib3==2.8.0
)
APT_PKGS=(libb64-0d libssl3 zlib1g)

# --- 1. the venv -------------------------------------------------------------
if ! "$VENV/bin/python" -c 'import sys' >/dev/null 2>&1; then
    command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON not found (set PYTHON=/path/to/python3)"
    rm -rf "$VENV"  # a half-made or broken venv
    "$PYTHON" -m venv "$VENV" || die "'$PYTHON -m venv $VENV' failed (on Debian's python3: apt-get install python3-venv)"
fi

# --- 2. pinned Python packages (pip does no network work when all are met) ----
PIP_DISABLE_PIP_VERSION_CHECK=1 "$VENV/bin/python" -m pip install -q --no-input "${PIP_PINS[@]}" \
    || die "pip install ${PIP_PINS[*]} into $VENV failed"
[[ -x "$VENV/bin/perf_analyzer" ]] || die "$VENV/bin/perf_analyzer missing after installing tritonclient==2.50.0"

# --- 3. Debian packages, only those missing ------------------------------------
missing=()
for p in "${APT_PKGS[@]}"; do
    if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" != "install ok installed" ]]; then
        missing+=("$p")
    fi
done
if ((${#missing[@]})); then
    command -v apt-get >/dev/null 2>&1 || die "no apt-get; install ${missing[*]} (Debian/Ubuntu package names) by hand"
    SUDO=()
    if [[ "$(id -u)" != 0 ]]; then
        command -v sudo >/dev/null 2>&1 || die "not root and no sudo; as root run: apt-get install -y ${missing[*]}"
        SUDO=(sudo -n)
    fi
    apt_get() { "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -qq -y "$@" </dev/null; }
    # Refresh the package lists only when a package has no install candidate,
    # or when installing from the current lists fails (e.g. a stale version).
    need_update=0
    for p in "${missing[@]}"; do
        cand="$(apt-cache policy "$p" 2>/dev/null | awk '/Candidate:/ {print $2}')"
        if [[ -z "$cand" || "$cand" == "(none)" ]]; then need_update=1; fi
    done
    if ((need_update)); then
        apt_get update >/dev/null || die "apt-get update failed"
    fi
    if ! apt_get install --no-install-recommends "${missing[@]}" >/dev/null; then
        ((need_update)) && die "apt-get install ${missing[*]} failed"
        apt_get update >/dev/null || die "apt-get update failed"
        apt_get install --no-install-recommends "${missing[@]}" >/dev/null \
            || die "apt-get install ${missing[*]} failed"
    fi
fi

# --- 4. proof ----------------------------------------------------------------
out="$(bench/perf_analyzer --version 2>&1)" || die "bench/perf_analyzer --version failed: $(echo "$out" | head -n1)"
echo "install_perf_analyzer: OK: $(pwd)/$VENV/bin/perf_analyzer (tritonclient 2.50.0) runs: $(echo "$out" | head -n1)"
