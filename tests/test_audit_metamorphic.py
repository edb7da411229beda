"""Metamorphic tests of ``perlcompat audit``: a finding must survive a real script around it.

Every single-file case under ``tests/audit_cases`` is wrapped in each of several contexts
real CGI scripts put code in: inside a sub called from an if/elsif chain, after a
``while (<IN>)`` loop, after an ``exit`` and reached by ``goto`` a label, inside
``eval { }``, between ``require "lib.pl"`` and Perl 4 ``&pkg'func(*glob)`` calls, with
CRLF line ends, with Shift_JIS comments.  The case's own lines are kept whole, so its
``# EXPECT rule`` marks still name the lines: every ``*_bad`` finding must still be found
there and nothing else, and every ``*_ok`` case must stay quiet.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from test_audit import compile_strictly

from perlcompat.tools.audit.findings import Problem
from perlcompat.tools.audit.run import audit
from perlcompat.tools.audit.source import read_source

CASES = Path(__file__).parent / "audit_cases"
SINGLE = sorted(p for p in CASES.glob("*.pl") if "__END__" not in read_source(str(p)))
SJIS_COMMENT = "# 書き込み表示ソフト（能）".encode("cp932").decode("latin-1")


def body_lines(text: str) -> str:
    """The case without its shebang line (replaced by a blank line: numbers stay)."""
    return "\n" + text.split("\n", 1)[1] if text.startswith("#!") else text


def in_sub_called_from_if_chain(text: str) -> str:
    head = (
        "#!/usr/bin/perl\n"
        "$mode = $ENV{'QUERY_STRING'};\n"
        "if ($mode eq 'view') { &view; }\n"
        "elsif ($mode eq 'post') { &main_work; }\n"
        "else { &main_work; }\n"
        "exit;\n"
        'sub view { print "Content-type: text/html\\n\\n"; }\n'
        "sub main_work {\n"
    )
    return head + body_lines(text) + "\n}\n"


def after_while_readline(text: str) -> str:
    head = (
        "#!/usr/bin/perl\n"
        'open(CF, "config.txt") or die "config: $!";\n'
        "while (<CF>) { chomp; ($k, $v) = split(/=/); $conf{$k} = $v; }\n"
        "close(CF);\n"
    )
    return head + body_lines(text)


def after_exit_with_label(text: str) -> str:
    head = (
        "#!/usr/bin/perl\n"
        "if ($ENV{'REQUEST_METHOD'} eq 'POST') { goto MAIN; }\n"
        'print "Content-type: text/html\\n\\n";\n'
        "exit(0);\n"
        "MAIN: ;\n"
    )
    return head + body_lines(text)


def inside_eval(text: str) -> str:
    return "#!/usr/bin/perl\neval {\n" + body_lines(text) + '\n};\nif ($@) { print "$@"; }\n'


def between_require_and_perl4_calls(text: str) -> str:
    head = (
        "#!/usr/bin/perl\n"
        'require "./cgi-lib.pl";\n'
        'require "jcode.pl";\n'
        "&ReadParse(*in);\n"
        "&jcode'convert(*in, 'sjis');\n"
    )
    return head + body_lines(text) + "\n&jcode'convert(*buf, 'euc');\n&html'footer(*out);\n"


def crlf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def sjis_comments(text: str) -> str:
    lines = text.split("\n")
    out = [lines[0], SJIS_COMMENT, SJIS_COMMENT] if lines[0].startswith("#!") else []
    for line in lines[1:] if out else lines:
        plain = "#" not in line and not re.search(r"[\"'`]|<<|^\s*$", line)
        out.append(f"{line}  {SJIS_COMMENT}" if plain and line.rstrip().endswith(";") else line)
    return "\n".join(out)


CONTEXTS: dict[str, Callable[[str], str]] = {
    f.__name__: f
    for f in (
        in_sub_called_from_if_chain,
        after_while_readline,
        after_exit_with_label,
        inside_eval,
        between_require_and_perl4_calls,
        crlf,
        sjis_comments,
    )
}


def marks(text: str) -> set[tuple[int, str]]:
    out = set()
    for number, line in enumerate(text.split("\n"), 1):
        match = re.search(r"# EXPECT ([\w, -]+)", line)
        if match:
            out |= {(number, rule.strip()) for rule in match.group(1).split(",")}
    return out


@pytest.mark.parametrize("context", sorted(CONTEXTS))
@pytest.mark.parametrize("case", SINGLE, ids=lambda p: p.name)
def test_findings_survive_a_real_script_around_them(case: Path, context: str) -> None:
    text = CONTEXTS[context](read_source(str(case)))
    problems: list[Problem] = []
    findings = audit([(f"wrapped/{case.name}", text)], problems)
    assert problems == []
    got = {(f.line, f.rule) for f in findings}
    assert got == marks(text)
    for f in findings:
        compile_strictly(f.suggestion)


GROUPS = sorted(p for p in CASES.iterdir() if p.is_dir())
GROUP_SCRIPTS = [(g, p) for g in GROUPS for p in sorted(g.iterdir()) if p.suffix == ".cgi"]


@pytest.mark.parametrize("context", sorted(CONTEXTS))
@pytest.mark.parametrize("group_script", GROUP_SCRIPTS, ids=lambda gp: f"{gp[0].name}/{gp[1].name}")
def test_cross_script_findings_survive_one_script_wrapped(
    group_script: tuple[Path, Path], context: str
) -> None:
    group, wrapped = group_script
    sources = []
    want: set[tuple[str, int, str]] = set()
    for path in sorted(group.iterdir()):
        text = read_source(str(path))
        if path == wrapped:
            text = CONTEXTS[context](text)
        name = f"{group.name}/{path.name}"
        sources.append((name, text))
        want |= {(name, line, rule) for line, rule in marks(text)}
    problems: list[Problem] = []
    got = {(f.file, f.line, f.rule) for f in audit(sources, problems)}
    assert problems == []
    assert got == want
