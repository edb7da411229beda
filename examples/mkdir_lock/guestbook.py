#!/usr/bin/env python3
"""Guestbook with the mkdir lock column's lock, ported line for line from guestbook.cgi.

``sub lock``/``sub unlock`` become ``perlcompat.lock``/``unlock``: the same empty
directory made with mkdir, the same 5 tries within 4 s and 3-minute stale limit,
so this script and guestbook.cgi exclude each other on one guestbook.
"""

import os
import re
import sys
import time
from urllib.parse import unquote_to_bytes

from perlcompat import OS_ERROR, close, lock, open_, print_, unlock

datafile = (os.environ.get("PERLCOMPAT_DATA_DIR") or ".") + "/guestbook.dat"
lockdir = (os.environ.get("PERLCOMPAT_DATA_DIR") or ".") + "/guestbook.lock"
FORM = {}
signed = ""


def main():
    global signed
    decode()
    if os.environ.get("REQUEST_METHOD") == "POST":
        lock(lockdir, retry=5, wait=1, stale=180) or error("Busy: please try again in a moment.")
        IN = open_("< " + datafile)  # lock first, then read (the mkdir lock column)
        lines = IN.readlines() if IN else []
        close(IN)
        lines.append(f"{FORM.get('name', '')}<>{FORM.get('comment', '')}<>{int(time.time())}<>\n")
        OUT = open_("> " + datafile) or error(f"Can't write: {OS_ERROR}")  # all writers lock
        print_(OUT, *lines)
        close(OUT)
        unlock(lockdir)
        signed = FORM.get("name", "")
    html()


def decode():
    if os.environ.get("REQUEST_METHOD") == "POST":
        buffer = sys.stdin.buffer.read(int(os.environ.get("CONTENT_LENGTH") or 0))
    else:
        buffer = os.fsencode(os.environ.get("QUERY_STRING", ""))
    for pair in buffer.split(b"&"):
        key, value = ([*pair.split(b"="), b""])[:2]
        value = value.replace(b"+", b" ")
        value = unquote_to_bytes(value).decode("utf-8", "surrogateescape")
        value = value.replace("&", "&amp;")
        value = value.replace("<", "&lt;")
        value = value.replace(">", "&gt;")
        value = value.replace('"', "&quot;")
        value = re.sub(r"\r\n|\r|\n", "<br>", value)
        FORM[key.decode("utf-8", "surrogateescape")] = value


# sub lock / sub unlock: perlcompat.lock(dir) and perlcompat.unlock(dir) are those two.


def html():
    print("Content-Type: text/html; charset=UTF-8\n")
    print("<html><head><title>Guestbook</title></head><body>")
    if signed != "":
        print(f"<p>Thank you, {signed}.</p>")
    IN = open_("< " + datafile)
    for line in IN or []:
        name, comment, _time = line.split("<>")[:3]
        print(f"<p><b>{name}</b>: {comment}</p>")
    close(IN)
    print("</body></html>")


def error(message):
    print("Status: 503 Service Unavailable")
    print("Content-Type: text/html; charset=UTF-8\n")
    print(f"<html><body><p>{message}</p></body></html>")
    sys.exit()


sys.stdout.reconfigure(encoding="utf-8", errors="surrogateescape")  # Perl prints bytes
main()
