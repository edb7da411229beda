"""The rules of ``perlcompat audit``: walk each sub and the main program, then judge.

Walk.  Every scope (the main program, each named sub, each anonymous sub) is
walked statement by statement with a state: the handles open now (handle ->
its ``open``: mode, path, line), the locks held now (``flock`` on a handle, a
call to a lock sub such as ``&lock('dir')``, an inline ``mkdir``/``symlink``/
``O_EXCL`` lock), the paths known absent (after ``unless (-e $f)`` or a
``while (-f $lock) { sleep }`` wait) and whether an age test encloses the
statement.  ``if``/``elsif``/``else`` branches start from the same state and are
merged after; a branch that ends in ``exit``/``die``/``return``/``&error`` does
not flow on, except to a labelled statement (``WRITE:``, reached by ``goto``).
Each read, write, lock, unlock, removal, rename and ``alarm`` becomes an event
carrying the set of locks held at that moment.

A sub whose every call site (in the scripts audited together) holds a lock is
walked as holding its caller's lock; a sub never called is judged on its own.
A call runs the calling file's own sub of that name if it has one, else that of the
files it ``require``s or ``do``es, else any audited file's (scripts sharing a library):
a lock sub of one script does not make a same-named sub of another a lock.
Paths are compared by their text after substituting, per script, the simple
``$name = "..."`` assignments of that script and of the files it ``require``s
or ``do``es.  Two scripts name the same file only when those texts are equal
and fully resolved: a path that still holds a variable (``$datafile`` set from
``$ENV{...}``) is qualified by its script's name and matches nothing elsewhere.
A ``require``d file that was not given is read from beside its script (through the
caller's *load*) for its subs and constants, and its findings are dropped.

Robustness.  A file that cannot be parsed, or whose walk or rules raise, becomes a
:class:`Problem` and is left out; the other files are audited as if it were absent.

Rules (severity):
  truncate-before-lock (error)   ``open(F, ">$f")``/``+>`` then flock F and use it
  check-then-create (error)      ``-e``/``-f`` test, then an ``open`` that takes a lock
                                 (any creating mode) or truncates (``>``/``+>``); a ``>>``
                                 append to a data file empties nothing and is not reported
  lock-after-read (error)        the file is read before the lock that covers its write
  lock-gap (error)               read under one lock, written under another (or none)
  unlocked-write (error)         rewritten with no lock while other code flocks it
  unlocked-update (warning)      read then rewritten with no lock at all
  ex-on-readonly (warning)       ``flock(IN, LOCK_EX)`` on a read-only handle
  append-no-seek (info)          ``>>`` handle locked, written without ``seek(F, 0, 2)``
  unchecked-result (warning)     ``open``/``flock``/lock sub result ignored
  swallowed-flock (warning)      ``eval "flock(...)"``: failure hidden
  stale-check-then-remove (error) age test, then remove the lock (race)
  alarm-not-reset (warning)      ``alarm(N)`` with no later ``alarm(0)``
  unlink-before-rename (error)   ``unlink($f); rename($tmp, $f)``
  rename-replaces-flocked (error) rename over a file that is itself flocked
  lock-order (warning/error)     two locks taken in opposite orders
  unknown-sub (info)             a lock-named sub defined nowhere audited, once per sub

Suggestions are one compilable line of Python in the script's own terms: its names
(``$cf{datadir}`` -> ``cf["datadir"]``), its lock's retries, pause and stale age, and
its ``&error`` sub in place of ``die``.
"""

from __future__ import annotations

import keyword
import os
import re

from .scan import Block, Tok, display, lex, parse, parse_checked

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence
    from typing import Any

    from .scan import Item

#: rule -> default severity.
RULES = {
    "truncate-before-lock": "error",
    "check-then-create": "error",
    "lock-after-read": "error",
    "lock-gap": "error",
    "unlocked-write": "error",
    "unlocked-update": "warning",
    "ex-on-readonly": "warning",
    "append-no-seek": "info",
    "unchecked-result": "warning",
    "swallowed-flock": "warning",
    "stale-check-then-remove": "error",
    "alarm-not-reset": "warning",
    "unlink-before-rename": "error",
    "rename-replaces-flocked": "error",
    "lock-order": "warning",
    "unknown-sub": "info",
}

LOCK_SH, LOCK_EX, LOCK_NB, LOCK_UN = 1, 2, 4, 8
_FLOCK_NAMES = {"LOCK_SH": 1, "LOCK_EX": 2, "LOCK_NB": 4, "LOCK_UN": 8}
_SEEK_NAMES = {"SEEK_SET": 0, "SEEK_CUR": 1, "SEEK_END": 2}
_REWRITE = frozenset({">", "+<", "+>"})
_CREATE = frozenset({">", ">>", "+>", "+>>"})
_POSTFIX = frozenset({"if", "unless", "while", "until", "for", "foreach"})
_LOW_WORDS = frozenset({"or", "and", "xor", "if", "unless", "while", "until", "for", "foreach"})
_EXIT_WORDS = frozenset({"exit", "die", "croak", "confess", "return", "next", "last", "redo"})
_STD_HANDLES = frozenset({"STDOUT", "STDERR", "STDIN", "ARGV", "DATA"})
_UNLOCK_NAME = re.compile(
    r"unlock|release|un_lock|lock_?(?:off|end|free)|(?:rm|del|free)_?lock", re.I
)
_LOCK_NAME = re.compile(r"lock", re.I)
_NOT_LOCK_NAME = re.compile(r"[bc]lock", re.I)  # block, clock, SIG_BLOCK, EWOULDBLOCK
_CONST_NAME = re.compile(r"^[A-Z0-9_]+$")  # LOCK_EX: a constant unless called as `&LOCK(...)`
_EXIT_NAME = re.compile(r"^(?:error|err|error_?exit|fatal|abort|bail|die_?\w*)$", re.I)
_LOCKISH = re.compile(r"lock|lck", re.I)
_EXISTS_TESTS = frozenset({"-e", "-f", "-d", "-l", "-s"})
_AGE_TESTS = frozenset({"-M", "-A", "-C"})
_NAMED_UNARY = frozenset({"close", "alarm", "rmdir", "readline", "chdir", "eof", "getc", "tell"})
_TRUNCATE = frozenset({">", "+>"})
#: Between a script's name and a path key that means something in that script only.
_QUAL = "\x00"


def _bare(key: str) -> str:
    """A path key without the script qualifier :meth:`_Walker.path` may have added."""
    return key.rpartition(_QUAL)[2]


class Finding:
    """One report: where, which rule, how bad, what happens, what to write instead."""

    __slots__ = ("file", "line", "message", "rule", "severity", "suggestion")

    def __init__(
        self, file: str, line: int, rule: str, message: str, suggestion: str, severity: str = ""
    ) -> None:
        self.file = file
        self.line = line
        self.rule = rule
        self.severity = severity or RULES[rule]
        self.message = message
        self.suggestion = suggestion

    def as_dict(self) -> dict[str, object]:
        """The JSON shape: file, line, rule, severity, message, suggestion."""
        return {
            "file": self.file,
            "line": self.line,
            "rule": self.rule,
            "severity": self.severity,
            "message": self.message,
            "suggestion": self.suggestion,
        }

    def __repr__(self) -> str:
        return f"<Finding {self.file}:{self.line} {self.severity} {self.rule}>"


# --------------------------------------------------------------------------
# What the walk records


class Path:
    """A file name expression: comparison key, source text, Python spelling.

    *local* is True when the key still names a ``my`` variable (or ``$_[0]``) of
    its sub: it then means nothing outside that sub.
    """

    __slots__ = ("key", "local", "py", "text")

    def __init__(self, key: str, text: str, py: str, local: bool = False) -> None:
        self.key = key
        self.text = text
        self.py = py
        self.local = local


class Open:
    """One ``open`` of a handle."""

    __slots__ = ("explicit", "handle", "held", "line", "mode", "path", "py_mode")

    def __init__(
        self, handle: str, mode: str, explicit: bool, path: Path, line: int, held: frozenset[int]
    ) -> None:
        self.handle = handle
        self.mode = mode  # < > >> +< +> +>> or ? (unknown)
        self.explicit = explicit
        self.path = path
        self.line = line
        self.held = held
        self.py_mode = mode if mode != "?" else "<"

    @property
    def real(self) -> bool:
        """True if this open names a file (not a handle opened elsewhere)."""
        return self.line > 0


class Inst:
    """One hold of a lock, from acquisition to release."""

    __slots__ = (
        "blocking",
        "id",
        "key",
        "kind",
        "line",
        "local",
        "name",
        "open",
        "retry",
        "text",
        "wait",
    )

    def __init__(
        self,
        id_: int,
        kind: str,
        key: str,
        line: int,
        text: str,
        *,
        name: str = "",
        blocking: bool = False,
        open_: Open | None = None,
    ) -> None:
        self.id = id_
        self.kind = kind  # flock sub mkdir symlink excl file rename caller
        self.key = key
        self.line = line
        self.text = text
        self.name = name  # Python spelling of the lock name
        self.blocking = blocking
        self.open = open_
        self.local = False  # the key names a `my` variable: meaningless outside its sub
        self.retry = 0  # tries of the script's own retry loop around it (0: none seen)
        self.wait = 0.0  # its sleep between tries


class Ev:
    """One event in a scope: read, write, flock, acquire, remove, rename, alarm, seek, call."""

    __slots__ = (
        "age",
        "branch",
        "held",
        "inst",
        "kind",
        "line",
        "open",
        "path",
        "source",
        "value",
        "via",
    )

    def __init__(
        self,
        kind: str,
        line: int,
        held: frozenset[int],
        *,
        open_: Open | None = None,
        path: Path | None = None,
        value: int | None = None,
        inst: Inst | None = None,
        via: str = "",
        age: int = 0,
        source: Path | None = None,
    ) -> None:
        self.kind = kind
        self.line = line
        self.held = held
        self.open = open_
        self.path = path
        self.value = value
        self.inst = inst
        self.via = via
        self.age = age
        self.source = source  # a rename's old name
        self.branch: tuple[tuple[int, int], ...] = ()  # (if-chain id, branch index) nesting

    def exclusive(self, other: Ev) -> bool:
        """True if the two events sit in different branches of one if/elsif/else chain."""
        mine = dict(self.branch)
        return any(chain in mine and mine[chain] != arm for chain, arm in other.branch)


class State:
    """What is true at one point of a walk."""

    __slots__ = ("absent", "age", "handles", "held")

    def __init__(self) -> None:
        self.handles: dict[str, Open] = {}
        self.held: dict[int, Inst] = {}
        self.absent: dict[str, tuple[int, bool]] = {}  # key -> (test line, wait loop)
        self.age = 0  # line of an enclosing age test

    def copy(self) -> State:
        other = State()
        other.handles = dict(self.handles)
        other.held = dict(self.held)
        other.absent = dict(self.absent)
        other.age = self.age
        return other

    def assign(self, other: State) -> None:
        self.handles = other.handles
        self.held = other.held
        self.absent = other.absent
        self.age = other.age

    def snapshot(self) -> frozenset[int]:
        return frozenset(self.held)


def _merge(ends: list[State], age: int) -> State:
    """Join the states at the ends of alternative branches."""
    merged = State()
    for end in ends:
        merged.handles.update(end.handles)
        merged.held.update(end.held)
    common = set(ends[0].absent)
    for end in ends[1:]:
        common &= set(end.absent)
    merged.absent = {k: ends[0].absent[k] for k in common}
    merged.age = age
    return merged


class Ctx:
    """How the expression being walked is used."""

    __slots__ = ("cond", "eval", "loop")

    def __init__(self, cond: bool = False, loop: bool = False, eval_: bool = False) -> None:
        self.cond = cond  # a condition: results are checked
        self.loop = loop  # a while/until condition
        self.eval = eval_  # inside an eval whose own result is ignored


_STMT = Ctx()


# --------------------------------------------------------------------------
# Item helpers


