#!/usr/bin/env python3
"""簡易掲示板 (Shift_JIS), ported line for line from bbs.cgi.

The source is UTF-8; the data file and the page stay Shift_JIS bytes, byte for
byte what bbs.cgi writes: form values go through ``jcode.convert`` as bytes, as in
Perl, and text is decoded at the edges only, with the exact Shift_JIS codec
(``:encoding(sjis-exact)`` on the data file, ``sjis-exact`` on the form and on
stdout), so old posts come back unchanged and literals are written as Shift_JIS.
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
    jcode,  # also registers the sjis-exact codec
    open_,
    print_,
    seek,
    tell,
    truncate,
)

datafile = (os.environ.get("PERLCOMPAT_DATA_DIR") or ".") + "/bbs.dat"
FORM = {}
posted = 0
sys.stdout.reconfigure(encoding="sjis-exact")  # Perl prints bytes


# フォームを解読する (jcode.pl と同じバイトにしてから、そのまま戻せる形で文字列に)
def decode():
    if os.environ.get("REQUEST_METHOD") == "POST":
        buffer = sys.stdin.buffer.read(int(os.environ.get("CONTENT_LENGTH") or 0))
    else:
        buffer = os.fsencode(os.environ.get("QUERY_STRING", ""))
    for pair in buffer.split(b"&"):
        key, value = ([*pair.split(b"="), b""])[:2]
        value = value.replace(b"+", b" ")
        value = unquote_to_bytes(value)
        value, _ = jcode.convert(value, "sjis")  # &jcode'convert(*value, 'sjis');
        value = value.decode("sjis-exact")
        value = value.replace("&", "&amp;")
        value = value.replace("<", "&lt;")
        value = value.replace(">", "&gt;")
        value = value.replace('"', "&quot;")
        value = re.sub(r"\r\n|\r|\n", "<br>", value)
        FORM[key.decode("sjis-exact")] = value


# 書き込む: ロックしてから読む (書く直前だけロックしても記事は消える)
def regist():
    global posted
    if FORM.get("name", "") == "" or FORM.get("message", "") == "":
        error("名前と本文を書いてください。")
    if not filetest("-e", datafile):
        NEW = open_(">>", datafile) or error(f"作れません: {OS_ERROR}")
        close(NEW)
    DAT = open_("+<:encoding(sjis-exact)", datafile) or error(f"開けません: {OS_ERROR}")
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
    IN = open_("<:encoding(sjis-exact)", datafile)
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
