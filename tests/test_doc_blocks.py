"""Every ```python block in README.md, docs/*.md and examples/README.md runs as written.

The convention (also stated in README.md, "Development"):

- Each ```python block (``python3`` and ``py`` count too) runs on its own, in a fresh
  temporary directory as the working directory, in a new Python process with the
  package importable, under a time limit. It passes when it exits with status 0.
  None is skipped.
- A block that needs context (a data file, a name such as ``datafile``, a function the
  surrounding script defines) gets it from a *prelude*: an HTML comment right before the
  fence, visible to anyone reading the Markdown source and not shown once rendered::

      <!-- prelude: what it stands for (this line is not run)
      datafile = "count.dat"
      open(datafile, "w").close()
      -->
      ```python
      ...

  The lines after ``<!-- prelude:`` up to ``-->`` are Python; they run first, in the
  block's namespace.
- Two environment variables are set for every block: ``REDIS_URL`` (a throw-away
  ``redis-server`` this test starts; a prelude that needs one says
  ``URL = os.environ["REDIS_URL"]``) and ``PERL`` (the ``perl`` to start Perl-side
  processes with).
- What is not code to run (a session transcript, a shell line, a fragment of a
  larger file) goes in a ```text / ```pycon / ```sh block instead, with a sentence saying
  why.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from redis_server import RedisServer

REPO = Path(__file__).resolve().parent.parent
DOCS = ["README.md", *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md"))]
DOCS.append("examples/README.md")
PYTHON_TAGS = {"python", "python3", "py"}
TIMEOUT = 60

FENCE = re.compile(r"^[ \t]*(?P<fence>```+|~~~+)[ \t]*(?P<info>[^\s`]*)[^`]*$")
PRELUDE = re.compile(r"<!--\s*prelude:[^\n]*\n(?P<code>.*?)-->\s*$", re.DOTALL)

RUNNER = """\
import sys
ns = {"__name__": "__main__"}
prelude, block, where, first_line = sys.argv[1:5]
exec(compile(open(prelude, encoding="utf-8").read(), where + " (prelude)", "exec"), ns)
code = "\\n" * (int(first_line) - 1) + open(block, encoding="utf-8").read()
exec(compile(code, where, "exec"), ns)
"""


@dataclass
class Block:
    """One ```python block: where it is, its code, and its prelude ("" when none)."""

    doc: str
    line: int  # the line of the block's first code line, 1-based
    code: str
    prelude: str

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"


def extract(doc: str, text: str) -> Iterator[Block]:
    """Yield the ```python blocks of one Markdown text, each with its prelude."""
    for info, block in fenced(doc, text):
        if info in PYTHON_TAGS:
            yield block


def fenced(doc: str, text: str) -> Iterator[tuple[str, Block]]:
    """Yield every fenced block of one Markdown text with its info string (``python``, ``perl``)."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        fence, info = opening["fence"], opening["info"].lower()
        body: list[str] = []
        j = i + 1
        while j < len(lines):
            closing = FENCE.match(lines[j])
            if (
                closing
                and closing["fence"][0] == fence[0]
                and len(closing["fence"]) >= len(fence)
                and not closing["info"]
            ):
                break
            body.append(lines[j])
            j += 1
        else:
            raise AssertionError(f"{doc}:{i + 1}: a fence that is never closed")
        code = textwrap.dedent("\n".join(body)) + "\n"
        yield info, Block(doc, i + 2, code, prelude_before(lines, i))
        i = j + 1


def prelude_before(lines: list[str], fence_index: int) -> str:
    """The ``<!-- prelude: ... -->`` comment ending on the line just before a fence."""
    k = fence_index - 1
    if k < 0 or not lines[k].rstrip().endswith("-->"):
        return ""
    start = k
    while start >= 0 and "<!--" not in lines[start]:
        start -= 1
    if start < 0:
        return ""
    comment = "\n".join(lines[start : k + 1]).strip()
    match = PRELUDE.fullmatch(comment) if comment.startswith("<!--") else None
    return textwrap.dedent(match["code"]).strip() + "\n" if match else ""


BLOCKS = [block for doc in DOCS for block in extract(doc, (REPO / doc).read_text("utf-8"))]


def test_blocks_are_found() -> None:
    """The extractor finds blocks in every place the docs keep them (a broken regex finds none)."""
    assert len(BLOCKS) >= 20
    assert {"README.md", "docs/core.md", "docs/locks.md", "docs/porting.md"} <= {
        b.doc for b in BLOCKS
    }
    assert any(b.prelude for b in BLOCKS)


