#!/usr/bin/env python3
"""Guestbook on perlcompat.cgi, ported line for line from guestbook.cgi (CGI.pm)."""

import os
import re

from perlcompat import (
    LOCK_EX,
    OS_ERROR,
    STDOUT,
    close,
    die,
    filetest,
    flock,
    num,
    open_,
    print_,
    seek,
    split,
    tell,
    truncate,
)
from perlcompat.cgi import CGI

logfile = (os.environ.get("PERLCOMPAT_DATA_DIR") or ".") + "/gbook.log"
q = CGI()

name = q.param("name")
name = q.cookie("gbname") if name is None or name == "" else name
name = "anonymous" if name is None or name == "" else name
message = q.param("message")
topics = q.multi_param("topic")

if os.environ.get("REQUEST_METHOD") == "POST" and message is not None and message != "":
    photo = ""
    fh = q.upload("photo")
    if fh:
        data = fh.read()
        photo = q.param("photo") + " " + str(len(data)) + " bytes"
    cookie = q.cookie(name="gbname", value=name, expires="+30d")

    def escape(field):  # the body of: foreach $field (...) { $field = escapeHTML(...); s/// }
        return re.sub(r"\r\n|\r|\n", "<br>", q.escapeHTML(field))

    name, message, topics, photo = (
        escape(name),
        escape(message),
        list(map(escape, topics)),
        escape(photo),
    )
    if not filetest("-e", logfile):  # first post: create it; ">>" never truncates
        NEW = open_(">> " + logfile) or die(f"Can't create: {OS_ERROR}")
        close(NEW)
    LOG = open_("+< " + logfile) or die(f"Can't open: {OS_ERROR}")
    flock(LOG, LOCK_EX) or die(f"Can't flock: {OS_ERROR}")
    lines = LOG.readlines()
    last = split("<>", lines[0])[0] if lines else None
    no = num(last) + 1
    lines.insert(0, f"{no}<>{name}<>" + ",".join(topics) + f"<>{message}<>{photo}<>\n")
    seek(LOG, 0, 0) or die(f"Can't seek: {OS_ERROR}")
    print_(LOG, *lines)
    truncate(LOG, tell(LOG)) or die(f"Can't truncate: {OS_ERROR}")
    close(LOG) or die(f"Can't close: {OS_ERROR}")
    print_(STDOUT, q.header(charset="UTF-8", cookie=cookie))
    print_(STDOUT, f"<p>No.{no} posted</p>\n")
else:
    print_(STDOUT, q.header(charset="UTF-8"))

IN = open_("< " + logfile)  # unchecked: no log yet reads as no entries
lines = IN.readlines()
close(IN)
print_(STDOUT, "<h1>Guestbook (", len(lines), " entries)</h1>\n")
print_(STDOUT, '<form method="post" enctype="multipart/form-data">\n')
print_(STDOUT, '<input name="name" value="', q.escapeHTML(name), '">\n')
print_(STDOUT, '<textarea name="message"></textarea>\n')
for topic in ("perl", "python", "cgi"):
    print_(STDOUT, f'<input type="checkbox" name="topic" value="{topic}">{topic}\n')
print_(STDOUT, '<input type="file" name="photo"><input type="submit"></form>\n<ul>\n')
for line in lines[:10]:  # $shown = 0; foreach $line (@lines) { last if ++$shown > 10; ...
    no, who, topics_, text, photo = split("<>", line)[:5]
    print_(
        STDOUT,
        f"<li>No.{no} {who} [{topics_}]: {text}",
        f" ({photo})" if photo != "" else "",
        "</li>\n",
    )
print_(STDOUT, "</ul>\n")
