"""The Perl side's lock artefact format: what a Perl sibling writes into a lock, and how to read it.

Perl lock code very often writes into its lock: lockrun's ``print L "$$\\n"`` after an
``O_CREAT|O_EXCL`` sysopen, SpamAssassin's UnixNFSSafe ``"host.pid"`` line, File::NFSLock's
``"HOST pid time rand"``, a pid file inside a lock directory, ``scalar localtime``.  A
*template* declares that format once, and serves both ways: :meth:`Template.render` gives the
exact text a port writes (so the Perl code reading the lock finds what it expects) and
:meth:`Template.match` reads what the Perl side wrote (so the port waits on a live Perl holder
and recovers a dead one).

Syntax: literal text plus fields in braces; ``{{`` and ``}}`` are literal braces.  Two
fields need text between them (``{time}{pid}`` could not be read back), a field that can hold
the text after it may not be followed by another field that can hold it too
(``{host}.{rand}``: nothing tells which ``.`` ends ``{host}``, and matching a 4 KiB file
would take minutes), and a template must say more than ``{any}`` and blanks (every file
would match): each raises ``ValueError``.  So every template matches any record in linear
time.  :meth:`Template.render` reads its text back before returning it: a field whose value
the template cannot read back (``{addr}`` from a ``REMOTE_ADDR`` holding a space, a newline
or ``/``) raises ``ValueError`` naming the field and the value, and nothing is written.

=============== ======================================== ================================
field           written as (render)                      read as (match)
=============== ======================================== ================================
``{pid}``       this process's pid                       ``\\d+``: the holder's pid
``{host}``      this host's name (``uname -n``)          ``\\S+``: the holder's host
``{time}``      ``int(time.time())``                     ``\\d+(\\.\\d+)?``: when made
``{expires}``   ``int(time.time() + stale)``             ``\\d+(\\.\\d+)?``: expiry epoch
``{rand}``      a number as Perl prints ``rand(10000)``  ``[0-9.eE+-]+``
``{localtime}`` Perl's ``scalar localtime``              that shape: when made
``{addr}``      ``$ENV{REMOTE_ADDR}`` (empty when unset) ``[^\\s/]*``
``{any}``       nothing                                  anything (ignored)
=============== ======================================== ================================

Content matches when the WHOLE of it matches; trailing whitespace is ignored on both sides
(Perl writes ``print L $$`` as often as ``print L "$$\\n"``) and a ``\\n`` in the template also
reads a ``\\r\\n`` (Perl's ``:crlf`` layer on Windows).  File names (per-holder held names such
as ``lock{time}_{pid}_{addr}``) match exactly, see :meth:`Template.fullmatch_name`.

A matched holder (:class:`Fields`) is busy while present and stale (:meth:`Fields.stale`)
when its pid is provably dead on this host (a record without ``{host}`` names this host), when
its ``{expires}`` has passed, or when it is older than the lock's *stale* seconds.
"""

from __future__ import annotations

import os
import re
import time as _time

from perlcompat.locks import owner

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

_NUMBER = r"\d+(?:\.\d+)?"
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_DAYS = "Sun|Mon|Tue|Wed|Thu|Fri|Sat"

#: every field: its regular expression when read back.
FIELDS: dict[str, str] = {
    "pid": r"\d+",
    "host": r"\S+",
    "time": _NUMBER,
    "expires": _NUMBER,
    "rand": r"[0-9.eE+-]+",
    "localtime": rf"(?:{_DAYS}) (?:{'|'.join(_MONTHS)}) [ \d]\d \d\d:\d\d:\d\d \d+",
    "addr": r"[^\s/]*",
    "any": r".*?",
}

_SPACE = " \t\n\r\f\v"
_DIGITS = "0123456789"

