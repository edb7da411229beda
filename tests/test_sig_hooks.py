"""``SIG["__DIE__"]``, ``SIG["__WARN__"]`` and ``die``'s file name, against real ``perl``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from perlutil import CHILD_ENV, PERL
from portcheck import both

from perlcompat import SIG, Die, die, local_sig, warn


def test_warn_hook_gets_the_message_instead_of_printing_and_warn_inside_it_prints(
    tmp_path: Path,
) -> None:
    status, out, err = both(
        tmp_path,
        '$SIG{__WARN__} = sub { print "W:[$_[0]]\\n"; warn "inner\\n" };\n'
        'warn "hello"; warn "two\\n"; print "after\\n";\n'
        '$SIG{__WARN__} = "DEFAULT"; warn "plain\\n";\n',
        'def hook(m): print(f"W:[{m}]", flush=True); warn("inner\\n")\n'
        'SIG["__WARN__"] = hook; warn("hello"); warn("two\\n"); print("after", flush=True)\n'
        'SIG["__WARN__"] = "DEFAULT"; warn("plain\\n")\n',
    )
    assert status == 0
    assert out == b"W:[hello at ./script line 3.\n]\nW:[two\n]\nafter\n"
    assert err == b"inner\ninner\nplain\n"


def test_die_hook_runs_inside_eval_too_and_the_die_goes_on(tmp_path: Path) -> None:
    status, out, err = both(
        tmp_path,
        '$SIG{__DIE__} = sub { print "D:[$_[0]]\\n" };\n'
        'eval { die "in eval\\n" };\n'
        'print "caught: $@";\n'
        'die "final";\n',
        'SIG["__DIE__"] = lambda m: print(f"D:[{m}]", flush=True)\n'
        'try: die("in eval\\n")\n'
        'except Die as e: print(f"caught: {e}", end="", flush=True)\n'
        'die("final")\n',
    )
    assert status == 255
    assert out == b"D:[in eval\n]\ncaught: in eval\nD:[final at ./script line 5.\n]\n"
    assert err == b"final at ./script line 5.\n"


def test_a_die_hook_that_dies_replaces_the_message_and_is_off_inside_itself(
    tmp_path: Path,
) -> None:
    status, _, err = both(
        tmp_path,
        '$SIG{__DIE__} = sub { die "wrapped: $_[0]" };\ndie "orig\\n";\n',
        'SIG["__DIE__"] = lambda m: die("wrapped: " + m)\ndie("orig\\n")\n',
    )
    assert (status, err) == (255, b"wrapped: orig\n")


def test_a_die_hook_that_exits_sets_the_status(tmp_path: Path) -> None:
    status, out, err = both(
        tmp_path,
        '$SIG{__DIE__} = sub { print "D:$_[0]"; exit 7 };\ndie "x\\n";\n',
        'SIG["__DIE__"] = lambda m: (print(f"D:{m}", end=""), sys.exit(7))\ndie("x\\n")\n',
    )
    assert (status, out, err) == (7, b"D:x\n", b"")


def test_die_names_the_script_as_it_was_invoked(tmp_path: Path) -> None:
    for name, code in (
        ("count.pl", 'die "boom";\n'),
        ("count.py", "from perlcompat import die\ndie('boom')\n"),
    ):
        (tmp_path / name).write_text(code)
    (tmp_path / "sub").mkdir()
    runs = {
        "./count": ".",
        "count": ".",
        "../count": "sub",
        str(tmp_path / "count"): "sub",
    }
    for invoked, cwd in runs.items():
        perl = subprocess.run(
            [PERL, invoked + ".pl"],
            cwd=tmp_path / cwd,
            capture_output=True,
            timeout=60,
            check=False,
        )
        port = subprocess.run(
            [sys.executable, invoked + ".py"],
            cwd=tmp_path / cwd,
            capture_output=True,
            timeout=60,
            env=CHILD_ENV,
            check=False,
        )
        assert perl.stderr == f"boom at {invoked}.pl line 1.\n".encode()
        assert port.stderr == f"boom at {invoked}.py line 2.\n".encode()
        assert perl.returncode == port.returncode == 255


def test_an_uncaught_python_error_reaches_the_die_hook_before_the_traceback(
    tmp_path: Path,
) -> None:
    # CGI::Carp's fatalsToBrowser: the hook shows the error; Python's traceback still follows
    script = tmp_path / "cgi.py"
    script.write_text(
        "from perlcompat import SIG\n"
        'SIG["__DIE__"] = lambda m: print("Content-Type: text/plain\\n\\n" + m, end="")\n'
        "1 / 0\n"
    )
    proc = subprocess.run(
        [sys.executable, "cgi.py"], cwd=tmp_path, capture_output=True, timeout=60, env=CHILD_ENV
    )
    assert proc.stdout == (
        b"Content-Type: text/plain\n\nZeroDivisionError: division by zero at cgi.py line 3.\n"
    )
    assert b"Traceback" in proc.stderr and proc.returncode == 1


def test_sig_hooks_read_back_and_local_sig_restores_them() -> None:
    assert SIG["__DIE__"] is None and SIG["__WARN__"] is None  # Perl: undef
    seen: list[str] = []
    with local_sig("__WARN__", seen.append):
        assert SIG["__WARN__"] == seen.append
        assert warn("quiet\n") == 1
        with local_sig("__DIE__", seen.append), pytest.raises(Die):
            die("loud\n")
    assert seen == ["quiet\n", "loud\n"]
    assert SIG["__DIE__"] is None and SIG["__WARN__"] is None
    with pytest.raises(TypeError, match="must be a callable"):
        SIG["__DIE__"] = "main::handler"
    SIG["__WARN__"] = "IGNORE"  # as in Perl: no hook, warnings print
    assert SIG["__WARN__"] is None
    assert "__DIE__" in SIG


def test_sig_pipe_reads_default_until_set_and_local_sig_puts_pythons_back() -> None:
    import signal

    from perlcompat.perl import openfiles

    assert SIG["PIPE"] == "DEFAULT"  # Perl's default: a broken pipe kills
    with local_sig("PIPE", "IGNORE"):
        assert SIG["PIPE"] == "IGNORE" and openfiles.PIPE_IGNORED
    assert SIG["PIPE"] == "DEFAULT" and not openfiles.PIPE_IGNORED
    assert signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN  # Python's own, for its streams
