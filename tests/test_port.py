"""``perlcompat port``: every example's Perl original through the tool, its output run beside it.

Each script of examples/ is ported with no edit by hand; the output passes ``ruff check``
(ruff's default rules, no project config), compiles, and translates at least the share of
statements measured here.  The ports of the access counter and of the mkdir-lock guestbook
answer byte for byte what their Perl originals answer for the same requests, and lock with
them: Perl and Python processes hammer one data file and not one update is lost.  The other
examples' ports answer as their originals do for a sequence of requests on fresh data.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from jcodeperl import patched_jcode
from webserver import PACKAGE_ROOT, ServeProcess, find_tool

from perlcompat.tools.port.command import main as port_main
from perlcompat.tools.port.writer import Result, port

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
RUFF = Path(sys.executable).with_name("ruff")

#: script -> (statements translated, statements in all), measured with `perlcompat port`
COVERAGE = {
    "alarm_flock/visitors.cgi": (39, 40),  # `elsif ($@) { die }`: die without a message
    "bbs_sjis/bbs.cgi": (58, 58),
    "cgi_guestbook/guestbook.cgi": (46, 50),  # foreach aliasing four variables
    "counter/count.cgi": (14, 14),
    "delete_key/board.cgi": (50, 50),
    "mkdir_lock/guestbook.cgi": (61, 61),
    "rename_lockfile/ranking.cgi": (44, 44),
    "require_lib/count.cgi": (5, 5),
    "symlink_lock/vote.cgi": (50, 50),
    "toplock/workdata.cgi": (67, 67),
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Result]]:
    """Every example directory copied, each script beside its port ``NAME.port.py``."""
    www = tmp_path_factory.mktemp("port")
    results: dict[str, Result] = {}
    for script in COVERAGE:
        directory = www / Path(script).parent
        directory.mkdir(exist_ok=True)
        for source in (EXAMPLES / Path(script).parent).iterdir():
            if source.suffix in (".cgi", ".pl"):
                shutil.copy(source, directory / source.name)
        out = directory / (Path(script).stem + ".port.py")
        assert port_main([str(directory / Path(script).name), "-o", str(out)]) in (0, 1)
        results[script] = port(str(directory / Path(script).name))
        assert out.read_text(encoding="utf-8") == results[script].text
    patched_jcode(www / "bbs_sjis")
    return www, results


def cgi(command: list[str], cwd: Path, data: Path, query: str = "", body: bytes = b"") -> bytes:
    """One CGI request: the answer's bytes (stdout), stderr must be empty."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": PACKAGE_ROOT,
        "PERLCOMPAT_DATA_DIR": str(data),
        "REQUEST_METHOD": "POST" if body else "GET",
        "QUERY_STRING": query,
        "CONTENT_LENGTH": str(len(body)),
        "SCRIPT_NAME": "/script",
    }
    run = subprocess.run(
        command, cwd=cwd, env=env, input=body, capture_output=True, timeout=120, check=False
    )
    assert run.stderr == b"", (command, run.stderr.decode(errors="replace"))
    return run.stdout


def perl_and_port(www: Path, script: str) -> tuple[list[str], list[str]]:
    path = Path(script)
    return ["perl", path.name], [sys.executable, path.stem + ".port.py"]


