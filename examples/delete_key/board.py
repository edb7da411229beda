#!/usr/bin/env python3
"""Message board with delete keys, ported line for line from board.cgi."""

import os
import random
import sys
from urllib.parse import unquote_to_bytes

from perlcompat import (
    LOCK_EX,
    OS_ERROR,
    close,
    crypt,
    die,
    filetest,
    flock,
    num,
    open_,
    print_,
    scalar_localtime,
    seek,
    split,
    stat,
    tell,
    time,
    truncate,
)

logfile = (os.environ.get("PERLCOMPAT_DATA_DIR") or ".") + "/board.log"

buffer = sys.stdin.buffer.read(int(os.environ.get("CONTENT_LENGTH") or 0))
FORM = {}
for pair in buffer.split(b"&"):
    key, value = ([*pair.split(b"="), b""])[:2]
    value = unquote_to_bytes(value.replace(b"+", b" ")).decode("utf-8", "surrogateescape")
    value = value.replace("&", "&amp;")
    value = value.replace("<", "&lt;")
    value = value.replace(">", "&gt;")
    value = value.replace("\r\n", " ").replace("\n", " ")
    FORM[key.decode("utf-8", "surrogateescape")] = value

deleted = 0
if os.environ.get("REQUEST_METHOD") == "POST":
    if not filetest("-e", logfile):  # first post: create it; ">>" never truncates
        NEW = open_(">> " + logfile) or die(f"Can't create: {OS_ERROR}")
        close(NEW)
    LOG = open_("+< " + logfile) or die(f"Can't open: {OS_ERROR}")
    flock(LOG, LOCK_EX) or die(f"Can't flock: {OS_ERROR}")
    lines = LOG.readlines()
    if FORM.get("del", "") != "":
        new = []
        for line in lines:
            no, name, msg, pass_, date = (split("<>", line) + [None] * 5)[:5]
            if num(no) == num(FORM["del"]) and pass_ and crypt(FORM.get("key", ""), pass_) == pass_:
                deleted += 1
                continue
            new.append(line)
        lines = new
    else:
        last = (split("<>", lines[0]) if lines else [None])[0]
        no = num(last) + 1
        chars = [*"abcdefghijklmnopqrstuvwxyz", *"ABCDEFGHIJKLMNOPQRSTUVWXYZ", *"0123456789./"]
        salt = chars[int(random.random() * 64)] + chars[int(random.random() * 64)]
        pass_ = crypt(FORM["key"], salt) if FORM.get("key", "") != "" else ""
        date = scalar_localtime(time())
        lines.insert(0, f"{no}<>{FORM.get('name', '')}<>{FORM.get('msg', '')}<>{pass_}<>{date}<>\n")
    seek(LOG, 0, 0) or die(f"Can't seek: {OS_ERROR}")
    print_(LOG, *lines)
    truncate(LOG, tell(LOG)) or die(f"Can't truncate: {OS_ERROR}")
    close(LOG) or die(f"Can't close: {OS_ERROR}")

IN = open_("< " + logfile)  # unchecked: no log yet reads as no posts
lines = IN.readlines()
close(IN)
mtime = stat(logfile)[9]

out = sys.stdout.buffer
out.write(b"Content-Type: text/plain\n\n")
out.write(f"posts: {len(lines)}\n".encode())
out.write(f"updated: {mtime if mtime else '-'}\n".encode())
out.write(f"deleted: {deleted}\n".encode())
for line in lines:
    no, name, msg = (split("<>", line) + [None] * 3)[:3]
    out.write(f"{no} {name}: {msg}\n".encode("utf-8", "surrogateescape"))
