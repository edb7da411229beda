"""Every name the README and docs tell a user to import exists where they say.

The docs are read as a user reads them: each ``from perlcompat... import ...``
statement in them is run, each dotted ``perlcompat.x.y`` they mention is looked
up, and each ``pc.name`` after ``import perlcompat as pc`` is found.  A move
inside the package that forgets a doc fails here, not in a user's port.
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

import perlcompat

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted(
    [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "examples").rglob("*.md")]
)

IMPORT = re.compile(
    r"^[ \t]*from (perlcompat(?:\.[A-Za-z_]\w*)*) import (\([^)]*\)|[^\n#]+)", re.MULTILINE
)
DOTTED = re.compile(r"\bperlcompat(?:\.[A-Za-z_]\w*)+")
ALIASED = re.compile(r"\bpc\.([A-Za-z_]\w*)")


def _names(text: str) -> list[str]:
    body = text.strip().strip("()")
    body = re.sub(r"#[^\n]*", "", body)
    return [part.split(" as ")[0].strip() for part in body.split(",") if part.strip()]


def doc_imports() -> list[tuple[str, str, str]]:
    found = []
    for doc in DOCS:
        for match in IMPORT.finditer(doc.read_text(encoding="utf-8")):
            for name in _names(match.group(2)):
                found.append((doc.name, match.group(1), name))
    return sorted(set(found))


def doc_dotted() -> list[tuple[str, str]]:
    found = set()
    for doc in DOCS:
        for match in DOTTED.finditer(doc.read_text(encoding="utf-8")):
            name = match.group(0).rstrip(".")
            if not name.endswith((".py", ".md", ".pl")):  # a file name, not a Python name
                found.add((doc.name, name))
    return sorted(found)


def resolve(dotted: str) -> object:
    """Import the longest module prefix of *dotted*, then getattr the rest."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            value = getattr(value, attr)
        return value
    raise ModuleNotFoundError(dotted)


def test_the_docs_import_something() -> None:
    # the scan itself works: the README's first example is found
    assert ("README.md", "perlcompat", "flock") in doc_imports()
    assert len(doc_imports()) > 40


@pytest.mark.parametrize(("doc", "module", "name"), doc_imports())
def test_each_documented_import_exists(doc: str, module: str, name: str) -> None:
    assert hasattr(importlib.import_module(module), name) or importlib.import_module(
        f"{module}.{name}"
    ), f"{doc}: from {module} import {name}"


@pytest.mark.parametrize(("doc", "dotted"), doc_dotted())
def test_each_documented_dotted_name_exists(doc: str, dotted: str) -> None:
    resolve(dotted)


def test_each_pc_name_exists() -> None:
    missing = [
        (doc.name, name)
        for doc in DOCS
        if "import perlcompat as pc" in doc.read_text(encoding="utf-8")
        for name in ALIASED.findall(doc.read_text(encoding="utf-8"))
        if not hasattr(perlcompat, name)
    ]
    assert missing == []


def test_every_public_name_imports_in_a_fresh_process() -> None:
    code = (
        "import perlcompat\n"
        "for name in perlcompat.__all__:\n"
        "    getattr(perlcompat, name)\n"
        "from perlcompat import *  # noqa\n"
        "import perlcompat.jcode\n"
        "print(len(perlcompat.__all__))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(out.stdout) == len(perlcompat.__all__) > 60
    assert set(perlcompat.__all__) <= set(dir(perlcompat))