def _tok(items: Sequence[Item], k: int) -> Tok | None:
    if 0 <= k < len(items):
        item = items[k]
        if isinstance(item, Tok):
            return item
    return None


def _match_paren(items: Sequence[Item], start: int) -> int:
    """Index of the ``)`` or ``]`` closing the bracket at *start* (or the last index)."""
    depth = 0
    for k in range(start, len(items)):
        item = items[k]
        if isinstance(item, Tok) and item.kind == "op":
            if item.text in ("(", "["):
                depth += 1
            elif item.text in (")", "]"):
                depth -= 1
                if depth == 0:
                    return k
    return len(items) - 1


def _split_args(items: Sequence[Item]) -> list[list[Item]]:
    args: list[list[Item]] = [[]]
    depth = 0
    for item in items:
        if isinstance(item, Tok) and item.kind == "op":
            if item.text in ("(", "[", "{"):
                depth += 1
            elif item.text in (")", "]", "}"):
                depth -= 1
            elif item.text in (",", "=>") and depth == 0:
                args.append([])
                continue
        args[-1].append(item)
    return [a for a in args if a]


def _call_args(items: Sequence[Item], i: int) -> tuple[list[list[Item]], int, bool]:
    """Arguments of the call at *i*, index after them, and whether a bare ``||`` is among them."""
    head = items[i]
    name = head.text if isinstance(head, Tok) else ""
    nxt = _tok(items, i + 1)
    if nxt is not None and nxt.is_op("("):
        close = _match_paren(items, i + 1)
        return _split_args(items[i + 2 : close]), close + 1, False
    unary = name in _NAMED_UNARY
    depth = 0
    oror = False
    cut = -1  # where a bare `||` starts: it belongs to the last argument, not to the call
    k = i + 1
    while k < len(items):
        item = items[k]
        if isinstance(item, Tok):
            if item.kind == "op":
                if item.text in ("(", "["):
                    depth += 1
                elif item.text in (")", "]"):
                    if depth == 0:
                        break
                    depth -= 1
                elif depth == 0 and item.text in ("||", "&&", "//"):
                    if unary:
                        break
                    if not oror:
                        cut = k
                    oror = True
                elif (
                    depth == 0
                    and unary
                    and item.text in (",", "?", ":", "=", "==", "!=", "<", ">", "<=", ">=")
                ):
                    break
            elif item.kind == "id" and depth == 0 and item.text in _LOW_WORDS:
                break
        k += 1
    return _split_args(items[i + 1 : cut if oror else k]), k, oror


def _postfix_index(items: Sequence[Item]) -> int:
    depth = 0
    for k, item in enumerate(items):
        if not isinstance(item, Tok):
            continue
        if item.kind == "op":
            if item.text in ("(", "[", "{"):
                depth += 1
            elif item.text in (")", "]", "}"):
                depth -= 1
        elif k > 0 and depth == 0 and item.kind == "id" and item.text in _POSTFIX:
            return k
    return -1


def _first_line(items: Sequence[Item]) -> int:
    for item in items:
        return item.line
    return 0


def _py_name(perl: str) -> str:
    """``$logfile`` -> ``logfile``; ``$in`` -> ``in_`` (not a Python keyword)."""
    name = perl.lstrip("$@%&*")
    name = name.split("::")[-1].split("'")[-1] or "fh"
    if not name.isidentifier():
        return "fh"
    return name + "_" if keyword.iskeyword(name) else name


def _handle_name(arg: Sequence[Item]) -> str | None:
    """``OUT``, ``*OUT``, ``my $fh``, ``\\*OUT`` -> the handle's name."""
    for item in reversed(arg):
        if isinstance(item, Tok):
            if item.kind == "var":
                return item.text[1:] if item.text.startswith("*") else item.text
            if item.kind == "id" and item.text not in ("my", "our", "local", "state"):
                return item.text
    return None


_INTERP = re.compile(r"\$\{(\w+)\}|\$(\w+(?:::\w+)*)")


_LONE_VAR = re.compile(r"\$\{?(\w+(?:::\w+)*)\}?")


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
    out = _py_name(match.group(1) or match.group(2))
    for sub in _SUBSCRIPT.finditer(match.group(3) or ""):
        word, literal, key_var, index, index_var = sub.groups()
        if word is not None and not word.isdigit():
            out += f"[{quote}{word}{quote}]"
        elif literal is not None or word is not None:
            out += f"[{quote}{literal if literal is not None else word}{quote}]"
        elif key_var is not None:
            out += f"[{_py_name(key_var)}]"
        elif index is not None:
            out += f"[{index}]"
        else:
            out += f"[{_py_name(index_var or '')}]"
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


def _py_string(body: str, interpolate: bool) -> str:
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


def _py_expr(items: Sequence[Item], head: str | None) -> str:
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
                parts.append(_py_string(body, item.extra in ('"', "qq", "heredoc")))
        elif item.kind == "num":
            parts.append(f'"{item.text}"')
        elif item.kind == "var" and item.text.startswith("$"):
            chain = ""
            while k < len(items):
                nxt = items[k]
                arrow = isinstance(nxt, Tok) and nxt.is_op("->")
                start = k + 1 if arrow else k
                opener = _tok(items, start)
                close = _tok(items, start + 2)
                inner = _tok(items, start + 1)
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


