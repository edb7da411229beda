"""``perlcompat audit``: every rule against positive and negative Perl scripts.

Each script under ``tests/audit_cases/`` marks the lines that must be reported
with a trailing ``# EXPECT rule`` comment; a script is audited and the set of
(line, rule) pairs found must equal the marked set exactly, so a missing
finding and a spurious one both fail.  ``*_ok.pl`` scripts carry no marks: no
rule may fire on them.  Every case is also compiled by the real ``perl -c``.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from perlcompat.tools.audit.findings import Problem
from perlcompat.tools.audit.lexer import lex
from perlcompat.tools.audit.registry import RULES
from perlcompat.tools.audit.run import audit
from perlcompat.tools.audit.source import iter_files, read_source

CASES = Path(__file__).parent / "audit_cases"
SINGLE = sorted(CASES.glob("*.pl"))
GROUPS = sorted(p for p in CASES.iterdir() if p.is_dir())
ROOT = Path(__file__).parent.parent


def expected(paths: list[str]) -> set[tuple[str, int, str]]:
    marks = set()
    for path in paths:
        for number, line in enumerate(read_source(path).split("\n"), 1):
            match = re.search(r"# EXPECT ([\w, -]+)", line)
            if match:
                marks |= {(path, number, rule.strip()) for rule in match.group(1).split(",")}
    return marks


def found(paths: list[str]) -> set[tuple[str, int, str]]:
    return {(f.file, f.line, f.rule) for f in audit([(p, read_source(p)) for p in paths])}


def compile_strictly(suggestion: str) -> None:
    """Compile *suggestion*; an invalid escape (a warning today, an error later) fails."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compile(suggestion, "<suggestion>", "exec")


def run_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "perlcompat", "audit", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=60,
    )


@pytest.mark.parametrize("case", SINGLE, ids=lambda p: p.name)
def test_case_script(case: Path) -> None:
    paths = [str(case)]
    assert found(paths) == expected(paths)


@pytest.mark.parametrize("group", GROUPS, ids=lambda p: p.name)
def test_case_scripts_audited_together(group: Path) -> None:
    paths = list(iter_files([str(group)]))
    assert len(paths) == 3
    assert found(paths) == expected(paths)


def test_bad_cases_have_marks_and_ok_cases_have_none() -> None:
    for case in [*SINGLE, *(p for g in GROUPS for p in g.iterdir())]:
        marks = expected([str(case)])
        if "_ok" in str(case):
            assert not marks, case
        elif case.name != "lock.pl":
            assert marks, case


def test_every_rule_has_a_positive_and_a_negative_case() -> None:
    positive = {rule for _, _, rule in expected([str(p) for p in SINGLE])}
    positive |= {rule for g in GROUPS for _, _, rule in expected(list(iter_files([str(g)])))}
    assert positive == set(RULES)
    for rule in RULES:
        stem = rule.replace("-", "_")
        if rule == "lock-order":
            assert (CASES / "order_ok").is_dir()
        else:
            assert (CASES / f"{stem}_ok.pl").is_file(), rule
            assert (CASES / f"{stem}_bad.pl").is_file(), rule


@pytest.mark.parametrize(
    "case", [*SINGLE, *(p for g in GROUPS for p in sorted(g.iterdir()))], ids=lambda p: p.name
)
def test_case_is_valid_perl(case: Path) -> None:
    result = subprocess.run(
        ["perl", "-c", case.name], cwd=case.parent, capture_output=True, timeout=30
    )
    assert result.returncode == 0, result.stderr
    assert b"syntax OK" in result.stderr


# -- encodings and line endings -------------------------------------------------


def test_shift_jis_case_is_really_shift_jis_with_5c_trail_bytes() -> None:
    raw = (CASES / "sjis_bad.pl").read_bytes()
    with pytest.raises(UnicodeDecodeError):
        raw.decode("utf-8")
    text = raw.decode("cp932")
    assert "表" in text and "ソ" in text and "\r\n" in text
    assert "表".encode("cp932")[1:] == b"\\"


def test_euc_jp_case_is_really_euc_jp() -> None:
    raw = (CASES / "eucjp_ok.pl").read_bytes()
    with pytest.raises(UnicodeDecodeError):
        raw.decode("utf-8")
    assert "書き込みました" in raw.decode("euc_jp")


