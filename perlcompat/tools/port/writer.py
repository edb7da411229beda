"""The port as a Python module: header, imports, globals, ``main()``, the subs, the counts.

:func:`port` translates one script (and is called again for each ``require``d library
beside it); the audit runs in-process first, so its findings become comments at their
lines and the script's lock sub becomes the ``lock()`` call the audit suggests.  The
variables' kinds are settled by translating again until they stop changing.
"""

from __future__ import annotations

import ast
import io
import os
import re
import tokenize

from ..audit.model import Program
from ..audit.run import audit
from ..audit.suggest import lock_call
from .exprs import merge_kinds, par
from .names import MODULES, PERLCOMPAT, URLLIB, py_var
from .ppi import parse_file
from .stmts import Translator
from .tree import Node, Script

LOCK_METHODS = ("", '"mkdir"', '"symlink"', '"excl"', '"rename"', '"link"')


class Result:
    """One port: the Python text, statements translated and in all, ``# PORT`` lines left."""

    def __init__(self, path: str, text: str, done: int, total: int, port_lines: int) -> None:
        self.path = path
        self.text = text
        self.done = done
        self.total = total
        self.port_lines = port_lines
        self.libraries: list[Result] = []  # every library it requires, nested ones too
        self.rel = ""  # a library: its path as the script requires it ("./lib/form.pl")
        self.consts: dict[str, str] = {}  # "$name" -> the string it is set to, once
        self.subs: set[str] = set()  # the subs it defines (a library's, for its script)
        self.symbols: set[tuple[str, str]] = set()  # its variables, as (sigil, name)

    @property
    def coverage(self) -> float:
        return self.done / self.total if self.total else 1.0


def _audit(script: Script) -> tuple[list[str], Program | None, dict[int, list[str]]]:
    """The audit's findings as comments by line, and its program (lock subs)."""
    programs: list[Program] = []
    text = script.raw.decode("latin-1")

    def load(path: str) -> str | None:
        try:
            with open(path, "rb") as f:
                return f.read().decode("latin-1")
        except OSError:
            return None

    findings = audit([(script.path, text)], [], load=load, programs=programs)
    by_line: dict[int, list[str]] = {}
    for f in findings:
        if f.file != script.path:
            continue
        lines = by_line.setdefault(f.line, [])
        lines.append(f"# audit: {f.severity} {f.rule}: {script.readable(f.message)}")
        if f.suggestion:
            lines.append(f"#   perlcompat: {script.readable(f.suggestion)}")
    return [], programs[0] if programs else None, by_line


def _lock_calls(script: Script, prog: Program | None, subs: set[str]) -> dict[str, str]:
    """Lock sub -> ``lock(NAME, ...)`` as the audit reads it; unlock sub -> ``unlock(NAME)``."""
    if prog is None:
        return {}
    source = next((s for s in prog.sources if s.name == script.path), None)
    if source is None:
        return {}
    calls: dict[str, str] = {}
    for name in sorted(subs):
        if prog.classify(name, source=source) != "lock" or name not in prog.subs:
            continue
        retry, _, stale = prog.style(source, name)
        form = prog.form(source, name)
        if not (retry or stale) or form.get("method", "") not in LOCK_METHODS:
            continue
        if form.get("method") in ('"rename"',) or "target" in form:
            continue
        path = "NAME" if _takes_path(script, name) else _global_path(script, name)
        give_up = _give_up(script, name)
        if path is None or give_up is None:
            continue
        calls[name] = lock_call(prog, source, path, sub=name).split(" or ")[0]
        if give_up != "return":
            calls[name] += " or FAIL:" + give_up
    if calls:
        method = next(iter(calls.values()))
        kw = re.search(r", method=[^,)]+", method)
        path = method[method.index("(") + 1 :].split(",")[0].rstrip(")")
        for name in sorted(subs):
            if prog.classify(name, source=source) == "unlock" and name in prog.subs:
                calls[name] = f"unlock({path}{kw.group(0) if kw else ''})"
    return calls


