"""Piped ``open_``, ``qx``, ``system`` and ``CHILD_ERROR`` (``$?``) against real ``perl``.

Each test runs a Perl script and its port line for line (``portcheck.both``) and
compares what they print, on which stream, and how they exit.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from perlutil import CHILD_ENV, PERL
from portcheck import PY_HEAD, both

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell commands")


def test_close_of_a_pipe_to_a_mailer_that_exits_3_is_false_with_status_768_and_die_exits_3(
    tmp_path: Path,
) -> None:
    status, out, err = both(
        tmp_path,
        'open(M, "|cat >/dev/null; exit 3") or die "open: $!";\n'
        'print M "To: x\\n\\nhi\\n";\n'
        "my $r = close(M);\n"
        'print "close=", ($r ? 1 : 0), " q=$? e=", $!+0, " hi=", $? >> 8, "\\n";\n'
        'die "mail failed: $?";\n',
        'M = open_("|cat >/dev/null; exit 3") or die(f"open: {E}")\n'
        'print_(M, "To: x\\n\\nhi\\n")\n'
        "r = close(M)\n"
        'print(f"close={r} q={Q} e={int(E)} hi={Q >> 8}")\n'
        'die(f"mail failed: {Q}")\n',
    )
    assert (status, out) == (3, b"close=0 q=768 e=0 hi=3\n")
    assert err == b"mail failed: 768 at ./script line 6.\n"


def test_a_mailer_that_reads_its_input_gets_it_and_close_is_true(tmp_path: Path) -> None:
    status, out, _ = both(
        tmp_path,
        'open(MAIL, "| tr a-z A-Z") or die;\n'
        'print MAIL "dear user\\n";\n'
        'close(MAIL) or die "close: $? $!";\n'
        'print "q=$?\\n";\n',
        'MAIL = open_("| tr a-z A-Z") or die()\n'
        'print_(MAIL, "dear user\\n")\n'
        'close(MAIL) or die(f"close: {Q} {E}")\n'
        'print(f"q={Q}")\n',
    )
    assert (status, out) == (0, b"DEAR USER\nq=0\n")


def test_reading_from_a_command_and_its_exit_status(tmp_path: Path) -> None:
    _, out, _ = both(
        tmp_path,
        "open(P, \"printf 'a\\\\nb\\\\n'; exit 2 |\") or die;\n"
        'while (my $l = <P>) { print "l=$l" }\n'
        "my $r = close(P);\n"
        'print "r=", ($r ? 1 : 0), " q=$? e=", $!+0, "\\n";\n'
        'open(P, "yes |") or die; <P>; $r = close(P); print "r=", ($r ? 1 : 0), " q=$?\\n";\n',
        "P = open_(\"printf 'a\\\\nb\\\\n'; exit 2 |\") or die()\n"
        'for l in P: print(f"l={l}", end="")\n'
        "r = close(P)\n"
        'print(f"r={r} q={Q} e={int(E)}")\n'
        'P = open_("yes |") or die(); P.readline(); r = close(P); print(f"r={r} q={Q}")\n',
    )
    # closing before the end: the command dies of SIGPIPE at its next write ($? 13)
    assert out == b"l=a\nl=b\nr=0 q=512 e=0\nr=0 q=13\n"


def test_three_argument_pipes_and_the_list_form_skip_the_shell(tmp_path: Path) -> None:
    _, out, _ = both(
        tmp_path,
        'open(P, "-|", "echo hi there") or die; print <P>; close(P);\n'
        'open(P, "-|", "echo", "a;b", "\\$HOME") or die; print <P>; close(P);\n'
        'open(W, "|-", "cat") or die; print W "to cat\\n"; close(W); print "q=$?\\n";\n',
        'P = open_("-|", "echo hi there") or die(); print(*P, end=""); close(P)\n'
        'P = open_("-|", ["echo", "a;b", "$HOME"]) or die(); print(*P, end=""); close(P)\n'
        'W = open_("|-", "cat") or die(); print_(W, "to cat\\n"); close(W); print(f"q={Q}")\n',
    )
    assert out == b"hi there\na;b $HOME\nto cat\nq=0\n"


def test_commands_that_cannot_start(tmp_path: Path) -> None:
    # without shell metacharacters Perl execs the command itself: "exit 5" does not exist
    _, out, _ = both(
        tmp_path,
        'my $r = open(M, "|no-such-mailer -t"); print "open=", ($r ? 1 : 0), " e=", $!+0, "\\n";\n'
        'my $x = `no-such-command`; print defined($x) ? "def" : "undef", " q=$? e=", $!+0, "\\n";\n'
        'my @l = `no-such-command`; print scalar(@l), "\\n";\n'
        '$r = system("exit 5"); print "r=$r q=$? e=", $!+0, "\\n";\n',
        'r = open_("|no-such-mailer -t"); print(f"open={1 if r else 0} e={int(E)}")\n'
        'x = qx("no-such-command"); print("undef" if x is None else "def", f"q={Q} e={int(E)}")\n'
        'l = qx_lines("no-such-command"); print(len(l))\n'
        'r = system("exit 5"); print(f"r={r} q={Q} e={int(E)}")\n',
    )
    assert out == b"open=0 e=2\nundef q=-1 e=2\n0\nr=-1 q=-1 e=2\n"


def test_qx_and_system_return_what_perl_returns(tmp_path: Path) -> None:
    _, out, _ = both(
        tmp_path,
        "my $x = `printf 'caf\\\\303\\\\251\\\\nb'; exit 2`; print \"[$x] q=$?\\n\";\n"
        "my @l = `printf 'a\\\\nb\\\\n'`; print scalar(@l), \" [$l[1]]\\n\";\n"
        'my $r = system("true; exit 5"); print "r=$r q=$?\\n";\n'
        '$r = system("sh", "-c", "kill -9 \\$\\$"); print "r=$r q=$?\\n";\n'
        'print `ls /no/such/dir 2>&1` ne "" ? "captured\\n" : "lost\\n";\n',
        'x = qx("printf \'caf\\\\303\\\\251\\\\nb\'; exit 2"); print(f"[{x}] q={Q}")\n'
        'l = qx_lines("printf \'a\\\\nb\\\\n\'"); print(len(l), f"[{l[1]}]")\n'
        'r = system("true; exit 5"); print(f"r={r} q={Q}")\n'
        'r = system("sh", "-c", "kill -9 $$"); print(f"r={r} q={Q}")\n'
        'print("captured" if qx("ls /no/such/dir 2>&1") != "" else "lost")\n',
    )
    assert out == "[café\nb] q=512\n2 [b\n]\nr=1280 q=1280\nr=9 q=9\ncaptured\n".encode()


def test_output_written_before_a_child_starts_comes_first(tmp_path: Path) -> None:
    # Perl flushes every output handle before it forks; the port's print() and handles too
    status, out, _ = both(
        tmp_path,
        'open(LOG, ">log") or die; print LOG "one\\n"; print "header\\n";\n'
        'system("cat log; echo child");\n'
        'print "body\\n"; my $x = `cat log`; print $x; close(LOG);\n',
        'LOG = open_(">log") or die(); print_(LOG, "one\\n"); print("header")\n'
        'system("cat log; echo child")\n'
        'print("body"); x = qx("cat log"); print(x, end=""); close(LOG)\n',
    )
    assert (status, out) == (0, b"header\none\nchild\nbody\none\n")


def test_a_pipe_left_open_is_closed_and_waited_for_at_exit_without_a_warning(
    tmp_path: Path,
) -> None:
    status, out, err = both(
        tmp_path,
        'open(M, "|cat > mailed; exit 7") or die;\n'
        'print M "sent at exit\\n"; print "parent done\\n";\n',
        'M = open_("|cat > mailed; exit 7") or die()\n'
        'print_(M, "sent at exit\\n"); print("parent done")\n',
    )
    assert (status, out, err) == (0, b"parent done\n", b"")
    for side in ("perl", "py"):
        assert (tmp_path / side / "mailed").read_bytes() == b"sent at exit\n"


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        ("", 255),  # nothing set
        ("`true; exit 4`; $! = 0;", 4),  # $? >> 8
        ("`true; exit 4`; $! = 2;", 2),  # $! first
    ],
)
def test_die_exits_with_errno_then_child_status_then_255(
    tmp_path: Path, setup: str, expected: int
) -> None:
    python = setup.replace("`true; exit 4`;", 'qx("true; exit 4");').replace("$! = ", "E.set(")
    python = python.replace("0;", "0);").replace("2;", "2);")
    status, _, err = both(tmp_path, setup + 'die "x\\n";\n', python + 'die("x\\n")\n')
    assert (status, err) == (expected, b"x\n")


def test_a_write_to_a_mailer_that_exited_kills_the_script_by_sigpipe(tmp_path: Path) -> None:
    # 1 MB is more than a pipe holds: the write blocks until `true` exits, then fails
    status, out, err = both(
        tmp_path,
        'print "before\\n"; open(M, "|true") or die;\n'
        'print M "x" x 1000000; close(M); print "survived\\n";\n',
        'print("before"); M = open_("|true") or die()\n'
        'print_(M, "x" * 1000000); close(M); print("survived")\n',
    )
    assert (status, out, err) == (-signal.SIGPIPE, b"before\n", b"")
    # a shell sees 141, as it does for perl
    port = tmp_path / "py"
    shell = subprocess.run(
        ["sh", "-c", f'"{sys.executable}" ./script; echo "status $?"'],
        cwd=port,
        capture_output=True,
        env=CHILD_ENV,
        timeout=60,
        check=False,
    )
    assert shell.stdout.endswith(b"status 141\n")


def test_sig_pipe_ignore_makes_print_false_with_epipe(tmp_path: Path) -> None:
    status, out, _ = both(
        tmp_path,
        '$SIG{PIPE} = "IGNORE"; open(M, "|true") or die;\n'
        'my $r = print M "x" x 1000000; print "print=", ($r ? 1 : 0), " e=", $!+0, "\\n";\n'
        '$r = close(M); print "close=", ($r ? 1 : 0), " q=$? e=", $!+0, "\\n";\n',
        'SIG["PIPE"] = "IGNORE"; M = open_("|true") or die()\n'
        'r = print_(M, "x" * 1000000); print(f"print={r} e={int(E)}")\n'
        'r = close(M); print(f"close={r} q={Q} e={int(E)}")\n',
    )
    assert (status, out) == (0, b"print=0 e=32\nclose=1 q=0 e=32\n")


def test_a_failed_flush_at_close_gives_minus_one(tmp_path: Path) -> None:
    # the child closes its stdin, then says so through a FIFO: the pending line cannot go
    for side in ("perl", "py"):
        (tmp_path / side).mkdir()
        os.mkfifo(tmp_path / side / "fifo")
    status, out, _ = both(
        tmp_path,
        '$SIG{PIPE} = "IGNORE"; open(M, "|exec 0<&-; echo closed >fifo; exit 3") or die;\n'
        'open(F, "<fifo") or die; my $ready = <F>; print M "pending\\n"; my $r = close(M);\n'
        'print "close=", ($r ? 1 : 0), " q=$? e=", $!+0, "\\n";\n',
        'SIG["PIPE"] = "IGNORE"; M = open_("|exec 0<&-; echo closed >fifo; exit 3") or die()\n'
        'F = open_("<fifo") or die(); ready = F.readline(); print_(M, "pending\\n"); r = close(M)\n'
        'print(f"close={r} q={Q} e={int(E)}")\n',
    )
    assert (status, out) == (0, b"close=0 q=-1 e=32\n")


def test_subprocess_loads_with_the_first_pipe_not_with_perlcompat_or_a_file() -> None:
    code = (
        "import sys, perlcompat\n"
        "from perlcompat import open_, close\n"
        "fh = open_('<', sys.executable); close(fh)\n"
        "print('subprocess' in sys.modules, 'perlcompat.perl.process' in sys.modules)\n"
        "fh = open_('| cat'); close(fh)\n"
        "print('subprocess' in sys.modules, 'perlcompat.perl.process' in sys.modules)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, env=CHILD_ENV, timeout=60, check=True
    )
    assert proc.stdout == b"False False\nTrue True\n"


def test_child_error_reads_like_an_int() -> None:
    from perlcompat import CHILD_ERROR, system

    assert system("true; exit 3") == 768
    assert CHILD_ERROR == 768 and int(CHILD_ERROR) == 768 and CHILD_ERROR >> 8 == 3
    assert CHILD_ERROR & 127 == 0 and bool(CHILD_ERROR) and f"{CHILD_ERROR}" == "768"
    CHILD_ERROR.set(0)
    assert not CHILD_ERROR and CHILD_ERROR == 0 and repr(CHILD_ERROR) == "CHILD_ERROR(0)"
    assert os.WEXITSTATUS(system("true")) == 0


@pytest.mark.parametrize("ignore", [False, True])
def test_stdout_to_a_reader_that_went_away_ends_as_perl_does(tmp_path: Path, ignore: bool) -> None:
    # `script | head -1`: the reader is gone (closed here) before the script writes
    perl = (
        "$l = <STDIN>; $| = 1; $r = print 'x' x 100000;\n"
        "print STDERR 'r=', ($r ? 1 : 0), ' e=', $!+0, \"\\n\";\n"
    )
    python = (
        "l = STDIN.readline(); STDOUT.autoflush(1); r = print_(STDOUT, 'x' * 100000)\n"
        "print(f'r={r} e={int(E)}', file=sys.stderr)\n"
    )
    if ignore:
        perl, python = "$SIG{PIPE} = 'IGNORE'; " + perl, "SIG['PIPE'] = 'IGNORE'; " + python
    results = []
    for interpreter, code in ((PERL, perl), (sys.executable, PY_HEAD + python)):
        proc = subprocess.Popen(
            [interpreter, "-e" if interpreter == PERL else "-c", code],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=CHILD_ENV,
        )
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        proc.stdin.write(b"go\n")
        proc.stdin.close()
        err = proc.stderr.read()
        proc.stderr.close()
        results.append((proc.wait(timeout=60), err))
    assert results[0] == results[1]
    assert results[1] == ((0, b"r=0 e=32\n") if ignore else (-signal.SIGPIPE, b""))


def test_tell_and_seek_on_pipes_as_perlio(tmp_path: Path) -> None:
    # PerlIO counts a pipe's bytes from 0; seek fails with ESPIPE and loses no read-ahead
    _, out, _ = both(
        tmp_path,
        'open(P, "printf \\"ab\\\\ncd\\\\n\\" |") or die; print "e=", $!+0, " t=",tell(P),"\\n";\n'
        'my $l = <P>; my $r = seek(P, 0, 0); print "t=", tell(P), " seek=", ($r ? 1 : 0), "\\n";\n'
        'print "e=", $!+0, " next=", scalar(<P>); close(P);\n'
        'open(W, "|cat >/dev/null") or die; print W "xyz"; print "w=", tell(W), "\\n"; close(W);\n',
        'P = open_("printf \\"ab\\\\ncd\\\\n\\" |") or die(); print(f"e={int(E)} t={tell(P)}")\n'
        'l = P.readline(); r = seek(P, 0, 0); print(f"t={tell(P)} seek={r}")\n'
        'print(f"e={int(E)} next={P.readline()}", end=""); close(P)\n'
        'W = open_("|cat >/dev/null") or die(); print_(W, "xyz"); print(f"w={tell(W)}");close(W)\n',
    )
    assert out == b"e=29 t=0\nt=3 seek=0\ne=29 next=cd\nw=3\n"