def test_jperl_style_shift_jis_string_does_not_swallow_the_rest(tmp_path: Path) -> None:
    # "能" is 0x94 0x5C: plain perl sees \" and runs on; jperl does not.  Either way the
    # open on line 3 must be found on line 3.
    script = tmp_path / "jperl.cgi"
    script.write_bytes(
        '$title = "能";\r\n# コメント\r\nopen(OUT, ">$f") or die;\r\nflock(OUT, 2) or die;\r\n'
        "print OUT $title;\r\n".encode("cp932")
    )
    assert found([str(script)]) == {(str(script), 3, "truncate-before-lock")}


def test_crlf_heredoc_terminator(tmp_path: Path) -> None:
    script = tmp_path / "crlf.pl"
    script.write_bytes(
        b'print <<"EOT";\r\nopen(OUT, ">$f");\r\nEOT\r\n'
        b'open(OUT, ">$f") or die;\r\nflock(OUT, 2) or die;\r\nprint OUT 1;\r\n'
    )
    assert found([str(script)]) == {(str(script), 4, "truncate-before-lock")}


def test_undecodable_bytes_everywhere(tmp_path: Path) -> None:
    script = tmp_path / "junk.pl"
    script.write_bytes(b"# \xff\xfe\x80 junk\n$x = '\xe9\x5c\\';\nopen(IN, \"<$f\");\n@l = <IN>;\n")
    assert found([str(script)]) == {(str(script), 3, "unchecked-result")}


# -- the lexer on Perl's ambiguous spots ------------------------------------------


def kinds(code: str) -> list[tuple[str, str]]:
    return [(t.kind, t.text) for t in lex(code)]


def test_lexer_slash_is_regex_or_division() -> None:
    assert ("re", ",") in kinds("split /,/, $x;")
    toks = kinds("$a = $h{s} / 2 / $b;")
    assert ("op", "/") in toks and not any(k == "re" for k, _ in toks)
    assert ("op", "/") in kinds("$m = time / 60;")


def test_lexer_special_variables_and_filetests() -> None:
    assert ("var", "$#list") in kinds("$n = $#list;")
    assert ("var", "$'") in kinds("$x = $';  $y = 'q';")
    assert ("ft", "-s") in kinds("$z = -s $file;")
    assert ("ft", "-M") in kinds("if (-M $dir > 1) {}")
    assert ("id", "s") in kinds("$h{s} = 1;")
    assert ("id", "y") in kinds("%h = (y => 1);")


def test_lexer_readline_heredoc_pod_end() -> None:
    assert ("rl", "IN") in kinds("@l = <IN>;")
    assert ("rl", "$fh") in kinds("while (<$fh>) {}")
    assert ("op", "<") in kinds("if ($a < $b) {}")
    toks = lex(
        'print <<"EOT";\nflock(OUT, 2);\nEOT\n'
        "=pod\n\nflock(X, 2)\n\n=cut\n"
        "close(A);\n__END__\nflock(Z, 2);\n"
    )
    assert [t.text for t in toks if t.kind == "id"] == ["print", "close", "A"]
    assert toks[-1].line == 9


def test_lexer_perl4_package_quote_and_quote_operators() -> None:
    assert ("id", "jcode'convert") in kinds("&jcode'convert(*s, 'sjis');")
    assert ("str", "b") in kinds("if ($a eq'b') {}")
    toks = kinds("s{a}{b}g; tr/a-z/A-Z/; $x = q(it's); s#a#b#;")
    assert [k for k, _ in toks if k in ("re", "str")] == ["re", "re", "str", "re"]


# -- command line -------------------------------------------------------------------


LINE = re.compile(
    r"^(?P<file>.+?):(?P<line>\d+): (?P<sev>error|warning|info) (?P<rule>[a-z-]+): .+$"
)


def test_cli_text_output_and_exit_status() -> None:
    case = "tests/audit_cases/lock_after_read_bad.pl"
    result = run_cli(case)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    heads = [LINE.match(line) for line in lines[0::2]]
    assert all(heads), lines
    assert all(line.startswith("    perlcompat: ") for line in lines[1::2])
    got = {(m.group("file"), int(m.group("line")), m.group("rule")) for m in heads if m}
    assert got == expected([case])
    assert "2 error(s), 0 warning(s), 0 info in 1 file(s)" in result.stderr


def test_cli_json_shape() -> None:
    case = "tests/audit_cases/unchecked_result_bad.pl"
    result = run_cli("--json", case)
    assert result.returncode == 1
    findings = json.loads(result.stdout)["findings"]
    assert {(f["file"], f["line"], f["rule"]) for f in findings} == expected([case])
    assert len(findings) == len(expected([case]))
    for f in findings:
        assert set(f) == {"file", "line", "rule", "severity", "message", "suggestion"}
        assert f["severity"] == RULES[f["rule"]]
        ast.parse(f["suggestion"])  # the perlcompat line is Python


