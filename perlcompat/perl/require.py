"""Perl's ``require "./lib.pl"`` for a ported library that shares the script's globals.

A Perl CGI often keeps its subs and settings in a second file (``require
'./jcode.pl'; require './cgi-lib.pl'; require './setup.pl';``) that it loads into
the script's own package: the library's ``$lockdir`` and ``sub lock`` are the
script's, and the script's ``%FORM`` is the library's.  ``require("./lib.py")``
does the same for the ported library: it runs the file once in the calling
module's globals (a second ``require`` of the same name does nothing, as Perl's
``%INC`` makes it), and returns 1.  The path is taken as Perl takes
``"./lib.pl"``: relative to the current directory (a CGI's is its script's).
A missing file raises :class:`~perlcompat.perl.die.Die` with Perl's message
(``Can't locate ./lib.py at FILE line N.``); an error inside the library
propagates as it is.  This module imports ``perl.die`` only when it must die.
"""

from __future__ import annotations

import os
import sys

#: Perl's ``%INC``: each name ``require`` loaded -> the path it ran
INC: dict[str, str] = {}


def require(path: str | os.PathLike[str]) -> int:
    """Run the Python file *path* once in the caller's globals (Perl's ``require``); return 1."""
    name = os.fspath(path)
    if not isinstance(name, str):
        name = os.fsdecode(name)
    caller = sys._getframe(1)
    if name in INC:
        return 1
    try:
        with open(name, "rb") as source:
            text = source.read()
    except OSError:
        from .die import Die, script_name

        where = script_name(caller.f_code.co_filename)
        message = f"Can't locate {name} at {where} line {caller.f_lineno}.\n"
        raise Die(message) from None
    code = compile(text, name, "exec")
    INC[name] = os.path.abspath(name)
    try:
        exec(code, caller.f_globals)
    except BaseException:
        del INC[name]  # as Perl: a library that failed is not loaded
        raise
    return 1
