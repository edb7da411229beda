#!/usr/bin/env python3
"""Visitor log with a time-limited flock (the Perl locking article), ported from visitors.cgi.

``local $SIG{ALRM} = sub { die "time out" }`` is ``with local_sig("ALRM", ...)``,
``eval { ... }; if ($@ =~ /time out/)`` is ``try: ... except Die as e``.  The
ALRM handler's exception gets out of a blocking ``flock`` (a handler that
returned would let the kernel call resume, as Python retries interrupted calls).
"""

import os
import re
import sys
import time
from urllib.parse import unquote_to_bytes

from perlcompat import (
    LOCK_EX,
    OS_ERROR,
    SEEK_END,
    SEEK_SET,
    Die,
    alarm,
    close,
    die,
    flock,
    local_sig,
    open_,
    print_,
    seek,
)

datafile = (os.environ.get("PERLCOMPAT_DATA_DIR") or ".") + "/visitors.dat"
wait = float(os.environ.get("PERLCOMPAT_ALARM_WAIT") or 5)  # seconds to wait for the lock
FORM = {}


def main():
    decode()
    name = FORM.get("name", "")
    no = 0
    if name != "":
        EVAL_ERROR = ""
        try:
            with local_sig("ALRM", lambda *_: die("time out")):  # 時間が来たら抜け出す
                OUT = open_("+>> " + datafile) or die(f"Can't open: {OS_ERROR}")
                alarm(wait)  # 先行プロセスを待つ時間
                flock(OUT, LOCK_EX) or die(f"Can't flock: {OS_ERROR}")  # ロック確認。ロック
                alarm(300)  # 自分自身の制限時間(5分)
                seek(OUT, 0, SEEK_SET) or die(f"Can't seek: {OS_ERROR}")
                lines = OUT.readlines()
                no = len(lines) + 1
                seek(OUT, 0, SEEK_END) or die(f"Can't seek: {OS_ERROR}")  # 追加は末尾から
                print_(OUT, f"{no}<>{name}<>{int(time.time())}<>\n") or die(
                    f"Can't print: {OS_ERROR}"
                )
                close(OUT) or die(f"Can't close: {OS_ERROR}")  # closeすれば自動でロック解除
                alarm(0)  # 無事済んだのでリセット
        except Die as exc:
            EVAL_ERROR = str(exc)
        if re.search("time out", EVAL_ERROR):
            error(f"Busy: timed out after {wait:g} s waiting for the lock.")
        elif EVAL_ERROR:  # タイムアウト以外の理由なら
            die(EVAL_ERROR)

    print("Content-Type: text/plain\n")
    if name != "":
        print(f"No.{no} {name}")
    else:
        IN = open_("< " + datafile)
        sys.stdout.write(IN.read() if IN else "")
        close(IN)


def decode():
    for pair in os.fsencode(os.environ.get("QUERY_STRING", "")).split(b"&"):
        key, value = ([*pair.split(b"="), b""])[:2]
        value = value.replace(b"+", b" ")
        value = unquote_to_bytes(value).decode("utf-8", "surrogateescape")
        value = re.sub(r"<>|[\r\n]", " ", value)  # keep the record format intact
        FORM[key.decode("utf-8", "surrogateescape")] = value


def error(message):
    print("Status: 503 Service Unavailable")
    print("Content-Type: text/plain\n")
    print(message)
    sys.exit()


sys.stdout.reconfigure(encoding="utf-8", errors="surrogateescape")  # Perl prints bytes
main()