PRIMITIVES = {"mkdir": 0, "symlink": 1, "link": 1, "rename": 1}


def _give_up(script: Script, name: str) -> str | None:
    """What lock sub *name* does when its tries run out: "return" (it returns false), the
    Perl statement it runs instead (``&error``: a port calls it where the sub is called),
    or None when that is not one plain statement in its retry loop."""
    for stmt in _walk(script.root):
        if stmt.cls != "Statement::Sub" or stmt.get("name") != name:
            continue
        loops = [
            s for s in _walk(stmt) if s.cls == "Statement::Compound" and s.get("type") == "while"
        ]
        for loop in loops:
            for inner in _walk(loop):
                if inner.cls != "Statement::Compound" or inner.get("type") not in ("if", "unless"):
                    continue
                blocks = [k for k in inner.kids if k.cls == "Structure::Block"]
                body = [k for k in blocks[0].kids if k.is_("Statement")] if len(blocks) == 1 else []
                if len(body) != 1:
                    continue
                first = body[0].significant()
                if first and first[0].text == "return":
                    values = [t.text for t in first[1:]]
                    return "return" if values in ([], ["0"], ["(", ")"]) else None
                if first and (first[0].text.startswith("&") or first[0].text in ("die", "exit")):
                    return str(body[0].first_line())
        return None
    return None


def _global_path(script: Script, name: str) -> str | None:
    """The global a no-argument lock sub locks (``mkdir($lockdir, 0755)``): its Python name.

    None when the sub takes its lock with more than one primitive (DAY COUNTER picks
    symlink or mkdir by a setting: translated statement for statement instead).
    """
    for stmt in _walk(script.root):
        if stmt.cls != "Statement::Sub" or stmt.get("name") != name:
            continue
        toks = list(stmt.tokens())
        found = []
        for i, tok in enumerate(toks):
            if tok.cls == "Token::Word" and tok.text in PRIMITIVES:
                args = [t for t in toks[i + 1 : i + 8] if t.cls != "Token::Structure"]
                words = [t for t in args if t.cls not in ("Token::Operator",)]
                k = PRIMITIVES[tok.text]
                found.append(words[k] if len(words) > k else None)
        if len(found) != 1 or found[0] is None:
            return None
        sym = found[0]
        if sym.cls == "Token::Symbol" and sym.text.startswith("$"):
            return py_var(sym.text[1:])
    return None


def _takes_path(script: Script, name: str) -> bool:
    """True if sub *name* reads its lock's path from its arguments (``$_[0]``, ``shift``)."""
    for stmt in _walk(script.root):
        if stmt.cls == "Statement::Sub" and stmt.get("name") == name:
            texts = {
                t.sym if t.cls in ("Token::Symbol", "Token::Magic") else t.text
                for t in stmt.tokens()
            }
            return bool(texts & {"@_", "shift"})
    return False


def _code_words(lines: list[str]) -> set[str]:
    words: set[str] = set()
    for line in lines:
        code = line.split("#")[0] if line.lstrip().startswith("#") else line
        if code.lstrip().startswith("#"):
            continue
        words |= set(re.findall(r"[A-Za-z_]\w*", _strip_comment(code)))
    return words


