#!/usr/bin/env python3
"""Vote tally with the Perl locking article's symlink lock and signal trap, ported line for line.

``symlink(os.getpid(), lockfile)`` makes the same link as Perl's
``symlink($$, $lockfile)``, so vote.cgi's ``$$ == readlink($lockfile)`` check and
this script's trap each remove only their own lock.  (In new code,
``lock(lockfile, method="symlink")`` does all of this, trap included.)
"""

import os
import re
import sys
from urllib.parse import unquote_to_bytes

from perlcompat import OS_ERROR, SIG, close, open_, print_, readlink, sleep, symlink, unlink

datafile = (os.environ.get("PERLCOMPAT_DATA_DIR") or ".") + "/vote.dat"
lockfile = (os.environ.get("PERLCOMPAT_DATA_DIR") or ".") + "/vote.lock"
FORM = {}


def main():
    decode()
    item = FORM.get("item", "")
    if item != "":
        re.fullmatch(r"\w+", item, re.ASCII) or error("Bad item name.")
        # シグナルハンドラをセット
        SIG["HUP"] = SIG["INT"] = SIG["PIPE"] = SIG["QUIT"] = SIG["TERM"] = unlock_trap
        retry = 5  # リトライ回数セット
        while not symlink(os.getpid(), lockfile):  # 作成。出来なければ待つ
            retry -= 1
            if retry <= 0:  # 5回ダメならあきらめる
                error("BUSY")
            sleep(1)  # 1秒待つ
        IN = open_("< " + datafile)
        lines = IN.readlines() if IN else []
        close(IN)
        found = 0
        for i, line in enumerate(lines):
            name, votes = line.split("<>")[:2]
            if name == item:
                lines[i] = f"{name}<>{int(votes) + 1}<>\n"
                found = 1
        if not found:
            lines.append(f"{item}<>1<>\n")
        OUT = open_("> " + datafile) or error(f"Can't write: {OS_ERROR}")
        print_(OUT, *lines)
        close(OUT)
        unlink(lockfile)  # 削除
    html(item)


def unlock_trap(signame):
    # プロセス番号が一致して、自分が作ったロックならば消去
    if readlink(lockfile) == str(os.getpid()):
        unlink(lockfile)
    sys.exit()


def decode():
    for pair in os.fsencode(os.environ.get("QUERY_STRING", "")).split(b"&"):
        key, value = ([*pair.split(b"="), b""])[:2]
        value = value.replace(b"+", b" ")
        value = unquote_to_bytes(value).decode("utf-8", "surrogateescape")
        FORM[key.decode("utf-8", "surrogateescape")] = value


def html(item):
    print("Content-Type: text/plain\n")
    if item != "":
        print(f"voted {item}")
    IN = open_("< " + datafile)
    sys.stdout.write(IN.read() if IN else "")
    close(IN)


def error(message):
    print("Status: 503 Service Unavailable")
    print("Content-Type: text/plain\n")
    print(message)
    sys.exit()


sys.stdout.reconfigure(encoding="utf-8", errors="surrogateescape")  # Perl prints bytes
main()
