"""The one table of names a port emits, and Python names for Perl variables.

``PERLCOMPAT`` maps each name the translator may emit to where it comes from
(``perlcompat`` or a standard module); a name that moves is changed here only.
"""

from __future__ import annotations

import keyword

#: name emitted -> the module it is imported from
_FROM_PERLCOMPAT = (
    "LOCK_EX", "LOCK_NB", "LOCK_SH", "LOCK_UN", "SEEK_CUR", "SEEK_END", "SEEK_SET", "OS_ERROR",
    "Die", "die", "warn", "open_", "close", "print_", "printf", "seek", "tell", "truncate",
    "binmode", "eof", "flock", "mkdir", "rmdir", "rename", "unlink", "symlink", "readlink",
    "utime", "chmod", "chown", "stat", "lstat", "filetest", "sleep", "split", "num", "truth",
    "time", "localtime", "gmtime", "scalar_localtime", "scalar_gmtime", "crypt", "alarm", "SIG",
    "local_sig", "lock", "unlock", "readline", "PerlList", "PerlHash", "elem", "hval", "pop",
    "shift", "push", "unshift", "chomp", "chop", "strftime", "undef", "defined", "require",
    "STDIN", "STDOUT", "STDERR", "read", "Scalar", "sysopen", "O_RDONLY", "O_WRONLY", "O_RDWR",
    "O_CREAT", "O_EXCL", "O_TRUNC", "O_APPEND", "jcode", "fork", "inc", "length", "substr",
    "tr", "as_bytes", "from_bytes", "qx", "qx_lines", "system", "CHILD_ERROR",
)  # fmt: skip
PERLCOMPAT = {name: "perlcompat" for name in _FROM_PERLCOMPAT}
PERLCOMPAT.update({"CGI": "perlcompat.cgi", "ReadParse": "perlcompat.cgi"})
#: standard modules a port imports whole
MODULES = {"os", "re", "sys", "random"}
#: names from urllib.parse
URLLIB = {"unquote_to_bytes"}

_PYTHON = (
    "main", "print", "len", "int", "str", "list", "dict", "sorted", "reversed", "range", "min",
    "max", "abs", "ord", "chr", "hex", "oct", "input", "id", "type", "format", "object", "iter",
    "next", "map", "filter", "any", "all", "sum", "float", "bool", "ENV", "FORM_", "l", "O",
    "I", "m", "_m", "args", "exc", "EVAL_ERROR",
)  # fmt: skip
#: names Python or the port itself uses: a Perl variable of that name gets a "_"
RESERVED = set(keyword.kwlist) | set(PERLCOMPAT) | MODULES | URLLIB | set(_PYTHON)


def py_var(name: str, suffix: str = "") -> str:
    """A Python name for Perl's ``name`` (``pass`` -> ``pass_``, ``jcode'x`` -> ``jcode_x``)."""
    out = name.replace("::", "_").replace("'", "_")
    if not out.isidentifier():
        out = "v_" + "".join(c if c.isalnum() else "_" for c in out)
    out += suffix
    while out in RESERVED:
        out += "_"
    return out
