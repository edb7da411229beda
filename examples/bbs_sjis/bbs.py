#!/usr/bin/env python3
"""簡易掲示板 (Shift_JIS), ported line for line from bbs.cgi.

The source is UTF-8; the data file and the page stay Shift_JIS (cp932) bytes,
byte for byte what bbs.cgi writes: text is decoded at the edges only
(``:encoding(cp932)`` on the data file, cp932 on the form and on stdout).
"""

import os
import re
import sys
import time
from urllib.parse import unquote_to_bytes

from perlcompat import (
    LOCK_EX,
    LOCK_SH,
    OS_ERROR,
    close,
    filetest,
    flock,
    open_,
    print_,
    seek,
    tell,
    truncate,
)

datafile = (os.environ.get("PERLCOMPAT_DATA_DIR") or ".") + "/bbs.dat"
FORM = {}
posted = 0
sys.stdout.reconfigure(encoding="cp932", errors="surrogateescape")  # Perl prints bytes


# フォームを解読する (cp932 で文字列に、解読できないバイトもそのまま戻せる形で)
def decode():
    if os.environ.get("REQUEST_METHOD") == "POST":
        buffer = sys.stdin.buffer.read(int(os.environ.get("CONTENT_LENGTH") or 0))
    else:
        buffer = os.fsencode(os.environ.get("QUERY_STRING", ""))
    for pair in buffer.split(b"&"):
        key, value = ([*pair.split(b"="), b""])[:2]
        value = value.replace(b"+", b" ")
        value = unquote_to_bytes(value).decode("cp932", "surrogateescape")
        value = value.replace("&", "&amp;")
        value = value.replace("<", "&lt;")
        value = value.replace(">", "&gt;")
        value = value.replace('"', "&quot;")
        value = re.sub(r"\r\n|\r|\n", "<br>", value)
        FORM[key.decode("cp932", "surrogateescape")] = value


# 書き込む: ロックしてから読む (書く直前だけロックしても記事は消える)
def regist():
    global posted
    if FORM.get("name", "") == "" or FORM.get("message", "") == "":
        error("名前と本文を書いてください。")
    if not filetest("-e", datafile):
        NEW = open_(">>", datafile) or error(f"作れません: {OS_ERROR}")
        close(NEW)
    DAT = open_("+<:encoding(cp932)", datafile) or error(f"開けません: {OS_ERROR}")
    flock(DAT, LOCK_EX) or error(f"ロックできません: {OS_ERROR}")
    lines = DAT.readlines()
    no = int(lines[0].split("<>")[0]) if lines else 0
    no += 1
    lines.insert(0, f"{no}<>{FORM['name']}<>{FORM['message']}<>{int(time.time())}<>\n")
    seek(DAT, 0, 0) or error(f"seek: {OS_ERROR}")
    print_(DAT, *lines) or error(f"print: {OS_ERROR}")
    truncate(DAT, tell(DAT)) or error(f"truncate: {OS_ERROR}")
    close(DAT) or error(f"close: {OS_ERROR}")
    posted = no


# 掲示板を出す (読むだけなので共有ロック)
def html():
    print("Content-Type: text/html; charset=Shift_JIS\n")
    print("<html><head><title>掲示板</title></head><body>")
    if posted:
        print(f"<p>No.{posted} を書き込みました。</p>")
    print(f'<form method="POST" action="{os.environ.get("SCRIPT_NAME", "")}">')
    print('名前 <input name="name"> 本文 <input name="message"> <input type="submit">')
    print("</form>")
    IN = open_("<:encoding(cp932)", datafile)
    if IN:
        flock(IN, LOCK_SH) or error(f"ロックできません: {OS_ERROR}")
        for line in IN:
            no, name, message, _time = line.split("<>")[:4]
            print(f"<dl><dt>[{no}] {name}</dt><dd>{message}</dd></dl>")
        close(IN)
    print("</body></html>")


def error(message):
    print("Content-Type: text/html; charset=Shift_JIS\n")
    print(f"<html><body><p>{message}</p></body></html>")
    sys.exit()


decode()
if os.environ.get("REQUEST_METHOD") == "POST":
    regist()
html()
