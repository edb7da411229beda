#!/usr/bin/env bash
# Run the test suite on the oldest and the newest supported CPython (3.9 and 3.13), and
# type-check for the oldest with the last mypy that can target it.
#
# The interpreters come from pyenv (these machines carry CPython 3.9-3.13 under
# $(pyenv root)/versions; `pyenv install 3.9` builds one from python.org sources where
# that is reachable) or from python3.9 / python3.13 on PATH.  A missing interpreter
# fails the run: it is never skipped.  Each gets its own venv in $PERLCOMPAT_PYVENVS
# (default /tmp/perlcompat-pyvenvs), reused across runs on one machine.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSIONS=${PERLCOMPAT_TEST_PYTHONS:-"3.9 3.13"}
VENVS=${PERLCOMPAT_PYVENVS:-/tmp/perlcompat-pyvenvs}
mkdir -p "$VENVS"

find_python() {  # $1 = X.Y: print the path of a CPython X.Y
    local want=$1 root candidate
    root=$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")
    for candidate in "$root"/versions/"$want".*/bin/python "$(command -v "python$want" || true)"; do
        if [ -x "$candidate" ] && "$candidate" -c "import sys; assert '%d.%d' % sys.version_info[:2] == '$want'" 2>/dev/null; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

oldest=${VERSIONS%% *}
for version in $VERSIONS; do
    python=$(find_python "$version") || {
        echo "test-pythons: no CPython $version found (pyenv or python$version on PATH)" >&2
        exit 1
    }
    venv="$VENVS/py$version"
    if [ ! -x "$venv/bin/python" ]; then
        "$python" -m venv "$venv"
        "$venv/bin/python" -m pip install -q --upgrade pip >/dev/null 2>&1 || true
    fi
    "$venv/bin/python" -m pip install -q -e '.[test,dev]' 2>&1 | grep -v "is ignored" || true
    echo "== pytest on $("$venv/bin/python" --version)"
    if [ "$version" = "$oldest" ]; then
        (cd "$venv" && "$venv/bin/mypy" --strict --python-version "$version" \
            --config-file "$OLDPWD/setup.cfg" "$OLDPWD/perlcompat")
    fi
    # The main run (.ci/run's first pytest) has run these whole; here they would test no
    # Python-version difference, only the outside programs' behaviour: the sdist build,
    # Redis server restarts, the sshfs mounts' semantics, lighttpd's CGI end to end, and
    # every Perl file on the machine (every 3rd one here).
    PERLCOMPAT_AUDIT_STEP=3 "$venv/bin/python" -m pytest -q -p no:cacheprovider \
        --deselect tests/test_packaging.py --deselect tests/test_redis_restart.py \
        --deselect tests/test_shared_storage.py --deselect tests/test_cgi_e2e.py \
        --deselect tests/test_redis.py::test_server_restart_mid_run_never_lets_two_hold_at_once
done