def test_every_port_passes_ruff_and_compiles(site: tuple[Path, dict[str, Result]]) -> None:
    www, results = site
    run = subprocess.run(
        [str(RUFF), "check", "--isolated", "--no-cache", "--output-format", "concise", str(www)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    for script, result in results.items():
        compile(result.text, script, "exec")
        for lib in result.libraries:
            compile(lib.text, lib.path, "exec")


@pytest.mark.parametrize("script", sorted(COVERAGE))
def test_coverage_per_script(site: tuple[Path, dict[str, Result]], script: str) -> None:
    result = site[1][script]
    done, total = COVERAGE[script]
    print(f"{script}: {result.done}/{result.total} statements, {result.port_lines} # PORT lines")
    assert result.total == total
    assert result.done >= done
    assert result.text.count("# PORT: ") == result.port_lines
    assert (result.port_lines == 0) == (result.done == result.total)


def _normalize_times(data: bytes) -> bytes:
    return re.sub(rb"\b1\d{9}\b", b"TIME", data)


SEQUENCES = {
    "counter/count.cgi": [("", b"")] * 3,
    "mkdir_lock/guestbook.cgi": [
        ("", b""),
        ("", b"name=ann&comment=hello+world"),
        ("", b"name=%E3%81%82%82&comment=%3Cb%3E+%22q%22+a%26b%0D%0Anext"),
        ("", b""),
    ],
    "symlink_lock/vote.cgi": [
        ("item=apple", b""),
        ("item=pear", b""),
        ("item=apple", b""),
        ("", b""),
    ],
    "rename_lockfile/ranking.cgi": [("item=a", b""), ("item=b", b""), ("item=a", b""), ("", b"")],
    "toplock/workdata.cgi": [("data=x", b""), ("data=%E3%81%82", b""), ("", b"")],
    "alarm_flock/visitors.cgi": [("name=bob", b""), ("name=al+x", b""), ("", b"")],
    "delete_key/board.cgi": [("", b"")],
    "require_lib/count.cgi": [("", b"")] * 3,
    "bbs_sjis/bbs.cgi": [
        ("", b""),
        ("", b"name=%83%65%83X%83g&message=%82%A0%82%A2+%3Cb%3E"),
        ("", b"name=euc&message=%A4%A2%A4%A4"),
        ("", b""),
    ],
}


@pytest.mark.parametrize("script", sorted(SEQUENCES))
def test_port_answers_byte_for_byte_as_perl(
    site: tuple[Path, dict[str, Result]], script: str, tmp_path: Path
) -> None:
    """The same requests on fresh data: the same answers, the same data files."""
    www, _ = site
    perl, python = perl_and_port(www, script)
    cwd = www / Path(script).parent
    answers = {}
    files = {}
    for side, command in (("perl", perl), ("python", python)):
        data = tmp_path / side
        data.mkdir()
        answers[side] = [
            _normalize_times(cgi(command, cwd, data, q, body)) for q, body in SEQUENCES[script]
        ]
        files[side] = {  # (perlcompat's lock() keeps its owner record beside the lock)
            p.name: _normalize_times(p.read_bytes())
            for p in data.iterdir()
            if p.is_file() and not p.name.endswith(".owner")
        }
    assert answers["python"] == answers["perl"]
    assert files["python"] == files["perl"]


def _hammer(www: Path, script: str, data: Path, each: int, body: bytes | None) -> list[bytes]:
    """Two Perl and two Python clients, *each* requests apiece, all at once."""
    perl, python = perl_and_port(www, script)
    cwd = www / Path(script).parent

    def client(n: int) -> list[bytes]:
        command = (perl, python)[n % 2]
        out = []
        for i in range(each):
            post = body.replace(b"N", f"{n}x{i}".encode()) if body is not None else b""
            out.append(cgi(command, cwd, data, "", post))
        return out

    with ThreadPoolExecutor(4) as pool:
        return [answer for answers in pool.map(client, range(4)) for answer in answers]


def test_counter_port_and_perl_hammer_one_file(
    site: tuple[Path, dict[str, Result]], tmp_path: Path
) -> None:
    www, _ = site
    answers = _hammer(www, "counter/count.cgi", tmp_path, each=20, body=None)
    numbers = sorted(int(a.split(b"\n\n", 1)[1]) for a in answers)
    assert numbers == list(range(1, 81))  # every number handed out once: no update lost
    assert (tmp_path / "count.dat").read_bytes() == b"80\n"


def test_mkdir_lock_port_and_perl_hammer_one_guestbook(
    site: tuple[Path, dict[str, Result]], tmp_path: Path
) -> None:
    www, _ = site
    answers = _hammer(www, "mkdir_lock/guestbook.cgi", tmp_path, each=8, body=b"name=N&comment=c")
    assert all(b"Thank you" in a for a in answers), [a for a in answers if b"Thank you" not in a][
        :1
    ]
    names = [
        line.split(b"<>")[0] for line in (tmp_path / "guestbook.dat").read_bytes().splitlines()
    ]
    assert sorted(names) == sorted(f"{n}x{i}".encode() for n in range(4) for i in range(8))
    assert not (tmp_path / "guestbook.lock").exists()


def test_counter_port_under_serve_beside_perl(
    site: tuple[Path, dict[str, Result]], tmp_path: Path
) -> None:
    """The port as it is, under ``perlcompat serve`` (FastCGI), and the Perl CGI on one file."""
    www, _ = site
    sock = tmp_path / "serve.sock"
    data = tmp_path / "data"
    data.mkdir()
    # the data directory is the server's own environment: serve passes a request only
    # its CGI variables (a FastCGI param never sets PERLCOMPAT_*)
    env = {"PERLCOMPAT_DATA_DIR": str(data)}
    serve = ServeProcess(www / "counter", sock, env=env).start()
    tool = find_tool("cgi-fcgi")
    params = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "SCRIPT_FILENAME": str(www / "counter" / "count.port.py"),
        "REQUEST_METHOD": "GET",
        "QUERY_STRING": "",
    }

    def fastcgi(_: int) -> bytes:
        run = subprocess.run(
            [tool, "-bind", "-connect", str(sock)], env=params, capture_output=True, timeout=60
        )
        assert run.returncode == 0, run.stderr
        return run.stdout.partition(b"\r\n\r\n")[2]

    def perl(_: int) -> bytes:
        return cgi(["perl", "count.cgi"], www / "counter", data).partition(b"\n\n")[2]

    try:
        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(lambda n: (fastcgi, perl)[n % 2](n), range(40)))
    finally:
        serve.stop()
    assert sorted(int(a) for a in answers) == list(range(1, 41))
    assert (data / "count.dat").read_bytes() == b"40\n"


UNTRANSLATABLE = """\
#!/usr/bin/perl
$ref = \\@ARGV;   # a reference
local $x = 5;
$n = sprintf("%05d", 42);
print "n=$n\\n";
"""


def test_what_is_not_exact_stays_perl_with_a_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "odd.cgi"
    script.write_text(UNTRANSLATABLE)
    out = tmp_path / "odd.py"
    assert port_main([str(script), "-o", str(out)]) == 1
    text = out.read_text()
    assert "# PORT: $ref = \\@ARGV;   # a reference  (" in text
    assert "# PORT: local $x = 5;  (local (dynamic scope))" in text
    assert "n = format(42, '05d')" in text
    assert 'print_(STDOUT, f"n={n}\\n")' in text
    code = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    assert not [line for line in code if "ref" in line or "x = 5" in line]
    assert "2 line(s) left as # PORT" in capsys.readouterr().err
    assert os.access(out, os.X_OK)


def test_a_script_ppi_cannot_read_is_exit_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert port_main([str(tmp_path / "missing.cgi")]) == 2
    assert "cannot read" in capsys.readouterr().err