def _strip_comment(line: str) -> str:
    """*line* without a trailing comment (a ``#`` outside quotes)."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            if ch == quote and line[i - 1] != "\\":
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            return line[:i]
    return line


def _assigns(lines: list[str], name: str) -> bool:
    pattern = re.compile(
        rf"^\s*(?:for\s+(?:\w+,\s*)?{name}\s+in\b|(?:\w+\s*(?:,\s*\w+\s*)*=\s*)*{name}\s*(?:,\s*\w+\s*)*(?:[-+*]?=(?!=))"
        rf"|(?:\w+\s*,\s*)+{name}\s*(?:,\s*\w+\s*)*=(?!=))|\({name} :="
    )
    return any(pattern.search(_strip_comment(line)) for line in lines)


def _rename_unused(lines: list[str]) -> list[str]:
    """A function's locals that are set but never read get a ``_`` (as ruff asks of them)."""
    text = "\n".join(lines) + "\n"
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return lines
    func = tree.body[0] if tree.body and isinstance(tree.body[0], ast.FunctionDef) else None
    if func is None:
        return lines
    stored: set[str] = set()
    loaded: set[str] = set()
    declared: set[str] = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Global):
            declared.update(node.names)
        elif isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else stored).add(node.id)
    unused = {n for n in stored - loaded - declared if not n.startswith("_")}
    if not unused:
        return lines
    out = [list(line) for line in lines]
    edits = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.NAME and tok.string in unused:
            edits.append(tok.start)
    for row, col in sorted(edits, reverse=True):
        name = text.splitlines()[row - 1][col:].split("(")[0]
        word = re.match(r"\w+", name)
        stem = word.group(0) if word else ""
        out[row - 1][col : col + len(stem)] = list("_" + stem.rstrip("_"))
    return ["".join(chars) for chars in out]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _merge_ifs(lines: list[str]) -> list[str]:
    """``if A:`` whose whole body is ``if B:`` (no else either side): ``if (A) and (B):``."""
    out = list(lines)
    i = 0
    while i < len(out) - 1:
        head = out[i]
        ind = _indent(head)
        code = _strip_comment(head).rstrip()
        notes = 0  # comment lines between the two ifs go above the merged one
        while i + 1 + notes < len(out) and out[i + 1 + notes].strip().startswith("#"):
            notes += 1
        if i + 1 + notes >= len(out):
            break
        inner = out[i + 1 + notes]
        inner_code = _strip_comment(inner).rstrip()
        m1 = re.fullmatch(r" *(if|elif) (.+):", code)
        m2 = re.fullmatch(r" *if (.+):", inner_code)
        if not (m1 and m2 and _indent(inner) == ind + 4):
            i += 1
            continue
        end = i + 2 + notes
        while end < len(out) and (
            not out[end].strip()
            or _indent(out[end]) > ind + 4
            or (out[end].strip().startswith("#") and _indent(out[end]) == ind + 4)
        ):
            end += 1
        rest = out[end] if end < len(out) else ""
        after = rest.strip()
        if _indent(rest) == ind + 4 or (
            _indent(rest) == ind and after.startswith(("else", "elif"))
        ):
            i += 1
            continue
        body = out[i + 2 + notes : end]
        if any(_indent(b) == ind + 4 for b in body if b.strip() and not b.strip().startswith("#")):
            i += 1
            continue
        merged = " " * ind + f"{m1.group(1)} {par(m1.group(2))} and {par(m2.group(1))}:"
        notes_here = [c.strip() for c in (head[len(code) :], inner[len(inner_code) :]) if c.strip()]
        merged += "".join("  " + c for c in notes_here)
        moved = [" " * ind + n.strip() for n in out[i + 1 : i + 1 + notes]]
        out[i:end] = [*moved, merged, *[b[4:] if b.strip() else b for b in body]]
        i += notes
    return out


def _import_key(name: str) -> tuple[int, str]:
    """isort's order by type: CONSTANTS, Classes, functions."""
    if name.upper() == name:
        return (0, name.lower())
    return (1 if name[0].isupper() else 2, name.lower())


def _exit_subs(prog: Program | None, script: Script) -> set[str]:
    if prog is None:
        return set()
    return {name for file, name in prog.exit_subs if file == script.path}


