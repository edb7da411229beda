"""Perl source text to tokens, the way Perl's own tokenizer decides the ambiguous cases.

A script is read as bytes and decoded as latin-1, one character per byte, so line
numbers are exact and Shift_JIS, EUC-JP or broken UTF-8 text in strings and comments
cannot stop it.  The lexer decides ``/`` as regex or division, ``<IN>`` or less-than,
``%h`` or modulus, ``-e`` file tests, ``$#a``, ``$'``, ``jcode'convert`` as Perl does,
and skips comments, POD, ``__END__`` data and ``format`` pictures; heredocs,
``q{}``/``qq//``/``s///``/``tr///`` and strings become single tokens.  Perl treats a
Shift_JIS trail byte 0x5C as a backslash; jperl and scripts written for it do not, so a
string that would only close on a later line the Perl way is closed where the Shift_JIS
reading closes it, on the same line.  Bytes >= 0x80 outside strings are identifier
letters (``use utf8; sub 書き``, or a Shift_JIS data file's text), so any input is
tokenized; what cannot be followed is recorded for :func:`.parser.parse_checked`.
"""

from __future__ import annotations

import re


class Tok:
    """One Perl token: kind, text, 1-based line, and a kind-specific extra."""

    __slots__ = ("extra", "kind", "line", "text")

    def __init__(self, kind: str, text: str, line: int, extra: str = "") -> None:
        self.kind = kind  # id var cast str qw re num op rl ft
        self.text = text
        self.line = line
        self.extra = extra

    def is_op(self, *texts: str) -> bool:
        """True if this is an operator token with one of *texts*."""
        return self.kind == "op" and self.text in texts

    def is_id(self, *texts: str) -> bool:
        """True if this is a bareword with one of *texts*."""
        return self.kind == "id" and self.text in texts

    def __repr__(self) -> str:
        extra = f" {self.extra}" if self.extra else ""
        return f"<{self.kind} {self.text!r} L{self.line}{extra}>"


_QUOTE_OPS = frozenset({"q", "qq", "qw", "qx", "m", "qr", "s", "tr", "y"})
_TWO_PART = frozenset({"s", "tr", "y"})
_FILETESTS = "rwxoRWXOezsfdlpSbctugkTBAMC"
_BRACKETS = {"(": ")", "[": "]", "{": "}", "<": ">"}
# Words after which Perl expects an operator, not a term.
_OPERAND_WORDS = frozenset(
    {"time", "times", "wantarray", "__FILE__", "__LINE__", "__PACKAGE__", "__SUB__"}
)
_OPS = sorted(
    """<=> **= ||= &&= //= <<= >>= ... -> ++ -- ** =~ !~ == != <= >= && || // .. :: << >>
    += -= *= /= .= %= x= |= &= ^= =>""".split(),  # noqa: SIM905
    key=len,
    reverse=True,
)
# Words that cannot be a Perl 4 package name before `'`.
_NO_PACKAGE = frozenset(
    """eq ne lt gt le ge cmp x and or not xor if unless while until return print printf
    die warn push unshift split join open close q qq qw m s tr y qr qx""".split()  # noqa: SIM905
)
# Identifiers: ASCII words, plus any byte >= 0x80 (a UTF-8 name under `use utf8`, or a
# Shift_JIS data file's text): one word, never a crash.
_IDENT = re.compile(
    r"[A-Za-z_\x80-\xff][\w\x80-\xff]*(?:(?:::|'(?=[A-Za-z_]))[\w\x80-\xff]+)*(?:::)?", re.A
)
_OPS_RE = re.compile("|".join(re.escape(op) for op in _OPS))
_NUMBER = re.compile(
    r"0[xX][0-9a-fA-F_]+|0[bB][01_]+|(?:\d[\d_]*(?:\.(?!\.)[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d+)?"
)
_GLOB_PUNCT = "\"'`;/\\,.|!@&+<>?^~=-%0123456789"
_SPECIAL_VAR = "&`'+!@/\\,;.0123456789<>[]()|?:_-~=%^\"$"
_CONSTANT_DECL = re.compile(r"\bsub\s+(\w+)\s*\(\s*\)|\buse\s+constant\s+(\w+)\s*(?:=>|,)", re.A)
_CONSTANT_LIST = re.compile(r"\buse\s+constant\s*\{([^}]*)\}", re.A)
_CONSTANT_KEY = re.compile(r"(\w+)\s*=>", re.A)
_SJIS_LEAD = re.compile(r"[\x81-\x9f\xe0-\xfc][\x40-\x7e\x80-\xfc]")