def test_extract_honours_the_convention() -> None:
    """Indented fences, longer fences, preludes, and non-python blocks, on a made-up text."""
    text = textwrap.dedent(
        """\
        <!-- prelude: an x
        x = 1
        -->
        ```python
        assert x == 1
        ```

        ```text
        not run
        ```
        * item

          ```python
          y = 2
          ```
        <!-- a comment, not a prelude -->
        ````python
        ```
        ````
        """
    )
    blocks = list(extract("t.md", text))
    assert [(b.line, b.code, b.prelude) for b in blocks] == [
        (5, "assert x == 1\n", "x = 1\n"),
        (14, "y = 2\n", ""),
        (18, "```\n", ""),
    ]


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    srv = RedisServer(str(tmp_path_factory.mktemp("redis"))).start()
    srv.declare_empty()
    yield srv.url
    srv.stop()


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_block_runs_as_written(block: Block, tmp_path: Path, redis_url: str) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "prelude.py").write_text(block.prelude, "utf-8")
    (tmp_path / "block.py").write_text(block.code, "utf-8")
    (tmp_path / "runner.py").write_text(RUNNER, "utf-8")
    env = dict(os.environ)
    for name in list(env):
        if name.startswith("PERLCOMPAT_"):
            del env[name]  # a caller's lock URL or poll setting must not change what a block does
    env.update(
        PYTHONPATH=os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]),
        REDIS_URL=redis_url,
        PERL=shutil.which("perl") or "perl",
        PYTHONDONTWRITEBYTECODE="1",
    )
    try:
        proc = subprocess.run(
            [
                sys.executable,
                str(tmp_path / "runner.py"),
                str(tmp_path / "prelude.py"),
                str(tmp_path / "block.py"),
                block.doc,
                str(block.line),
            ],
            cwd=work,
            env=env,
            capture_output=True,
            timeout=TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{block.id}: still running after {TIMEOUT} s\n{exc.stderr!r}")
    assert proc.returncode == 0, (
        f"{block.id}: exit status {proc.returncode}\n"
        f"--- stdout\n{proc.stdout.decode(errors='replace')}\n"
        f"--- stderr\n{proc.stderr.decode(errors='replace')}"
    )


SOURCES = ["README.md", "docs", "examples", "perlcompat", "bench"]


def test_no_private_article_numbers() -> None:
    """Users never saw the articles' working numbers: name the idiom and its article instead."""
    pattern = re.compile(rb"seeds?[ _-]?00[0-4]", re.IGNORECASE)
    hits = []
    for top in SOURCES:
        base = REPO / top
        for path in [base] if base.is_file() else sorted(base.rglob("*")):
            if path.is_file() and path.suffix in {".md", ".py", ".cgi", ".pl", ".txt"}:
                for number, line in enumerate(path.read_bytes().splitlines(), 1):
                    if pattern.search(line):
                        hits.append(f"{path.relative_to(REPO)}:{number}")
    assert hits == []


def test_readme_and_locks_md_state_one_age_rule() -> None:
    """The rule for a live holder past ``stale`` is written once, the same way, in both."""

    def rule(doc: str) -> str:
        text = " ".join((REPO / doc).read_text("utf-8").split())
        start = text.index("**The age rule:**")
        return text[start : text.index(".", start) + 1]

    assert rule("README.md") == rule("docs/locks.md")
    assert "removed by the next waiter even if its holder is still alive" in rule("README.md")


@pytest.mark.parametrize("doc", ["README.md", "docs/core.md"])
@pytest.mark.parametrize("content", [b"", b"41\n", b"12abc\n", b"7", b"-3\n"])
def test_counter_port_writes_what_its_perl_original_writes(
    doc: str, content: bytes, tmp_path: Path
) -> None:
    """The first page's Perl counter and its documented port leave the same bytes in the file."""
    blocks = [(info, b) for info, b in fenced(doc, (REPO / doc).read_text("utf-8")) if info != "sh"]
    assert (blocks[0][0], blocks[1][0]) == ("perl", "python"), "the page opens with the pair"
    perl_code, python_code = blocks[0][1].code, blocks[1][1].code
    results = []
    for name, argv in [
        ("perl", [shutil.which("perl") or "perl", "-e", '$datafile = "count.dat";\n' + perl_code]),
        ("python", [sys.executable, "-c", 'datafile = "count.dat"\n' + python_code]),
    ]:
        work = tmp_path / name
        work.mkdir()
        (work / "count.dat").write_bytes(content)
        subprocess.run(
            argv, cwd=work, check=True, timeout=TIMEOUT, env=dict(os.environ, PYTHONPATH=str(REPO))
        )
        results.append((work / "count.dat").read_bytes())
    assert results[0] == results[1]
