#!/usr/bin/env bash
# Set up a fresh machine for the tests: perl, redis-server, lighttpd, python3-venv, CGI.pm,
# cgi-fcgi, nginx, PPI (apt)
# when missing, then the package with its test and dev extras in .venv.  The README's test
# command is this script followed by `.venv/bin/python -m pytest -q`.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
for tool in perl redis-server lighttpd; do
    PATH="$PATH:/usr/sbin:/usr/local/sbin" command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
pkgs=()
for tool in "${missing[@]}"; do
    pkgs+=("$tool")  # each tool's Debian package has its name
done
# python3 -m venv needs Debian's python3-venv
python3 -c "import ensurepip, venv" >/dev/null 2>&1 || pkgs+=(python3-venv)
# jcode.pl 2.13 and Jcode.pm 2.06, the references for perlcompat.jcode (tests/test_jcode.py)
[ -f /usr/share/perl5/jcode.pl ] || pkgs+=(libjcode-perl)
[ -f /usr/share/perl5/Jcode.pm ] || pkgs+=(libjcode-pm-perl)
# CGI.pm (no longer in Perl's core), the reference for perlcompat.cgi (tests/test_cgi.py)
[ -f /usr/share/perl5/CGI.pm ] || pkgs+=(libcgi-pm-perl)
# File::NFSLock and File::FcntlLock, the real Perl modules the link and fcntl locks meet
# (tests/test_lock_link.py, tests/test_fcntllock.py)
[ -f /usr/share/perl5/File/NFSLock.pm ] || pkgs+=(libfile-nfslock-perl)
perl -MFile::FcntlLock -e1 >/dev/null 2>&1 || pkgs+=(libfile-fcntllock-perl)
# PPI, the Perl parser `perlcompat port` drives (tests/test_port*.py)
[ -f /usr/share/perl5/PPI.pm ] || pkgs+=(libppi-perl)
# tests/sharedfs.py: shared storage as two hosts, two sshfs (FUSE) mounts over a loopback sshd
PATH="$PATH:/usr/sbin" command -v sshd >/dev/null 2>&1 || pkgs+=(openssh-server)
command -v sshfs >/dev/null 2>&1 || pkgs+=(sshfs)
command -v fusermount3 >/dev/null 2>&1 || command -v fusermount >/dev/null 2>&1 || pkgs+=(fuse3)
# tests/test_serve.py: cgi-fcgi, a FastCGI client, sends raw params to `perlcompat serve`
command -v cgi-fcgi >/dev/null 2>&1 || pkgs+=(libfcgi-bin)
# tests/test_serve_safety.py: nginx in front of `perlcompat serve` too (fastcgi_pass)
PATH="$PATH:/usr/sbin" command -v nginx >/dev/null 2>&1 || pkgs+=(nginx-light)
if ((${#pkgs[@]})); then
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
.venv/bin/python -m pip install -q -e '.[test,dev]'

