"""Perl's built-in functions, regexes and CGI.pm calls as perlcompat / Python calls.

One method per family; what has no exact counterpart raises :class:`.syntax.Unsupported`
(the statement stays ``# PORT:``).  Regexes: Perl's syntax is Python's for the patterns
CGI scripts use; ``\\w``/``\\d``/``\\s`` get ``(?a)`` (Perl matches bytes, ASCII classes),
and a pattern that counts single characters (``.``, ``[^...]``, ``{n}``) is refused, as
Perl counts bytes where Python counts characters.
"""

from __future__ import annotations

import re

from .bytefuncs import BYTES, url_encoder
from .core import Core
from .exprs import bare, par, py_str
from .syntax import E, Unsupported, parse
from .tree import Node

#: Perl built-in -> (perlcompat name, kind): same arguments, same results
SAME = {
    "flock": ("flock", "num"), "seek": ("seek", "num"), "tell": ("tell", "num"),
    "truncate": ("truncate", "num"), "close": ("close", "num"), "binmode": ("binmode", "num"),
    "eof": ("eof", "num"), "mkdir": ("mkdir", "num"), "rmdir": ("rmdir", "num"),
    "rename": ("rename", "num"), "unlink": ("unlink", "num"), "symlink": ("symlink", "num"),
    "readlink": ("readlink", "any"), "utime": ("utime", "num"), "chmod": ("chmod", "num"),
    "chown": ("chown", "num"), "sleep": ("sleep", "num"), "alarm": ("alarm", "num"),
    "crypt": ("crypt", "any"), "die": ("die", "num"), "warn": ("warn", "num"),
    "time": ("time", "num"), "unshift": ("unshift", "num"), "push": ("push", "num"),
    "fork": ("fork", "any"),
}  # fmt: skip
HANDLE_FIRST = {"flock", "seek", "tell", "truncate", "close", "binmode", "eof"}
STR_FUNCS = {"lc": "lower", "uc": "upper"}
FORMAT = re.compile(r"%([-+ 0#]*)(\d*)(\.\d+)?([sdioxXeEfgGc%])")
#: what matches one character in Python but one byte in Perl: ``.``, ``[^x]``, ``\W`` (unless
#: repeated with * or +), and a character of several bytes repeated or in a class (``{n}``
#: after ASCII counts the same; a Shift_JIS byte read as ``\udcXX`` is one byte)
_WIDE = "[^\\x00-\\x7f\\udc80-\\udcff]"
COUNTING = re.compile(
    r"(?<!\\)\.(?![*+])|\[\^[^\]]*\](?![*+])|\\[WSD](?![*+])"
    rf"|{_WIDE}[*+?{{]|\[[^\]]*{_WIDE}[^\]]*\]"
)


#: ``(.|\n)*``, ``([^>]|\n)+``: a run of any characters matches the same text as a run of
#: any bytes (a character's bytes are never split by the ASCII pattern around it); ASCII only
_ONE = r"(?:\.|\\.|\[[^\]]*\]|[^()|\\.\[])"
ANY_RUN = re.compile(rf"\((?:\?:)?{_ONE}(?:\|{_ONE})*\)[*+]\??")
HEX_CLASS = re.compile(r"%\(\[([^\]]+)\]\[([^\]]+)\]\)")
HEX_BYTE = re.compile(
    r"pack\(\s*[\"']C[\"']\s*,\s*hex\(\s*\$1\s*\)\s*\)|chr\(\s*hex\(\s*\$1\s*\)\s*\)"
    r"|pack\(\s*[\"']H2[\"']\s*,\s*\$1\s*\)"
)


def _url_decoder(match: str, repl: str) -> bool:
    """The CGI decoder: ``s/%([a-fA-F0-9][a-fA-F0-9])/pack("C", hex($1))/eg`` and its spellings."""
    m = HEX_CLASS.fullmatch(match)
    hexdigits = {"a-f", "A-F", "0-9"}
    return bool(
        m
        and all(set(re.findall(r".-.", c)) == hexdigits and len(c) == 9 for c in m.groups())
        and HEX_BYTE.fullmatch(repl.strip())
    )