def test_cli_exit_zero_when_clean_or_only_info() -> None:
    clean = run_cli("--json", "tests/audit_cases/seed003_ok.pl")
    assert clean.returncode == 0
    assert json.loads(clean.stdout) == {"version": 1, "findings": [], "errors": [], "skipped": []}
    info = run_cli("--json", "tests/audit_cases/append_no_seek_bad.pl")
    assert info.returncode == 0
    assert [f["severity"] for f in json.loads(info.stdout)["findings"]] == ["info"]


def test_cli_directory_walk_picks_perl_files(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "bbs").write_text('#!/usr/bin/perl\nopen(OUT, ">$f");\n')
    (tmp_path / "notes.txt").write_text('open(OUT, ">$f");\n')
    (tmp_path / "a.cgi").write_text("flock(OUT, 2);\n")
    result = run_cli("--json", str(tmp_path))
    files = sorted({os.path.basename(f["file"]) for f in json.loads(result.stdout)["findings"]})
    assert files == ["a.cgi", "bbs"]


def test_cli_missing_path_and_usage() -> None:
    missing = run_cli("no/such/file.pl")
    assert missing.returncode == 2
    assert "cannot read no/such/file.pl" in missing.stderr
    assert run_cli().returncode == 2


def test_all_suggestions_are_python() -> None:
    paths = [str(p) for p in SINGLE] + [p for g in GROUPS for p in iter_files([str(g)])]
    findings = audit([(p, read_source(p)) for p in paths])
    assert len(findings) > 30
    for f in findings:
        compile_strictly(f.suggestion)


def test_examples_audited_together_report_only_what_each_script_does_alone() -> None:
    # Each example sets its own $datafile from $ENV: audited together they must not be
    # taken for one file (issue 7: workdata.cgi's rename reported against visitors.cgi).
    paths = list(iter_files([str(ROOT / "examples")]))
    assert len(paths) >= 7
    together = found(paths)
    alone: set[tuple[str, int, str]] = set()
    for path in paths:
        alone |= found([path])
    assert together == alone
    assert not any(rule == "check-then-create" for _, _, rule in together)


# -- input it cannot follow (issue 17) ------------------------------------------------


def test_non_ascii_identifiers_and_data_files_do_not_raise(tmp_path: Path) -> None:
    # Each of these raised AssertionError in the lexer's word().
    utf8 = tmp_path / "utf8.pl"
    utf8.write_bytes("use utf8;\nsub 書き { 1 }\n&書き();\n".encode())
    data = tmp_path / "log.cgi"  # a Shift_JIS data file named *.cgi so the server hides it
    data.write_bytes("1<>名前<>2003/01/01<>本文です<>\n2<>テスト<>表示<>ソフト<>\n".encode("cp932"))
    latin = tmp_path / "latin.pl"
    latin.write_bytes(b"$x = 1;\n\xe9t\xe9 = 2;\n")
    for path in (utf8, data, latin):
        problems: list[Problem] = []
        audit([(str(path), read_source(str(path)))], problems)
    problems = []
    assert audit([(str(utf8), read_source(str(utf8)))], problems) == []
    assert problems == []


def test_cli_reports_a_file_it_cannot_parse_and_goes_on(tmp_path: Path) -> None:
    broken = tmp_path / "broken.pl"
    broken.write_text('print "ok";\nsub a {\n  open(OUT, ">$f");\n')
    case = "tests/audit_cases/unchecked_result_bad.pl"
    result = run_cli(str(broken), "README.md", case)
    assert result.returncode == 2
    assert f"{broken}: cannot parse near line 2: the {{ opened here is never closed" in (
        result.stderr
    )
    assert re.search(r"^README\.md: cannot parse near line \d+: ", result.stderr, re.M)
    got = {
        (m["file"], int(m["line"]), m["rule"])
        for m in map(LINE.match, result.stdout.splitlines())
        if m
    }
    assert got == expected([case])  # the other file is still audited
    doc = json.loads(run_cli("--json", str(broken), case).stdout)
    assert doc["version"] == 1
    assert [(e["file"], e["line"]) for e in doc["errors"]] == [(str(broken), 2)]
    assert doc["errors"][0]["message"].startswith("cannot parse near line 2: ")
    assert {f["file"] for f in doc["findings"]} == {case}


def test_cli_readme_exit_2_without_traceback() -> None:
    result = run_cli("README.md")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr


