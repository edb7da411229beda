"""``perlcompat audit`` never raises: hypothesis fuzz of the lexer and walker, and every Perl
file this machine ships.

No input may make the audit raise, and none may reach its last-resort catch (a
``Problem`` whose reason starts "the audit failed here"): that catch keeps a user's run
going, but here it would hide a bug.  Every suggestion produced must compile.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st
from test_audit import compile_strictly

from perlcompat.tools.audit.findings import Problem
from perlcompat.tools.audit.parser import parse_checked
from perlcompat.tools.audit.run import audit
from perlcompat.tools.audit.source import iter_files, read_source

CASES = Path(__file__).parent / "audit_cases"
SEEDS = sorted(str(p) for p in CASES.rglob("*") if p.is_file())
SEED_TEXT = [read_source(p) for p in SEEDS]
CORPUS_DIRS = ["/usr/share/perl5", "/usr/share/perl"]
#: Every file by default (about 10 s for 1357 files here); PERLCOMPAT_AUDIT_STEP=N audits
#: every Nth only, for a quick local run.
CORPUS_STEP = int(os.environ.get("PERLCOMPAT_AUDIT_STEP", "1"))

FUZZ = settings(
    max_examples=int(os.environ.get("PERLCOMPAT_FUZZ_EXAMPLES", "200")),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def check(
    sources: list[tuple[str, str]], load: Callable[[str], str | None] | None = None
) -> list[Problem]:
    """Audit *sources*; assert no internal failure and compilable suggestions."""
    problems: list[Problem] = []
    findings = audit(sources, problems, load=load)
    internal = [p for p in problems if p.reason.startswith("the audit failed here")]
    assert not internal, internal
    for f in findings:
        compile_strictly(f.suggestion)
    for _name, text in sources:
        parse_checked(text)
    return problems


@FUZZ
@given(st.binary(max_size=600))
def test_random_bytes(data: bytes) -> None:
    check([("fuzz.pl", data.decode("latin-1"))])


PERLISH = [
    "open",
    "(",
    ")",
    "OUT",
    "IN",
    "$f",
    "$h{x}",
    "@a",
    "%h",
    "&lock",
    "&unlock",
    "flock",
    "2",
    "8",
    "LOCK_EX",
    "|",
    "LOCK_NB",
    ",",
    ";",
    "{",
    "}",
    "[",
    "]",
    "<IN>",
    "<$fh>",
    '">$f"',
    '"+<$f"',
    "'>>log'",
    "or",
    "die",
    "||",
    "&&",
    "if",
    "elsif",
    "else",
    "unless",
    "while",
    "foreach",
    "my",
    "sub",
    "x",
    "eval",
    "exit",
    "return",
    "goto",
    "WRITE",
    ":",
    "print",
    "close",
    "seek",
    "truncate",
    "rename",
    "unlink",
    "mkdir",
    "rmdir",
    "symlink",
    "-e",
    "-M",
    "-f",
    "alarm",
    "time",
    "stat",
    "/",
    "/x/",
    "s{a}{b}",
    "tr/a/b/",
    "q(",
    "qq{",
    "<<EOT",
    "\nEOT\n",
    "=pod\n",
    "\n=cut\n",
    "__END__",
    "#",
    "\n",
    "'",
    '"',
    "`",
    "\\",
    "->",
    "=>",
    "::",
    "jcode'convert",
    "*glob",
    "require",
    '"lib.pl"',
    "format",
    "=\n.\n",
    "$$",
    "$#a",
    "$'",
    "${x}",
    "@{$r}",
    "\x82\xa0",
    "\x95\\",
    "\r\n",
    "\x00",
    "\xe6\x9b\xb8",
    "sysopen",
    "O_CREAT",
    "O_EXCL",
    "do",
    "local",
    "$SIG{ALRM}",
    "=",
    "==",
    "<",
    ">",
    "?",
]


@FUZZ
@given(st.lists(st.sampled_from(PERLISH), max_size=80), st.sampled_from([" ", "", "\n"]))
def test_perlish_token_soup(tokens: list[str], sep: str) -> None:
    check([("soup.pl", sep.join(tokens))])


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(SEED_TEXT))
    for _ in range(draw(st.integers(1, 4))):
        n = len(text)
        a = draw(st.integers(0, n))
        b = draw(st.integers(a, min(n, a + 40)))
        how = draw(st.sampled_from(["delete", "dup", "insert", "swap"]))
        if how == "delete":
            text = text[:a] + text[b:]
        elif how == "dup":
            text = text[:b] + text[a:b] + text[b:]
        elif how == "insert":
            text = text[:a] + draw(st.sampled_from(PERLISH)) + text[a:]
        else:
            c = draw(st.integers(0, n))
            text = text[:a] + text[c : c + (b - a)] + text[b:]
    return text


@FUZZ
@given(st.lists(mutated(), min_size=1, max_size=3))
def test_mutated_seed_scripts_audited_together(texts: list[str]) -> None:
    # Every required file not given is "found beside the script": the last mutated text.
    check([(f"dir/s{n}.cgi", text) for n, text in enumerate(texts)], load=lambda _: texts[-1])


def test_every_perl_file_on_this_machine() -> None:
    paths = list(iter_files(CORPUS_DIRS))[::CORPUS_STEP]
    assert len(paths) > 300, "perl's own modules are missing (apt-get install perl)"
    start = time.perf_counter()
    sources = [(p, read_source(p)) for p in paths]
    problems = check(sources)
    seconds = time.perf_counter() - start
    print(
        f"\naudited {len(paths)} files (every {CORPUS_STEP}) in {seconds:.1f} s: "
        f"{len(paths) / seconds:.0f} files/s",
        file=sys.stderr,
    )
    assert problems == []  # valid Perl: every file is followed to its end


def test_deep_nesting_is_followed_to_a_limit_then_reported() -> None:
    def nested(n: int) -> str:
        return "if ($a) {\n" * n + 'open(OUT, ">$f");\n' + "}\n" * n

    assert check([("ok.pl", nested(100))]) == []
    for n in (101, 5000):
        [problem] = check([("deep.pl", nested(n))])
        assert (problem.line, problem.reason) == (101, "blocks nested over 100 deep")
    assert check([("parens.pl", "(" * 5000 + ")" * 5000 + ";\n" + "$h{" * 3000 + "}" * 3000)]) == []
    labels = "A: " * 5000 + 'open(OUT, ">$f");\n'
    assert check([("labels.pl", labels)]) == []
    assert [f.rule for f in audit([("labels.pl", labels)])] == ["unchecked-result"]
