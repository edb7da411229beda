"""PPI's tree as the port reads it: :class:`Node` (class, line, text, children) and :class:`Script`.

PPI parses the script's bytes; the dumper writes them as ``\\u00XX`` escapes, so every text
here is turned back into bytes and decoded in the script's own encoding (UTF-8, Shift_JIS
or EUC-JP; bytes that are none of these stay as ``surrogateescape`` characters).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any


def detect_encoding(raw: bytes) -> str:
    """``utf-8``, ``shift_jis`` or ``euc_jp``: the first that decodes *raw* whole (UTF-8 first)."""
    for name in ("utf-8", "euc_jp", "cp932"):
        try:
            raw.decode(name)
        except UnicodeDecodeError:
            continue
        return "shift_jis" if name == "cp932" else name
    return "utf-8"


class Script:
    """One Perl file: its path, bytes, encoding, lines and PPI tree."""

    def __init__(self, path: str, raw: bytes) -> None:
        self.path = path
        self.raw = raw
        self.encoding = detect_encoding(raw)
        codec = "cp932" if self.encoding == "shift_jis" else self.encoding
        self.codec = codec
        self.lines = raw.decode(codec, "replace").splitlines()
        self.root: Node = Node({"c": "Document", "k": []}, str)

    def decode(self, text: str) -> str:
        """A dumper string (bytes as code points < 256) as perlcompat reads bytes.

        UTF-8 with ``surrogateescape``, whatever the script's encoding: a literal then
        holds exactly the bytes Perl prints, and equals what perlcompat's handles read
        from a file with the same bytes.  :meth:`readable` gives comments as text.
        """
        if text.isascii():
            return text
        return text.encode("latin-1").decode("utf-8", "surrogateescape")

    def readable(self, text: str) -> str:
        """*text* (as :meth:`decode` gives it) in the script's own encoding, for comments."""
        if text.isascii():
            return text
        return text.encode("utf-8", "surrogateescape").decode(self.codec, "replace")

    def line(self, number: int) -> str:
        """Source line *number* (1-based), without its newline."""
        if 1 <= number <= len(self.lines):
            return self.lines[number - 1]
        return ""


class Node:
    """A PPI element: ``cls`` (``Statement::Compound``, ``Token::Symbol``), ``line``, ``text``."""

    __slots__ = ("cls", "info", "kids", "line", "text")

    def __init__(self, data: dict[str, Any], decode: Callable[[str], str]) -> None:
        self.cls = str(data["c"])
        self.line = int(data.get("l") or 0)
        self.text = decode(str(data.get("t", "")))
        self.kids: list[Node] = []
        self.info: dict[str, Any] = {}
        for key, value in data.items():
            if key in ("c", "l", "t", "k"):
                continue
            if isinstance(value, str):
                value = decode(value)
            elif isinstance(value, list):
                value = [decode(v) if isinstance(v, str) else v for v in value]
            self.info[key] = value

    @classmethod
    def load(cls, data: dict[str, Any], decode: Callable[[str], str]) -> Node:
        """The tree of nodes from the dumper's JSON object *data*."""
        node = cls(data, decode)
        node.kids = [cls.load(k, decode) for k in data.get("k", [])]
        return node

    def is_(self, *prefixes: str) -> bool:
        """True if this node's class is, or is under, one of *prefixes* (``Token::Quote``)."""
        return any(self.cls == p or self.cls.startswith(p + "::") for p in prefixes)

    def get(self, key: str, default: Any = None) -> Any:
        return self.info.get(key, default)

    @property
    def sym(self) -> str:
        """A symbol's real name (``@lines`` for ``$lines[0]``)."""
        return str(self.info.get("sym", self.text))

    def tokens(self) -> Iterator[Node]:
        """Every token under this node, in order."""
        if not self.kids and self.cls.startswith("Token"):
            yield self
        for kid in self.kids:
            yield from kid.tokens()

    def first_line(self) -> int:
        for tok in self.tokens():
            if tok.line:
                return int(tok.line)
        return int(self.line)

    def last_line(self) -> int:
        """The last source line this node covers (a here-doc's body included)."""
        last = self.line
        for tok in self.tokens():
            if tok.line:
                end = tok.line + tok.text.count("\n")
                if tok.cls == "Token::HereDoc":
                    end += len(tok.info.get("hd") or []) + 1
                last = max(last, end if not tok.text.endswith("\n") else end - 1)
        return last

    def significant(self) -> list[Node]:
        """Children but comments, POD and the statement's ``;``."""
        return [
            k
            for k in self.kids
            if not k.is_("Token::Comment", "Token::Pod")
            and not (k.cls == "Token::Structure" and k.text == ";")
        ]

    def __repr__(self) -> str:
        return f"<{self.cls} {self.line} {self.text!r}>"
