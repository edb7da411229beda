#!/usr/bin/env python3
"""Record list locked with TOP?LOCK, ported line for line from workdata.cgi.

``Lock(lockfile, method="toplock")`` appends the same ``id<>time<>`` line and
holds while it is first, so this script and workdata.cgi exclude each other.
``still_holding()`` is TOP?LOCK's second check before the rename; releasing
removes the lock file, as workdata.cgi's ``unlink`` does.
"""

import os
import re
import sys
from urllib.parse import unquote_to_bytes

from perlcompat import OS_ERROR, Lock, LockError, close, open_, print_, rename, still_holding

datadir = os.environ.get("PERLCOMPAT_DATA_DIR") or "."
lockfile = f"{datadir}/workdata.lock"
datafile = f"{datadir}/workdata.dat"
workfile = f"{datadir}/workdata.tmp"
FORM = {}


def main():
    decode()
    data = FORM.get("data", "")
    no = 0
    if data != "":
        # ファイルのロック (50回、0.1秒おき。600秒より古いロックは削除)
        LOCKED = Lock(lockfile, method="toplock", retry=50, wait=0.1, stale=600)
        try:
            LOCKED.acquire()
        except LockError:
            error("BUSY")
        # ファイルの更新 (作業ファイルに)
        IN = open_("< " + datafile)
        lines = IN.readlines() if IN else []
        close(IN)
        no = len(lines) + 1
        lines.append(f"{no}<>{data}<>\n")
        DATA = open_("> " + workfile) or error(f"Can't write: {OS_ERROR}")
        print_(DATA, *lines)
        close(DATA)
        # 再度ファイルのロック確認、ロック成功のときだけ本番ファイルに
        still_holding(LOCKED) or error("Lost the lock.")
        rename(workfile, datafile) or error(f"Can't rename: {OS_ERROR}")
        LOCKED.release()  # ロック解除

    print("Content-Type: text/plain\n")
    if data != "":
        print(f"No.{no}")
    else:
        IN = open_("< " + datafile)
        sys.stdout.write(IN.read() if IN else "")
        close(IN)


def decode():
    for pair in os.fsencode(os.environ.get("QUERY_STRING", "")).split(b"&"):
        key, value = ([*pair.split(b"="), b""])[:2]
        value = value.replace(b"+", b" ")
        value = unquote_to_bytes(value).decode("utf-8", "surrogateescape")
        value = re.sub(r"<>|[\r\n]", " ", value)
        FORM[key.decode("utf-8", "surrogateescape")] = value


def error(message):
    print("Status: 503 Service Unavailable")
    print("Content-Type: text/plain\n")
    print(message)
    sys.exit()


sys.stdout.reconfigure(encoding="utf-8", errors="surrogateescape")  # Perl prints bytes
main()
