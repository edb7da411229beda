#!/usr/bin/env python3
"""Link ranking in one ``replace_file`` call: ranking.cgi's lock, temp file and rename.

``replace_file(datafile, update)`` takes ``flock(LOCK_EX)`` on ``ranking.dat.lck``
(the lock file ranking.cgi and ranking.py use), reads the old content as Perl's
``@lines = <IN>`` (``lines=True``: split at "\n" only, never ``splitlines()``), writes
``update(lines)`` to a temp file beside it, fsyncs and renames it into place.  As in
ranking.cgi, whose ``open(IN, "< $datafile")`` is unchecked, a missing file is empty.
"""

import os
import re
import sys
from urllib.parse import unquote_to_bytes

from perlcompat import close, open_, replace_file

datafile = (os.environ.get("PERLCOMPAT_DATA_DIR") or ".") + "/ranking.dat"
FORM = {}


def main():
    decode()
    item = FORM.get("item", "")
    if item != "":
        re.fullmatch(r"\w+", item, re.ASCII) or error("Bad item name.")

        def click(lines):  # @lines = <IN>: the lines with their "\n" (lines=True)
            found = 0
            for i, line in enumerate(lines):
                name, clicks = line.split("<>")[:2]
                if name == item:
                    lines[i] = f"{name}<>{int(clicks) + 1}<>\n"
                    found = 1
            if not found:
                lines.append(f"{item}<>1<>\n")
            return lines

        try:
            replace_file(datafile, click, lines=True)  # lock .lck, read, temp, fsync, rename
        except OSError as exc:
            error(f"Can't update: {exc}")

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
    print("Status: 503 Service Unavailable")
    print("Content-Type: text/plain\n")
    print(message)
    sys.exit()


sys.stdout.reconfigure(encoding="utf-8", errors="surrogateescape")  # Perl prints bytes
main()
