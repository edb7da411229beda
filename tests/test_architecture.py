"""The package's shape: three parts, imports that only go one way, no import circles.

``perlcompat/perl/`` (the Perl built-ins a port calls) imports only the standard
library and itself; ``perlcompat/locks/`` (the lock methods) adds ``perl/``;
``perlcompat/tools/`` (the ``perlcompat`` command) may import anything, and nothing
outside it imports it.  Every import counts, also one inside a function; only
``if TYPE_CHECKING:`` blocks are left out.  The graph is read from the source with
``ast``, so a lazy import that no test happens to run is checked too.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import perlcompat

PACKAGE = Path(perlcompat.__file__).parent
#: the public modules at the top (``perlcompat.jcode`` is jcode.pl's interface,
#: ``perlcompat.cgi`` CGI.pm's and cgi-lib.pl's); a package's modules count as its part.
TOP = {"perlcompat", "perlcompat.__main__", "perlcompat.jcode", "perlcompat.cgi"}
#: which parts each part may import (besides the standard library and third-party packages).
ALLOWED = {
    "perl": {"top", "perl"},
    "locks": {"top", "perl", "locks"},
    "tools": {"top", "perl", "locks", "tools"},
    "top": {"top", "perl", "locks", "tools"},
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def part(name: str) -> str:
    pieces = name.split(".")
    if len(pieces) == 1 or ".".join(pieces[:2]) in TOP:  # perlcompat.cgi.body is "top"
        return "top"
    return pieces[1]


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """perlcompat modules *name* imports anywhere outside ``if TYPE_CHECKING:``."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("perlcompat"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("perlcompat"):
                for alias in node.names:  # "from . import owner" imports a module
                    sub = f"{target}.{alias.name}"
                    found.add(sub if sub in known else target)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
    found.discard(name)
    return found


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {name: imports_of(name, path, known) for name, path in mods.items()}


def test_the_three_parts_exist_and_say_what_they_hold() -> None:
    for sub in ("perl", "locks", "locks.methods", "tools"):
        doc = __import__(f"perlcompat.{sub}", fromlist=["_"]).__doc__
        assert doc and len(doc.strip().splitlines()) > 3, f"perlcompat.{sub} needs a docstring"


def test_imports_go_one_way() -> None:
    wrong = [
        f"{name} imports {target}"
        for name, targets in graph().items()
        for target in sorted(targets)
        if part(target) not in ALLOWED[part(name)]
    ]
    assert wrong == []


def test_no_import_circles() -> None:
    edges = graph()
    # Tarjan's strongly connected components: any component of two or more is a circle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in edges:
                continue
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in sorted(edges):
        if node not in index:
            connect(node)
    # the top-level package re-exports everything lazily; it is the root, not part of a circle
    circles = [c for c in circles if c != ["perlcompat"]]
    assert circles == []


def test_the_checker_sees_lazy_and_relative_imports() -> None:
    edges = graph()
    # perl.fs reads $^T from the top package; locks.api imports its siblings
    assert "perlcompat" in edges["perlcompat.perl.fs"]
    assert any(t.startswith("perlcompat.locks.") for t in edges["perlcompat.locks.api"])
    assert "perlcompat.tools.cli" in edges["perlcompat.__main__"]
    # the cgi package loads CGI::Cookie lazily; its modules are top-level, as the package
    assert "perlcompat.cgi.cookies" in edges["perlcompat.cgi"]
    assert part("perlcompat.cgi.body") == part("perlcompat.cgi") == "top"


