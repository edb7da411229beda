"""The program model: what the walk records, and everything audited together.

A walk records per scope (:class:`Result`) the opens of handles (:class:`Open`), the
holds of locks (:class:`Inst`), and one :class:`Ev` per read, write, lock, unlock,
removal, rename, ``alarm``, seek and call, each carrying the set of locks held at that
moment; :class:`State` is what is true at one point of the walk.  :class:`Program` holds
every file (:class:`Source`: its constants, the files it ``require``s) and every sub,
and answers which definition a call runs (:meth:`Program.visible`), whether a sub
exits, may fail, or takes a lock (:meth:`Program.classify`).

Paths are compared by their text after substituting, per script, the simple
``$name = "..."`` assignments of that script and of the files it ``require``s or
``do``es.  Two scripts name the same file only when those texts are equal and fully
resolved: a path that still holds a variable (``$datafile`` set from ``$ENV{...}``) is
qualified by its script's name (:data:`QUAL`) and matches nothing elsewhere.
"""

from __future__ import annotations

import re

from .findings import Finding
from .parser import Block

LOCK_SH, LOCK_EX, LOCK_NB, LOCK_UN = 1, 2, 4, 8
FLOCK_NAMES = {"LOCK_SH": 1, "LOCK_EX": 2, "LOCK_NB": 4, "LOCK_UN": 8}
SEEK_NAMES = {"SEEK_SET": 0, "SEEK_CUR": 1, "SEEK_END": 2}
REWRITE = frozenset({">", "+<", "+>"})
CREATE = frozenset({">", ">>", "+>", "+>>"})
POSTFIX = frozenset({"if", "unless", "while", "until", "for", "foreach"})
LOW_WORDS = frozenset({"or", "and", "xor", "if", "unless", "while", "until", "for", "foreach"})
EXIT_WORDS = frozenset({"exit", "die", "croak", "confess", "return", "next", "last", "redo"})
STD_HANDLES = frozenset({"STDOUT", "STDERR", "STDIN", "ARGV", "DATA"})
_UNLOCK_NAME = re.compile(
    r"unlock|release|un_lock|lock_?(?:off|end|free)|(?:rm|del|free)_?lock", re.I
)
_LOCK_NAME = re.compile(r"lock", re.I)
_NOT_LOCK_NAME = re.compile(r"[bc]lock", re.I)  # block, clock, SIG_BLOCK, EWOULDBLOCK
_CONST_NAME = re.compile(r"^[A-Z0-9_]+$")  # LOCK_EX: a constant unless called as `&LOCK(...)`
EXIT_NAME = re.compile(r"^(?:error|err|error_?exit|fatal|abort|bail|die_?\w*)$", re.I)
LOCKISH = re.compile(r"lock|lck", re.I)
EXISTS_TESTS = frozenset({"-e", "-f", "-d", "-l", "-s"})
AGE_TESTS = frozenset({"-M", "-A", "-C"})
NAMED_UNARY = frozenset({"close", "alarm", "rmdir", "readline", "chdir", "eof", "getc", "tell"})
TRUNCATE = frozenset({">", "+>"})
#: Between a script's name and a path key that means something in that script only.
QUAL = "\x00"


def bare(key: str) -> str:
    """A path key without the script qualifier :meth:`Walker.path` may have added."""
    return key.rpartition(QUAL)[2]


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
        "form",
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
        self.kind = kind  # flock fcntl sub mkdir symlink link excl file rename caller
        self.key = key
        self.line = line
        self.text = text
        self.name = name  # Python spelling of the lock name
        self.blocking = blocking
        self.open = open_
        self.local = False  # the key names a `my` variable: meaningless outside its sub
        self.retry = 0  # tries of the script's own retry loop around it (0: none seen)
        self.wait = 0.0  # its sleep between tries
        #: the perlcompat call that takes the same lock: keyword -> Python expression
        #: (``method``, ``target``, ``held``, ``data``; ``name``: the lock path, a literal
        #: where the script's variable holds a constant)
        self.form: dict[str, str] = {}


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


def merge(ends: list[State], age: int) -> State:
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


STMT = Ctx()


class Source:
    """Per-file facts: name, simple string constants."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.consts: dict[str, str] = {}
        self.literals: dict[str, str] = {}  # $name -> its one string literal, as written
        self.rename_pairs: set[tuple[str, str]] = set()  # (from, to) keys of its renames
        self.requires: set[str] = set()  # base names of the files it `require`s or `do`es
        self.loads: list[Source] = []  # those files (transitively), as audited or read
        self.shared: dict[str, str] = {}  # constants of those files, where they agree
        self.library = False  # read only because a script requires it: no findings
        self.missing: list[str] = []  # required files neither audited nor found beside it
        self.error_sub = ""  # its own `&error(...)`-style sub, if it calls one


class Program:
    """Everything audited together: files, subs, and what the walks found."""

    def __init__(self) -> None:
        self.sources: list[Source] = []
        self.subs: dict[str, list[tuple[Source, Block]]] = {}
        self.sub_class: dict[tuple[str, str], str] = {}  # (file, sub) -> "lock"
        self.can_fail: set[tuple[str, str]] = set()  # (file, sub) lock that may return 0
        self.exit_subs: set[tuple[str, str]] = set()  # (file, sub) that always leaves
        self.locked_context: set[tuple[str, str]] = set()  # (file, sub) called only under a lock
        self.results: list[Result] = []
        self.next_id = 0
        #: (file, lock sub) -> (tries, pause, stale seconds) of its retry loop and age test
        self.styles: dict[tuple[str, str], tuple[int, float, int]] = {}
        #: (file, lock sub) -> the form (``Inst.form``) of the lock it takes
        self.forms: dict[tuple[str, str], dict[str, str]] = {}

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def visible(self, source: Source, name: str) -> list[Source]:
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

    def exits(self, source: Source, name: str) -> bool:
        """True if calling sub *name* from *source* never returns (``&error``)."""
        if name not in self.subs:
            return bool(EXIT_NAME.match(name))
        return all((s.name, name) in self.exit_subs for s in self.visible(source, name))

    def fails(self, source: Source, name: str) -> bool:
        """True if the lock sub *name*, called from *source*, may return 0."""
        return any((s.name, name) in self.can_fail for s in self.visible(source, name))

    def style(self, source: Source, name: str) -> tuple[int, float, int]:
        """(tries, pause, stale seconds) of the lock sub *name* as called from *source*."""
        for s in self.visible(source, name):
            style = self.styles.get((s.name, name))
            if style is not None:
                return style
        return (0, 0.0, 0)

    def form(self, source: Source, name: str) -> dict[str, str]:
        """The form of the lock that lock sub *name* takes, called from *source*; {} if unknown."""
        for s in self.visible(source, name):
            form = self.forms.get((s.name, name))
            if form is not None:
                return form
        return {}

    def classify(self, name: str, called: bool = False, source: Source | None = None) -> str:
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
        if _NOT_LOCK_NAME.search(name) or name in FLOCK_NAMES:
            return ""
        if _CONST_NAME.match(name) and (not called or qualified):
            return ""
        if _UNLOCK_NAME.search(name):
            return "unlock"
        if _LOCK_NAME.search(name):
            return "lock"
        return ""


class Result:
    """One walked scope: its events, opens, lock holds and direct findings."""

    def __init__(self, source: Source, scope: str) -> None:
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