class _Source:
    """Per-file facts: name, simple string constants."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.consts: dict[str, str] = {}
        self.requires: set[str] = set()  # base names of the files it `require`s or `do`es
        self.loads: list[_Source] = []  # those files (transitively), as audited or read
        self.shared: dict[str, str] = {}  # constants of those files, where they agree
        self.library = False  # read only because a script requires it: no findings
        self.missing: list[str] = []  # required files neither audited nor found beside it
        self.error_sub = ""  # its own `&error(...)`-style sub, if it calls one


class Program:
    """Everything audited together: files, subs, and what the walks found."""

    def __init__(self) -> None:
        self.sources: list[_Source] = []
        self.subs: dict[str, list[tuple[_Source, Block]]] = {}
        self.sub_class: dict[tuple[str, str], str] = {}  # (file, sub) -> "lock"
        self.can_fail: set[tuple[str, str]] = set()  # (file, sub) lock that may return 0
        self.exit_subs: set[tuple[str, str]] = set()  # (file, sub) that always leaves
        self.locked_context: set[tuple[str, str]] = set()  # (file, sub) called only under a lock
        self.results: list[_Result] = []
        self.next_id = 0
        #: (file, lock sub) -> (tries, pause, stale seconds) of its retry loop and age test
        self.styles: dict[tuple[str, str], tuple[int, float, int]] = {}

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def visible(self, source: _Source, name: str) -> list[_Source]:
        """The files whose sub *name* a call from *source* runs, each once.

        The caller's own definition if it has one, else those of the files it loads,
        else every audited file's (scripts sharing a library audited alongside them).
        Empty for a package-qualified name (``&Foo::init``): another package's sub.
        """
        defs = list(dict.fromkeys(s for s, _ in self.subs.get(name, [])))
        own = [s for s in defs if s is source]
        if own:
            return own
        return [s for s in defs if s in source.loads] or defs

    def exits(self, source: _Source, name: str) -> bool:
        """True if calling sub *name* from *source* never returns (``&error``)."""
        if name not in self.subs:
            return bool(_EXIT_NAME.match(name))
        return all((s.name, name) in self.exit_subs for s in self.visible(source, name))

    def fails(self, source: _Source, name: str) -> bool:
        """True if the lock sub *name*, called from *source*, may return 0."""
        return any((s.name, name) in self.can_fail for s in self.visible(source, name))

    def style(self, source: _Source, name: str) -> tuple[int, float, int]:
        """(tries, pause, stale seconds) of the lock sub *name* as called from *source*."""
        for s in self.visible(source, name):
            style = self.styles.get((s.name, name))
            if style is not None:
                return style
        return (0, 0.0, 0)

    def classify(self, name: str, called: bool = False, source: _Source | None = None) -> str:
        """``"lock"``, ``"unlock"`` or ``""`` for a sub called *name* (from *source*).

        An all-capitals name (``LOCK_EX``, ``&Fcntl::O_EXLOCK``) is a constant unless it
        is the script's own sub *called* with ``&`` (``&LOCK($lockfile)``).  A sub
        learned to return holding a lock is one only where a call reaches its file.
        """
        if source is not None and any(
            (s.name, name) in self.sub_class for s in self.visible(source, name)
        ):
            return "lock"
        qualified = "::" in name or "'" in name
        name = name.split("::")[-1].split("'")[-1]
        if _NOT_LOCK_NAME.search(name) or name in _FLOCK_NAMES:
            return ""
        if _CONST_NAME.match(name) and (not called or qualified):
            return ""
        if _UNLOCK_NAME.search(name):
            return "unlock"
        if _LOCK_NAME.search(name):
            return "lock"
        return ""


class _Result:
    """One walked scope: its events, opens, lock holds and direct findings."""

    def __init__(self, source: _Source, scope: str) -> None:
        self.source = source
        self.scope = scope
        self.events: list[Ev] = []
        self.opens: list[Open] = []
        self.insts: dict[int, Inst] = {}
        self.findings: list[Finding] = []
        self.calls: list[tuple[str, frozenset[int], int]] = []
        self.end_held: list[Inst] = []
        self.caller: int = 0
        self.unknown: list[tuple[str, int, str]] = []  # (sub, line, lock/unlock) not defined
        self.stale_at: dict[int, int] = {}  # line of an age test -> its age in seconds


# --------------------------------------------------------------------------
# The walk


class _Walker:
    def __init__(self, prog: Program, source: _Source, scope: str, caller: bool) -> None:
        self.prog = prog
        self.src = source
        self.res = _Result(source, scope)
        self.anon: list[Block] = []
        self.remove_keys: set[str] = set()
        self.lexicals: set[str] = {"_"}
        self.pending: dict[str, Finding] = {}  # unchecked open of $fh, unless tested next
        self.branches: list[tuple[int, int]] = []
        self.state = State()
        self.line = 1  # of the statement being walked: where a failure is reported
        self.scope_stmts: list[list[Item]] = []
        if caller:
            inst = Inst(prog.new_id(), "caller", "", 0, "the caller's lock")
            self.res.caller = inst.id
            self.res.insts[inst.id] = inst
            self.state.held[inst.id] = inst

    # -- recording ---------------------------------------------------------
    def find(self, line: int, rule: str, message: str, suggestion: str, severity: str = "") -> None:
        self.res.findings.append(Finding(self.src.name, line, rule, message, suggestion, severity))

    def event(self, kind: str, line: int, st: State, **kw: Any) -> Ev:
        ev = Ev(kind, line, st.snapshot(), **kw)
        ev.branch = tuple(self.branches)
        self.res.events.append(ev)
        return ev

    def is_local(self, key: str) -> bool:
        """True if *key* still names a ``my`` variable of this scope (or ``$_``).

        ``$self->{file}`` is not local: the object's field names the same file in
        every method of this script (the key carries the script's name instead).
        """
        return any(n in self.lexicals for n in re.findall(r"\$(\w+)(?!\w|->\{)", key))

    def acquire(self, st: State, inst: Inst) -> None:
        inst.local = self.is_local(inst.key)
        self.res.insts[inst.id] = inst
        self.event("acquire", inst.line, st, inst=inst)
        st.held[inst.id] = inst

    def release(self, st: State, line: int, inst: Inst) -> None:
        st.held.pop(inst.id, None)
        self.event("release", line, st, inst=inst)

    # -- paths and constants ----------------------------------------------
    def resolve(self, raw: str) -> str:
        consts = self.src.consts
        shared = self.src.shared

        def sub(match: re.Match[str]) -> str:
            name = match.group(1) or match.group(2)
            if name in self.lexicals:
                return "$" + name  # a `my` variable is not the file-level one
            return consts.get(name, shared.get(name, match.group(0)))

        for _ in range(4):
            new = _INTERP.sub(sub, raw)
            if new == raw:
                break
            raw = new
        return _normalize(raw)

    def path(self, items: Sequence[Item], head: str | None = None) -> Path:
        """The file named by expression *items* (*head* replaces the first string's body)."""
        raw: list[str] = []
        text = ""
        py: list[str] = []
        joined = False  # a `.` since the last piece
        for n, item in enumerate(items):
            if isinstance(item, Block):
                piece, raw_piece, py_piece = "{...}", "{...}", "path"
            elif item.is_op("."):
                joined = True
                continue
            elif item.kind == "str":
                body = (head if (n == 0 and head is not None) else item.text).strip()
                interp = item.extra in ('"', "qq", "heredoc")
                raw_piece = _INTERP.sub(lambda m: "$" + (m.group(1) or m.group(2)), body)
                lone = _LONE_VAR.fullmatch(body)
                quote = '"' if interp else "'"
                piece = "$" + lone.group(1) if interp and lone else quote + body + quote
                py_piece = _py_string(body, interp) if body else ""
                if not body:
                    piece = ""
            elif item.kind == "var":
                piece = raw_piece = item.text
                py_piece = _py_name(item.text)
            else:
                piece = raw_piece = py_piece = item.text
            raw.append(raw_piece)
            if py_piece:
                py.append(py_piece)
            if piece:
                text += (" . " if joined and text else "") + piece
                joined = False
        key = self.resolve("".join(raw).strip())
        shown = display(text or "''")
        py_expr = _py_expr(items, head)
        local = self.is_local(key)
        if "$" in key or "{...}" in key:
            # Still a variable (an object field, `$ENV{...}`, a `my`): its value is this
            # script's own, so the key names nothing in another script.
            key = f"{self.src.name}{_QUAL}{key}"
        return Path(key, shown, py_expr, local)

    # -- blocks and statements --------------------------------------------
    def walk(self, stmts: list[list[Item]]) -> _Result:
        self.scope_stmts = stmts
        self.lexicals |= _lexicals(stmts)
        self.remove_keys = self.scan_removals(stmts)
        self.block(stmts, self.state, _STMT)
        self.res.end_held = list(self.state.held.values())
        return self.res

    def scan_removals(self, stmts: Iterable[list[Item]]) -> set[str]:
        """Keys this scope passes to ``rmdir``/``unlink``: a ``mkdir`` of one is a lock."""
        keys: set[str] = set()
        for items in stmts:
            for k, item in enumerate(items):
                if isinstance(item, Block):
                    keys |= self.scan_removals(item.stmts)
                elif item.is_id("rmdir", "unlink"):
                    args, _, _ = _call_args(items, k)
                    keys.update(self.path(a).key for a in args)
        return keys

    def find_unchecked(self, handle: str, line: int, message: str, suggestion: str) -> None:
        """An unchecked open; ``open(my $fh, ...); unless ($fh) {...}`` checks it after all."""
        finding = Finding(self.src.name, line, "unchecked-result", message, suggestion)
        if handle.startswith("$"):
            self.pending[handle] = finding
        else:
            self.res.findings.append(finding)

    def block(self, stmts: list[list[Item]], st: State, ctx: Ctx) -> bool:
        """Walk statements; True if the block ends by leaving (exit, die, return, &error)."""
        leaves = False
        for items in stmts:
            if leaves:
                if not _labelled(items):
                    continue
                leaves = False  # `WRITE: ...` after an exit is reached by `goto WRITE`
            waiting, self.pending = self.pending, {}
            for handle, finding in waiting.items():
                if not _tests_handle(items, handle):
                    self.res.findings.append(finding)
            self.stmt(items, st, ctx)
            if self.is_exit(items):
                leaves = True
        self.res.findings.extend(self.pending.values())
        self.pending = {}
        return leaves

    def is_exit(self, items: list[Item]) -> bool:
        first = _tok(items, 0)
        if first is None or first.kind != "id" or _postfix_index(items) > 0:
            return False
        if first.text in _EXIT_WORDS and not first.extra:
            return True
        return self.prog.exits(self.src, first.text)

    def stmt(self, items: list[Item], st: State, ctx: Ctx) -> None:
        if not items:
            return
        first = items[0]
        self.line = first.line
        if isinstance(first, Block):
            self.block(first.stmts, st, ctx)
            if len(items) > 1:
                self.stmt(items[1:], st, ctx)
            return
        if first.kind == "id" and not first.extra:
            word = first.text
            if word in ("if", "unless"):
                self.chain(items, st, ctx)
                return
            if word in ("while", "until", "for", "foreach") and isinstance(items[-1], Block):
                self.loop(items, st, ctx)
                return
            name_tok = _tok(items, 1)
            if (
                word == "sub"
                and isinstance(items[-1], Block)
                and name_tok
                and name_tok.kind == "id"
            ):
                return  # a named sub: walked as its own scope
            if word in ("package", "use", "no", "require", "format"):
                return
            if word == "do" and len(items) > 1 and isinstance(items[1], Block):
                self.block(items[1].stmts, st, ctx)
                rest = items[2:]
                if rest and isinstance(rest[0], Tok) and rest[0].is_id("while", "until"):
                    self.expr(rest[1:], st, Ctx(cond=True, loop=True, eval_=ctx.eval))
                elif rest:
                    self.expr(rest, st, ctx)
                return
            if _labelled(items) and len(items) > 2:
                while _labelled(items) and len(items) > 2:
                    items = items[2:]  # `A: B: stmt`
                self.stmt(items, st, ctx)
                return
        k = _postfix_index(items)
        if k < 0:
            self.expr(items, st, ctx)
            return
        mod_tok = items[k]
        assert isinstance(mod_tok, Tok)
        modifier = mod_tok.text
        cond = items[k + 1 :]
        self.expr(cond, st, Ctx(cond=True, loop=modifier in ("while", "until"), eval_=ctx.eval))
        saved_absent, saved_age = dict(st.absent), st.age
        facts = _cond_facts(self, cond)
        if modifier == "unless" and facts.single_present:
            st.absent[facts.single_present] = (facts.line, False)
        if modifier == "if":
            for key in facts.absent_if_true:
                st.absent[key] = (facts.line, False)
        if facts.age:
            st.age = facts.line
        self.expr(items[:k], st, ctx)
        st.absent, st.age = saved_absent, saved_age
        if modifier == "if" and facts.single_present and self.is_exit(items[:k]):
            st.absent[facts.single_present] = (facts.line, False)  # `return if -e $f;`

    def chain(self, items: list[Item], st: State, ctx: Ctx) -> None:
        """``if``/``unless`` ... ``elsif`` ... ``else``: branches from one state, merged."""
        age = st.age
        ends: list[State] = []
        later_absent: dict[str, tuple[int, bool]] = {}
        k = 0
        has_else = False
        chain_id = self.prog.new_id()
        arm = 0
        while k < len(items):
            word = _tok(items, k)
            if (
                word is not None
                and word.is_id("if", "unless", "elsif")
                and _tok(items, k + 1) is not None
            ):
                close = _match_paren(items, k + 1)
                cond = items[k + 2 : close]
                body = items[close + 1] if close + 1 < len(items) else None
                self.expr(cond, st, Ctx(cond=True, eval_=ctx.eval))
                facts = _cond_facts(self, cond)
                branch = st.copy()
                branch.absent.update(later_absent)
                if word.text == "unless":
                    if facts.single_present:
                        branch.absent[facts.single_present] = (facts.line, False)
                else:
                    for key in facts.absent_if_true:
                        branch.absent[key] = (facts.line, False)
                    if facts.single_present:
                        later_absent[facts.single_present] = (facts.line, False)
                if facts.age:
                    branch.age = facts.line
                if isinstance(body, Block):
                    self.branches.append((chain_id, arm))
                    if not self.block(body.stmts, branch, ctx):
                        ends.append(branch)
                    self.branches.pop()
                else:
                    ends.append(branch)
                arm += 1
                k = close + 2
                continue
            if word is not None and word.is_id("else") and isinstance(_item(items, k + 1), Block):
                has_else = True
                branch = st.copy()
                branch.absent.update(later_absent)
                body = items[k + 1]
                assert isinstance(body, Block)
                self.branches.append((chain_id, arm))
                if not self.block(body.stmts, branch, ctx):
                    ends.append(branch)
                self.branches.pop()
                k += 2
                continue
            self.expr(items[k:], st, ctx)
            break
        if not has_else:
            fall = st.copy()
            fall.absent.update(later_absent)  # `if (-e $f) { return }` leaves $f absent
            ends.append(fall)
        if ends:
            st.assign(_merge(ends, age))

    def loop(self, items: list[Item], st: State, ctx: Ctx) -> None:
        head = items[0]
        assert isinstance(head, Tok)
        word = head.text
        body = items[-1]
        assert isinstance(body, Block)
        open_at = next(
            (k for k, it in enumerate(items) if isinstance(it, Tok) and it.is_op("(")), -1
        )
        cond: list[Item] = []
        if open_at > 0:
            cond = items[open_at + 1 : _match_paren(items, open_at)]
        age = st.age
        before = len(self.res.events)
        self.expr(cond, st, Ctx(cond=True, loop=word in ("while", "until"), eval_=ctx.eval))
        facts = _cond_facts(self, cond)
        branch = st.copy()
        if facts.age:
            branch.age = facts.line
        ends = [st.copy()]
        if not self.block(body.stmts, branch, ctx):
            ends.append(branch)
        taken = [
            e.inst
            for e in self.res.events[before:]
            if e.kind == "acquire" and e.inst is not None and e.inst.kind != "flock"
        ]
        if taken:
            retry, wait = _retry_wait(items, self.scope_stmts)
            for inst in taken:
                inst.retry = inst.retry or retry
                inst.wait = inst.wait or wait
        merged = _merge(ends, age)
        if word == "while" and facts.single_present:
            merged.absent[facts.single_present] = (facts.line, True)
        if word == "until" and len(facts.absent_if_true) == 1:
            merged.absent[facts.absent_if_true[0]] = (facts.line, True)
        st.assign(merged)

    # -- expressions -------------------------------------------------------
    def expr(self, items: Sequence[Item], st: State, ctx: Ctx) -> None:
        i = 0
        while i < len(items):
            item = items[i]
            if isinstance(item, Block):
                self.inner_block(item, st, ctx)
                i += 1
                continue
            if item.kind == "id":
                prev = _tok(items, i - 1)
                nxt = _tok(items, i + 1)
                if (
                    (
                        prev is not None
                        and (prev.is_op("->", "\\") or prev.is_id("defined", "exists"))
                    )
                    or (nxt is not None and nxt.is_op("=>"))
                    or (prev is not None and prev.is_op("{") and nxt is not None and nxt.is_op("}"))
                ):
                    i += 1
                    continue
                name = item.text[6:] if item.text.startswith("CORE::") else item.text
                handler = None if item.extra else _HANDLERS.get(name)
                if handler is not None:
                    i = handler(self, items, i, st, ctx)
                    continue
                if (
                    item.extra == "&"
                    or name in self.prog.subs
                    or (
                        nxt is not None
                        and nxt.is_op("(")
                        and self.prog.classify(name, source=self.src)
                    )
                ):
                    self.user_call(items, i, st, ctx)
            elif item.kind == "rl" and item.text and item.text not in _STD_HANDLES:
                self.handle_event("read", item.text, item.line, st)
            i += 1

    def inner_block(self, block: Block, st: State, ctx: Ctx) -> None:
        if block.kind == "anonsub":
            self.anon.append(block)
        elif block.kind in ("handle",):
            return
        else:
            self.block(block.stmts, st, Ctx(eval_=ctx.eval))

    def used(self, items: Sequence[Item], i: int, end: int, ctx: Ctx) -> bool:
        """True if the value of the call at *i* (ending before *end*) is looked at."""
        return ctx.cond or i > 0 or end < len(items)

    def handle_event(self, kind: str, handle: str, line: int, st: State, **kw: Any) -> Ev | None:
        op = st.handles.get(handle)
        if op is None:
            return None
        return self.event(kind, line, st, open_=op, path=op.path, **kw)

    def close_handle(self, handle: str, line: int, st: State) -> None:
        op = st.handles.pop(handle, None)
        if op is None:
            return
        for inst in [h for h in st.held.values() if h.open is op]:
            self.release(st, line, inst)
        self.event("close", line, st, open_=op, path=op.path)

    def pseudo_open(self, handle: str, st: State) -> Open:
        """A handle used here but opened elsewhere (another sub)."""
        op = Open(handle, "?", False, Path(f"<{handle}>", handle, _py_name(handle)), 0, frozenset())
        st.handles[handle] = op
        return op

    # -- user subs -----------------------------------------------------------
    def user_call(self, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> None:
        tok = items[i]
        assert isinstance(tok, Tok)
        name = tok.text
        line = tok.line
        paren = _tok(items, i + 1)
        kind = self.prog.classify(name, tok.extra == "&", self.src)
        if not kind:
            self.res.calls.append((name, st.snapshot(), line))
            self.event("call", line, st, via=name)
            return
        if name.split("::")[-1].split("'")[-1] not in self.prog.subs:
            self.res.unknown.append((("&" if tok.extra else "") + name, line, kind))
        args, end, _ = _call_args(items, i)
        if tok.extra == "&" and not (paren is not None and paren.is_op("(")):
            args, end = [], i + 1  # `&lock;` passes the caller's @_
        first = self.path(args[0]) if args else None
        key = first.key if first is not None else f"{name}()"
        if first is None and any(s is self.src for s, _ in self.prog.subs.get(name, [])):
            key = f"{self.src.name}{_QUAL}{key}"  # this script's own sub: its own lock
        shown = f"&{name}({first.text if first else ''})"
        if kind == "lock":
            if not self.used(items, i, end, ctx) and self.prog.fails(self.src, name):
                self.find(
                    line,
                    "unchecked-result",
                    f"{display(shown)} returns 0 when the lock is busy, and the result is not "
                    "checked: the script goes on without the lock",
                    _lock_call(self.prog, self.src, first.py if first else '"lockdir"', sub=name),
                )
            inst = Inst(self.prog.new_id(), "sub", key, line, shown, name=first.py if first else "")
            self.acquire(st, inst)
        elif kind == "unlock":
            held = [h for h in st.held.values() if h.kind == "sub"]
            match = [h for h in held if h.key == key] or (held[-1:] if not args else [])
            for inst in match:
                self.release(st, line, inst)
            self.event(
                "remove",
                line,
                st,
                path=first or Path(key, shown, '"lockdir"'),
                via=name,
                age=st.age,
            )


# -- built-in handlers -------------------------------------------------------


def _h_open(w: _Walker, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
    args, end, oror = _call_args(items, i)
    line = items[i].line
    if len(args) < 2:
        return i + 1
    handle = _handle_name(args[0])
    if handle is None:
        return i + 1
    if len(args) == 2:
        mode, explicit, head, path_items = _two_arg_mode(args[1])
    else:
        mode, explicit = _three_arg_mode(args[2 - 1])
        head, path_items = None, args[2]
    if mode in ("pipe", "dup") or not path_items:
        return i + 1
    first = path_items[0]
    if isinstance(first, Tok) and first.is_op("\\"):
        return i + 1  # in-memory file
    path = w.path(path_items, head)
    w.close_handle(handle, line, st)
    op = Open(handle, mode, explicit, path, line, st.snapshot())
    st.handles[handle] = op
    w.res.opens.append(op)
    w.event("open", line, st, open_=op, path=path)
    py_handle = _py_name(handle)
    if not w.used(items, i, end, ctx):
        why = (
            f"`||` binds to the file name {path.text}, not to open: the `die` never runs"
            if oror
            else "its result is not checked"
        )
        w.find_unchecked(
            "" if oror else handle,
            line,
            f"open({display(handle)}, ...) of {path.text}: {why}; when it fails, "
            + (
                "the script reads nothing and goes on as if the file were empty"
                if mode == "<"
                else "the flock and the writes that follow silently do nothing"
            )
            + f'. The faithful port is {py_handle} = open_("{op.py_mode}", {path.py}): '
            "a failed open_ returns a false handle that reads as empty and writes nothing, "
            "as Perl's does; the safer change is to stop there",
            f'{py_handle} = open_("{op.py_mode}", {path.py}) or die({_cant("open", path)})'
            "  # safer; the faithful port drops the `or die`",
        )
    if mode in _CREATE and path.key in st.absent and not st.held:
        test_line, waited = st.absent[path.key]
        lockish = waited or bool(_LOCKISH.search(_bare(path.key)))
        if lockish:
            w.find(
                line,
                "check-then-create",
                f"{path.text} is tested absent on line {test_line} and created here: two "
                'processes can both see it missing and both "take" the lock',
                _lock_call(w.prog, w.src, path.py, method="excl") + "  # one atomic O_EXCL create",
            )
            inst = Inst(
                w.prog.new_id(), "file", path.key, line, f"open(>{path.text})", name=path.py
            )
            w.acquire(st, inst)
        elif mode in _TRUNCATE:
            # `>>`/`+>>` after the test is the safe way to create a data file: it never
            # empties what another request wrote.  Only a truncating open loses data.
            w.find(
                line,
                "check-then-create",
                f"{path.text} is tested absent on line {test_line} and created here with "
                f"'{mode}': two first requests can both create it, and the second empties "
                "what the first wrote",
                f'{py_handle} = open_("+>>", {path.py})  # creates without emptying; then '
                f"flock({py_handle}, LOCK_EX) and test its size",
                severity="warning",
            )
    return i + 1


def _cant(what: str, path: Path) -> str:
    """``f"Can't open {name}: {OS_ERROR}"`` for a ``die`` in a suggestion."""
    if path.py.isidentifier():
        return f'f"Can\'t {what} {{{path.py}}}: {{OS_ERROR}}"'
    literal = re.fullmatch(r'"([^"\\{}]*)"', path.py)
    if literal:
        return f'f"Can\'t {what} {literal.group(1)}: {{OS_ERROR}}"'
    return f'f"Can\'t {what}: {{OS_ERROR}}"'


def _two_arg_mode(arg: list[Item]) -> tuple[str, bool, str | None, list[Item]]:
    """Mode, whether explicit, the path's first string body, and the path items."""
    first = arg[0]
    if isinstance(first, Tok) and first.kind == "str" and first.extra in ('"', "'", "qq", "q"):
        body = first.text
        if body.rstrip().endswith("|"):
            return "pipe", True, None, []
        match = re.match(r"\s*(\+?(?:>>|>|<)|\|)?\s*", body)
        assert match is not None
        mode = match.group(1)
        rest = body[match.end() :]
        if mode == "|":
            return "pipe", True, None, []
        if rest.startswith("&"):
            return "dup", True, None, []
        if not rest.strip() and len(arg) == 1:
            return "?", False, None, []
        if mode is None:
            return "<", False, rest, arg
        return mode, True, rest, arg
    if isinstance(first, Tok) and first.kind == "var":
        return "<", False, None, arg
    return "?", False, None, arg


def _three_arg_mode(arg: list[Item]) -> tuple[str, bool]:
    first = arg[0] if arg else None
    if isinstance(first, Tok) and first.kind == "str":
        match = re.match(r"\s*(\+?(?:>>|>|<)|-\||\|-)", first.text)
        if match:
            mode = match.group(1)
            if "|" in mode:
                return "pipe", True
            if "&" in first.text:
                return "dup", True
            return mode, True
    return "?", False


def _h_sysopen(w: _Walker, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
    args, end, _ = _call_args(items, i)
    line = items[i].line
    if len(args) < 3:
        return i + 1
    handle = _handle_name(args[0])
    flags = {t.text.split("::")[-1] for t in args[2] if isinstance(t, Tok) and t.kind == "id"}
    if handle is None:
        return i + 1
    if "O_RDWR" in flags:
        mode = "+>" if "O_TRUNC" in flags else "+<"
    elif "O_WRONLY" in flags:
        mode = ">" if "O_TRUNC" in flags else (">>" if "O_APPEND" in flags else "+<")
    elif flags and all(f.startswith("O_") for f in flags):
        mode = "<"
    else:
        mode = "?"  # flags in a variable
    path = w.path(args[1])
    w.close_handle(handle, line, st)
    op = Open(handle, mode, True, path, line, st.snapshot())
    st.handles[handle] = op
    w.res.opens.append(op)
    w.event("open", line, st, open_=op, path=path)
    used = w.used(items, i, end, ctx)
    if "O_EXCL" in flags and "O_CREAT" in flags and used:
        inst = Inst(
            w.prog.new_id(), "excl", path.key, line, f"sysopen({path.text}, O_EXCL)", name=path.py
        )
        w.acquire(st, inst)
    elif not used:
        w.find_unchecked(
            handle,
            line,
            f"sysopen({display(handle)}, {path.text}, ...): its result is not checked",
            f'{_py_name(handle)} = open_("{op.py_mode}", {path.py}) or die({_cant("open", path)})',
        )
    return i + 1


def _flock_op(w: _Walker, arg: Sequence[Item]) -> int | None:
    value = 0
    seen = False
    for item in arg:
        if not isinstance(item, Tok):
            return None
        if item.kind == "num":
            number = _perl_int(item.text)
            if number is None:
                return None
            value |= number
            seen = True
        elif item.kind == "id":
            name = item.text.split("::")[-1]
            if name not in _FLOCK_NAMES:
                return None
            value |= _FLOCK_NAMES[name]
            seen = True
        elif item.kind == "var":
            const = w.resolve(item.text)
            if not const.isdigit():
                return None
            value |= int(const)
            seen = True
        elif not item.is_op("|", "+", "(", ")"):
            return None
    return value if seen else None


def _perl_int(text: str) -> int | None:
    """A Perl integer literal: ``2``, ``0x1F``, ``0b101``, ``0755`` (octal), ``1_000``."""
    text = text.replace("_", "").lower()
    try:
        if text.startswith(("0x", "0b")):
            return int(text, 0)
        if len(text) > 1 and text.startswith("0"):
            return int(text, 8)
        return int(text)
    except ValueError:
        return None


def _op_text(arg: Sequence[Item]) -> str:
    return " ".join(t.text for t in arg if isinstance(t, Tok))


def _h_flock(w: _Walker, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
    args, end, _ = _call_args(items, i)
    line = items[i].line
    if len(args) < 2:
        return i + 1
    handle = _handle_name(args[0])
    if handle is None:
        return i + 1
    op_value = _flock_op(w, args[1])
    op = st.handles.get(handle) or w.pseudo_open(handle, st)
    shown = f"flock({display(handle)}, {display(_op_text(args[1]))})"
    py_handle = _py_name(handle)
    py_op = _py_flock(op_value)
    unlocking = op_value is not None and bool(op_value & LOCK_UN)
    if not w.used(items, i, end, ctx) and not unlocking:
        if ctx.eval:
            w.find(
                line,
                "swallowed-flock",
                f"{shown} inside an eval whose result is ignored: a failed or unsupported "
                "flock is hidden and the script runs without the lock",
                f'flock({py_handle}, {py_op}) or die(f"Can\'t flock: {{OS_ERROR}}")',
            )
        else:
            w.find(
                line,
                "unchecked-result",
                f"{shown}: its result is not checked; "
                + (
                    "when the lock is busy it returns 0 at once"
                    if op_value is not None and op_value & LOCK_NB
                    else "when it fails (a handle that did not open, EINTR, EBADF) it returns 0"
                )
                + ", and the script goes on without the lock",
                f'flock({py_handle}, {py_op}) or die(f"Can\'t flock: {{OS_ERROR}}")',
            )
    for inst in [h for h in st.held.values() if h.open is op]:
        w.release(st, line, inst)
    if op_value is not None and op_value & LOCK_UN:
        w.event("flock", line, st, open_=op, path=op.path, value=op_value)
        return i + 1
    inst = Inst(
        w.prog.new_id(),
        "flock",
        op.path.key,
        line,
        shown,
        name=op.path.py,
        blocking=op_value is None or not op_value & LOCK_NB,
        open_=op,
    )
    w.event("flock", line, st, open_=op, path=op.path, value=op_value, inst=inst)
    w.acquire(st, inst)
    return i + 1


def _py_flock(value: int | None) -> str:
    if value is None:
        return "LOCK_EX"
    names = [n for n, v in _FLOCK_NAMES.items() if value & v]
    return " | ".join(names) or "LOCK_EX"


def _h_close(w: _Walker, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
    args, _, _ = _call_args(items, i)
    if args:
        handle = _handle_name(args[0])
        if handle is not None:
            w.close_handle(handle, items[i].line, st)
    return i + 1


_INFIX_WORDS = frozenset(
    {"x", "eq", "ne", "lt", "gt", "le", "ge", "cmp", "and", "or", "xor", "if", "unless"}
)
_TERM_KINDS = frozenset({"str", "var", "num", "rl", "qw", "cast"})


def _print_handle(items: Sequence[Item], i: int) -> tuple[str | None, int]:
    """The handle a ``print``/``printf`` at *i* writes to, and where its list starts."""
    j = i + 1
    nxt = _item(items, j)
    if isinstance(nxt, Tok) and nxt.is_op("("):
        j += 1
        nxt = _item(items, j)
    if isinstance(nxt, Block) and nxt.kind == "handle":
        inner = [t for s in nxt.stmts for t in s if isinstance(t, Tok)]
        name = inner[0].text if inner else None
        return name, j + 1
    if not isinstance(nxt, Tok):
        return None, j
    after = _item(items, j + 1)
    if nxt.kind == "id" and not nxt.extra and nxt.text not in _HANDLERS:
        # `print OUT "x"` or `print OUT;`, but not `print foo(1)`, `print CONST . "x"`
        if isinstance(after, Tok) and after.kind == "op" and after.text not in ("-", "\\"):
            return None, j
        return nxt.text, j + 1
    if (
        nxt.kind == "var"
        and nxt.text.startswith("$")
        and isinstance(after, Tok)
        and (after.kind in _TERM_KINDS or (after.kind == "id" and after.text not in _INFIX_WORDS))
    ):
        return nxt.text, j + 1  # `print $fh "x"`, `print $fh @lines`
    return None, j


def _h_print(w: _Walker, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
    handle, _ = _print_handle(items, i)
    if handle is not None and handle not in _STD_HANDLES:
        w.handle_event("write", handle, items[i].line, st, via="print")
    return i + 1


def _h_first_handle(kind: str) -> Handler:
    def handler(w: _Walker, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
        args, _, _ = _call_args(items, i)
        if args:
            handle = _handle_name(args[0])
            if handle is not None and handle not in _STD_HANDLES:
                tok = items[i]
                assert isinstance(tok, Tok)
                w.handle_event(kind, handle, tok.line, st, via=tok.text)
        return i + 1

    return handler


def _h_truncate(w: _Walker, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
    args, _, _ = _call_args(items, i)
    line = items[i].line
    if not args:
        return i + 1
    handle = _handle_name(args[0])
    if handle is not None and handle in st.handles:
        w.handle_event("write", handle, line, st, via="truncate")
    elif not (len(args[0]) == 1 and isinstance(args[0][0], Tok) and args[0][0].kind == "id"):
        w.event("write", line, st, path=w.path(args[0]), via="truncate")
    return i + 1


def _h_seek(w: _Walker, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
    args, _, _ = _call_args(items, i)
    if len(args) >= 3:
        handle = _handle_name(args[0])
        whence = _int_value(w, args[2], _SEEK_NAMES)
        if handle is not None:
            w.handle_event("seek", handle, items[i].line, st, value=whence)
    return i + 1


def _int_value(w: _Walker, arg: Sequence[Item], names: dict[str, int]) -> int | None:
    toks = [t for t in arg if isinstance(t, Tok) and not t.is_op("(", ")")]
    if len(toks) != 1:
        return None
    tok = toks[0]
    if tok.kind == "num":
        return _perl_int(tok.text)
    if tok.kind == "id":
        return names.get(tok.text.split("::")[-1])
    if tok.kind == "var":
        const = w.resolve(tok.text)
        return int(const) if const.isdigit() else None
    return None


def _h_rename(w: _Walker, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
    args, end, _ = _call_args(items, i)
    line = items[i].line
    if len(args) < 2:
        return i + 1
    src, dst = w.path(args[0]), w.path(args[1])
    held = {h.key: h for h in st.held.values() if h.kind not in ("flock", "caller")}
    if dst.key in held or src.key in held:
        if dst.key in held and held[dst.key].kind == "rename":
            w.release(st, line, held[dst.key])
        return i + 1
    if ctx.loop and w.used(items, i, end, ctx):
        inst = Inst(
            w.prog.new_id(), "rename", src.key, line, f"rename({src.text}, ...)", name=src.py
        )
        w.acquire(st, inst)
        return i + 1
    w.event("write", line, st, path=dst, via="rename", source=src)
    return i + 1


def _h_remove(w: _Walker, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
    args, _, _ = _call_args(items, i)
    tok = items[i]
    assert isinstance(tok, Tok)
    for arg in args:
        path = w.path(arg)
        for inst in [h for h in st.held.values() if h.key == path.key and h.kind != "flock"]:
            w.release(st, tok.line, inst)
        w.event("remove", tok.line, st, path=path, via=tok.text, age=st.age)
    return i + 1


def _h_marker(kind: str, path_arg: int) -> Handler:
    """``mkdir``/``symlink``/``link``: a lock when its result decides and it is removed again."""

    def handler(w: _Walker, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
        args, end, _ = _call_args(items, i)
        if len(args) <= path_arg:
            return i + 1
        path = w.path(args[path_arg])
        lockish = ctx.loop or bool(_LOCKISH.search(_bare(path.key))) or path.key in w.remove_keys
        if w.used(items, i, end, ctx) and lockish:
            line = items[i].line
            inst = Inst(w.prog.new_id(), kind, path.key, line, f"{kind}({path.text})", name=path.py)
            w.acquire(st, inst)
        return i + 1

    return handler


def _h_alarm(w: _Walker, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
    args, _, _ = _call_args(items, i)
    value = _int_value(w, args[0], {}) if args else None
    if args and value is None:
        value = -1  # not a literal: assume it sets an alarm
    w.event("alarm", items[i].line, st, value=value if args else 0)
    return i + 1


def _h_eval(w: _Walker, items: Sequence[Item], i: int, st: State, ctx: Ctx) -> int:
    """``eval {...}`` / ``eval "..."``: its last value is the eval's, checked if the eval is."""
    nxt = _item(items, i + 1)
    if isinstance(nxt, Block):
        stmts = nxt.stmts
    elif isinstance(nxt, Tok) and nxt.kind == "str":
        stmts = parse(lex(nxt.text, nxt.line))
        for inner in stmts:
            for tok in inner:
                if isinstance(tok, Tok):
                    tok.line = nxt.line
    else:
        return i + 1
    used = w.used(items, i, i + 2, ctx)
    inner_ctx = Ctx(eval_=not used)
    if stmts:
        # Only the last statement's value is the eval's: the others are plain statements.
        w.block(stmts[:-1], st, Ctx(eval_=ctx.eval))
        w.stmt(stmts[-1], st, Ctx(cond=True) if used else inner_ctx)
    return i + 2


def _item(items: Sequence[Item], k: int) -> Item | None:
    return items[k] if 0 <= k < len(items) else None


if TYPE_CHECKING:
    from collections.abc import Callable

    Handler = Callable[[_Walker, Sequence[Item], int, State, Ctx], int]

_HANDLERS: dict[str, Handler] = {
    "open": _h_open,
    "sysopen": _h_sysopen,
    "flock": _h_flock,
    "close": _h_close,
    "print": _h_print,
    "printf": _h_print,
    "say": _h_print,
    "syswrite": _h_first_handle("write"),
    "read": _h_first_handle("read"),
    "sysread": _h_first_handle("read"),
    "getc": _h_first_handle("read"),
    "readline": _h_first_handle("read"),
    "truncate": _h_truncate,
    "seek": _h_seek,
    "sysseek": _h_seek,
    "rename": _h_rename,
    "unlink": _h_remove,
    "rmdir": _h_remove,
    "mkdir": _h_marker("mkdir", 0),
    "symlink": _h_marker("symlink", 1),
    "link": _h_marker("link", 1),
    "alarm": _h_alarm,
    "eval": _h_eval,
}


class _Facts:
    __slots__ = ("absent_if_true", "age", "line", "single_present", "stale_after")

    def __init__(self) -> None:
        self.absent_if_true: list[str] = []
        self.single_present = ""
        self.age = False
        self.line = 0
        self.stale_after = 0


def _cond_facts(w: _Walker, cond: Sequence[Item]) -> _Facts:
    """File-existence and age facts a condition establishes."""
    facts = _Facts()
    facts.line = _first_line(cond)
    toks = [t for t in cond if isinstance(t, Tok)]
    disjunction = any(t.is_op("||") or t.is_id("or") for t in toks)
    tests: list[tuple[str, bool]] = []
    for k, tok in enumerate(cond):
        if not isinstance(tok, Tok):
            continue
        if tok.kind == "ft" and tok.text in _AGE_TESTS:
            facts.age = True
        if tok.is_id("stat", "lstat", "time") or (tok.kind == "var" and tok.text == "$^T"):
            facts.age = True
        if tok.kind == "ft" and tok.text in _EXISTS_TESTS:
            target = _item(cond, k + 1)
            if isinstance(target, Tok) and target.is_op("("):
                close = _match_paren(cond, k + 1)
                path_items = list(cond[k + 2 : close])
            elif isinstance(target, Tok):
                path_items = [target]
            else:
                continue
            prev = _tok(cond, k - 1)
            negated = prev is not None and (prev.is_op("!") or prev.is_id("not"))
            tests.append((w.path(path_items).key, negated))
    if facts.age:
        facts.stale_after = _stale_seconds(toks)
        if facts.stale_after:
            w.res.stale_at[facts.line] = facts.stale_after
    if not disjunction:
        facts.absent_if_true = [key for key, neg in tests if neg]
        plain = [t for t in toks if not t.is_op("(", ")")]
        if len(tests) == 1 and not tests[0][1] and len(plain) == 2:
            facts.single_present = tests[0][0]
    return facts


def _labelled(items: list[Item]) -> bool:
    """True if statement *items* starts with a label (``WRITE:``): ``goto`` can reach it."""
    first, second = _tok(items, 0), _tok(items, 1)
    return (
        first is not None
        and first.kind == "id"
        and not first.extra
        and "'" not in first.text
        and ":" not in first.text
        and second is not None
        and second.is_op(":")
    )


def _arith(toks: Sequence[Tok]) -> float | None:
    """The value of ``600``, ``600 / 86400``, ``3 * 60``: numbers joined by ``*`` and ``/``."""
    value: float | None = None
    op = ""
    for tok in toks:
        if tok.kind == "num":
            number = _perl_int(tok.text)
            try:
                x = float(number) if number is not None else float(tok.text.replace("_", ""))
            except ValueError:
                return None
            if value is None:
                value = x
            elif op == "*":
                value *= x
            elif op == "/" and x:
                value /= x
            else:
                return None
            op = ""
        elif tok.is_op("*", "/") and value is not None and not op:
            op = tok.text
        elif tok.kind == "re" and value is not None:
            return None
        else:
            break
    return value


def _flat(items: Iterable[Item]) -> Iterator[Tok]:
    for item in items:
        if isinstance(item, Block):
            for stmt in item.stmts:
                yield from _flat(stmt)
        else:
            yield item


def _retry_wait(loop: list[Item], scope: list[list[Item]]) -> tuple[int, float]:
    """A lock retry loop's tries and pause: ``foreach (1 .. 5)``, ``$retry = 5; --$retry``,
    ``if (++$n > 5)``; ``sleep(1)``.  (0, 0) for a loop that does not sleep: not a retry
    loop (a ``foreach`` over lines that takes a lock inside it)."""
    toks = list(_flat(loop))
    wait = 0.0
    retry = 0
    for k, tok in enumerate(toks):
        nxt = toks[k + 1 : k + 3]
        if tok.is_id("sleep", "select") and nxt:
            num = nxt[1] if nxt[0].is_op("(") and len(nxt) > 1 else nxt[0]
            value = _perl_int(num.text) if num.kind == "num" else None
            if value:
                wait = float(value)
        if tok.is_op("..") and 0 < k < len(toks) - 1 and toks[k + 1].kind == "num":
            retry = _perl_int(toks[k + 1].text) or retry
    if not wait:
        return 0, 0.0
    if not retry:
        for k, tok in enumerate(toks):
            if not tok.is_op("<", "<=", ">", ">=", "=="):
                continue
            left = toks[k - 1] if k else None
            right = toks[k + 1] if k + 1 < len(toks) else None
            pairs: list[tuple[Tok | None, Tok | None]] = [(right, left), (left, right)]
            for side, other in pairs:
                if side is None or side.kind != "num":
                    continue
                value = _perl_int(side.text) or 0
                if value > 0 and value <= 1000:
                    retry = value
                elif value == 0 and other is not None and other.kind == "var":
                    retry = _assigned_int(scope, other.text) or retry
    return retry, wait


def _assigned_int(stmts: list[list[Item]], var: str) -> int:
    """N of a ``$var = N`` statement in *stmts* (nested blocks too), or 0."""
    for stmt in stmts:
        toks = list(_flat(stmt))
        for k in range(len(toks) - 2):
            if (
                toks[k].kind == "var"
                and toks[k].text == var
                and toks[k + 1].is_op("=")
                and toks[k + 2].kind == "num"
            ):
                return _perl_int(toks[k + 2].text) or 0
    return 0


def _stale_seconds(toks: list[Tok]) -> int:
    """The age, in seconds, an age test compares with: ``-M $f > 600/86400``, ``time - 180``."""
    for k, tok in enumerate(toks):
        if tok.kind == "ft" and tok.text in _AGE_TESTS:
            for j in range(k + 1, len(toks)):
                if toks[j].is_op(">", ">=", "<", "<="):
                    days = _arith(toks[j + 1 :])
                    return round(days * 86400) if days is not None and days > 0 else 0
            return 0
    for k, tok in enumerate(toks):  # `time - $mtime > 60 * 10`
        if tok.is_op(">", ">="):
            value = _arith(toks[k + 1 :])
            if value is not None and value >= 1:
                return round(value)
    nums = [_perl_int(t.text) for t in toks if t.kind == "num"]
    seconds = [n for n in nums if n is not None and 10 <= n != 86400]
    return max(seconds) if seconds else 0


def _tests_handle(items: list[Item], handle: str) -> bool:
    """True if statement *items* tests the handle variable: ``unless ($fh)``, ``$fh or die``."""
    toks = [t for t in items if isinstance(t, Tok)]
    if not any(t.kind == "var" and t.text == handle for t in toks):
        return False
    first = toks[0] if toks else None
    if first is not None and first.is_id("if", "unless"):
        return True
    if _postfix_index(items) > 0:
        return True
    return any(t.is_id("or", "and", "defined") or t.is_op("||", "&&", "!") for t in toks)


def _lexicals(stmts: Iterable[list[Item]]) -> set[str]:
    """Names declared with ``my``/``state`` anywhere in *stmts*."""
    names: set[str] = set()
    for items in stmts:
        declaring = False
        depth = 0
        for item in items:
            if isinstance(item, Block):
                names |= _lexicals(item.stmts)
                continue
            if item.is_id("my", "state"):
                declaring, depth = True, 0
            elif declaring:
                if item.kind == "var" and item.text[:1] in "$@%":
                    names.add(item.text[1:])
                    declaring = depth > 0
                elif item.is_op("("):
                    depth += 1
                elif not item.is_op(","):
                    declaring = False  # `)` ends `my ($a, $b)`; anything else ends `my $a`
    return names


def _normalize(key: str) -> str:
    key = re.sub(r"\s+", " ", key.strip())
    key = re.sub(r"/{2,}", "/", key)
    while key.startswith("./"):
        key = key[2:]
    return key


# --------------------------------------------------------------------------
# The program: files, subs, passes


def _collect_subs(stmts: list[list[Item]], source: _Source, prog: Program) -> None:
    for items in stmts:
        first, second = _tok(items, 0), _tok(items, 1)
        if (
            first is not None
            and first.is_id("sub")
            and second is not None
            and second.kind == "id"
            and isinstance(items[-1], Block)
        ):
            prog.subs.setdefault(second.text.split("::")[-1].split("'")[-1], []).append(
                (source, items[-1])
            )
            _collect_subs(items[-1].stmts, source, prog)
            continue
        for item in items:
            if isinstance(item, Block) and item.kind != "anonsub":
                _collect_subs(item.stmts, source, prog)


def _collect_consts(stmts: list[list[Item]], source: _Source) -> dict[str, str]:
    """``$name = "literal"`` assignments of global names, made once.

    At file level (``my``/``our`` included) and inside blocks and subs (``my``/``local``
    there are scoped and skipped): a script that sets ``$datafile`` in ``eval { }`` or
    in its ``sub main`` names the same file as one that sets it at the top.
    """
    seen: dict[str, list[str]] = {}
    walker_path = _Walker(Program(), source, "", False)
    _consts_in(stmts, walker_path, seen, False)
    return {name: values[0] for name, values in seen.items() if len(set(values)) == 1}


def _consts_in(
    stmts: list[list[Item]], walker_path: _Walker, seen: dict[str, list[str]], inner: bool
) -> None:
    for items in stmts:
        for item in items:
            if isinstance(item, Block) and item.kind != "anonsub":
                _consts_in(item.stmts, walker_path, seen, True)
        toks = [t for t in items if isinstance(t, Tok)]
        k = 0
        while k < len(toks) and toks[k].is_id("my", "our", "local"):
            if inner and not toks[k].is_id("our"):
                break
            k += 1
        if (k < len(toks) and toks[k].kind == "id") or k + 2 >= len(toks):
            continue
        if len(toks) != len(items):
            continue
        var, eq = toks[k], toks[k + 1]
        if var.kind != "var" or not var.text.startswith("$") or not eq.is_op("="):
            continue
        rhs = toks[k + 2 :]
        if not rhs or not all(t.kind in ("str", "var", "num") or t.is_op(".") for t in rhs):
            continue
        if any(t.kind == "str" and t.extra not in ('"', "'", "qq", "q") for t in rhs):
            continue
        path = walker_path.path(rhs)
        seen.setdefault(var.text[1:], []).append(_bare(path.key))


def _collect_requires(stmts: list[list[Item]]) -> set[str]:
    """The names ``require "x.pl"`` / ``do "lib/x.pl"`` load, as written, anywhere in *stmts*."""
    names: set[str] = set()
    for items in stmts:
        for k, item in enumerate(items):
            if isinstance(item, Block):
                names |= _collect_requires(item.stmts)
                continue
            if not item.is_id("require", "do"):
                continue
            arg = _item(items, k + 1)
            if isinstance(arg, Tok) and arg.is_op("("):
                arg = _item(items, k + 2)
            if isinstance(arg, Tok) and arg.kind == "str" and arg.text.strip():
                names.add(arg.text.strip())
    return names


def _shared_consts(source: _Source, by_base: dict[str, list[_Source]]) -> dict[str, str]:
    """Constants of the files *source* loads (transitively), where all of them agree."""
    seen: set[int] = {id(source)}
    todo = [source]
    values: dict[str, set[str]] = {}
    while todo:
        for base in sorted(todo.pop().requires):
            for lib in by_base.get(base, []):
                if id(lib) in seen:
                    continue
                seen.add(id(lib))
                todo.append(lib)
                for name, value in lib.consts.items():
                    values.setdefault(name, set()).add(value)
    return {name: next(iter(v)) for name, v in values.items() if len(v) == 1}


def _loads(source: _Source, by_base: dict[str, list[_Source]]) -> list[_Source]:
    """The files *source* ``require``s or ``do``es, and those they load in turn."""
    seen: list[_Source] = [source]
    todo = [source]
    while todo:
        for base in sorted(todo.pop().requires):
            for lib in by_base.get(base, []):
                if lib not in seen:
                    seen.append(lib)
                    todo.append(lib)
    return seen[1:]


def _error_sub(stmts: list[list[Item]]) -> str:
    """The first ``&error(...)``-style sub the script calls, or ``""``."""
    for items in stmts:
        for tok in _flat(items):
            if tok.kind == "id" and tok.extra == "&" and _EXIT_NAME.match(tok.text):
                return tok.text
    return ""


def _sub_exits(block: Block) -> bool:
    for items in block.stmts:
        first = _tok(items, 0)
        if first is not None and first.is_id("exit", "die", "croak") and _postfix_index(items) < 0:
            return True
    return False


def _can_fail(block: Block) -> bool:
    """True if a lock sub has a ``return`` of anything but a true literal (``return 0``...)."""

    def true_literal(item: Item | None, after: Item | None) -> bool:
        if not isinstance(item, Tok) or (isinstance(after, Tok) and after.kind == "op"):
            return False  # `return mkdir(...) ? 1 : 0` can be false
        if item.kind == "num":
            return item.text.strip("0._") != ""
        return item.kind == "str" and item.text not in ("", "0")

    def scan(stmts: list[list[Item]]) -> bool:
        for items in stmts:
            for k, item in enumerate(items):
                if isinstance(item, Block):
                    if item.kind != "anonsub" and scan(item.stmts):
                        return True
                elif item.is_id("return") and not true_literal(
                    _item(items, k + 1), _item(items, k + 2)
                ):
                    return True
        return False

    return scan(block.stmts)


class _Unit:
    def __init__(self, source: _Source, stmts: list[list[Item]]) -> None:
        self.source = source
        self.stmts = stmts


def _main_stmts(stmts: list[list[Item]]) -> list[list[Item]]:
    out = []
    for items in stmts:
        first, second = _tok(items, 0), _tok(items, 1)
        if first is not None and first.is_id("sub") and second is not None and second.kind == "id":
            continue
        out.append(items)
    return out


class Problem:
    """A file the audit could not follow: file, line and reason."""

    __slots__ = ("file", "line", "reason")

    def __init__(self, file: str, line: int, reason: str) -> None:
        self.file = file
        self.line = line
        self.reason = reason

    @property
    def message(self) -> str:
        """``cannot parse near line N: reason``."""
        return f"cannot parse near line {self.line}: {self.reason}"

    def as_dict(self) -> dict[str, object]:
        """The JSON shape: file, line, message."""
        return {"file": self.file, "line": self.line, "message": self.message}

    def __repr__(self) -> str:
        return f"<Problem {self.file}:{self.line} {self.reason}>"


def _internal(exc: BaseException) -> str:
    return f"the audit failed here ({type(exc).__name__}: {exc}); please report it"


def _walk_all(
    prog: Program,
    units: list[_Unit],
    failed: dict[str, Problem],
    tick: Callable[[], None] | None = None,
) -> list[_Result]:
    """Walk every scope of every unit; a unit whose walk raises is recorded in *failed*."""
    by_source: dict[int, list[tuple[str, Block]]] = {}
    for name, defs in prog.subs.items():
        for source, block in defs:
            by_source.setdefault(id(source), []).append((name, block))
    results: list[_Result] = []
    for unit in units:
        if tick is not None:
            tick()
        if unit.source.name in failed:
            continue
        queue: list[tuple[str, list[list[Item]], bool]] = [("main", _main_stmts(unit.stmts), False)]
        for name, block in by_source.get(id(unit.source), []):
            caller = (unit.source.name, name) in prog.locked_context
            queue.append((name, block.stmts, caller))
        mine: list[_Result] = []
        walker: _Walker | None = None
        try:
            while queue:
                scope, stmts, caller = queue.pop(0)
                walker = _Walker(prog, unit.source, scope, caller)
                mine.append(walker.walk(stmts))
                for n, anon in enumerate(walker.anon):
                    queue.append((f"{scope}:anon{n}@{anon.line}", anon.stmts, False))
        except Exception as exc:  # (never crash: report the file)
            line = walker.line if walker is not None else 1
            failed[unit.source.name] = Problem(unit.source.name, line, _internal(exc))
            continue
        results.extend(mine)
    return results


def audit(
    sources: Iterable[tuple[str, str]],
    errors: list[Problem] | None = None,
    load: Callable[[str], str | None] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[Finding]:
    """Findings for Perl *sources*, given as (file name, latin-1 decoded text) pairs.

    A file that cannot be followed (see ``tools.audit.scan.parse_checked``) is not audited; it is
    appended to *errors* as a :class:`Problem`.  With *load* (a path -> text or None
    reader), a ``require``d file that is not among *sources* is read from beside its
    script, for its subs and constants only.  *progress* is called with (steps done,
    steps in all) along the way.  Never raises for any text.
    """
    problems: dict[str, Problem] = {}
    prog = Program()
    units: list[_Unit] = []
    libraries: set[str] = set()
    given = list(sources)
    todo = list(given)
    done = [0]

    def tick() -> None:
        done[0] += 1
        if progress is not None:
            progress(done[0], 4 * (len(given) + len(libraries)))

    known = {re.split(r"[/\\]", name)[-1] for name, _ in given}
    while todo:
        name, text = todo.pop(0)
        tick()
        try:
            stmts, problem = parse_checked(text)
        except Exception as exc:  # (never crash: report the file)
            problems[name] = Problem(name, 1, _internal(exc))
            continue
        if problem is not None:
            if name not in libraries:
                problems[name] = Problem(name, *problem)
            continue
        source = _Source(name)
        source.library = name in libraries
        try:
            source.consts = _collect_consts(stmts, source)
            raw_requires = _collect_requires(stmts)
            _collect_subs(stmts, source, prog)
        except Exception as exc:
            problems[name] = Problem(name, 1, _internal(exc))
            continue
        source.requires = {re.split(r"[/\\]", r)[-1] for r in raw_requires}
        source.error_sub = _error_sub(stmts)
        for raw in sorted(raw_requires):
            base = re.split(r"[/\\]", raw)[-1]
            if base in known:
                continue
            lib_text = None
            if load is not None and not raw.startswith(("/", "\\")) and "$" not in raw:
                lib_path = os.path.join(os.path.dirname(name), raw)
                lib_text = load(lib_path)
                if lib_text is not None:
                    known.add(base)
                    libraries.add(lib_path)
                    todo.append((lib_path, lib_text))
            if lib_text is None:
                source.missing.append(raw)
        prog.sources.append(source)
        units.append(_Unit(source, stmts))
    by_base: dict[str, list[_Source]] = {}
    for source in prog.sources:
        by_base.setdefault(re.split(r"[/\\]", source.name)[-1], []).append(source)
    for source in prog.sources:
        source.shared = _shared_consts(source, by_base)
        source.loads = _loads(source, by_base)
    for name, defs in prog.subs.items():
        for source, block in defs:
            if _sub_exits(block) or _EXIT_NAME.match(name):
                prog.exit_subs.add((source.name, name))
    # Pass 1: learn which subs lock (by name or by what they leave held) and their callers.
    first = _walk_all(prog, units, problems, tick)
    for res in first:
        kept = any(h.kind in ("flock", "mkdir", "symlink", "excl", "file") for h in res.end_held)
        if res.scope in prog.subs and not prog.classify(res.scope, source=res.source) and kept:
            prog.sub_class[(res.source.name, res.scope)] = "lock"  # returns holding what it took
    for name, defs in prog.subs.items():
        for source, block in defs:
            if prog.classify(name, source=source) == "lock" and _can_fail(block):
                prog.can_fail.add((source.name, name))
    first = _walk_all(prog, units, problems, tick)
    for res in first:
        if prog.classify(res.scope, source=res.source) == "lock":
            tries = [(i.retry, i.wait) for i in res.insts.values() if i.retry or i.wait]
            stale = max(res.stale_at.values(), default=0)
            if tries or stale:
                retry, wait = tries[0] if tries else (0, 0.0)
                prog.styles.setdefault((res.source.name, res.scope), (retry, wait, stale))
    calls: dict[tuple[str, str], list[bool]] = {}
    callee: dict[tuple[str, str], _Source] = {}
    for res in first:
        for name, held, _ in res.calls:
            if name not in prog.subs:
                continue
            for source in prog.visible(res.source, name):
                calls.setdefault((source.name, name), []).append(bool(held))
                callee[(source.name, name)] = source
    for (file, name), held_flags in calls.items():
        if held_flags and all(held_flags) and not prog.classify(name, source=callee[file, name]):
            prog.locked_context.add((file, name))
    # Pass 2: the real walk, then the rules.
    results = _walk_all(prog, units, problems, tick)
    prog.results = results
    findings: list[Finding] = []
    for res in results:
        findings.extend(res.findings)
    findings.extend(_judge(prog, results, problems))
    findings.extend(_unknown_subs(prog, results))
    dropped = libraries | set(problems)
    unique: dict[tuple[str, int, str], Finding] = {}
    for f in findings:
        if f.file not in dropped:
            unique.setdefault((f.file, f.line, f.rule), f)
    order = {name: n for n, (name, _) in enumerate(given)}
    if errors is not None:
        errors.extend(sorted(problems.values(), key=lambda p: order.get(p.file, 0)))
    return sorted(unique.values(), key=lambda f: (order.get(f.file, 0), f.line, f.rule))


# --------------------------------------------------------------------------
# Rules over the recorded events


def _unknown_subs(prog: Program, results: list[_Result]) -> Iterator[Finding]:
    """unknown-sub: a lock sub defined nowhere audited, judged by its name; once per sub."""
    seen: set[tuple[str, str]] = set()
    for res in results:
        for name, line, kind in res.unknown:
            if (res.source.name, name.lstrip("&")) in seen:
                continue
            seen.add((res.source.name, name.lstrip("&")))
            missing = res.source.missing
            where = (
                f" ({', '.join(missing)}, which it requires, is not beside it)" if missing else ""
            )
            taken = "takes a lock" if kind == "lock" else "releases a lock"
            yield _finding(
                res,
                line,
                "unknown-sub",
                f"{display(name)} is not defined in the audited files{where}: the audit assumes "
                f"from its name that it {taken}; audit the file that defines it with this "
                "script to check",
                "",
            )


def _judge(prog: Program, results: list[_Result], failed: dict[str, Problem]) -> list[Finding]:
    """Run every rule over the walked scopes; a file whose rules raise goes to *failed*."""
    ctx = _Judge(prog)
    for res in results:
        for ev in res.events:
            if ev.kind == "flock" and ev.inst is not None and ev.open is not None and ev.open.real:
                site = (res.source.name, ev.line, ev.open)
                if not ev.open.path.local:
                    ctx.flocked.setdefault(ev.open.path.key, site)
                ctx.flocked_in.setdefault(id(res), {}).setdefault(ev.open.path.key, site)
            if ev.kind == "acquire" and ev.inst and ev.inst.kind != "caller" and not ev.inst.local:
                ctx.lock_keys.add(ev.inst.key)
    out: list[Finding] = []
    for res in results:
        for rule in (_handle_rules, _data_rules, _removal_rules, _rename_rules, _alarm_rules):
            try:
                out.extend(rule(res, ctx))
            except Exception as exc:  # (never crash: report the file)
                name = res.source.name
                failed.setdefault(name, Problem(name, 1, _internal(exc)))
    try:
        out.extend(_lock_order(prog, results))
    except Exception as exc:  # (a cross-file rule: blamed on the first file)
        if results:
            name = results[0].source.name
            failed.setdefault(name, Problem(name, 1, _internal(exc)))
    return out


class _Judge:
    """What the rules need to know across scopes and files."""

    def __init__(self, prog: Program) -> None:
        self.prog = prog
        #: path key -> (file, line, open) of one flock taken on that very file.
        self.flocked: dict[str, tuple[str, int, Open]] = {}
        #: the same per scope, including keys local to the scope.
        self.flocked_in: dict[int, dict[str, tuple[str, int, Open]]] = {}
        #: keys of every lock acquired anywhere.
        self.lock_keys: set[str] = set()

    def flock_site(self, res: _Result, path: Path) -> tuple[str, int, Open] | None:
        """Where *path* is flocked: in this scope, or anywhere when the path is not local."""
        here = self.flocked_in.get(id(res), {}).get(path.key)
        if here is not None or path.local:
            return here
        return self.flocked.get(path.key)

    def where(self, res: _Result, path: Path) -> str:
        site = self.flock_site(res, path)
        assert site is not None
        return f"line {site[1]}" if site[0] == res.source.name else f"{site[0]}:{site[1]}"


def _finding(
    res: _Result, line: int, rule: str, message: str, suggestion: str, sev: str = ""
) -> Finding:
    return Finding(res.source.name, line, rule, message, suggestion, sev)


def _by_open(res: _Result) -> dict[int, list[tuple[int, Ev]]]:
    by_open: dict[int, list[tuple[int, Ev]]] = {}
    for n, ev in enumerate(res.events):
        if ev.open is not None:
            by_open.setdefault(id(ev.open), []).append((n, ev))
    return by_open


def _flock_suggestion(handle: str, path: Path) -> str:
    h = _py_name(handle)
    return (
        f'{h} = open_("+<", {path.py}) or die(...); flock({h}, LOCK_EX) or die(...); '
        f"lines = {h}.readlines(); seek({h}, 0, 0); print_({h}, *lines); "
        f"truncate({h}, tell({h})); close({h})"
    )


def _handle_rules(res: _Result, ctx: _Judge) -> Iterator[Finding]:
    """truncate-before-lock, ex-on-readonly, append-no-seek: one handle from open to close."""
    by_open = _by_open(res)
    for op in res.opens:
        evs = by_open.get(id(op), [])
        flocks = [(n, ev) for n, ev in evs if ev.kind == "flock" and ev.inst is not None]
        if not flocks:
            continue
        n_lock, lock_ev = flocks[0]
        lock_text = lock_ev.inst.text if lock_ev.inst else "flock"
        h = _py_name(op.handle)
        used = any(n > n_lock and ev.kind in ("read", "write") for n, ev in evs)
        if op.mode in (">", "+>") and not op.held and used:
            yield _finding(
                res,
                op.line,
                "truncate-before-lock",
                f'open({display(op.handle)}, "{op.mode}...") empties {op.path.text} before '
                f"{lock_text} on line {lock_ev.line}: a process holding the lock meanwhile "
                "reads an empty file or has its write cut off",
                _flock_suggestion(op.handle, op.path),
            )
        written = any(ev.kind == "write" for _, ev in evs)
        for _, ev in flocks:
            if ev.value is None or not ev.value & LOCK_EX or op.mode != "<":
                continue
            if op.explicit or not written:
                yield _finding(
                    res,
                    ev.line,
                    "ex-on-readonly",
                    f"{ev.inst.text if ev.inst else 'flock'} asks for an exclusive lock on "
                    f"{display(op.handle)}, opened read-only: Solaris and fcntl-based flock "
                    "emulations refuse it (EBADF), so the script runs unlocked there",
                    f'flock({h}, LOCK_SH) or die(...)  # or open_("+<", {op.path.py}) to write',
                )
        if op.mode == ">>" and lock_ev.value is not None and lock_ev.value & LOCK_EX:
            after = [
                ev
                for n, ev in evs
                if n > n_lock and (ev.kind == "seek" or ev.via in ("print", "syswrite"))
            ]
            if after and after[0].kind == "write":
                yield _finding(
                    res,
                    lock_ev.line,
                    "append-no-seek",
                    f"{display(op.handle)} is opened for append and locked, then written without "
                    f"seek({display(op.handle)}, 0, 2): harmless where O_APPEND is honoured "
                    "(Linux, BSD), lost or overwritten lines on filesystems that emulate it (NFS)",
                    f"seek({h}, 0, SEEK_END)  # right after flock({h}, LOCK_EX)",
                    "info",
                )


def _rewrites(res: _Result) -> list[tuple[int, Ev]]:
    """The first rewrite through each handle, and each rename into place / truncate by name."""
    writes: list[tuple[int, Ev]] = []
    seen: set[int] = set()
    for n, ev in enumerate(res.events):
        if ev.kind != "write" or ev.path is None:
            continue
        if ev.open is not None:
            if not ev.open.real or ev.open.mode not in _REWRITE or id(ev.open) in seen:
                continue
            seen.add(id(ev.open))
        writes.append((n, ev))
    return writes


def _data_rules(res: _Result, ctx: _Judge) -> Iterator[Finding]:
    """lock-after-read, lock-gap, unlocked-write, unlocked-update: the locks over read and write."""
    events = res.events
    by_open = _by_open(res)
    reads = [
        (n, ev) for n, ev in enumerate(events) if ev.kind == "read" and ev.open and ev.open.real
    ]
    for n_w, wr in _rewrites(res):
        assert wr.path is not None
        path = wr.path
        at = wr.open.line if wr.open is not None else wr.line
        handle = wr.open.handle if wr.open is not None else "FH"
        prior = [
            (n, r)
            for n, r in reads
            if n < n_w and r.path is not None and r.path.key == path.key and not r.exclusive(wr)
        ]
        if prior:
            n_r, rd = prior[-1]
            if rd.held & wr.held:
                continue
            if not rd.held:
                later = [
                    res.insts[i]
                    for i in wr.held
                    if i in res.insts and _acquired_after(events, res.insts[i], n_r)
                ]
                if later:
                    inst = min(later, key=lambda x: x.line)
                    yield _finding(
                        res,
                        inst.line,
                        "lock-after-read",
                        f"{path.text} is read on line {rd.line} before this lock is taken and "
                        f"written under it (line {at}): a write by another process in between "
                        "is lost; lock before reading",
                        _before_read_suggestion(ctx.prog, res, inst, rd),
                    )
                    continue
            else:
                how = "under another lock" if wr.held else "after the lock is released"
                yield _finding(
                    res,
                    at,
                    "lock-gap",
                    f"{path.text} is read on line {rd.line} under one lock and written here "
                    f"{how}: in between another process can write it, and that update is "
                    "lost; hold one lock from the read to the write",
                    _flock_suggestion(rd.open.handle if rd.open else handle, path),
                )
                continue
        if wr.held:
            continue
        site = ctx.flock_site(res, path)
        flocked_here = wr.open is not None and any(
            e.kind == "flock" for _, e in by_open.get(id(wr.open), [])
        )
        if site is not None and site[2] is not wr.open and not flocked_here:
            if wr.via != "rename":  # rename-replaces-flocked reports that one
                yield _finding(
                    res,
                    at,
                    "unlocked-write",
                    f"{path.text} is rewritten here without a lock, while "
                    f"{ctx.where(res, path)} flocks it: that process's read-modify-write "
                    "overwrites this write or reads it half-written",
                    _flock_suggestion(handle if wr.open else site[2].handle, path),
                )
        elif prior and not flocked_here:
            yield _finding(
                res,
                at,
                "unlocked-update",
                f"{path.text} is read on line {prior[-1][1].line} and rewritten here with no "
                "lock: two requests at once both read the old content, and one update is lost",
                _flock_suggestion(handle, path),
            )


def _removal_rules(res: _Result, ctx: _Judge) -> Iterator[Finding]:
    """stale-check-then-remove and unlink-before-rename."""
    events = res.events
    for n, ev in enumerate(events):
        if ev.kind != "remove" or ev.path is None:
            continue
        path = ev.path
        builtin = ev.via in ("unlink", "rmdir")
        lockish = not builtin or bool(_LOCKISH.search(_bare(path.key))) or path.key in ctx.lock_keys
        if ev.age and lockish:
            yield _finding(
                res,
                ev.line,
                "stale-check-then-remove",
                f"the lock {path.text} is judged stale on line {ev.age} and removed here: two "
                "processes can both judge it stale; one removes it and locks again, then the "
                "other removes that new, live lock",
                _lock_call(
                    ctx.prog,
                    res.source,
                    path.py,
                    inst=_style_inst(res, path.key),
                    stale=res.stale_at.get(ev.age, 0),
                )
                + "  # stale recovery that never removes a live lock",
            )
        if ev.via != "unlink":
            continue
        for later in events[n + 1 :]:
            if (
                later.kind == "write"
                and later.via == "rename"
                and later.path is not None
                and later.path.key == path.key
                and not later.exclusive(ev)
            ):
                src = later.source.py if later.source else "tmp"
                yield _finding(
                    res,
                    ev.line,
                    "unlink-before-rename",
                    f"{path.text} is removed here and renamed into place on line {later.line}: "
                    "in between it does not exist, and a reader or writer then starts from an "
                    "empty file",
                    f"rename({src}, {path.py}) or die(...)  # replaces atomically "
                    "(os.replace, also on Windows): no unlink first",
                )
                break


def _rename_rules(res: _Result, ctx: _Judge) -> Iterator[Finding]:
    """rename-replaces-flocked: a new inode under processes waiting on the old one."""
    for ev in res.events:
        if ev.kind != "write" or ev.via != "rename" or ev.path is None:
            continue
        if ctx.flock_site(res, ev.path) is None:
            continue
        py = ev.path.py
        yield _finding(
            res,
            ev.line,
            "rename-replaces-flocked",
            f"rename replaces {ev.path.text}, which {ctx.where(res, ev.path)} locks with "
            "flock: a process already waiting in flock on the old file wakes up holding a lock "
            "on the unlinked inode, and its update is lost",
            f'replace_file({py}, data)  # flocks {py} + ".lck", never the replaced file; '
            "Perl writers must flock the .lck file too",
        )


def _alarm_rules(res: _Result, ctx: _Judge) -> Iterator[Finding]:
    """alarm-not-reset: the last alarm set in a scope must be cancelled there."""
    pending: Ev | None = None
    for ev in res.events:
        if ev.kind == "alarm":
            pending = None if ev.value == 0 else ev
    if pending is None:
        return
    shown = "alarm(...)" if pending.value == -1 else f"alarm({pending.value})"
    where = "script" if res.scope == "main" else "sub"
    yield _finding(
        res,
        pending.line,
        "alarm-not-reset",
        f"{shown} is never cancelled with alarm(0) in this {where}: after the locked section "
        "the alarm still fires, and once `local $SIG{ALRM}` is restored it kills the process",
        "alarm(0)  # after the locked section and on the error path (try/finally); "
        "or flock(fh, LOCK_EX, timeout=5)",
    )


def _style_inst(res: _Result, key: str) -> Inst | None:
    """The hold of lock *key* in this scope whose retry loop is known, if any."""
    for inst in res.insts.values():
        if inst.key == key and (inst.retry or inst.wait):
            return inst
    return None


def _acquired_after(events: list[Ev], inst: Inst, n: int) -> bool:
    for k, ev in enumerate(events):
        if ev.kind == "acquire" and ev.inst is inst:
            return k > n
    return False


def _before_read_suggestion(prog: Program, res: _Result, inst: Inst, read: Ev) -> str:
    if inst.kind == "flock" and inst.open is not None:
        return _flock_suggestion(inst.open.handle, inst.open.path) + f"  # before line {read.line}"
    call = _lock_call(prog, res.source, inst.name or '"lockdir"', inst=inst)
    return f"{call}  # before reading, line {read.line}"


def _sub_name(inst: Inst) -> str:
    """``lock`` of a ``&lock('dir')`` hold."""
    return inst.text[1:].split("(", 1)[0].split("::")[-1].split("'")[-1]


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else str(value)


def _lock_call(
    prog: Program,
    source: _Source,
    name: str,
    *,
    inst: Inst | None = None,
    sub: str = "",
    stale: int = 0,
    method: str = "",
) -> str:
    """``lock(name, retry=5, wait=1, stale=60) or error("busy")`` in the script's own terms.

    The retries, pause and stale age are the script's (its retry loop, its age test, or
    those of the lock sub it calls); its own error sub (``&error``) replaces ``die``.
    """
    if inst is not None and inst.kind == "sub":
        sub = _sub_name(inst)
    retry, wait, sub_stale = prog.style(source, sub)
    if inst is not None:
        retry, wait = inst.retry or retry, inst.wait or wait
    stale = stale or sub_stale
    args = [name]
    if method:
        args.append(f'method="{method}"')
    if retry:
        args.append(f"retry={retry}")
    if wait:
        args.append(f"wait={_number(wait)}")
    if stale:
        args.append(f"stale={stale}")
    fail = _py_name(source.error_sub) if source.error_sub else "die"
    return f'lock({", ".join(args)}) or {fail}("busy")'


def _lock_order(prog: Program, results: list[_Result]) -> list[Finding]:
    """Pairs of locks taken in both orders, directly or through a called sub."""

    def order_key(res: _Result, inst: Inst) -> str:
        return f"{id(res)}:{inst.key}" if inst.local else inst.key

    acquired: dict[tuple[str, str], list[str]] = {}
    for res in results:
        if res.scope in prog.subs:
            acquired.setdefault((res.source.name, res.scope), []).extend(
                e.inst.key
                for e in res.events
                if e.kind == "acquire" and e.inst and e.inst.kind != "caller" and not e.inst.local
            )
    edges: dict[tuple[str, str], list[tuple[str, int, bool, Inst, Inst | None]]] = {}
    for res in results:
        for ev in res.events:
            held = [
                res.insts[i] for i in ev.held if i in res.insts and res.insts[i].kind != "caller"
            ]
            if ev.kind == "acquire" and ev.inst is not None:
                new = order_key(res, ev.inst)
                for h in held:
                    old = order_key(res, h)
                    if old != new:
                        blocking = h.blocking and ev.inst.blocking
                        edges.setdefault((old, new), []).append(
                            (res.source.name, ev.line, blocking, h, ev.inst)
                        )
            elif ev.kind == "call" and not prog.classify(ev.via, source=res.source):
                reached = prog.visible(res.source, ev.via) if ev.via in prog.subs else []
                for key in [k for s in reached for k in acquired.get((s.name, ev.via), [])]:
                    for h in held:
                        old = order_key(res, h)
                        if old != key:
                            edges.setdefault((old, key), []).append(
                                (res.source.name, ev.line, False, h, None)
                            )
    out: list[Finding] = []
    for (a, b), sites in edges.items():
        back = edges.get((b, a))
        if not back or a > b:
            continue
        blocking = all(s[2] for s in sites) and all(s[2] for s in back)
        for site, other in ((sites[0], back[0]), (back[0], sites[0])):
            first = site[3].text if site[3].kind == "sub" else _bare(site[3].key)
            taken = site[4]
            second = (
                (taken.text if taken.kind == "sub" else _bare(taken.key))
                if taken
                else "a sub's lock"
            )
            out.append(
                Finding(
                    site[0],
                    site[1],
                    "lock-order",
                    f"{display(second)} is locked here while holding {display(first)}, and "
                    f"{other[0]}:{other[1]} takes them in the opposite order: two requests at "
                    f"once wait for each other {'forever' if blocking else 'until one gives up'}",
                    _order_suggestion(sites[0][3], sites[0][4]),
                    "error" if blocking else "warning",
                )
            )
    return out


def _acquire_line(inst: Inst) -> str:
    if inst.kind == "flock" and inst.open is not None:
        h = _py_name(inst.open.handle)
        return f"flock({h}, LOCK_EX) or die(...)"
    method = {"mkdir": "", "sub": "", "file": ', method="excl"', "excl": ', method="excl"'}.get(
        inst.kind, f', method="{inst.kind}"'
    )
    return f'lock({inst.name or "name"}{method}) or die("busy")'


def _order_suggestion(first: Inst, second: Inst | None) -> str:
    """The two acquisitions in the order *first*, *second*, for every script to copy."""
    if second is None:
        return f"{_acquire_line(first)}  # first, in every script and sub"
    return f"{_acquire_line(first)}; {_acquire_line(second)}  # this order in every script and sub"
