#!/usr/bin/env python3
"""Access counter (the Perl locking article), ported line for line from count.cgi."""

import os

from perlcompat import (
    LOCK_EX,
    OS_ERROR,
    close,
    die,
    filetest,
    flock,
    open_,
    print_,
    seek,
    tell,
    truncate,
)

datafile = (os.environ.get("PERLCOMPAT_DATA_DIR") or ".") + "/count.dat"

if not filetest("-e", datafile):  # first visit: create it; ">>" never truncates
    NEW = open_(">> " + datafile) or die(f"Can't create  : {OS_ERROR}")
    close(NEW)
OUT = open_("+< " + datafile) or die(f"Can't open    : {OS_ERROR}")
flock(OUT, LOCK_EX) or die(f"Can't flock   : {OS_ERROR}")
count = int(OUT.readline() or 0)  # read under the lock, not before it
count += 1
seek(OUT, 0, 0) or die(f"Can't seek    : {OS_ERROR}")
print_(OUT, f"{count}\n") or die(f"Can't print   : {OS_ERROR}")
truncate(OUT, tell(OUT)) or die(f"Can't truncate: {OS_ERROR}")
close(OUT) or die(f"Can't close   : {OS_ERROR}")

print("Content-Type: text/plain\n")
print(count)
