"""The Python line each finding suggests, in the script's own terms.

Perl expressions in Python spelling (``$cf{datadir}`` -> ``cf["datadir"]``, ``"$dir/x"``
-> an f-string), always a compilable expression (else the placeholder ``path``), and
``lock(...)`` calls with the script's lock's retries, pause and stale age, and its
``&error`` sub in place of ``die``.
"""

from __future__ import annotations

import keyword
import re

from .items import tok_at
from .lexer import Tok
from .model import Inst, Path, Program, Source
from .parser import Block
from .source import display

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from .parser import Item


def py_name(perl: str) -> str:
    """``$logfile`` -> ``logfile``; ``$in`` -> ``in_`` (not a Python keyword)."""
    name = perl.lstrip("$@%&*")
    name = name.split("::")[-1].split("'")[-1] or "fh"
    if not name.isidentifier():
        return "fh"
    return name + "_" if keyword.iskeyword(name) else name


INTERP = re.compile(r"\$\{(\w+)\}|\$(\w+(?:::\w+)*)")


LONE_VAR = re.compile(r"\$\{?(\w+(?:::\w+)*)\}?")


# `$name`, `${name}`, and element chains Perl interpolates: `$cf{datadir}`, `$a[0]`,
# `$r->{file}`, `$h{'k'}`, `$h{$k}`, `$a[$i]`.
_INTERP_ELEM = re.compile(
    r"\$\$(?![\w{])|\$\{(\w+)\}|\$(\w+(?:::\w+)*)"
    r"((?:(?:->)?(?:\{-?\w+\}|\{'[^'{}\\]*'\}|\{\$\w+\}|\[-?\d+\]|\[\$\w+\]))*)"
)
_SUBSCRIPT = re.compile(r"\{-?(\w+)\}|\{'([^']*)'\}|\{\$(\w+)\}|\[(-?\d+)\]|\[\$(\w+)\]")


def _py_elem(match: re.Match[str], quote: str) -> str:
    """A matched ``$name{key}[0]`` as Python: ``name["key"][0]`` (keys quoted with *quote*)."""
    if match.group(0) == "$$":
        return "os.getpid()"
    out = py_name(match.group(1) or match.group(2))
    for sub in _SUBSCRIPT.finditer(match.group(3) or ""):
        word, literal, key_var, index, index_var = sub.groups()
        if word is not None and not word.isdigit():
            out += f"[{quote}{word}{quote}]"
        elif literal is not None or word is not None:
            out += f"[{quote}{literal if literal is not None else word}{quote}]"
        elif key_var is not None:
            out += f"[{py_name(key_var)}]"
        elif index is not None:
            out += f"[{index}]"
        else:
            out += f"[{py_name(index_var or '')}]"
    return out


#: Perl ``"..."`` escapes and their Python spelling; any other ``\\X`` is X itself.
_PERL_ESCAPES = {
    "n": "\\n",
    "t": "\\t",
    "r": "\\r",
    "a": "\\a",
    "f": "\\f",
    "e": "\\x1b",
    "0": "\\0",
}


def _py_char(c: str, f_string: bool) -> str:
    if c in '\\"':
        return "\\" + c
    if f_string and c in "{}":
        return c + c
    if c < " " or c == "\x7f":
        return f"\\x{ord(c):02x}"
    return c


def py_string(body: str, interpolate: bool) -> str:
    """A Perl string body as a Python expression: a name, an element, or a string literal.

    ``"..."`` bodies interpolate (``$x``, ``$h{k}``, ``$a[0]``, ``$$``) into an f-string and
    keep their escapes (``\\n``; ``\\$`` is a dollar); ``'...'`` bodies only unescape
    ``\\\\`` and ``\\'``.  The result always compiles, without invalid-escape warnings.
    """
    if not interpolate:
        text = re.sub(r"\\([\\'])", r"\1", body)
        return '"' + "".join(_py_char(c, False) for c in text) + '"'
    whole = _INTERP_ELEM.fullmatch(body)
    if whole:
        return _py_elem(whole, '"')
    pieces: list[tuple[bool, str]] = []  # (is an expression, text)
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            pieces.append((False, _PERL_ESCAPES.get(nxt, nxt)))
            i += 2
            continue
        match = _INTERP_ELEM.match(body, i) if c == "$" else None
        if match:
            pieces.append((True, _py_elem(match, "'")))
            i = match.end()
            continue
        pieces.append((False, c))
        i += 1
    f_string = any(expr for expr, _ in pieces)
    out = []
    for expr, text in pieces:
        if expr:
            out.append("{" + text + "}")
        elif text.startswith("\\") and len(text) > 1:
            out.append(text)  # a Python escape from _PERL_ESCAPES
        else:
            out.append(_py_char(text, f_string))
    return ("f" if f_string else "") + '"' + "".join(out) + '"'