#: every field: True for a character it can hold where its match may end (``{localtime}``
#: ends in its year's digits), to refuse ambiguous templates (:func:`_check_readable`).
HOLDS: dict[str, Callable[[str], bool]] = {
    "pid": _DIGITS.__contains__,
    "host": lambda char: char not in _SPACE,
    "time": (_DIGITS + ".").__contains__,
    "expires": (_DIGITS + ".").__contains__,
    "rand": (_DIGITS + ".eE+-").__contains__,
    "localtime": _DIGITS.__contains__,
    "addr": lambda char: char not in _SPACE and char != "/",
    "any": lambda char: True,
}

#: the formats known Perl lock code writes, tried in this order by :func:`guess`.
KNOWN: tuple[tuple[str, str], ...] = (
    ("{pid}\n", "a bare pid: lockrun, Proc::PID::File, LockFile::Simple, open/print $$"),
    ("{host}.{pid}\n", "SpamAssassin UnixNFSSafe"),
    ("{host} {pid} {time} {rand}\n", "File::NFSLock"),
    ("{pid}\n{host}\n{expires}\n", "pid, host, expiry lines"),
    ("{localtime}\n", "scalar localtime"),
)


class Fields:
    """What a matched lock artefact says about its holder (read-only).

    ``pid``, ``host`` (None when the template has no such field, or the pid is no pid),
    ``made`` (epoch seconds, from ``{time}`` or ``{localtime}``), ``expires`` (epoch
    seconds) and ``text``, the raw text of every field.
    """

    __slots__ = ("expires", "host", "made", "pid", "text")

    pid: int | None
    host: str | None
    made: float | None
    expires: float | None
    text: dict[str, str]

    def __init__(self, text: dict[str, str]) -> None:
        setter = object.__setattr__
        setter(self, "text", dict(text))
        setter(self, "pid", owner.pid_of(text["pid"]) if "pid" in text else None)
        setter(self, "host", text.get("host"))
        made = _float(text.get("time"))
        if made is None and "localtime" in text:
            made = parse_localtime(text["localtime"])
        setter(self, "made", made)
        setter(self, "expires", _float(text.get("expires")))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Fields is read-only: cannot set {name!r}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Fields) and self.text == other.text

    def __hash__(self) -> int:
        return hash(tuple(sorted(self.text.items())))

    def __repr__(self) -> str:
        return (
            f"Fields(pid={self.pid!r}, host={self.host!r}, made={self.made!r}, "
            f"expires={self.expires!r}, text={self.text!r})"
        )

    def holder_host(self) -> str | None:
        """The host the holder's pid means something on: its ``{host}``, else this host."""
        if self.host is not None:
            return self.host
        return owner.unnamed_host()

    def alive(self) -> bool | None:
        """Whether the named holder still runs: ``owner.alive`` (None: cannot tell)."""
        if self.pid is None:
            return None
        return owner.alive(self.pid, self.holder_host(), created=self.made)

    def stale(
        self, *, stale: float | None, mtime: float | None = None, now: float | None = None
    ) -> str | None:
        """Say why this holder is stale, or None while it holds.

        Stale: its pid is provably dead (:meth:`alive` is False), its ``{expires}`` has
        passed, or its age (from the later of *mtime*, the artefact's modification time,
        and its ``{time}``/``{localtime}``) is more than *stale* seconds (None: never).
        """
        if self.alive() is False:
            return f"its holder, pid {self.pid}, no longer runs"
        now = _time.time() if now is None else now
        if self.expires is not None and self.expires < now:
            return f"it expired {now - self.expires:.0f} s ago"
        if stale is not None:
            seen = [t for t in (mtime, self.made) if t is not None]
            if seen and now - max(seen) > stale:
                return f"it is {now - max(seen):.0f} s old (stale after {stale:g} s)"
        return None