def _sjis_pairs(text: str, start: int, end: int) -> set[int]:
    """Positions in [start, end) that are Shift_JIS trail bytes."""
    trails: set[int] = set()
    pos = start
    while pos < end:
        match = _SJIS_LEAD.match(text, pos, end)
        if match:
            trails.add(pos + 1)
            pos += 2
        else:
            pos += 1
    return trails


def _scan(text: str, pos: int, opener: str, skip: set[int] | None = None) -> int:
    """Index just past the delimiter closing a quote body that starts at *pos*, or -1."""
    closer = _BRACKETS.get(opener, opener)
    nesting = opener != closer
    depth = 0
    n = len(text)
    while pos < n:
        c = text[pos]
        if skip is not None and pos in skip:
            pos += 1
            continue
        if c == "\\":
            pos += 2
            continue
        if nesting and c == opener:
            depth += 1
        elif c == closer:
            if depth == 0:
                return pos + 1
            depth -= 1
        pos += 1
    return -1


def _scan_body(text: str, pos: int, opener: str) -> int:
    """Like :func:`_scan`, preferring a Shift_JIS reading that closes on the same line."""
    end = _scan(text, pos, opener)
    line_end = text.find("\n", pos)
    if line_end < 0 or (end != -1 and end <= line_end):
        return end
    if not _SJIS_LEAD.search(text, pos, line_end):
        return end
    alt = _scan(text, pos, opener, _sjis_pairs(text, pos, line_end))
    if alt != -1 and alt <= line_end:
        return alt
    return end