def py_expr(items: Sequence[Item], head: str | None) -> str:
    """The Python spelling of a Perl path expression, or the placeholder ``path``."""
    parts: list[str] = []
    k = 0
    while k < len(items):
        item = items[k]
        if isinstance(item, Block):
            return "path"
        k += 1
        if item.is_op("."):
            continue
        if item.kind == "str":
            body = (head if (k == 1 and head is not None) else item.text).strip()
            if body:
                parts.append(py_string(body, item.extra in ('"', "qq", "heredoc")))
        elif item.kind == "num":
            parts.append(f'"{item.text}"')
        elif item.kind == "var" and item.text.startswith("$"):
            chain = ""
            while k < len(items):
                nxt = items[k]
                arrow = isinstance(nxt, Tok) and nxt.is_op("->")
                start = k + 1 if arrow else k
                opener = tok_at(items, start)
                close = tok_at(items, start + 2)
                inner = tok_at(items, start + 1)
                if (
                    opener is None
                    or close is None
                    or inner is None
                    or (
                        not (opener.is_op("{") and close.is_op("}"))
                        and not (opener.is_op("[") and close.is_op("]"))
                    )
                    or inner.kind not in ("id", "str", "var", "num")
                ):
                    break
                body = f"'{inner.text}'" if inner.kind == "str" else inner.text
                chain += f"{opener.text}{body}{close.text}"
                k = start + 3
            match = _INTERP_ELEM.fullmatch(item.text + chain)
            if match is None:
                return "path"
            parts.append(_py_elem(match, '"'))
        else:
            return "path"
    return _valid_py(display(" + ".join(parts) or '""'))


def _valid_py(expr: str) -> str:
    """*expr* if it is a Python expression, else the placeholder ``path``."""
    try:
        compile(expr, "<suggestion>", "eval")
    except SyntaxError:
        return "path"
    return expr


def flock_suggestion(handle: str, path: Path) -> str:
    h = py_name(handle)
    return (
        f'{h} = open_("+<", {path.py}) or die(...); flock({h}, LOCK_EX) or die(...); '
        f"lines = {h}.readlines(); seek({h}, 0, 0); print_({h}, *lines); "
        f"truncate({h}, tell({h})); close({h})"
    )


#: the names a suggestion uses where the script's own lock path is not known.
PLACEHOLDERS = ('"lockdir"', "path")


def fcntl_suggestion(handle: str) -> str:
    """File::FcntlLock's (or Perl's ``fcntl``) record lock on *handle*, as the port takes it."""
    h = py_name(handle)
    return (
        f"fs = FcntlLock(l_type=F_WRLCK); fs.lock({h}, F_SETLKW) or "
        'die(f"Locking failed: {fs.error()}")'
    )


def _sub_name(inst: Inst) -> str:
    """``lock`` of a ``&lock('dir')`` hold."""
    return inst.text[1:].split("(", 1)[0].split("::")[-1].split("'")[-1]


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else str(value)


def lock_call(
    prog: Program,
    source: Source,
    name: str,
    *,
    inst: Inst | None = None,
    sub: str = "",
    stale: int = 0,
    method: str = "",
) -> str:
    """``lock(name, retry=5, wait=1, stale=60) or error("busy")`` in the script's own terms.

    The call that takes the same lock as the script: its lock path (where only a lock
    sub knows it: the literal its variable holds), the method and format of the lock it takes
    (``method="symlink", target="."`` for daycount.cgi's ``symlink(".", $lockfile)``;
    ``held=..., data=True`` for a data file renamed away and back), the retries, pause
    and stale age (its retry loop, its age test, or those of the lock sub it calls); its
    own error sub (``&error``) replaces ``die``.
    """
    if inst is not None and inst.kind == "sub":
        sub = _sub_name(inst)
    retry, wait, sub_stale = prog.style(source, sub)
    if inst is not None:
        retry, wait = inst.retry or retry, inst.wait or wait
    stale = stale or sub_stale
    form = dict(inst.form) if inst is not None and inst.form else {}
    if not form and sub:
        form = prog.form(source, sub)
    if "name" in form and name in PLACEHOLDERS:
        name = form["name"]
    args = [name]
    if method:
        args.append(f'method="{method}"')
    elif form.get("method"):  # "": the default method (mkdir)
        args.append(f"method={form['method']}")
    args += [f"{key}={form[key]}" for key in ("target", "held", "data") if key in form]
    if retry:
        args.append(f"retry={retry}")
    if wait:
        args.append(f"wait={_number(wait)}")
    if stale:
        args.append(f"stale={stale}")
    fail = py_name(source.error_sub) if source.error_sub else "die"
    return f'lock({", ".join(args)}) or {fail}("busy")'