BOARD = """#!/usr/bin/perl
require "bbslib.pl";
$lockfile = "bbs.lock";
$logfile = "bbs.log";
&LOCK($lockfile) or &error("busy");
open(IN, $logfile) or &error("open");
@lines = <IN>;
close(IN);
open(OUT, "> $logfile") or &error("open");
print OUT "new\\n", @lines;
close(OUT);
&UNLOCK($lockfile);
exit;
"""

BBSLIB = """sub LOCK {
    foreach (1 .. 5) {
        return 1 if mkdir($_[0], 0755);
        sleep(1);
    }
    return 0;
}
sub UNLOCK { rmdir($_[0]); }
sub error { print "Content-type: text/plain\\n\\n$_[0]\\n"; exit; }
1;
"""


def test_lock_subs_of_a_required_file_beside_the_script_are_read(tmp_path: Path) -> None:
    script = tmp_path / "bbs.cgi"
    script.write_text(BOARD)
    alone = json.loads(run_cli("--json", str(script)).stdout)
    # Not beside it: said once per sub (info), and not taken for "no lock".
    assert [(f["line"], f["rule"]) for f in alone["findings"]] == [
        (5, "unknown-sub"),
        (12, "unknown-sub"),
    ]
    assert "bbslib.pl, which it requires, is not beside it" in alone["findings"][0]["message"]
    (tmp_path / "bbslib.pl").write_text(BBSLIB)
    beside = run_cli("--json", str(script))
    assert beside.returncode == 0, beside.stderr
    assert json.loads(beside.stdout)["findings"] == []
    # Its own defects are not reported: it was not asked for.
    (tmp_path / "bbslib.pl").write_text(BBSLIB + 'open(X, ">$f"); flock(X, 2); print X 1;\n')
    assert json.loads(run_cli("--json", str(script)).stdout)["findings"] == []


def test_suggestions_spell_hash_and_array_elements_as_python(tmp_path: Path) -> None:
    script = tmp_path / "elem.cgi"
    script.write_text(
        'open(DAT, "+< $cf{datadir}/log.cgi");\n'
        "flock(DAT, 2);\n"
        "open(LOG, $a[0]);\n"
        'open(TMP, ">$dir/$name.$$");\n'
    )
    got = {f.line: f.suggestion for f in audit([(str(script), read_source(str(script)))])}
    assert got[1].startswith('DAT = open_("+<", f"{cf[\'datadir\']}/log.cgi") or die(')
    assert got[3].startswith('LOG = open_("<", a[0]) or die(')
    assert got[4].startswith('TMP = open_(">", f"{dir}/{name}.{os.getpid()}") or die(')
    for suggestion in got.values():
        compile_strictly(suggestion)


def test_unchecked_flock_message_is_one_sentence() -> None:
    [f] = [
        f
        for f in audit([("x.pl", 'open(OUT, ">>log") or die;\nflock(OUT, 2);\nprint OUT 1;\n')])
        if f.rule == "unchecked-result"
    ]
    assert f.message == (
        "flock(OUT, 2): its result is not checked; when it fails (a handle that did not "
        "open, EINTR, EBADF) it returns 0, and the script goes on without the lock"
    )


def test_unchecked_open_names_the_faithful_port_and_the_safer_change() -> None:
    [f] = audit([("x.pl", 'open(IN, "data.txt");\n@l = <IN>;\n')])
    assert 'The faithful port is IN = open_("<", "data.txt"): a failed open_ returns a false' in (
        f.message
    )
    assert "the safer change is to stop there" in f.message
    assert f.suggestion.startswith(
        'IN = open_("<", "data.txt") or die(f"Can\'t open data.txt: {OS_ERROR}")'
    )


def test_mkdir_lock_suggestion_uses_the_scripts_path_retries_stale_and_error_sub() -> None:
    script = """$lockfile = "./lock/bbs.lock";
if (-d $lockfile && -M $lockfile > 60 / 86400) { rmdir($lockfile); }
$retry = 3;
while (!mkdir($lockfile, 0755)) {
    if (--$retry <= 0) { &error("busy"); }
    sleep(2);
}
open(OUT, ">>bbs.log") or &error("open");
print OUT "x\\n";
close(OUT);
rmdir($lockfile);
sub error { print "Content-type: text/plain\\n\\n$_[0]\\n"; exit; }
"""
    [f] = audit([("bbs.cgi", script)])
    assert (f.line, f.rule) == (2, "stale-check-then-remove")
    assert f.suggestion.startswith('lock(lockfile, retry=3, wait=2, stale=60) or error("busy")  # ')
    loop = script.replace("$retry = 3;\nwhile (!mkdir($lockfile, 0755)) {", "foreach (1 .. 4) {")
    loop = loop.replace('if (--$retry <= 0) { &error("busy"); }', "last if mkdir($lockfile, 0755);")
    [g] = audit([("bbs.cgi", loop)])
    assert g.suggestion.startswith('lock(lockfile, retry=4, wait=2, stale=60) or error("busy")')