class Template:
    """A compiled lock artefact template (see the module docstring for its syntax).

    ``Template("{pid}\\n").render(stale=60)`` is what to write; ``.match(data)`` reads it.
    """

    __slots__ = ("_content", "_name", "_parts", "_prefixes", "fields", "text")

    text: str
    fields: frozenset[str]

    def __init__(self, text: str) -> None:
        if not isinstance(text, str):
            raise TypeError(f"a record template is a str, not {type(text).__name__}")
        if not text:
            raise ValueError("empty record template: write the Perl lock's format, e.g. '{pid}\\n'")
        self.text = text
        self._parts = _parse(text)
        self.fields = frozenset(name for kind, name in self._parts if kind == "field")
        _check_readable(text, self._parts)
        self._content = re.compile(_regex(self._parts, content=True), re.DOTALL | re.ASCII)
        self._name = re.compile(_regex(self._parts, content=False), re.DOTALL | re.ASCII)
        self._prefixes: list[re.Pattern[str]] | None = None

    def __repr__(self) -> str:
        return f"Template({self.text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Template) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    def render(self, *, stale: float | None, now: float | None = None) -> str:
        """Return the exact text to write for this process (``{expires}`` is now + *stale*)."""
        now = _time.time() if now is None else now
        values: dict[str, str] = {}
        out = []
        for kind, value in self._parts:
            if kind == "text":
                out.append(value)
            else:  # a field named twice is read back as one value: rendered once
                if value not in values:
                    values[value] = _render(value, stale, now)
                out.append(values[value])
        text = "".join(out)
        self._check_rendered(text, values)
        return text

    def _check_rendered(self, text: str, values: dict[str, str]) -> None:
        """ValueError unless *text*, rendered with *values*, reads back as those values.

        A record its own template cannot match would never be recovered once its holder
        died (waiters refuse it as foreign); one read back with other values would be
        judged by a stranger's pid.  The error names the field and its value.
        """
        for name, value in values.items():
            if not re.fullmatch(FIELDS[name], value, re.DOTALL | re.ASCII):
                raise ValueError(
                    f"record template {self.text!r}: field {{{name}}} renders {value!r}"
                    f"{_SOURCES.get(name, '')}, which it cannot read back ({FIELDS[name]});"
                    " refusing to write a lock record no waiter could recover"
                )
        for pattern in (self._content, self._name):
            found = pattern.fullmatch(text)
            read = {} if found is None else _groups(found)
            for name, value in values.items():
                if name != "any" and read.get(name) != value:
                    raise ValueError(
                        f"record template {self.text!r}: rendered as {shown(text)}, its field"
                        f" {{{name}}} = {value!r}{_SOURCES.get(name, '')} reads back as"
                        f" {read.get(name)!r}; refusing to write a lock record no waiter"
                        " could recover"
                    )

    def match(self, data: str | bytes) -> Fields | None:
        """Read *data* (a lock file's whole content): its Fields, or None if it does not match."""
        if isinstance(data, bytes):
            data = data.decode("utf-8", "surrogateescape")
        found = self._content.fullmatch(data)
        return None if found is None else Fields(_groups(found))

    def prefix(self, data: str | bytes) -> bool:
        """True if *data* is the start of a record of this template (a Perl holder that writes
        its record in pieces, read between two of them): the template cut after a part."""
        if isinstance(data, bytes):
            data = data.decode("utf-8", "surrogateescape")
        if self._prefixes is None:
            self._prefixes = [
                re.compile(_regex(self._parts[:cut], content=True), re.DOTALL | re.ASCII)
                for cut in range(1, len(self._parts))
            ]
        return any(pattern.fullmatch(data) for pattern in self._prefixes)

    def fullmatch_name(self, name: str) -> Fields | None:
        """Read a file name (a per-holder held name): its Fields, or None; no whitespace slack."""
        found = self._name.fullmatch(name)
        return None if found is None else Fields(_groups(found))

    def names(self, entries: Iterable[str]) -> list[tuple[str, Fields]]:
        """The *entries* (file names) that match, with their Fields, in the order given."""
        out = []
        for entry in entries:
            fields = self.fullmatch_name(entry)
            if fields is not None:
                out.append((entry, fields))
        return out


_cache: dict[str, Template] = {}


def template(text: str) -> Template:
    """Return the compiled :class:`Template` of *text* (cached)."""
    found = _cache.get(text)
    if found is None:
        found = _cache[text] = Template(text)
    return found


