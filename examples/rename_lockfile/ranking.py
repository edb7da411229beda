#!/usr/bin/env python3
"""Link ranking by temp file + rename under a separate lock file, ported line for line.

The same ``ranking.dat.lck`` that ranking.cgi locks, so both exclude each
other; ranking_replace.py does the same in one ``replace_file`` call.
"""

import os
import re
import sys
from urllib.parse import unquote_to_bytes

from perlcompat import (
    LOCK_EX,
    OS_ERROR,
    close,
    filetest,
    flock,
    open_,
    print_,
    rename,
    unlink,
)

datafile = (os.environ.get("PERLCOMPAT_DATA_DIR") or ".") + "/ranking.dat"
lockfile = f"{datafile}.lck"
tmpfile = f"{datafile}.{os.getpid()}.tmp"
FORM = {}


def main():
    decode()
    item = FORM.get("item", "")
    if item != "":
        re.fullmatch(r"\w+", item, re.ASCII) or error("Bad item name.")
        # ロックファイルは内容がどうなっても関係ないから上書きモードでいい
        LOCK = open_("> " + lockfile) or error(f"Can't open lockfile: {OS_ERROR}")
        flock(LOCK, LOCK_EX) or error(f"Can't flock: {OS_ERROR}")
        IN = open_("< " + datafile)
        lines = IN.readlines() if IN else []
        close(IN)
        found = 0
        for i, line in enumerate(lines):
            name, clicks = line.split("<>")[:2]
            if name == item:
                lines[i] = f"{name}<>{int(clicks) + 1}<>\n"
                found = 1
        if not found:
            lines.append(f"{item}<>1<>\n")
        TMP = open_("> " + tmpfile) or error(f"Can't open temp: {OS_ERROR}")
        print_(TMP, *lines) or error(f"Can't write temp: {OS_ERROR}")
        close(TMP) or error(f"Can't close temp: {OS_ERROR}")
        if filetest("-s", tmpfile) != len("".join(lines).encode()):  # 確認はファイルサイズで
            error("Temp file is short.")
        rename(tmpfile, datafile) or error(f"Can't rename: {OS_ERROR}")
        close(LOCK)  # ロックの終了

    print("Content-Type: text/plain\n")
    if item != "":
        print(f"clicked {item}")
    IN = open_("< " + datafile)
    sys.stdout.write(IN.read() if IN else "")
    close(IN)


def decode():
    for pair in os.fsencode(os.environ.get("QUERY_STRING", "")).split(b"&"):
        key, value = ([*pair.split(b"="), b""])[:2]
        value = value.replace(b"+", b" ")
        value = unquote_to_bytes(value).decode("utf-8", "surrogateescape")
        FORM[key.decode("utf-8", "surrogateescape")] = value


def error(message):
    unlink(tmpfile)
    print("Status: 503 Service Unavailable")
    print("Content-Type: text/plain\n")
    print(message)
    sys.exit()


sys.stdout.reconfigure(encoding="utf-8", errors="surrogateescape")  # Perl prints bytes
main()