def test_constants_named_like_locks_are_not_lock_subs() -> None:
    code = (
        "$e = &POSIX::EWOULDBLOCK;\n$c = Time::HiRes::CLOCK_MONOTONIC();\n"
        "sigprocmask(POSIX::SIG_BLOCK(), $set);\n$f = &Fcntl::O_EXLOCK;\n"
        'open(OUT, ">>log") or die;\nprint OUT 1;\nclose(OUT);\n'
    )
    assert audit([("x.pl", code)]) == []


def test_non_ascii_file_names_in_messages_and_suggestions() -> None:
    # Found by the fuzz: an EUC-JP file name in an unchecked open raised UnicodeEncodeError.
    euc = "ログ.txt".encode("euc_jp").decode("latin-1")
    utf8 = "ログ.txt".encode().decode("latin-1")
    for name, shown in ((euc, "\\xa5\\xed\\xa5\\xb0.txt"), (utf8, "ログ.txt")):
        for code in (f'open(LOG, "{name}");\n', f'open LOG, "<{name}" || die;\n'):
            problems: list[Problem] = []
            [f] = audit([("x.pl", code)], problems)
            assert problems == []
            assert f.message.count(shown) >= 2 and "\\\\x" not in f.message, f.message
            compile_strictly(f.suggestion)


def test_a_loop_that_does_not_sleep_is_not_a_retry_loop() -> None:
    script = """$lockdir = "bbs.lock";
if (-M $lockdir > 600 / 86400) { rmdir($lockdir); }
foreach $n (1 .. 30) {
    mkdir($lockdir, 0755) or next;
    print "$n\\n";
    rmdir($lockdir);
}
"""
    [f] = audit([("x.cgi", script)])
    assert f.suggestion.startswith('lock(lockdir, stale=600) or die("busy")  # ')


@pytest.mark.parametrize(
    ("cond", "stale"),
    [
        ("time - (stat($lock))[9] > 60 * 10", 600),
        ("(stat($lock))[9] < time - 180", 180),
        ("-M $lock > 0.5", 43200),
        ("-M $lock > 600 / 86400", 600),
    ],
)
def test_stale_age_in_the_suggestion_is_the_scripts(cond: str, stale: int) -> None:
    code = f'$lock = "x.lock";\nif ({cond}) {{ rmdir($lock); }}\n'
    [f] = audit([("x.pl", code)])
    assert f.rule == "stale-check-then-remove"
    assert f.suggestion.startswith(f'lock(lock, stale={stale}) or die("busy")')


FLOCK_INIT = """sub init {
    open(LOCK, "> lockfile") or return 0;
    flock(LOCK, 2) or return 0;
    return 1;
}
"""
PLAIN_INIT = 'sub init { $count = 0; }\n&init();\nprint "ok\\n";\n'


def test_a_call_runs_its_own_files_sub_not_a_same_named_lock_sub_elsewhere() -> None:
    def rules(sources: list[tuple[str, str]]) -> set[tuple[str, int, str]]:
        return {(f.file, f.line, f.rule) for f in audit(sources)}

    assert rules([("b.pl", PLAIN_INIT)]) == set()
    # a.pl's `init` takes a flock and may return 0; b.pl's own `init` does not.
    assert rules([("a.pl", FLOCK_INIT), ("b.pl", PLAIN_INIT)]) == set()
    # ... nor the `init` of the file c.pl requires, though a.pl is audited with it.
    c = 'require "lib.pl";\n&init();\n'
    assert rules([("a.pl", FLOCK_INIT), ("lib.pl", PLAIN_INIT), ("c.pl", c)]) == set()
    # A file with no `init` of its own or loaded still reaches a.pl's: a lock, unchecked.
    d = "&init();\nprint 1;\n"
    assert rules([("a.pl", FLOCK_INIT), ("b.pl", PLAIN_INIT), ("d.pl", d)]) == {
        ("d.pl", 1, "unchecked-result")
    }
    # Another package's `init` is not a.pl's.
    assert rules([("a.pl", FLOCK_INIT), ("e.pl", "&Log::init();\n")]) == set()
    # a.pl's own unchecked call is still one.
    assert rules([("a.pl", FLOCK_INIT + "init();\n"), ("b.pl", PLAIN_INIT)]) == {
        ("a.pl", 6, "unchecked-result")
    }