def guess(data: str | bytes) -> str | None:
    """Return the template of the known Perl format that *data* matches, or None."""
    for text, _who in KNOWN:
        if template(text).match(data) is not None:
            return text
    return None


def shown(data: str | bytes, limit: int = 60) -> str:
    """*data* as a short literal for messages (bytes decoded as by :meth:`Template.match`)."""
    if isinstance(data, bytes):
        data = data.decode("utf-8", "surrogateescape")
    text = repr(data[:limit])
    return text + ("..." if len(data) > limit else "")


def foreign(name: str, data: str | bytes, *, method: str, keyword: str = "record") -> str:
    """The message for undeclared content: what *name* holds and the call that declares it.

    ``"X holds '12345\\n', not a perlcompat lock record; if a Perl script writes this lock,
    declare its format: lock('X', method='excl', record='{pid}\\n')"``.
    """
    known = guess(data)
    if known is None:
        known = "..."
        hint = f" (a template of its format: fields {', '.join('{' + f + '}' for f in FIELDS)})"
    else:
        hint = ""
    return (
        f"{name} holds {shown(data)}, not a perlcompat lock record; if a Perl script writes "
        f"this lock, declare its format: lock({name!r}, method={method!r}, "
        f"{keyword}={known!r}){hint}"
    )


def parse_localtime(text: str) -> float | None:
    """Epoch seconds of Perl's ``scalar localtime`` text (``"Wed Nov 25 17:04:43 2026"``)."""
    parts = text.split()
    try:
        month = _MONTHS.index(parts[1]) + 1
        day = int(parts[2])
        hour, minute, second = (int(x) for x in parts[3].split(":"))
        year = int(parts[4])
        return _time.mktime((year, month, day, hour, minute, second, 0, 0, -1))
    except (IndexError, ValueError, OverflowError):
        return None


def _float(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _parse(text: str) -> list[tuple[str, str]]:
    """Split a template into ("text", literal) and ("field", name) parts."""
    parts: list[tuple[str, str]] = []
    literal: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "{" and text.startswith("{{", i):
            literal.append("{")
            i += 2
        elif char == "}" and text.startswith("}}", i):
            literal.append("}")
            i += 2
        elif char == "{":
            end = text.find("}", i)
            if end < 0:
                raise ValueError(f"record template {text!r}: unbalanced '{{' at {i} (write '{{{{')")
            name = text[i + 1 : end]
            if name not in FIELDS:
                known = ", ".join("{" + f + "}" for f in FIELDS)
                raise ValueError(
                    f"record template {text!r}: unknown field {{{name}}}; known: {known}"
                )
            if literal:
                parts.append(("text", "".join(literal)))
                literal = []
            parts.append(("field", name))
            i = end + 1
        elif char == "}":
            raise ValueError(f"record template {text!r}: unbalanced '}}' at {i} (write '}}}}')")
        else:
            literal.append(char)
            i += 1
    if literal:
        parts.append(("text", "".join(literal)))
    return parts


#: the longest template: rendered with its fields it stays below the 4 KiB a lock file is read.
MAX_TEXT = 1024


def _shorten(text: str) -> str:
    return repr(text[:40]) + ("..." if len(text) > 40 else "")


def _check_readable(text: str, parts: list[tuple[str, str]]) -> None:
    """ValueError for a template that cannot tell a lock from other content.

    Two fields with no text between them (``{time}{pid}`` renders ``176408700012345``,
    read back as pid 5: a live holder judged by a stranger's pid), and a template of
    ``{any}`` and blanks only, which every file matches (a data file given by mistake
    would be taken for a lock, and removed once older than ``stale``), and a field that
    can hold the first character of the text after it followed, anywhere later, by a
    field that can hold it too (``{host}.{rand}``, ``{host}.{pid}.{addr}``): read back in
    more than one way, and matched in polynomial time (minutes on a 4 KiB file).  Without
    such a pair each field's end is fixed by the text after it (``{host}.{pid}``: the
    last ``.``), and a match takes linear time.
    """
    for (kind, name), (next_kind, next_name) in zip(parts, parts[1:]):
        if kind == next_kind == "field":
            raise ValueError(
                f"record template {text!r}: fields {{{name}}}{{{next_name}}} are adjacent, so"
                " nothing tells where one ends when it is read back; write the text the Perl"
                " code puts between them"
            )
    if len(text) > MAX_TEXT:
        raise ValueError(
            f"record template {_shorten(text)}: {len(text)} characters, more than any lock"
            f" record ({MAX_TEXT}; a lock file over 4 KiB is never read as a lock)"
        )
    try:
        text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"record template {text!r} cannot be written as bytes ({exc.reason} at {exc.start})"
        ) from None
    if all(name == "any" if kind == "field" else not name.strip() for kind, name in parts):
        raise ValueError(
            f"record template {text!r} matches any content, so a data file would be taken"
            " for a lock; write the Perl lock's format, e.g. '{pid}\\n'"
        )
    for index, (kind, name) in enumerate(parts[:-1]):
        after = parts[index + 1][1]
        if kind != "field" or not HOLDS[name](after[0]):
            continue  # its match ends where the text after it starts: one way to read it
        for later_kind, later in parts[index + 2 :]:
            if later_kind == "field" and HOLDS[later](after[0]):
                raise ValueError(
                    f"record template {text!r}: fields {{{name}}} and {{{later}}} can both hold"
                    f" {after[0]!r}, the text after {{{name}}}, so nothing tells where"
                    f" {{{name}}} ends when it is read back (and matching a 4 KiB file would"
                    " take minutes); put text between them that the first cannot hold"
                )