def test_a_lock_cycle_never_imports_the_tools(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from perlcompat import LOCK_EX, close, flock, lock, open_, print_, unlock\n"
        f"fh = open_('>>', {str(tmp_path / 'data')!r})\n"
        "flock(fh, LOCK_EX); print_(fh, 'x'); close(fh)\n"
        f"assert lock({str(tmp_path / 'lockdir')!r}) == 1\n"
        f"assert unlock({str(tmp_path / 'lockdir')!r}) == 1\n"
        "print(sorted(m for m in sys.modules if m.startswith('perlcompat.tools')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


RULES = "perlcompat.tools.audit.rules."


def test_every_module_is_named_where_a_newcomer_looks() -> None:
    """README's "What is where" names each module of perl/ and locks/ and each tool; each
    subpackage's docstring names each of its modules."""
    readme = (PACKAGE.parent / "README.md").read_text(encoding="utf-8")
    where = readme[readme.index("## What is where") :]
    where = where[: where.index("\n## ")]
    missing_readme = []
    missing_doc = []
    for name, path in modules().items():
        pieces = name.split(".")
        if path.name == "__init__.py" or len(pieces) < 3 or name.startswith(RULES):
            continue
        leaf = pieces[-1]
        named_in_readme = pieces[1] in ("perl", "locks") or name.count(".") == 2
        if named_in_readme and f"`{leaf}.py`" not in where:
            missing_readme.append(name)
        parent = __import__(".".join(pieces[:-1]), fromlist=["_"])
        if f"``{leaf}``" not in (parent.__doc__ or ""):
            missing_doc.append(name)
    assert missing_readme == []
    assert missing_doc == []


#: the platform seam of locks/: the only files there that ask which platform this is.
PLATFORM_SEAM = {"osapi.py", "osposix.py", "oswindows.py"}
#: files allowed to branch on the platform besides the seam: none.
PLATFORM_ALLOWANCE: set[str] = set()
#: what "branches on the platform" means: any mention of these (code, comment or docstring).
PLATFORM_NAMES = re.compile(
    r"\bsys\.platform\b|\bos\.name\b|\b_WINDOWS\w*"
    r"|\bplatform\.system\b|\bfrom sys import platform\b"
)


def test_at_most_three_files_in_locks_branch_on_the_platform() -> None:
    """Issue 26: locks/ asks which platform this is in its seam only (``locks.osapi``)."""
    root = PACKAGE / "locks"
    branching = {
        path.relative_to(root).as_posix()
        for path in root.rglob("*.py")
        if PLATFORM_NAMES.search(path.read_text(encoding="utf-8"))
    }
    assert branching - PLATFORM_ALLOWANCE <= PLATFORM_SEAM
    assert len(branching - PLATFORM_ALLOWANCE) <= 3
    assert PLATFORM_NAMES.search('if sys.platform == "win32":')  # the pattern sees one
    assert PLATFORM_NAMES.search("_WINDOWS = True")


def _defined_at_top(tree: ast.Module) -> set[str]:
    """Names a module defines itself (def, class, assignment; also under ``if``), not imports."""
    names: set[str] = set()
    body = list(tree.body)
    while body:
        node = body.pop()
        if isinstance(node, ast.If):
            body.extend(node.body + node.orelse)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def test_the_lock_file_core_is_imported_from_where_each_name_is_defined() -> None:
    # issue 26 item 4: stale.py re-exported 21 names of files/guards/osflags; each name
    # of the file-lock core is imported from the module that defines it
    core = {f"perlcompat.locks.{m}" for m in ("stale", "remover", "files", "guards", "netfs")}
    found = modules()
    defined = {m: _defined_at_top(ast.parse(found[m].read_text(encoding="utf-8"))) for m in core}
    wrong = []
    for name, path in found.items():
        if not name.startswith("perlcompat.locks") and name != "perlcompat.tools.locks_cli":
            continue
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or not node.level:
                continue
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            source = f"{base}.{node.module}" if node.module else base
            if source in core:
                wrong += [
                    f"{name}: {alias.name} from {source}"
                    for alias in node.names
                    if alias.name not in defined[source]
                ]
    assert wrong == []


#: issue 26: no module is a file a newcomer must read a thousand lines of
MAX_MODULE_LINES = 700


def test_no_module_is_over_700_lines() -> None:
    """Big files are cut on their seams (issue 26, item 5): each module fits in 700 lines."""
    sizes = {
        path.relative_to(PACKAGE).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in PACKAGE.rglob("*.py")
    }
    assert len(sizes) > 50  # the package was found
    assert {name: n for name, n in sizes.items() if n > MAX_MODULE_LINES} == {}


#: issue 33: the modules one mkdir ``lock()`` + ``unlock()`` runs code of, at most
MAX_LOCK_PATH_MODULES = 8

LOCK_PATH_TRACE = """
import json, os, sys
from perlcompat import lock, unlock
os.chdir(sys.argv[1])
assert lock("x.lock") == 1 and unlock("x.lock") == 1  # warm: first-use imports and caches
seen = []
def profile(frame, event, arg):
    if event == "call":
        module = frame.f_globals.get("__name__", "")
        if module.startswith("perlcompat"):
            seen.append(module)
sys.setprofile(profile)
taken = lock("x.lock")
released = unlock("x.lock")
sys.setprofile(None)
print(json.dumps([taken, released, seen]))
"""


def test_the_path_of_one_mkdir_lock_runs_in_a_few_modules(tmp_path: Path) -> None:
    """Issue 33: one ``lock("x.lock")`` + ``unlock("x.lock")`` (the mkdir method, the
    classic ``sub lock { mkdir }`` port) reads top to bottom in a few places: the
    function, the Lock, the method module and the shared file primitives.  Traced with
    ``sys.setprofile``, perlcompat frames only, after a first cycle (imports, caches)."""
    import json

    out = subprocess.run(
        [sys.executable, "-c", LOCK_PATH_TRACE, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    taken, released, seen = json.loads(out.stdout)
    assert (taken, released) == (1, 1)
    modules_seen = sorted(set(seen))
    # the trace sees the path (the function, the method), so a count of 8 means 8
    assert "perlcompat.locks.functions" in modules_seen
    assert "perlcompat.locks.methods.mkdir" in modules_seen
    assert len(modules_seen) <= MAX_LOCK_PATH_MODULES, modules_seen
    assert not (tmp_path / "x.lock").exists()