def translate(
    script: Script,
    library: bool,
    extra_subs: set[str],
    consts: dict[str, str] | None = None,
    unseen_libs: bool = False,
) -> Translator:
    """Translate *script* until the variables' kinds settle (at most four rounds).

    *unseen_libs*: the script requires a library the tool could not read (its path is
    computed, or the file is not there): a sub it calls and does not define is that
    library's, called by its name (``require()`` defines it in the script's globals).
    """
    _, prog, findings = _audit(script)
    kinds: dict[str, str] = {}
    value_subs: set[str] = set()
    t: Translator | None = None
    for _ in range(4):
        t = Translator(script, kinds, {})
        t.subs |= extra_subs
        t.consts = consts or {}
        t.lock_calls = _lock_calls(script, prog, t.subs)
        t.exit_subs = _exit_subs(prog, script)
        t.value_subs = set(value_subs)  # (from the round before: calls may come after the sub)
        t.findings = {k: list(v) for k, v in findings.items()}
        t.library = library
        t.unseen_libs = unseen_libs
        run(t)
        new = {k: merge_kinds(v) for k, v in t.seen.items()}
        if new == kinds and t.value_subs == value_subs:
            break
        kinds = new
        value_subs = t.value_subs
    assert t is not None
    return t


def run(t: Translator) -> None:
    """The top level: statements into ``main()`` (a library's at module level), subs apart."""
    pending: list[str] = []
    last: list[str] | None = None
    library = getattr(t, "library", False)
    if library:
        t.indent = 0
    for kid in t.script.root.kids:
        if kid.cls == "Token::Comment":
            text = t.script.readable(kid.text).strip()
            if text.startswith("#!"):
                continue
            if kid.get("own") or not last:
                pending.append(text)
            else:
                last[-1] += "  " + text
            continue
        if kid.is_("Token::Pod"):
            pending.extend("# " + line for line in kid.text.splitlines())
            continue
        if not kid.is_("Statement"):
            continue
        if kid.cls == "Statement::Sub":
            t.findings.setdefault(kid.first_line(), [])[0:0] = pending
            pending = []
            t.sub_def(kid)
            last = t.defs[-1].lines or t.defs[-1].pre
            continue
        if _is_true(kid):
            t.total += 1
            t.done += 1
            continue
        for line in pending:
            t.emit(line)
        pending = []
        t.statement(kid)
        last = t.func.lines
    for line in pending:
        t.emit(line)


def _is_true(node: Node) -> bool:
    toks = node.significant()
    return len(toks) == 1 and toks[0].text == "1"


def assemble(t: Translator, header: list[str], library: bool) -> str:
    """The Python module text."""
    out = ["#!/usr/bin/env python3"] if not library else []
    out += header
    funcs = [t.func, *t.defs]
    for func in funcs:
        func.globals = {g for g in func.globals if _assigns(func.lines, g)}
    words = set()
    for func in funcs:
        words |= _code_words(func.lines)
    if not library:
        words |= {"undef", "PerlList", "PerlHash"} & set(t.imports)
        if "ARGV" in t.globals_used:
            t.imports |= {"PerlList", "sys"}
            words |= {"PerlList", "sys"}
    imports = {n for n in t.imports if n in words}
    modules = sorted(n for n in imports if n in MODULES)
    out.append("")
    out += [f"import {m}" for m in modules]
    urllib = sorted(n for n in imports if n in URLLIB)
    if urllib:
        out.append(f"from urllib.parse import {', '.join(urllib)}")
    if modules or urllib:
        out.append("")
    by_module: dict[str, list[str]] = {}
    for name in sorted(imports, key=_import_key):
        if name in PERLCOMPAT:
            by_module.setdefault(PERLCOMPAT[name], []).append(name)
    for module, names in sorted(by_module.items()):
        line = f"from {module} import {', '.join(names)}"
        if len(line) > 88:
            line = f"from {module} import (\n" + "".join(f"    {n},\n" for n in names) + ")"
        out.append(line)
    first = next((line for line in t.func.lines if line.strip()), "def") if library else ""
    # ruff's isort: two blank lines after the imports before a def, one before other code
    out += ["", ""] if first.startswith("def") or not (library or t.globals_used) else [""]
    if not library:
        for py, sigil in sorted(t.globals_used.items()):
            init = {"$": "undef", "@": "PerlList()", "%": "PerlHash()", "*": "None"}.get(
                sigil, "undef"
            )
            if py == "EVAL_ERROR":
                init = '""'
            if py == "ARGV":
                init = "PerlList(sys.argv[1:])"
            out.append(f"{py} = {init}")
        if t.globals_used:
            out += ["", ""]
    if library:
        out += t.func.lines
        out += ["", ""]
    else:
        out.append("def main():")
        if t.func.globals:
            out.append("    global " + ", ".join(sorted(t.func.globals)))
        body = _merge_ifs(t.func.lines)
        out += body if any(not b.strip().startswith("#") for b in body) else [*body, "    pass"]
        out += ["", ""]
    for func in t.defs:
        out += func.pre
        if not func.is_def:
            out += [*func.lines, "", ""]
            continue
        body = [f"def {t.def_name(func.name)}(*args):"]
        if func.args_list:
            body.append("    args = PerlList(args)")
        if func.globals:
            body.append("    global " + ", ".join(sorted(func.globals)))
        out += [*_rename_unused(body + _merge_ifs(func.lines)), "", ""]
    if not library:
        out.append("main()")
    text = "\n".join(out).rstrip("\n") + "\n"
    return re.sub(r"\n{4,}", "\n\n\n", text)


