"""The shape of ``perlcompat/tools``: no import circles, one registry of audit rules.

Imports are read from the source (every ``import`` in a module, at its top, inside a
function or under ``TYPE_CHECKING``), so a lazy import that closes a circle counts.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

from perlcompat.tools.audit.findings import Policy
from perlcompat.tools.audit.registry import POLICIES, RULES, SCOPE_CHECKS

PACKAGE = Path(__file__).parent.parent / "perlcompat"
RULES_DIR = PACKAGE / "tools" / "audit" / "rules"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, modules: set[str]) -> set[str]:
    """The perlcompat modules *path* imports anywhere in its text."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return {m for m in found if m in modules and m != name}


def graph() -> dict[str, set[str]]:
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: imports(path, set(files)) for name, path in files.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    found: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                found.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [])
    return found


def test_tools_have_no_import_circle() -> None:
    edges = graph()
    tools = {m: {d for d in deps if d.startswith("perlcompat.tools")} for m, deps in edges.items()}
    assert cycles(tools) == []


def test_nothing_outside_tools_imports_tools() -> None:
    """Only ``python -m perlcompat`` (the command itself) reaches into tools."""
    edges = graph()
    outside = {
        m: sorted(d for d in deps if d.startswith("perlcompat.tools"))
        for m, deps in edges.items()
        if not m.startswith("perlcompat.tools") and m != "perlcompat.__main__"
    }
    assert {m: d for m, d in outside.items() if d} == {}


def test_every_rule_module_declares_registered_policies() -> None:
    registered = {id(p) for p in POLICIES}
    declared: list[Policy] = []
    for path in sorted(RULES_DIR.glob("*.py")):
        if path.stem in ("__init__", "common"):
            continue
        module = importlib.import_module(module_name(path))
        mine = [v for v in vars(module).values() if isinstance(v, Policy)]
        assert mine, path.name
        assert all(id(p) in registered for p in mine), path.name
        if len(mine) == 1:
            assert mine[0].name.replace("-", "_") == path.stem, path.name
        declared += mine
    assert sorted(p.name for p in declared) == sorted(RULES)
    assert len(RULES) == len(POLICIES)
    assert all(p.severity in ("error", "warning", "info") and p.description for p in POLICIES)
    for check in SCOPE_CHECKS:
        assert check.__module__.startswith("perlcompat.tools.audit.rules."), check


def test_each_rule_is_judged_in_its_own_module_and_the_walk_finds_none() -> None:
    """Perl::Critic's layout: a rule's logic lives in its module, the walk only records events."""
    from perlcompat.tools.audit.registry import lock_order, unknown_sub

    judged = {check.__module__ for check in SCOPE_CHECKS}
    judged |= {lock_order.__name__, unknown_sub.__name__}
    for path in sorted(RULES_DIR.glob("*.py")):
        if path.stem not in ("__init__", "common"):
            assert module_name(path) in judged, path.name
    for walk in ("handlers", "walker"):
        text = (RULES_DIR.parent / f"{walk}.py").read_text(encoding="utf-8")
        tree = ast.parse(text)
        made = [
            node.lineno
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("find", "find_unchecked")  # the walk's way to report
        ]
        rules_used = {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == "rules"
            for alias in node.names
        }
        assert made == [] and rules_used == set() and ".finding(" not in text, (walk, made)


def test_every_rule_is_in_the_docs_table() -> None:
    docs = (PACKAGE.parent / "docs" / "audit.md").read_text(encoding="utf-8")
    for name in RULES:
        assert re.search(rf"\b{re.escape(name)}\b", docs), name


def test_audit_modules_import_only_those_listed_above_them() -> None:
    """The order of ``tools/audit/__init__.py``'s module list is the import order."""
    import perlcompat.tools.audit as package

    listed = re.findall(r"^- ``(\w+)/?``", package.__doc__ or "", re.M)
    files = {p.stem for p in (PACKAGE / "tools" / "audit").glob("*.py")} - {"__init__"}
    assert sorted(listed) == sorted(files | {"rules"})
    prefix = "perlcompat.tools.audit."
    for name, deps in graph().items():
        if not name.startswith(prefix):
            continue
        own = name[len(prefix) :].split(".")[0]
        for dep in deps:
            top = dep[len(prefix) :].split(".")[0] if dep.startswith(prefix) else ""
            if top and top != own:
                assert listed.index(top) < listed.index(own), (name, dep)