class Builtins(Core):
    """The built-in half of the translator (mixed into :class:`.stmts.Translator`)."""

    def builtin(self, e: E, scalar: bool) -> tuple[str, str]:
        name = str(e.a[0])
        args: list[E] = list(e.a[1])
        if name in HANDLE_FIRST and args:
            fh = self.handle(args[0])
            rest = [self.sx(a)[0] for a in args[1:]]
            if name == "flock" and len(args) == 2 and args[1].k == "num":
                rest = [self.flock_op(str(args[1].a[0]))]
            func, kind = SAME[name]
            return f"{self.use(func, func)}({', '.join([fh, *rest])})", kind
        if name in ("close", "eof") and not args:
            raise Unsupported(f"{name} without a handle")
        if name in ("die", "warn"):
            items = [self.strx(a) for a in args]
            if name == "die" and not args:
                self.eval_error_used = True
            return f"{self.use(name, name)}({', '.join(items)})", "num"
        if name in ("push", "unshift"):
            target = args[0]
            if target.k != "var" or target.a[0] != "@":
                raise Unsupported(f"{name} onto something not a named array")
            items = self.items(args[1:])
            for a in args[1:]:
                listy = a.k in ("readline", "qw") or (a.k == "var" and a.a[0] == "@")
                kind = self.list_kind(a) if listy else self.sx(a)[1]
                self.record("@" + str(target.a[1]) + "[]", kind)
            return f"{self.use(name, name)}({self.sx(target)[0]}, {', '.join(items)})", "num"
        if name in ("pop", "shift"):
            if not args:
                if not self.in_sub:
                    return f"{self.use(name, name)}({self.var('@', 'ARGV')[0]})", "any"
                self.args_list = True
                return f"{self.use(name, name)}(args)", "any"
            return f"{self.use(name, name)}({self.sx(args[0])[0]})", self.elem_kind(
                "@" + str(args[0].a[1])
            )
        if name in SAME:
            func, kind = SAME[name]
            codes = [self.sx(a)[0] for a in args]
            if name == "mkdir" and len(args) == 2 and args[1].k == "num":
                codes[1] = self.number(str(args[1].a[0]))[0]
            return f"{self.use(func, func)}({', '.join(codes)})", kind
        if name == "open":  # in a condition: the handle is assigned too
            return f"({self.open_target(args[0])} := {self.open_call(args)})", "fh"
        if name == "sysopen":
            if len(args) != 3 or args[0].k != "word":
                raise Unsupported("sysopen on a handle that is not a bareword")
            flags = self.flags(args[2])
            return f"{self.use('sysopen')}({self.strx(args[1])}, {flags})", "fh"
        if name == "read":
            raise Unsupported("read(FH, ...) inside an expression")
        if name == "split":
            return self.split(args, fields=None), "list"
        if name == "join":
            sep = self.strx(args[0])
            return f"{par(sep)}.join(map(str, {self.list_of(args[1:])}))", "str"
        if name == "scalar":
            if len(args) == 1 and args[0].k == "var" and args[0].a[0] == "@":
                return f"len({self.sx(args[0])[0]})", "num"
            if len(args) == 1 and args[0].k == "func" and args[0].a[0] == "localtime":
                return self.localtime(list(args[0].a[1]), scalar=True)
            return self.sx(args[0])
        if name == "defined":
            if len(args) != 1:
                raise Unsupported("defined without an argument")
            return f"{self.use('defined')}({self.sx(args[0])[0]})", "bool"
        if name == "length":  # Perl counts the bytes: so does perlcompat's length
            subject = self.strx(args[0]) if args else self.topic()
            return f"{self.use('length')}({bare(subject)})", "num"
        if name in BYTES:
            return self.bytes_func(name, args)
        if name == "pack":
            return self.pack(args), "str"
        if name == "system":
            if not args:
                raise Unsupported("system without a command")
            return f"{self.use('system')}({', '.join(self.items(args))})", "num"
        if name in STR_FUNCS:  # Perl changes ASCII letters only (bytes): so does this
            letters = "[A-Z]+" if name == "lc" else "[a-z]+"
            self.use("re")
            subject = self.strx(args[0]) if args else self.topic()
            change = f"lambda m: m[0].{STR_FUNCS[name]}()"
            return f're.sub("{letters}", {change}, {subject})', "str"
        if name == "int":
            code, kind = self.numx(args[0])
            if args[0].k == "func" and args[0].a[0] == "rand":
                return f"int({code})", "num"
            return f"int({code})", "num"
        if name == "rand":
            self.use("random")
            if not args:
                return "random.random()", "float"
            n, _ = self.numx(args[0])
            return f"random.random() * {par(n)}", "float"
        if name == "hex":
            return f"int({self.strx(args[0])}, 16)", "num"
        if name in ("localtime", "gmtime"):
            return self.localtime(args, scalar=scalar, func=name)
        if name in ("CGI::new", "CGI'new") and not args:
            return f"{self.use('CGI')}()", "cgi"
        if name == "srand":  # Python's random numbers are not Perl's anyway: a seed is a seed
            self.use("random")
            return f"random.seed({self.numx(args[0])[0] if args else ''})", "num"
        if name == "exit":
            self.use("sys")
            return f"sys.exit({self.numx(args[0])[0] if args else ''})", "num"
        if name == "stat":
            return f"{self.use('stat', 'stat')}({self.strx(args[0])})", "list"
        if name == "keys":
            return f"list({self.sx(args[0])[0]})", "list"
        if name == "values":
            return f"list({self.sx(args[0])[0]}.values())", "list"
        if name == "sprintf":
            return self.sprintf(args), "str"
        if name == "abs":
            return f"abs({self.numx(args[0])[0]})", self.numx(args[0])[1]
        if name == "require":
            if len(args) == 1 and args[0].k == "num":
                return "# require: a Perl version", "num"
            return self.require(args), "num"
        if name in ("jcode::convert", "jcode'convert"):
            raise Unsupported("jcode.pl's convert of a glob (see docs/idioms.md)")
        if name == "select":
            if len(args) == 4 and all(a.k == "func" and a.a[0] == "undef" for a in args[:3]):
                n, _ = self.numx(args[3])
                return f"{self.use('sleep')}({n})", "num"
            raise Unsupported("select")
        if name == "undef":
            if args:
                raise Unsupported("undef of a variable (as a statement)")
            return self.use("undef", "undef"), "undef"
        raise Unsupported(f"the built-in {name}()")

    def sprintf(self, args: list[E]) -> str:
        """``sprintf("%05d", $n)`` with a literal format: ``format()`` of each value, converted."""
        if not args or args[0].k not in ("str", "lit"):
            raise Unsupported("sprintf with a computed format")
        parts = self.concat_parts(args[0]) if args[0].k == "str" else [(str(args[0].a[0]), "lit")]
        if any(kind != "lit" for _, kind in parts):
            raise Unsupported("sprintf with variables in its format")
        fmt = "".join(code for code, _ in parts)
        convs = [m[4] for m in FORMAT.finditer(fmt) if m[4] != "%"]
        if "%" in FORMAT.sub("", fmt) or len(convs) != len(args) - 1:
            raise Unsupported("sprintf with a format Python reads otherwise")
        out: list[tuple[str, str]] = []
        pos = 0
        values = iter(args[1:])
        for m in FORMAT.finditer(fmt):
            out.append((fmt[pos : m.start()], "lit"))
            pos = m.end()
            flags, width, prec, conv = m.groups()
            if conv == "%":
                out.append(("%", "lit"))
                continue
            a = next(values)
            if (a.k == "var" and a.a[0] == "@") or a.k in ("readline", "qw"):
                raise Unsupported("sprintf of a list")
            if conv in "dioxXc":
                code, kind = self.numx(a)
                code = code if kind == "num" else f"int({code})"
                conv = "d" if conv == "i" else conv
            elif conv in "eEfgG":
                code = self.numx(a)[0]
            else:
                code, kind = self.sx(a)
                if not (width or prec):
                    self.as_str(code, kind)  # (refuses a float, a bool)
                    out.append((code, kind))
                    continue
                code = self.as_str(code, kind)
            align = "<" if "-" in flags else ">" if conv == "s" and width else ""
            flags = flags.replace("-", "").replace("0", "") if "-" in flags else flags
            spec = align + flags + width + (prec or "") + (conv if conv != "s" else "")
            out.append((f"format({code}, {py_str(spec, chr(39))})" if spec else code, "str"))
        out.append((fmt[pos:], "lit"))
        return self.fstring([(c, k) for c, k in out if c or k != "lit"])

    def handle(self, e: E) -> str:
        if e.k == "word":
            return self.bareword(str(e.a[0]))[0]
        if e.k == "var" and e.a[0] == "$":
            return self.sx(e)[0]
        if e.k == "decl":
            return self.handle(e.a[1])
        raise Unsupported("a handle that is not a bareword or a scalar")

    def flock_op(self, text: str) -> str:
        value = int(text)
        names = [
            n
            for n, v in (("LOCK_SH", 1), ("LOCK_EX", 2), ("LOCK_NB", 4), ("LOCK_UN", 8))
            if value & v
        ]
        if (
            sum(
                v
                for n, v in (("LOCK_SH", 1), ("LOCK_EX", 2), ("LOCK_NB", 4), ("LOCK_UN", 8))
                if n in names
            )
            != value
        ):
            return text
        return " | ".join(self.use(n, n) for n in names)

    def flags(self, e: E) -> str:
        if e.k == "word":
            return self.use(str(e.a[0]), str(e.a[0]))
        if e.k == "bin" and e.a[0] == "|":
            return f"{self.flags(e.a[1])} | {self.flags(e.a[2])}"
        if e.k == "num":
            return str(e.a[0])
        raise Unsupported("sysopen flags")

    def open_call(self, args: list[E]) -> str:
        if len(args) not in (2, 3):
            raise Unsupported("open with one argument")
        codes = [self.strx(a) for a in args[1:]]
        return f"{self.use('open_')}({', '.join(codes)})"

    def open_target(self, e: E) -> str:
        """The Python name an ``open(FH, ...)`` assigns."""
        if e.k == "word":
            py = self.handle_name(str(e.a[0]))
            self.assigned(py)
            return py
        if e.k == "decl" and e.a[1].k == "var":
            return self.declare(e.a[1])
        if e.k == "var" and e.a[0] == "$":
            return self.lvalue(e)
        raise Unsupported("open on a handle that is not a bareword or a scalar")

    def localtime(self, args: list[E], scalar: bool, func: str = "localtime") -> tuple[str, str]:
        arg = self.numx(args[0])[0] if args else ""
        if scalar:
            return f"{self.use('scalar_' + func)}({arg})", "str"
        return f"{self.use(func)}({arg})", "list"

    def split(self, args: list[E], fields: int | None) -> str:
        if not args:
            raise Unsupported("split without a pattern")
        pat = args[0]
        if pat.k == "re":
            tok: Node = pat.a[0]
            if tok.get("f"):
                raise Unsupported("split with regex flags")
            pattern = self.pattern(str(tok.get("m")), interp=True)
        elif pat.k == "str" and not pat.a[1] and pat.a[0].get("s") == " ":
            pattern = '" "'
        else:
            raise Unsupported("split on a computed pattern")
        target = self.strx(args[1]) if len(args) > 1 else self.topic()
        extra = ""
        if len(args) > 2:
            extra = f", {self.numx(args[2])[0]}"
        if fields is not None:
            extra += f", fields={fields}"
        return f"{self.use('split')}({pattern}, {target}{extra})"

    def pattern(self, perl: str, interp: bool, counting_ok: bool = False, flags: str = "") -> str:
        """A Perl regex as a Python pattern literal (raw; ``(?a)`` for \\w \\d \\s \\b).

        *counting_ok*: ``s/\\W//g`` and the like, where removing each byte of a character
        (Perl) or the character (Python) leaves the same string.
        """
        runs = ANY_RUN.sub(lambda m: "" if m[0].isascii() else m[0], perl)
        if COUNTING.search(runs) and not counting_ok:
            raise Unsupported("a regex that counts characters (Perl counts bytes)")
        if re.search(r"\\[zZGQEulULpPXKRhHvVN]|\(\?[<!=]*[^:)]|\$\)|\(\?\{", perl):
            raise Unsupported("a regex feature Python spells otherwise")
        if interp and re.search(r"(?<!\\)[$@](?![)|]|$)", perl):
            raise Unsupported("a regex with an interpolated variable")
        try:
            re.compile(perl)
        except re.error as exc:
            raise Unsupported(f"a regex Python reads otherwise ({exc})") from None
        inline = "".join(f for f in "ismx" if f in flags)
        if inline or re.search(r"\\[wWdDsSbB]", perl):
            perl = f"(?a{inline})" + perl  # Perl's classes and /i are ASCII on bytes
        if ("'" in perl and '"' in perl) or perl.endswith("\\"):
            return py_str(perl, '"')
        q = '"' if '"' not in perl else "'"
        if re.search(r"[^\x20-\x7e]", perl):
            return py_str(perl, q)
        return "r" + q + perl + q

    def match(self, target: E | None, tok: Node, negate: bool) -> tuple[str, str]:
        """``$x =~ /re/`` (a bool), ``s///`` and ``tr///`` as expressions (only as statements)."""
        if tok.cls == "Token::Regexp::Match" or tok.cls == "Token::QuoteLike::Regexp":
            flags = str(tok.get("f") or "")
            if set(flags) - {"i", "o", "s", "m", "x"}:
                raise Unsupported(f"a match with /{flags}")
            pattern = self.pattern(str(tok.get("m")), interp=True, flags=flags)
            subject = self.strx(target) if target is not None else self.topic()
            self.use("re")
            code = f"re.search({pattern}, {subject})"
            if re.search(r"(?<!\\)\((?!\?)", str(tok.get("m"))) and not negate:
                self.func.captures = True  # $1 ... read it: the match object is _m
                return f"(_m := {code}) is not None", "bool"
            return (f"not {code}" if negate else f"{code} is not None"), "bool"
        if tok.cls == "Token::Regexp::Transliterate":
            flags = str(tok.get("f") or "")
            search, repl = str(tok.get("m")), str(tok.get("r"))
            subject = self.strx(target) if target is not None else self.topic()
            if "r" in flags:  # the changed copy
                return f"{self.tr(subject, search, repl, flags)}[0]", "str"
            if (repl and repl != search) or "d" in flags or "s" in flags:
                raise Unsupported("tr/// that changes the string, inside an expression")
            return f"{self.tr(subject, search, repl, flags)}[1]", "num"  # a count only
        raise Unsupported(f"{tok.text.split('/')[0] or 'm'}/// inside an expression")

    def substitute(self, target: E, tok: Node) -> list[str]:
        """``$x =~ s/a/b/g;`` and ``$x =~ tr/a/b/;`` as statements."""
        name = self.lvalue(target)
        subject = self.strx(target)
        flags = str(tok.get("f") or "")
        match = str(tok.get("m"))
        repl = str(tok.get("r"))
        if tok.cls == "Token::Regexp::Transliterate":
            if "r" in flags:
                return [f"{self.tr(subject, match, repl, flags)}  # tr///r: the copy is unused"]
            return [f"{name}, _ = {self.tr(subject, match, repl, flags)}", *self.alias_lines(name)]
        if _url_decoder(match, repl) and set(flags) == {"e", "g"}:
            self.use("unquote_to_bytes")
            return [
                f'{name} = unquote_to_bytes({par(subject)}.encode("utf-8", "surrogateescape"))'
                '.decode("utf-8", "surrogateescape")',
                *self.alias_lines(name),
            ]
        hexfmt = url_encoder(match, repl)
        if hexfmt is not None and set(flags) == {"e", "g"}:  # the CGI encoder: each byte
            self.use("re")
            code = (
                f'{self.use("from_bytes")}(re.sub(rb"{match}", lambda m: b"{hexfmt}" % m[1][0],'
                f" {self.use('as_bytes')}({bare(subject)})))"
            )
            return [f"{name} = {code}", *self.alias_lines(name)]
        if set(flags) - {"g", "i", "s", "m", "x"}:
            raise Unsupported(f"s/// with /{flags}")
        whole = re.fullmatch(r"\\[WSD]|\.|\[\^[^\]]*\]", match) and not repl and "g" in flags
        pattern = self.pattern(match, interp=True, counting_ok=bool(whole), flags=flags)
        replacement = self.replacement(repl)
        count = "" if "g" in flags else ", count=1"
        self.use("re")
        return [
            f"{name} = re.sub({pattern}, {replacement}, {subject}{count})",
            *self.alias_lines(name),
        ]

    def replacement(self, repl: str) -> str:
        """An ``s///`` replacement as a Python template (``$1`` -> ``\\g<1>``)."""
        out = []
        for m in re.finditer(r"\\(.)|\$(\d)|\$\{(\d)\}|([$@])|([^\\$@]+)", repl, re.S):
            esc, grp, grp2, sigil, text = m.groups()
            if esc is not None:
                out.append(self.escape(esc).replace("\\", "\\\\"))
            elif grp or grp2:
                out.append(f"\\g<{grp or grp2}>")
            elif sigil:
                raise Unsupported("a variable in an s/// replacement")
            else:
                out.append(text.replace("\\", "\\\\"))
        return py_str("".join(out), '"')

    def readline_(self, inner: str, scalar: bool) -> tuple[str, str]:
        if inner == "STDIN" or inner == "":
            raise Unsupported("<STDIN> / <>")
        fh = (
            self.sx(E("var", "$", inner[1:]))[0]
            if inner.startswith("$")
            else self.bareword(inner)[0]
        )
        if scalar:
            return f"{self.use('readline', 'readline')}({fh}) or {self.use('undef')}", "str"
        return f"{fh}.readlines()", "list"

    def method(self, e: E) -> tuple[str, str]:
        """CGI.pm: ``CGI->new``, ``$q->param('x')``, ``header``, ``cookie`` ... (perlcompat.cgi)."""
        base: E = e.a[0]
        name = str(e.a[1])
        args: list[E] = list(e.a[2] or [])
        if base.k == "class":
            if base.a[0] == "CGI" and name == "new" and not args:
                return f"{self.use('CGI')}()", "cgi"
            raise Unsupported(f"{base.a[0]}->{name}")
        obj, kind = self.sx(base)
        if kind != "cgi" and kind != "any":
            raise Unsupported(f"->{name} on something not a CGI object")
        if name in ("param", "cookie", "header", "escapeHTML", "upload", "multi_param"):
            codes = []
            pending = None
            for a in args:
                if pending is not None:
                    codes.append(f"{pending}={self.sx(a)[0]}")
                    pending = None
                    continue
                if a.k == "lit" and str(a.a[0]).startswith("-"):
                    pending = str(a.a[0])[1:]
                    continue
                codes.append(self.sx(a)[0])
            if name == "multi_param":
                return f"{obj}.multi_param({', '.join(codes)})", "list"
            if name == "param" and not codes:
                raise Unsupported("param() without a name (the list of names)")
            kind = "fh" if name == "upload" else "any"
            return f"{obj}.{name}({', '.join(codes)})", kind
        raise Unsupported(f"the method ->{name}")

    def require(self, args: list[E]) -> str:
        """``require './lib.pl';`` (or ``$formpl`` set once to it) -> ``require("./lib.py")``."""
        if len(args) == 1 and args[0].k == "var" and "$" + str(args[0].a[1]) in self.consts:
            path = self.consts["$" + str(args[0].a[1])]
        elif len(args) == 1 and args[0].k == "str":
            path = str(args[0].a[0].get("s"))
        elif len(args) == 1 and args[0].k == "var" and args[0].a[0] == "$":
            if "jcode" in str(args[0].a[1]).lower():
                raise Unsupported("require of jcode.pl through a variable (perlcompat.jcode)")
            # a library set elsewhere (init.cgi's $formpl): its port, beside it as a .py
            self.use("os")
            lib = self.strx(args[0])
            return f'{self.use("require")}(os.path.splitext({lib})[0] + ".py")'
        else:
            raise Unsupported("require of a module or of a path computed at run time")
        if path.endswith("jcode.pl"):
            self.use("jcode")
            return "# require: perlcompat.jcode is jcode.pl"
        if not path.endswith((".pl", ".cgi")) or "$" in path or path.startswith("/"):
            raise Unsupported(f"require {path!r}")
        self.requires.append(path)
        return f"{self.use('require')}({py_str(path.rsplit('.', 1)[0] + '.py')})"

    # -- list context ------------------------------------------------------------------------

    def lx(self, e: E) -> str:
        """*e* in list context, as a Python list (or iterable) expression."""
        k = e.k
        if k == "paren":
            inner: E | None = e.a[0]
            if inner is None:
                return "[]"
            return self.lx(inner)
        if k == "comma":
            return f"[{', '.join(self.items(list(e.a)))}]"
        if k == "var" and e.a[0] == "@":
            return self.sx(e)[0]
        if k == "var" and e.a[0] == "%":
            raise Unsupported("a hash in list context")
        if k == "qw":
            return "[" + ", ".join(py_str(str(w), self.quote) for w in e.a[0]) + "]"
        if k == "readline":
            return self.readline_(str(e.a[0]), scalar=False)[0]
        if k == "qx":
            return f"{self.use('qx_lines')}({self.command(e.a[0])})"
        if k == "func" and e.a[0] == "split":
            return self.split(list(e.a[1]), fields=None)
        if k == "func" and e.a[0] in ("keys", "values", "stat", "localtime", "gmtime"):
            if e.a[0] in ("localtime", "gmtime"):
                return self.localtime(list(e.a[1]), scalar=False, func=str(e.a[0]))[0]
            return self.builtin(e, scalar=False)[0]
        if k == "func" and e.a[0] == "reverse":
            return f"{self.list_of(list(e.a[1]))}[::-1]"
        if k == "func" and e.a[0] == "sort":
            return self.sort(None, self.list_of(list(e.a[1])))
        if k == "bin" and e.a[0] == "..":
            return self.range_(e.a[1], e.a[2])
        if k == "bin" and e.a[0] == "x" and e.a[1].k == "paren":  # (0) x 12: the list repeated
            return f"{self.lx(e.a[1])} * {self.intx(e.a[2])}"
        if k == "lslice" and e.a[1] is not None and e.a[1].k == "bin" and e.a[1].a[0] == "..":
            lst = self.lx(e.a[0])  # (LIST)[1..6]: undef past LIST's end; () of an empty LIST
            self.use("PerlList")
            indices = self.range_(e.a[1].a[1], e.a[1].a[2])
            return f"[v[n] for v in [PerlList({lst})] if v for n in {indices}]"
        if k == "blockop":
            return self.blockop(e)
        if k == "method":
            code, kind = self.method(e)
            return code if kind == "list" else f"[{code}]"
        code, kind = self.sx(e)
        if kind == "list":
            return code
        return f"[{code}]"

    def items(self, args: list[E]) -> list[str]:
        """Arguments in list context: arrays and lists spliced in with ``*``."""
        out = []
        for a in args:
            if a.k == "bin" and a.a[0] == ".." and self.lx(a).startswith("[*"):
                out.append(self.lx(a)[1:-1])
            elif (
                (a.k in ("var",) and a.a[0] == "@")
                or a.k in ("readline", "qw", "blockop", "qx")
                or (a.k == "func" and a.a[0] in ("split", "keys", "values"))
                or (a.k == "bin" and a.a[0] == "..")
            ):
                out.append("*" + self.lx(a))
            elif a.k == "paren":
                out.extend(self.items([a.a[0]]) if a.a[0] is not None else [])
            elif a.k == "comma":
                out.extend(self.items(list(a.a)))
            else:
                code, kind = self.sx(a)
                out.append("*" + code if kind == "list" else code)
        return out

    def list_of(self, args: list[E]) -> str:
        items = self.items(args)
        if len(items) == 1 and items[0].startswith("*"):
            return items[0][1:]
        return f"[{', '.join(items)}]"

    def range_(self, lo: E, hi: E) -> str:
        if lo.k == "num" and hi.k == "num":
            start = "" if lo.a[0] == "0" else f"{lo.a[0]}, "
            return f"range({start}{int(str(hi.a[0])) + 1})"
        if lo.k == "str" and hi.k == "str" and not lo.a[1] and not hi.a[1]:
            a, b = str(lo.a[0].get("s")), str(hi.a[0].get("s"))
            if len(a) == len(b) == 1 and (a + b).isalnum() and a <= b:
                letters = "".join(chr(c) for c in range(ord(a), ord(b) + 1))
                return f"[*{py_str(letters, self.quote)}]"
        a, ka = self.numx(lo)
        b, kb = self.numx(hi)
        if a == "0":
            return f"range({b if kb == 'num' else f'int({b})'} + 1)"
        a = a if ka == "num" else f"int({a})"
        b = b if kb == "num" else f"int({b})"
        return f"range({a}, {b} + 1)"

    def blockop(self, e: E) -> str:
        """``map { EXPR } LIST``, ``grep { EXPR } LIST``, ``sort { $a <=> $b } LIST``."""
        op = str(e.a[0])
        block: Node | None = e.a[1]
        lst = self.list_of(list(e.a[2]))
        if op == "sort":
            return self.sort(block, lst)
        if block is None:
            raise Unsupported(f"{op} EXPR, LIST")
        stmts = [k for k in block.kids if k.is_("Statement")]
        if len(stmts) != 1:
            raise Unsupported(f"a {op} block of more than one statement")
        var = self.loop_name("item")
        self.topics.append(var)
        try:
            expr = parse(stmts[0].significant(), self.subs)
            if expr is None:
                raise Unsupported(f"an empty {op} block")
            if op == "map":
                code, kind = self.sx(expr)
                if kind == "list":
                    raise Unsupported("map returning lists")
                return f"[{code} for {var} in {lst}]"
            return f"[{var} for {var} in {lst} if {self.bx(expr)}]"
        finally:
            self.topics.pop()

    def sort(self, block: Node | None, lst: str) -> str:
        """``sort LIST`` (by bytes), ``sort { $a <=> $b }``, ``{ $b cmp $a }``: stable, as Perl."""
        text = "".join(t.text for t in block.tokens()) if block is not None else "$acmp$b"
        keys = {"$acmp$b": False, "$bcmp$a": True, "$a<=>$b": False, "$b<=>$a": True}
        if text not in keys:
            raise Unsupported("sort with a block other than <=> or cmp of $a and $b")
        if "<=>" in text:
            key = self.use("num")
        else:
            key = 'lambda v: str(v).encode("utf-8", "surrogateescape")'
        return f"sorted({lst}, key={key}{', reverse=True' if keys[text] else ''})"

    def print_(self, e: E) -> str:
        """``print FH LIST`` -> ``print_(FH, ...)`` (Perl's bytes, Perl's return value)."""
        if e.a[0] not in ("print", "printf"):
            raise Unsupported(f"{e.a[0]}")
        handle: E | None = e.a[1]
        fh = self.handle(handle) if handle is not None else self.use("STDOUT")
        if e.a[0] == "printf":  # printf FH FORMAT, LIST: print FH sprintf(FORMAT, LIST)
            return f"{self.use('print_')}({fh}, {self.sprintf(list(e.a[2]))})"
        args = list(e.a[2])
        if not args:
            args = [E("var", "$", "_")]
        items = []
        for code in self.items(args):
            items.append(code)
        return f"{self.use('print_')}({fh}, {', '.join(items)})"