def port(
    path: str,
    perl: str = "perl",
    library: bool = False,
    extra_subs: set[str] | None = None,
    base: str | None = None,
    consts: dict[str, str] | None = None,
    seen: set[str] | None = None,
) -> Result:
    """Port the Perl script at *path* (and the libraries it ``require``s beside it).

    A library's ``require`` paths are relative to *base*, the script's directory (a CGI's
    current directory); *consts* are the string settings known so far (``$formpl``), so
    ``require $formpl;`` finds its file.
    """
    script = parse_file(path, perl)
    base = os.path.dirname(path) if base is None else base
    consts = dict(consts or {})
    consts.update(_string_consts(script))
    seen = set() if seen is None else seen
    seen.add(os.path.normpath(path))
    libs: list[Result] = []
    lib_subs: set[str] = set()
    lib_symbols: set[tuple[str, str]] = set()
    todo = _requires(script, consts)
    known = (extra_subs or set()) | _sub_names(script.root)  # a library calls the script's
    while todo:  # a library's settings may name the next one (require $formpl)
        raw = todo.pop(0)
        lib_path = os.path.join(base, raw)
        if os.path.exists(lib_path) and os.path.normpath(lib_path) not in seen:
            lib = port(lib_path, perl, True, known, base=base, consts=consts, seen=seen)
            known |= lib.subs
            lib.rel = raw
            consts.update(lib.consts)
            libs += [lib, *lib.libraries]
            lib.libraries = []
            todo += [r for r in _requires(script, consts) if r not in todo]
            lib_subs |= lib.subs
            lib_symbols |= lib.symbols
    unseen = _unseen_libraries(script, consts, base, seen)
    t = translate(script, library, (extra_subs or set()) | lib_subs, consts, unseen)
    if not library:
        for sigil, name in lib_symbols:
            if (
                sigil in "$@%"
                and (sigil, name) not in t.symbols
                and name not in ("_", "ENV", "SIG")
            ):
                t.symbols.add((sigil, name))
                py = t.name(sigil, name)
                t.imports.add({"$": "undef", "@": "PerlList", "%": "PerlHash"}[sigil])
                del py
    if any(g for g, s in t.globals_used.items() if s == "$") or not library:
        t.imports.add("undef") if any(s == "$" for s in t.globals_used.values()) else None
    if any(s == "@" and g != "EVAL_ERROR" for g, s in t.globals_used.items()):
        t.imports.add("PerlList")
    if any(s == "%" for s in t.globals_used.values()):
        t.imports.add("PerlHash")
    base = os.path.basename(path)
    summary = (
        f"Ported from {base} by `perlcompat port`: {t.done} of {t.total} statements "
        f"translated, {t.port_lines} Perl line(s) left as # PORT."
    )
    header = [f'"""{summary}"""' if not library else f"# {summary}"]
    funcs = [t.func, *t.defs]
    words = set()
    for func in funcs:
        words |= _code_words(func.lines)
    if (libs and words & {py_var(s) for s in lib_subs}) or t.foreign_calls & words:
        header.append("# ruff: noqa: F821  (the subs of the required libraries)")
    if library:
        missing = {
            g for g in t.globals_used if g in words and not any(_assigns(f.lines, g) for f in funcs)
        } | (words & {t.def_name(s) for s in t.subs - _sub_names(t.script.root)})
        if missing:
            header.append("# ruff: noqa: F821  (the script's globals: require() runs this in them)")
    text = assemble(t, header, library)
    result = Result(path, text, t.done, t.total, t.port_lines)
    result.libraries = libs
    result.subs = t.subs
    result.symbols = t.symbols
    result.consts = consts
    return result


