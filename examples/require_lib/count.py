#!/usr/bin/env python3
# A counter whose functions live in a library: require("./countlib.py") shares this
# script's globals, as Perl's require './countlib.pl' does.
# ruff: noqa: F821  (bump, count and NUMBER come from countlib.py)
from perlcompat import close, require

require("./countlib.py")

bump()
print("Content-Type: text/plain\n")
print(f"{count}")
close(NUMBER)
