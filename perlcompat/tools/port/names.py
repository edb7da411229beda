"""The one table of names a port emits, and Python names for Perl variables.

``PERLCOMPAT`` maps each name the translator may emit to where it comes from
(``perlcompat`` or a standard module); a name that moves is changed here only.
``PENDING`` are names another branch adds to perlcompat (``inc``, Perl's magic ``++``):
a port that uses one imports it guarded, with a stand-in that refuses what it cannot do.
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
    "O_CREAT", "O_EXCL", "O_TRUNC", "O_APPEND", "jcode", "fork",
)  # fmt: skip
PERLCOMPAT = {name: "perlcompat" for name in _FROM_PERLCOMPAT}
PERLCOMPAT.update({"CGI": "perlcompat.cgi", "ReadParse": "perlcompat.cgi"})
#: standard modules a port imports whole
MODULES = {"os", "re", "sys", "random"}
#: names from urllib.parse
URLLIB = {"unquote_to_bytes"}

#: perlcompat names that arrive with a later version; a port imports them guarded
PENDING = {
    "inc": (
        "try:\n"
        "    from perlcompat import inc\n"
        "except ImportError:  # perlcompat before inc(): Perl's ++ of a number, else refuse\n"
        "\n"
        "    def inc(value):\n"
        '        if isinstance(value, str) and re.fullmatch(r"[a-zA-Z]*[0-9]*", value) and (\n'
        '            re.search("[a-zA-Z]", value) or (len(value) > 1 and value[0] == "0")\n'
        "        ):\n"
        '            raise NotImplementedError(f"magic ++ of {value!r} needs perlcompat.inc")\n'
        "        return num(value) + 1\n"
    ),
}
#: what a pending name's stand-in itself needs
PENDING_NEEDS = {"inc": ("re", "num")}

_PYTHON = (
    "main", "print", "len", "int", "str", "list", "dict", "sorted", "reversed", "range", "min",
    "max", "abs", "ord", "chr", "hex", "oct", "input", "id", "type", "format", "object", "iter",
    "next", "map", "filter", "any", "all", "sum", "float", "bool", "ENV", "FORM_", "l", "O",
    "I", "m", "_m", "args", "exc", "EVAL_ERROR",
)  # fmt: skip
#: names Python or the port itself uses: a Perl variable of that name gets a "_"
RESERVED = set(keyword.kwlist) | set(PERLCOMPAT) | MODULES | URLLIB | set(PENDING) | set(_PYTHON)


def py_var(name: str, suffix: str = "") -> str:
    """A Python name for Perl's ``name`` (``pass`` -> ``pass_``, ``jcode'x`` -> ``jcode_x``)."""
    out = name.replace("::", "_").replace("'", "_")
    if not out.isidentifier():
        out = "v_" + "".join(c if c.isalnum() else "_" for c in out)
    out += suffix
    while out in RESERVED:
        out += "_"
    return out