def _sub_names(node: Node) -> set[str]:
    return {str(s.get("name")) for s in _walk(node) if s.cls == "Statement::Sub"}


def _string_consts(script: Script) -> dict[str, str]:
    """``$name = 'literal';`` at the top level, for names assigned nowhere else."""
    counts: dict[str, int] = {}
    for stmt in _walk(script.root):
        toks = stmt.significant()
        for i, tok in enumerate(toks[:-1]):
            if tok.cls == "Token::Symbol" and toks[i + 1].text in ASSIGNING:
                counts[tok.text] = counts.get(tok.text, 0) + 1
    found: dict[str, str] = {}
    for stmt in script.root.kids:
        toks = stmt.significant() if stmt.is_("Statement") else []
        if (
            len(toks) == 3
            and toks[0].cls == "Token::Symbol"
            and toks[1].text == "="
            and toks[2].cls in ("Token::Quote::Single", "Token::Quote::Literal")
            and counts.get(toks[0].text) == 1
        ):
            found[toks[0].text] = str(toks[2].get("s"))
    return found


ASSIGNING = {"=", ".=", "||=", "&&=", "//=", "x=", "+=", "=~"}


def _requires(script: Script, consts: dict[str, str]) -> list[str]:
    """The script's own libraries: ``require './lib.pl';``, ``require $formpl;``."""
    out = []
    for stmt in _walk(script.root):
        toks = stmt.significant()
        for i, tok in enumerate(toks[:-1]):
            if tok.text != "require":
                continue
            arg = toks[i + 1]
            target = str(arg.get("s")) if arg.is_("Token::Quote") else consts.get(arg.text, "")
            if library_path(target) and target not in out:
                out.append(target)
    return out


def _unseen_libraries(script: Script, consts: dict[str, str], base: str, seen: set[str]) -> bool:
    """True when the script requires a library of its own the tool cannot read."""
    for stmt in _walk(script.root):
        toks = stmt.significant()
        for i, tok in enumerate(toks[:-1]):
            if tok.text != "require" or tok.cls != "Token::Word":
                continue
            arg = toks[i + 1]
            if arg.is_("Token::Symbol") and arg.text not in consts:
                if "jcode" not in arg.text.lower():
                    return True
                continue
            target = str(arg.get("s")) if arg.is_("Token::Quote") else consts.get(arg.text, "")
            if library_path(target) and not os.path.exists(os.path.join(base, target)):
                return True
    return False


def library_path(target: str) -> bool:
    """True for a script's own library (``./lib.pl``, ``./init.cgi``), not jcode.pl."""
    return (
        target.endswith((".pl", ".cgi"))
        and "jcode" not in target
        and not target.startswith("/")
        and "$" not in target
    )


def _walk(node: Node) -> list[Node]:
    out = []
    for kid in node.kids:
        if kid.is_("Statement"):
            out.append(kid)
        if kid.kids:
            out.extend(_walk(kid))
    return out
