#!/usr/bin/env bash
# Set up a fresh machine and run every check: the README's test command.
# Installs perl, redis-server and lighttpd (apt) when missing, the package with
# its test extras in .venv, then runs ruff, mypy (Linux and win32) and pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
for tool in perl redis-server lighttpd; do
    PATH="$PATH:/usr/sbin:/usr/local/sbin" command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if ((${#missing[@]})); then
    pkgs=()
    for tool in "${missing[@]}"; do
        pkgs+=("$tool")  # each tool's Debian package has its name
    done
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO="sudo"
    echo "installing ${pkgs[*]} with apt-get"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${pkgs[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
.venv/bin/python -m pip install -q -e '.[test]'

echo "== ruff"
.venv/bin/ruff check perlcompat tests bench examples
.venv/bin/ruff format --check perlcompat tests bench examples
echo "== mypy (linux, win32)"
.venv/bin/mypy --strict perlcompat
.venv/bin/mypy --strict --platform win32 perlcompat
echo "== pytest"
# pytest exits 5 when it ran no test: that is a failure here, as any non-zero is.
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
