"""STDIN, STDOUT, STDERR and read(): a Perl script and its Python port give the same bytes.

Each case runs a Perl script and its line-for-line port as real processes on the
same input and data file; stdout (and stderr where it matters) must be equal
byte for byte.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = str(Path(__file__).resolve().parent.parent)
PRELUDE = "import os, sys\nfrom perlcompat import *\nfrom perlcompat import readline\n"


def run(argv: list[str], stdin: bytes, cwd: Path, merge: bool = False) -> tuple[bytes, bytes]:
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("PYTHONUNBUFFERED", None)  # (python -u would be Perl's $| = 1)
    proc = subprocess.run(
        argv,
        input=stdin,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merge else subprocess.PIPE,
        check=False,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, proc.stderr or b""


def both(
    tmp: Path, perl: str, python: str, stdin: bytes = b"", merge: bool = False
) -> tuple[bytes, bytes]:
    (tmp / "t.pl").write_text(perl, encoding="utf-8")
    (tmp / "t.py").write_text(PRELUDE + python, encoding="utf-8")
    want = run(["perl", "t.pl"], stdin, tmp, merge)
    got = run([sys.executable, "t.py"], stdin, tmp, merge)
    assert got == want
    return got


SJIS_LINE = "表示ソ能 テスト\n".encode("cp932")  # bytes 0x5C inside, not UTF-8
UTF8_LOG = "こんにちは\n".encode() + b"bad \xff\xfe byte \xe3\x81\n" + "最後\n".encode()


def test_a_shift_jis_line_from_a_file_comes_out_unchanged(tmp_path: Path) -> None:
    (tmp_path / "bbs.dat").write_bytes(SJIS_LINE * 3)
    out, _ = both(
        tmp_path,
        'open(IN, "< bbs.dat") or die; $line = <IN>; close(IN);\n'
        'print STDOUT "Content-Type: text/html; charset=Shift_JIS\\n\\n";\n'
        'print STDOUT "<p>$line</p>";\n',
        'IN = open_("< bbs.dat") or die()\nline = readline(IN)\nclose(IN)\n'
        'print_(STDOUT, "Content-Type: text/html; charset=Shift_JIS\\n\\n")\n'
        'print_(STDOUT, f"<p>{line}</p>")\n',
    )
    assert SJIS_LINE in out


def test_a_utf8_log_with_stray_bytes_prints_what_perl_prints(tmp_path: Path) -> None:
    (tmp_path / "log.txt").write_bytes(UTF8_LOG)
    out, _ = both(
        tmp_path,
        'open(IN, "< log.txt") or die; @lines = <IN>; close(IN);\n'
        'print "Content-Type: text/html; charset=UTF-8\\n\\n";\n'
        'foreach $l (@lines) { chomp $l; print STDOUT "<li>", $l, "</li>\\n"; }\n',
        'IN = open_("< log.txt") or die()\nlines = IN.readlines()\nclose(IN)\n'
        'print_(STDOUT, "Content-Type: text/html; charset=UTF-8\\n\\n")\n'
        'for l in lines:\n    print_(STDOUT, "<li>", l.rstrip("\\n"), "</li>\\n")\n',
    )
    assert b"\xff\xfe" in out


@pytest.mark.parametrize(
    ("perl_layer", "py_layer"),
    [("", None), (", ':raw'", '":raw"'), (", ':crlf'", '":crlf"'), (", ':bytes'", '":bytes"')],
)
def test_binmode_stdout_as_perl(tmp_path: Path, perl_layer: str, py_layer: str | None) -> None:
    (tmp_path / "d.txt").write_bytes(SJIS_LINE + b"two\r\nthree\n")
    py_binmode = "binmode(STDOUT)" if py_layer is None else f"binmode(STDOUT, {py_layer})"
    both(
        tmp_path,
        f'binmode(STDOUT{perl_layer}) or die;\nopen(IN, "< d.txt"); print STDOUT <IN>;\n'
        'print STDOUT "end\\n";\n',
        f'{py_binmode} or die()\nIN = open_("< d.txt")\nprint_(STDOUT, *IN.readlines())\n'
        'print_(STDOUT, "end\\n")\n',
    )


def test_binmode_stdout_encoding_writes_characters_in_it(tmp_path: Path) -> None:
    out, _ = both(
        tmp_path,
        'use utf8;\nbinmode(STDOUT, ":encoding(cp932)");\nprint STDOUT "表示テスト\\n";\n',
        'binmode(STDOUT, ":encoding(cp932)")\nprint_(STDOUT, "表示テスト\\n")\n',
    )
    assert out == "表示テスト\n".encode("cp932")


def test_print_returns_true_and_stderr_is_unbuffered(tmp_path: Path) -> None:
    out, _ = both(
        tmp_path,
        '$r = print STDOUT "out1\\n"; print STDERR "err1 $r\\n";\n'
        'print STDOUT "out2\\n"; print STDERR "err2\\n";\n',
        'r = print_(STDOUT, "out1\\n")\nprint_(STDERR, f"err1 {r}\\n")\n'
        'print_(STDOUT, "out2\\n")\nprint_(STDERR, "err2\\n")\n',
        merge=True,
    )
    assert out == b"err1 1\nerr2\nout1\nout2\n"  # STDOUT to a pipe: written at exit


def test_autoflush_is_perls_dollar_bar(tmp_path: Path) -> None:
    out, _ = both(
        tmp_path,
        '$| = 1;\nprint STDOUT "out1\\n"; print STDERR "err1\\n"; print STDOUT "out2\\n";\n',
        'STDOUT.autoflush(1)\nprint_(STDOUT, "out1\\n"); print_(STDERR, "err1\\n")\n'
        'print_(STDOUT, "out2\\n")\n',
        merge=True,
    )
    assert out == b"out1\nerr1\nout2\n"


def test_print_and_print_to_stdout_keep_their_order(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(
        PRELUDE + 'print("Content-Type: text/plain\\n")\nprint_(STDOUT, "body\\n")\n'
        'print("more", end="")\nprint_(STDOUT, " and more\\n")\nsys.stdout.write("end\\n")\n'
    )
    out, _ = run([sys.executable, "t.py"], b"", tmp_path)
    assert out == b"Content-Type: text/plain\n\nbody\nmore and more\nend\n"


POST = ("名前=" + "テスト" * 700 + "&msg=あいう\xff").encode("utf-8", "surrogateescape")


def test_read_stdin_content_length_loop(tmp_path: Path) -> None:
    """The hand-rolled form reader: read(STDIN, $buffer, $ENV{CONTENT_LENGTH})."""
    perl = (
        "$len = $ENV{CONTENT_LENGTH};\n"
        "$n = read(STDIN, $buffer, $len);\n"
        'print "$n ", length($buffer), "\\n";\n'
        "@pairs = split(/&/, $buffer);\n"
        'foreach $p (@pairs) { ($k, $v) = split(/=/, $p); print "$k|$v\\n"; }\n'
        '$n = read(STDIN, $rest, 10); print "after: $n [$rest]\\n";\n'
    )
    python = (
        'length = int(os.environ["CONTENT_LENGTH"])\n'
        "buffer = Scalar()\n"
        "n = read(STDIN, buffer, length)\n"
        "print_(STDOUT, f\"{n} {len(buffer.value.encode('utf-8', 'surrogateescape'))}\\n\")\n"
        'for p in split("&", buffer.value):\n'
        '    k, v = split("=", p)[:2]\n'
        '    print_(STDOUT, f"{k}|{v}\\n")\n'
        "rest = Scalar()\n"
        'n = read(STDIN, rest, 10)\nprint_(STDOUT, f"after: {n} [{rest}]\\n")\n'
    )
    os.environ["CONTENT_LENGTH"] = str(len(POST))
    try:
        both(tmp_path, perl, python, stdin=POST + b"&trailing=1")
    finally:
        del os.environ["CONTENT_LENGTH"]


def test_read_in_chunks_with_an_offset_joins_split_characters(tmp_path: Path) -> None:
    perl = (
        "$buf = '';\n"
        'while (($n = read(STDIN, $buf, 7, length($buf))) > 0) { print "$n,"; }\n'
        'print " [$n] $buf\\n";\n'
        'read(STDIN, $x, 5, 3); print defined($x) ? "<$x>" : \'undef\', "\\n";\n'
    )
    python = (
        'buf = Scalar("")\n'
        "while (n := read(STDIN, buf, 7, len(buf))) > 0:\n"
        '    print_(STDOUT, f"{n},")\n'
        'print_(STDOUT, f" [{n}] {buf}\\n")\n'
        "x = Scalar()\nread(STDIN, x, 5, 3)\n"
        'print_(STDOUT, f"<{x}>\\n")\n'
    )
    out, _ = both(tmp_path, perl, python, stdin=POST)
    assert POST in out
    py = (tmp_path / "t.py").read_text()
    assert (
        "あいう"
        in subprocess.run(  # split characters are whole again in the value
            [sys.executable, "-c", py + "assert 'あいう' in buf.value; print('あいう')"],
            input=POST,
            capture_output=True,
            cwd=tmp_path,
            env=dict(os.environ, PYTHONPATH=ROOT),
            check=True,
        ).stdout.decode()
    )


def test_close_stdout_ends_the_response_and_the_script_goes_on(tmp_path: Path) -> None:
    out, err = both(
        tmp_path,
        'print "Content-Type: text/plain\\n\\ndone\\n"; close(STDOUT);\n'
        'open(OUT, "> after.txt"); print OUT "ran"; close(OUT);\n',
        'print_(STDOUT, "Content-Type: text/plain\\n\\ndone\\n")\nclose(STDOUT)\n'
        'OUT = open_("> after.txt"); print_(OUT, "ran"); close(OUT)\n',
    )
    assert out.endswith(b"done\n") and err == b""
    assert (tmp_path / "after.txt").read_bytes() == b"ran"


def test_read_and_print_on_closed_handles_give_perls_values(tmp_path: Path) -> None:
    both(
        tmp_path,
        "close(STDIN); $r = read(STDIN, $b, 5);\n"
        'print defined($r) ? "def" : "undef", " ", ($! + 0 == 9 ? "EBADF" : $! + 0), "\\n";\n',
        "close(STDIN)\nr = read(STDIN, Scalar(), 5)\n"
        'print_(STDOUT, "def" if r is not None else "undef", " ",'
        ' "EBADF" if OS_ERROR == 9 else int(OS_ERROR), "\\n")\n',
    )


def test_std_handles_follow_new_descriptors_in_a_forked_child(tmp_path: Path) -> None:
    """A FastCGI-style server: import and read before fork, the child gets new fds 0 and 1."""
    script = PRELUDE + (
        "first = readline(STDIN)\n"  # the parent reads ahead: the buffer holds line2 too
        "rin, win = os.pipe(); rout, wout = os.pipe()\n"
        "os.write(win, b'child request\\n'); os.close(win)\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os.dup2(rin, 0); os.dup2(wout, 1)\n"
        "    line = readline(STDIN)\n"
        "    print_(STDOUT, 'child got: ', line)\n"
        "    STDOUT.flush(); os._exit(0)\n"
        "os.close(wout); os.waitpid(pid, 0)\n"
        "child = os.read(rout, 1000)\n"
        "print_(STDOUT, 'parent: ', first, readline(STDIN), child.decode())\n"
    )
    (tmp_path / "t.py").write_text(script)
    out, _ = run([sys.executable, "t.py"], b"line1\nline2\n", tmp_path)
    assert out == b"parent: line1\nline2\nchild got: child request\n"


def test_star_import_gains_the_handles_and_shadows_no_standard_module() -> None:
    import perlcompat

    mine = {"STDIN", "STDOUT", "STDERR", "read", "Scalar"}
    assert mine <= set(perlcompat.__all__)
    assert "cgi" not in perlcompat.__all__  # perlcompat.cgi is imported by name
    stdlib = getattr(sys, "stdlib_module_names", {"cgi", "io", "os", "sys", "time"})
    assert not mine & set(stdlib)


def test_a_die_keeps_what_stdout_had_buffered(tmp_path: Path) -> None:
    """Perl flushes STDOUT when a die ends the script: the partial page reaches the server."""
    (tmp_path / "t.pl").write_text('print STDOUT "Content-Type: text/plain\\n\\npartial\\n";\n'
                                   'sub f { die "boom\\n" } f();\n')  # fmt: skip
    (tmp_path / "t.py").write_text(
        PRELUDE + 'print_(STDOUT, "Content-Type: text/plain\\n\\npartial\\n")\n'
        'def f():\n    die("boom\\n")\nf()\n'
    )
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("PYTHONUNBUFFERED", None)
    runs = [
        subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, check=False, timeout=60)
        for argv in (["perl", "t.pl"], [sys.executable, "t.py"])
    ]
    assert [(r.returncode, r.stdout, r.stderr) for r in runs] == [
        (255, b"Content-Type: text/plain\n\npartial\n", b"boom\n")
    ] * 2


def test_fork_flushes_stdout_first_so_a_child_does_not_repeat_it(tmp_path: Path) -> None:
    """Perl flushes output handles before ``fork``: what the parent printed is not the child's.

    A FastCGI-style server that printed a line before forking a request's child
    (new fd 1) must not send that line again in the child's response.
    """
    perl = (
        'print STDOUT "parent started\\n";\n'
        "pipe(my $r, my $w) or die;\n"
        "my $pid = fork;\n"
        'if (!$pid) { open(STDOUT, ">&", $w) or die; print STDOUT "child response\\n"; exit 0 }\n'
        "close $w; waitpid($pid, 0);\n"
        'my $got = do { local $/; <$r> }; print STDOUT "child wrote: [$got]\\n";\n'
    )
    python = (
        'print_(STDOUT, "parent started\\n")\n'
        "r, w = os.pipe()\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        '    os.dup2(w, 1); print_(STDOUT, "child response\\n"); sys.exit(0)\n'
        "os.close(w); os.waitpid(pid, 0)\n"
        "got = os.read(r, 1000).decode()\n"
        'print_(STDOUT, f"child wrote: [{got}]\\n")\n'
    )
    out, _ = both(tmp_path, perl, python)
    assert out == b"parent started\nchild wrote: [child response\n]\n"


def test_read_stdin_of_a_big_body_takes_linear_time(tmp_path: Path) -> None:
    """``read(STDIN, $buffer, $ENV{CONTENT_LENGTH})`` of 32 MB: perl's bytes, within 10x its time.

    The read-ahead grew by 8 KiB a read as a new bytes object each time: 7.7 s for
    16 MB where perl takes 0.2 s.
    """
    import time

    body = bytes(range(256)) * (32 << 12)
    env = dict(os.environ, PYTHONPATH=ROOT, CONTENT_LENGTH=str(len(body)))
    perl = (
        "read(STDIN, $b, $ENV{CONTENT_LENGTH}); binmode STDOUT;"
        ' print length($b), " ", unpack("%32C*", $b);'
    )
    python = (
        PRELUDE + 'b = Scalar(); read(STDIN, b, int(os.environ["CONTENT_LENGTH"]))\n'
        'raw = b.value.encode("utf-8", "surrogateescape")\n'
        'print_(STDOUT, len(raw), " ", sum(raw) % 2**32)\n'
    )
    (tmp_path / "t.py").write_text(python)
    times, outs = [], []
    for argv in (["perl", "-e", perl], [sys.executable, str(tmp_path / "t.py")]):
        start = time.perf_counter()
        run = subprocess.run(argv, input=body, env=env, capture_output=True, check=True)
        times.append(time.perf_counter() - start)
        outs.append(run.stdout)
    assert outs[1] == outs[0] == b"%d %d" % (len(body), sum(body) % 2**32)
    assert times[1] < max(1.5, 10 * times[0]), times