#: where a field's rendered value comes from, for errors.
_SOURCES = {"addr": " (from $ENV{REMOTE_ADDR})", "host": " (this host's name, uname -n)"}


def _literal(text: str) -> str:
    return "\r?\n".join(re.escape(line) for line in text.split("\n"))


def _regex(parts: list[tuple[str, str]], *, content: bool) -> str:
    pieces: list[str] = []
    seen: set[str] = set()
    last = len(parts) - 1
    for index, (kind, value) in enumerate(parts):
        if kind == "text":
            if content and index == last:
                value = value.rstrip()
            pieces.append(_literal(value) if content else re.escape(value))
        elif value in seen:
            pieces.append(f"(?P={value})")
        else:
            seen.add(value)
            pieces.append(f"(?P<{value}>{_field(value, parts[index + 1 :], content)})")
    if content:
        pieces.append(r"\s*")
    return "".join(pieces)


def _field(name: str, rest: list[tuple[str, str]], content: bool) -> str:
    """The regex of the field *name* followed by *rest*: ``{any}`` at the end is greedy.

    (A lazy ``.*?`` before the trailing ``\\s*`` would try every length against every
    split of trailing blanks: quadratic.)
    """
    if name != "any" or any(kind == "field" or value.strip() for kind, value in rest):
        return FIELDS[name]
    if content:
        return r"(?:.*\S)?"  # up to its last non-blank: the blanks are the trailing ones
    return FIELDS[name] if rest else ".*"


def _groups(found: re.Match[str]) -> dict[str, str]:
    return {key: value for key, value in found.groupdict().items() if value is not None}


def _render(name: str, stale: float | None, now: float) -> str:
    if name == "pid":
        return str(os.getpid())
    if name == "host":
        return owner.hostname()
    if name == "time":
        return str(int(now))
    if name == "expires":
        if stale is None:
            raise ValueError("record template field {expires} needs a stale time (stale=None)")
        return str(int(now + stale))
    if name == "rand":
        return _perl_number(int.from_bytes(os.urandom(6), "big") / 2**48 * 10000)
    if name == "localtime":
        from perlcompat.perl.time import scalar_localtime

        return scalar_localtime(now)
    if name == "addr":
        return os.environ.get("REMOTE_ADDR", "")
    return ""  # {any}


def _perl_number(value: float) -> str:
    """*value* as Perl prints a number (``%.15g``)."""
    return f"{value:.15g}"