class Lexer:
    """Perl source text (latin-1 decoded) -> tokens."""

    def __init__(self, text: str, first_line: int = 1) -> None:
        self.text = text
        self.pos = 0
        self.line = first_line
        self.toks: list[Tok] = []
        self.heredocs: list[tuple[Tok, str, bool]] = []
        self.braces: list[str] = []  # "sub" (subscript/deref) or "block"
        self.errors: list[tuple[int, str]] = []  # (line, reason): where it cannot follow
        # Subs declared with an empty prototype and `use constant` names take no argument:
        # `PI / 2` divides, as Perl knows from the declaration.
        self.constants = {a or b for a, b in _CONSTANT_DECL.findall(text)}
        for group in _CONSTANT_LIST.findall(text):
            self.constants.update(_CONSTANT_KEY.findall(group))

    def error(self, line: int, reason: str) -> None:
        """Note that the text cannot be followed from *line* on (the first reason is kept)."""
        self.errors.append((line, reason))

    # -- helpers -----------------------------------------------------------
    def emit(self, kind: str, text: str, line: int, extra: str = "") -> Tok:
        tok = Tok(kind, text, line, extra)
        self.toks.append(tok)
        return tok

    def advance_to(self, end: int) -> None:
        self.line += self.text.count("\n", self.pos, end)
        self.pos = end

    def term_expected(self) -> bool:
        if not self.toks:
            return True
        prev = self.toks[-1]
        kind = prev.kind
        if kind in ("var", "num", "str", "qw", "rl", "re"):
            return False
        if kind == "op":
            if prev.text == "}":
                return prev.extra == "block"
            return prev.text not in (")", "]")
        if kind == "id":
            if prev.text in _OPERAND_WORDS or prev.text in self.constants:
                return False
            before = self.toks[-2] if len(self.toks) > 1 else None
            return before is None or not before.is_op("->")  # `$obj->count / 10` divides
        return True

    def print_handle(self) -> bool:
        """True just after ``print $fh``: a ``<<"EOT"`` there starts a heredoc."""
        toks = self.toks
        return (
            len(toks) > 1
            and toks[-1].kind == "var"
            and toks[-1].text.startswith("$")
            and toks[-2].is_id("print", "printf", "say")
        )

    def at_line_start(self) -> bool:
        return self.pos == 0 or self.text[self.pos - 1] == "\n"

    def skip_to_line(self, pattern: re.Pattern[str]) -> None:
        """Skip whole lines up to and including the first matching *pattern*."""
        match = pattern.search(self.text, self.pos)
        end = len(self.text) if match is None else match.end()
        self.advance_to(end)

    # -- main loop ---------------------------------------------------------
    def run(self) -> list[Tok]:
        text = self.text
        n = len(text)
        while self.pos < n:
            c = text[self.pos]
            if c == "\n":
                self.pos += 1
                self.line += 1
                if self.heredocs:
                    self.read_heredocs()
                continue
            if c in " \t\r\f\v":
                self.pos += 1
                continue
            if self.at_line_start() and self.line_directive():
                continue
            if c == "#":
                end = text.find("\n", self.pos)
                self.pos = n if end < 0 else end
                continue
            if c.isalpha() or c == "_" or c >= "\x80":
                if self.word():
                    break
                continue
            if c.isdigit() or (
                c == "." and self.term_expected() and text[self.pos + 1 : self.pos + 2].isdigit()
            ):
                match = _NUMBER.match(text, self.pos)
                if match and match.end() > self.pos:
                    self.emit("num", match.group(), self.line)
                    self.pos = match.end()
                    continue
            if c == "$":
                self.dollar()
                continue
            if c in "@%&*" and self.sigil(c):
                continue
            if c in "\"'`":
                self.quoted(c, c, "str")
                continue
            if c == "-" and self.filetest():
                continue
            if c == "/" and self.term_expected():
                self.quoted("/", "m", "re")
                continue
            if c == "<" and self.angle():
                continue
            if c == "\x00":
                self.error(self.line, "a NUL byte: binary data, not Perl")
                break
            self.operator()
        if self.heredocs:
            self.read_heredocs()
        return self.toks

    def line_directive(self) -> bool:
        """POD, ``__END__``/``__DATA__`` and ``format`` at the start of a line."""
        text = self.text
        pos = self.pos
        if text.startswith("=", pos) and text[pos + 1 : pos + 2].isalpha():
            self.skip_to_line(re.compile(r"^=cut\b.*$\n?|\Z", re.M))
            return True
        if re.match(r"__(?:END|DATA)__\b", text[pos : pos + 9]):
            self.pos = len(text)
            return True
        if re.match(r"format\b[^\n=]*=\s*$", text[pos : text.find("\n", pos) + 1 or None]):
            self.skip_to_line(re.compile(r"^\.\s*$\n?|\Z", re.M))
            return True
        return False

    def word(self) -> bool:
        """An identifier, keyword or quote-like operator; True at ``__END__``."""
        text = self.text
        match = _IDENT.match(text, self.pos)
        if match is None:  # a non-word letter: an operator byte to Perl's eyes
            self.operator()
            return False
        word = match.group()
        end = match.end()
        quote = word.find("'")
        if quote > 0 and word[:quote] in _NO_PACKAGE:
            word = word[:quote]  # eq'abc' is `eq 'abc'`, not package eq's abc
            end = match.start() + quote
        if word in _QUOTE_OPS and self.quote_op(word, end):
            return False
        if word in ("__END__", "__DATA__"):
            self.pos = len(text)
            return True
        self.emit("id", word, self.line)
        self.pos = end
        return False

    def quote_op(self, word: str, end: int) -> bool:
        """Lex ``q(...)``, ``s{..}{..}``, ``tr/../../`` and friends; False if a bareword."""
        text = self.text
        prev = self.toks[-1] if self.toks else None
        if prev is not None and (prev.is_op("->") or prev.is_id("sub")):
            return False
        pos = end
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        if pos >= len(text):
            return False
        delim = text[pos]
        spaced = pos > end
        if delim == "=" and (text.startswith("=>", pos) or spaced):
            return False
        if delim == "," and (spaced or prev is None or prev.is_op("(", ",")):
            return False
        if delim in ";)" or delim.isalnum() or delim == "_" or (delim == "#" and spaced):
            return False
        if delim == "}" and prev is not None and prev.is_op("{"):
            return False
        line = self.line
        body_end = _scan_body(text, pos + 1, delim)
        if body_end < 0:
            self.error(line, f"{word}{delim} is never closed")
            body_end = len(text)
        body = text[pos + 1 : body_end - 1]
        if word in _TWO_PART:
            if delim in _BRACKETS:
                second = body_end
                while second < len(text) and text[second] in " \t\r\n":
                    second += 1
                if second < len(text):
                    body_end = _scan_body(text, second + 1, text[second])
            else:
                body_end = _scan_body(text, body_end, delim)
            if body_end < 0:
                self.error(line, f"the second part of {word}{delim} is never closed")
                body_end = len(text)
        if word in ("m", "qr", "s", "tr", "y"):
            mods = re.compile(r"[a-zA-Z]*").match(text, body_end)
            body_end = mods.end() if mods else body_end
            kind = "re"
        else:
            kind = "qw" if word == "qw" else "str"
        self.advance_to(body_end)
        self.emit(kind, body, line, "qq" if word in ("qq", "qx") else word)
        return True

    def quoted(self, opener: str, word: str, kind: str) -> None:
        """A ``"..."``, ``'...'``, ```...``` string or a ``/.../`` match."""
        text = self.text
        line = self.line
        end = _scan_body(text, self.pos + 1, opener)
        if end < 0:
            what = "regular expression" if kind == "re" else "string"
            self.error(line, f"the {what} starting with {opener} is never closed")
            end = len(text)
        body = text[self.pos + 1 : end - 1]
        if kind == "re":
            mods = re.compile(r"[a-zA-Z]*").match(text, end)
            end = mods.end() if mods else end
        self.advance_to(end)
        self.emit(kind, body, line, word)

    def dollar(self) -> None:
        """Scalars: ``$x``, ``$x::y``, ``${x}``, ``$$``, ``$$ref``, ``$#a``, ``$!``, ``$^W``."""
        text = self.text
        pos = self.pos + 1
        line = self.line
        if text.startswith("#", pos):
            nxt = text[pos + 1 : pos + 2]
            if nxt in ("{", "$"):
                self.emit("cast", "$#", line)
                self.pos = pos + 1
                return
            match = _IDENT.match(text, pos + 1)
            if match:
                self.emit("var", "$#" + match.group(), line)
                self.pos = match.end()
                return
            self.emit("var", "$#", line)
            self.pos = pos + 1
            return
        match = re.compile(r"\{\s*(\^?\w+)\s*\}").match(text, pos)
        if match:
            self.emit("var", "$" + match.group(1), line)
            self.pos = match.end()
            return
        if text.startswith("{", pos):
            self.emit("cast", "$", line)
            self.pos = pos
            return
        while text.startswith("$", pos) and (
            text[pos + 1 : pos + 2] in ("$", "{") or _IDENT.match(text, pos + 1)
        ):
            pos += 1  # $$ref, $$$ref
        match = _IDENT.match(text, pos)
        if match:
            self.emit("var", text[self.pos : match.end()], line)
            self.pos = match.end()
            return
        if text.startswith("{", pos):
            self.emit("cast", text[self.pos : pos], line)
            self.pos = pos
            return
        if text.startswith("^", pos) and text[pos + 1 : pos + 2].isalpha():
            self.emit("var", text[self.pos : pos + 2], line)
            self.pos = pos + 2
            return
        if text.startswith("::", pos):
            match = _IDENT.match(text, pos + 2)
            end = match.end() if match else pos + 2
            self.emit("var", text[self.pos : end], line)
            self.pos = end
            return
        if pos < len(text) and text[pos] in _SPECIAL_VAR:
            if text[pos].isdigit():
                match = re.compile(r"\d+").match(text, pos)
                end = match.end() if match else pos + 1
            else:
                end = pos + 1
            self.emit("var", text[self.pos : end], line)
            self.pos = end
            return
        self.emit("op", "$", line)
        self.pos = pos

    def sigil(self, c: str) -> bool:
        """``@a``, ``%h``, ``&sub``, ``*GLOB`` and their ``{``/``$`` casts; False for operators."""
        text = self.text
        pos = self.pos + 1
        line = self.line
        nxt = text[pos : pos + 1]
        if c != "@" and not self.term_expected():
            return False
        if c == "&" and text.startswith("&", pos):
            return False
        if c == "*" and nxt and nxt in _GLOB_PUNCT:
            self.emit("var", c + nxt, line)  # *" *; */: globs of punctuation variables
            self.pos = pos + 1
            return True
        if nxt in ("{", "$"):
            self.emit("cast", c, line)
            self.pos = pos
            return True
        if (c == "@" and nxt in ("_", ":")) or nxt.isalpha() or nxt == "_" or nxt == ":":
            match = _IDENT.match(text, pos) if nxt != ":" else re.compile(r"::\w+").match(text, pos)
            if match:
                if c == "&":
                    self.emit("id", match.group(), line, "&")
                else:
                    self.emit("var", c + match.group(), line)
                self.pos = match.end()
                return True
        if c == "%" and nxt in ("+", "-", "!", "^") and self.term_expected():
            self.emit("var", text[self.pos : pos + 1], line)
            self.pos = pos + 1
            return True
        if c == "@" and nxt in ("-", "+"):
            self.emit("var", text[self.pos : pos + 1], line)
            self.pos = pos + 1
            return True
        return False

    def filetest(self) -> bool:
        """``-e $f``, ``-M $dir``: a file test token when a term is expected."""
        text = self.text
        pos = self.pos
        letter = text[pos + 1 : pos + 2]
        if not letter or letter not in _FILETESTS or not self.term_expected():
            return False
        after = text[pos + 2 : pos + 3]
        if after.isalnum() or after == "_" or text.startswith("=>", pos + 2):
            return False
        if text[pos + 2 :].lstrip(" \t").startswith("=>"):
            return False
        self.emit("ft", "-" + letter, self.line)
        self.pos = pos + 2
        return True

    def angle(self) -> bool:
        """``<IN>``, ``<$fh>``, ``<STDIN>``, ``<*.txt>`` and heredocs ``<<"EOF"``."""
        text = self.text
        pos = self.pos
        if not self.term_expected() and not (
            self.print_handle() and re.compile(r"<<~?[\"'A-Za-z_]").match(text, pos)
        ):
            return False
        if text.startswith("<<", pos):
            match = re.compile(
                r"<<(~?)(?:[ \t]*\"([^\"\n]*)\"|[ \t]*'([^'\n]*)'|([A-Za-z_]\w*))"
            ).match(text, pos)
            if match:
                tag = match.group(2) if match.group(2) is not None else match.group(3)
                if tag is None:
                    tag = match.group(4)
                interpolate = match.group(3) is None
                tok = self.emit("str", "", self.line, "heredoc" if interpolate else "q")
                self.heredocs.append((tok, tag, bool(match.group(1))))
                self.pos = match.end()
                return True
            return False
        match = re.compile(r"<(\$?\w*)>").match(text, pos)
        if match:
            self.emit("rl", match.group(1), self.line)
            self.pos = match.end()
            return True
        match = re.compile(r"<([^\s<>=][^<>\n]*)>").match(text, pos)
        if match and not text.startswith("<=", pos):
            self.emit("str", match.group(1), self.line, "glob")
            self.pos = match.end()
            return True
        return False

    def read_heredocs(self) -> None:
        """Read the bodies of the heredocs started on the line just ended."""
        text = self.text
        pending, self.heredocs = self.heredocs, []
        for tok, tag, indent in pending:
            lines: list[str] = []
            closed = False
            while self.pos < len(text):
                end = text.find("\n", self.pos)
                stop = len(text) if end < 0 else end + 1
                raw = text[self.pos : stop]
                self.advance_to(stop)
                body = raw.rstrip("\r\n")
                if (body.strip() if indent else body) == tag:
                    closed = True
                    break
                lines.append(raw)
            if not closed:
                self.error(tok.line, f"the heredoc <<{tag!r} has no terminator line {tag!r}")
            tok.text = "".join(lines)

    def operator(self) -> None:
        text = self.text
        pos = self.pos
        line = self.line
        match = _OPS_RE.match(text, pos)
        if match:
            self.emit("op", match.group(), line)
            self.pos = match.end()
            return
        c = text[pos]
        tok = self.emit("op", c, line)
        self.pos = pos + 1
        if c == "{":
            prev = self.toks[-2] if len(self.toks) > 1 else None
            subscript = prev is not None and (
                prev.kind in ("var", "cast")
                or prev.is_op("->", "]")
                or (prev.is_op("}") and prev.extra == "sub")
            )
            self.braces.append("sub" if subscript else "block")
        elif c == "}":
            tok.extra = self.braces.pop() if self.braces else "block"


def lex(text: str, first_line: int = 1) -> list[Tok]:
    """Tokens of Perl source *text* (decoded as latin-1), lines counted from *first_line*."""
    return Lexer(text, first_line).run()
