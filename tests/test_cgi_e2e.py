"""End to end: every example's Perl original and Python port under one real lighttpd.

Both versions of a script are CGIs on one server and share one data directory;
many concurrent HTTP requests go to both, interleaved, then the invariants are
checked on the files: the count equals the requests, every post is there exactly
once, no lock is left behind, the Shift_JIS board still decodes as Shift_JIS.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import signal
import subprocess
import sys
import time
import urllib.parse
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from jcodeperl import patched_jcode
from webserver import EXAMPLES, PACKAGE_ROOT, CgiServer, copy_examples, find_tool

THREADS = 8
ALARM_WAIT = 1  # visitors.cgi/.py: seconds to wait for the lock before "time out"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CgiServer]:
    base = tmp_path_factory.mktemp("cgi")
    www = base / "www"
    data = base / "data"
    www.mkdir()
    data.mkdir()
    copy_examples(www)
    patched_jcode(www / "bbs_sjis")  # bbs.cgi does require './jcode.pl'
    env = {
        "PERLCOMPAT_DATA_DIR": str(data),
        "PERLCOMPAT_ALARM_WAIT": str(ALARM_WAIT),
        "PYTHONPATH": PACKAGE_ROOT,
    }
    srv = CgiServer(www, env).start()
    yield srv
    srv.stop()


def data_dir(server: CgiServer) -> Path:
    return Path(server.env["PERLCOMPAT_DATA_DIR"])


def hammer(server: CgiServer, calls: list[tuple[str, bytes | None]]) -> list[tuple[int, bytes]]:
    """Send every (path, POST body or None) with THREADS at a time; results in order."""
    with ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(lambda call: server.request(*call), calls))


def interleave(scripts: list[str], count: int) -> list[str]:
    """*count* script paths taking turns: Perl, Python, Perl, ..."""
    return [scripts[i % len(scripts)] for i in range(count)]


def assert_unlocked(path: Path) -> None:
    """Nobody holds a flock on *path*: LOCK_EX|LOCK_NB succeeds at once."""
    with open(path, "rb") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)


def owner_record(path: Path) -> bytes:
    """The holder record perlcompat keeps beside a mkdir lock (blank or absent when free)."""
    return path.read_bytes().strip() if path.exists() else b""


def no_temp_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


# -- access counter: +< seek/print/truncate(tell) under flock -------------------
def test_counter_counts_every_request(server: CgiServer) -> None:
    n = 120
    paths = interleave(["counter/count.cgi", "counter/count.py"], n)
    results = hammer(server, [(p, None) for p in paths])
    assert [status for status, _ in results] == [200] * n, results[:3]
    numbers = sorted(int(body) for _, body in results)
    assert numbers == list(range(1, n + 1))  # every visitor number handed out exactly once
    count_file = data_dir(server) / "count.dat"
    assert count_file.read_bytes() == f"{n}\n".encode()
    assert_unlocked(count_file)


# -- Shift_JIS bulletin board: lock before reading, add on top, rewrite -----------
def sjis_form(name: str, message: str) -> bytes:
    return urllib.parse.urlencode({"name": name, "message": message}, encoding="cp932").encode()


def perl_escape(text: str) -> str:
    """What bbs.cgi does to a form value (Perl's four s///g and the newline rule)."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = text.replace('"', "&quot;")
    return re.sub(r"\r\n|\r|\n", "<br>", text)


def test_bbs_script_is_shift_jis_text() -> None:
    source = (Path(__file__).resolve().parent.parent / "examples/bbs_sjis/bbs.cgi").read_bytes()
    with pytest.raises(UnicodeDecodeError):
        source.decode("utf-8")
    assert "掲示板" in source.decode("shift_jis")


def test_bbs_sjis_keeps_every_post_once(server: CgiServer) -> None:
    n = 80
    # 表, ソ and 能 end in byte 0x5C (backslash); 〜 and ① are cp932-only in places
    messages = {
        f"post-{i:03d}": f'表示ソ能 テスト{i}\n<b>&"{i}"' if i % 2 else f"こんにちは {i} 番"
        for i in range(n)
    }
    paths = interleave(["bbs_sjis/bbs.cgi", "bbs_sjis/bbs.py"], n)
    calls = [
        (path, sjis_form(f"名無し{key}", message))
        for path, (key, message) in zip(paths, messages.items())
    ]
    results = hammer(server, calls)
    assert [status for status, _ in results] == [200] * n
    posted = sorted(int(re.search(rb"No\.(\d+) ", body).group(1)) for _, body in results)  # type: ignore[union-attr]
    assert posted == list(range(1, n + 1))

    raw = (data_dir(server) / "bbs.dat").read_bytes()
    text = raw.decode("shift_jis")  # strict: the file is still pure Shift_JIS
    lines = text.splitlines()
    assert len(lines) == n
    numbers = [int(line.split("<>")[0]) for line in lines]
    assert numbers == list(range(n, 0, -1))  # newest first, no number lost or repeated
    seen = Counter((line.split("<>")[1], line.split("<>")[2]) for line in lines)
    for key, message in messages.items():
        assert seen[(f"名無し{key}", perl_escape(message))] == 1, key
    for key, message in messages.items():  # Perl and Python wrote the same bytes
        assert raw.count(f"<>名無し{key}<>{perl_escape(message)}<>".encode("cp932")) == 1

    views = {path: server.request(path) for path in ("bbs_sjis/bbs.cgi", "bbs_sjis/bbs.py")}
    perl_page, python_page = views["bbs_sjis/bbs.cgi"], views["bbs_sjis/bbs.py"]
    assert perl_page[0] == python_page[0] == 200
    assert perl_page[1].replace(b"bbs.cgi", b"bbs.py") == python_page[1]  # byte-identical pages
    assert_unlocked(data_dir(server) / "bbs.dat")


# -- delete keys: unchecked open, (stat)[9], crypt, split(/<>/) -----------------------
def test_delete_key_board_first_visit_has_no_log(tmp_path: Path) -> None:
    """Both scripts show an empty board when the log does not exist yet (unchecked open)."""
    env = dict(os.environ, PERLCOMPAT_DATA_DIR=str(tmp_path), REQUEST_METHOD="GET")
    env["PYTHONPATH"] = PACKAGE_ROOT
    pages = []
    for argv in (["perl", "board.cgi"], [sys.executable, "board.py"]):
        run = subprocess.run(
            argv, cwd=EXAMPLES / "delete_key", env=env, capture_output=True, check=False
        )
        assert run.returncode == 0, run.stderr
        pages.append(run.stdout)
    assert pages[0] == pages[1] == b"Content-Type: text/plain\n\nposts: 0\nupdated: -\ndeleted: 0\n"
    assert list(tmp_path.iterdir()) == []  # and nothing was created by looking


def test_delete_key_board_posts_and_deletes_across_perl_and_python(server: CgiServer) -> None:
    n = 40
    paths = interleave(["delete_key/board.cgi", "delete_key/board.py"], n)
    # keys in Shift_JIS and EUC-JP bytes too: crypt() must see the same bytes on both sides
    keys = [
        f"k{i}".encode() if i % 3 else "削除".encode("cp932") + bytes([0x40 + i]) for i in range(n)
    ]
    calls = [
        (
            path,
            b"name=user%d&msg=hello+%d&key=" % (i, i) + urllib.parse.quote_from_bytes(key).encode(),
        )
        for i, (path, key) in enumerate(zip(paths, keys))
    ]
    results = hammer(server, calls)
    assert [status for status, _ in results] == [200] * n, [r for r in results if r[0] != 200]
    log = data_dir(server) / "board.log"
    lines = log.read_bytes().split(b"\n")[:-1]
    numbers = [int(line.split(b"<>")[0]) for line in lines]
    assert numbers == list(range(n, 0, -1))  # newest first, none lost or repeated
    number_of = {line.split(b"<>")[1].decode(): int(line.split(b"<>")[0]) for line in lines}
    assert sorted(number_of) == sorted(f"user{i}" for i in range(n))

    # each post deleted by the *other* language's script; every third try with a wrong key
    deletes = []
    for i, key in enumerate(keys):
        other = paths[(i + 1) % 2]
        wrong = i % 4 == 0
        sent = key + b"x" if wrong else key
        body = b"del=%d&key=" % number_of[f"user{i}"] + urllib.parse.quote_from_bytes(sent).encode()
        deletes.append((other, body, wrong, i))
    results = hammer(server, [(path, body) for path, body, _, _ in deletes])
    assert [status for status, _ in results] == [200] * n
    for (_, _, wrong, i), (_, page) in zip(deletes, results):
        assert (b"deleted: 0\n" if wrong else b"deleted: 1\n") in page, (i, page[:200])
    left = sorted(line.split(b"<>")[1].decode() for line in log.read_bytes().split(b"\n")[:-1])
    assert left == sorted(f"user{i}" for i in range(n) if i % 4 == 0)

    pages = [server.request(path)[1] for path in ("delete_key/board.cgi", "delete_key/board.py")]
    assert pages[0] == pages[1]  # the same page from both, (stat)[9] included
    assert f"updated: {int(log.stat().st_mtime)}\n".encode() in pages[0]
    assert_unlocked(log)


# -- seed 003's sub lock / sub unlock (mkdir) -------------------------------------
def test_guestbook_mkdir_lock(server: CgiServer) -> None:
    n = 60
    paths = interleave(["mkdir_lock/guestbook.cgi", "mkdir_lock/guestbook.py"], n)
    names = [f"guest{i:03d}" for i in range(n)]
    calls = [
        (path, urllib.parse.urlencode({"name": name, "comment": "hi & bye"}).encode())
        for path, name in zip(paths, names)
    ]
    results = hammer(server, calls)
    assert [status for status, _ in results] == [200] * n, [r for r in results if r[0] != 200]
    lines = (data_dir(server) / "guestbook.dat").read_text().splitlines()
    entries = Counter(line.split("<>")[0] for line in lines)
    assert entries == Counter(names)  # each signature exactly once, none lost
    assert all(line.split("<>")[1] == "hi &amp; bye" for line in lines)
    assert not os.path.lexists(data_dir(server) / "guestbook.lock")  # the lock directory is gone
    assert not owner_record(data_dir(server) / "guestbook.lock.owner")  # and names no holder


# -- seed 000's symlink lock and its signal trap -----------------------------------
def test_vote_symlink_lock(server: CgiServer) -> None:
    n = 60
    paths = interleave(["symlink_lock/vote.cgi", "symlink_lock/vote.py"], n)
    items = [("apple", "banana", "cherry")[i % 3] for i in range(n)]
    results = hammer(server, [(f"{p}?item={item}", None) for p, item in zip(paths, items)])
    assert [status for status, _ in results] == [200] * n, [r for r in results if r[0] != 200]
    tally = {}
    for line in (data_dir(server) / "vote.dat").read_text().splitlines():
        name, votes = line.split("<>")[:2]
        assert name not in tally
        tally[name] = int(votes)
    assert tally == dict(Counter(items))
    assert not os.path.lexists(data_dir(server) / "vote.lock")


@pytest.mark.parametrize("script", ["symlink_lock/vote.cgi", "symlink_lock/vote.py"])
def test_vote_trap_removes_own_lock_when_killed(server: CgiServer, script: str) -> None:
    """SIGTERM to a CGI holding the lock: its trap removes the lock and exits."""
    data = data_dir(server)
    vote = data / "vote.dat"
    lockfile = data / "vote.lock"
    saved = data / "vote.dat.saved"
    if vote.exists():
        os.rename(vote, saved)
    os.mkfifo(vote)  # the holder blocks reading it, inside its critical section
    try:
        with ThreadPoolExecutor(2) as pool:
            response = pool.submit(server.request, f"{script}?item=trap", None, 30)
            opener = pool.submit(os.open, vote, os.O_WRONLY)  # returns once the CGI reads
            try:
                fifo = opener.result(timeout=20)
            except Exception:
                os.close(os.open(vote, os.O_RDONLY | os.O_NONBLOCK))  # unblock our opener
                raise
            try:
                holder = int(os.readlink(lockfile))  # symlink($$, $lockfile): the pid
                exited = os.pidfd_open(holder)
                os.kill(holder, signal.SIGTERM)
                status, _body = response.result(timeout=20)
                readable, _, _ = select.select([exited], [], [], 20)
                os.close(exited)
            finally:
                os.close(fifo)
        assert readable, f"process {holder} still running 20 s after SIGTERM"
        assert not os.path.lexists(lockfile), "the trap left the lock behind"
        assert status == 500  # killed before it printed a header: lighttpd's error page
    finally:
        os.unlink(vote)
        if saved.exists():
            os.rename(saved, vote)


@pytest.mark.parametrize("script", ["vote.cgi", "vote.py"])
def test_vote_trap_leaves_another_process_lock_alone(tmp_path: Path, script: str) -> None:
    """SIGTERM to a CGI still waiting for the lock: it exits, the holder's lock stays."""
    lockfile = tmp_path / "vote.lock"
    os.symlink(str(os.getpid()), lockfile)  # held by this test process
    interpreter = find_tool("perl") if script.endswith(".cgi") else sys.executable
    env = {
        "QUERY_STRING": "item=waiting",
        "REQUEST_METHOD": "GET",
        "PERLCOMPAT_DATA_DIR": str(tmp_path),
        "PYTHONPATH": PACKAGE_ROOT,
    }
    proc = subprocess.Popen(
        [interpreter, str(EXAMPLES / "symlink_lock" / script)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for_handler(proc, signal.SIGTERM)  # its trap is set: it is in the retry loop
        proc.send_signal(signal.SIGTERM)
        out, _err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0  # the trap's exit, not death by SIGTERM
    assert out == b""  # gave up before any output
    assert os.readlink(lockfile) == str(os.getpid())  # not its lock: left alone
    assert not (tmp_path / "vote.dat").exists()


def wait_for_handler(proc: subprocess.Popen[bytes], signum: int) -> None:
    """Return once *proc* catches *signum* (its SigCgt mask in /proc says so)."""
    deadline = time.monotonic() + 20
    bit = 1 << (signum - 1)
    while time.monotonic() < deadline:
        with open(f"/proc/{proc.pid}/status") as status:
            fields = dict(line.split(":", 1) for line in status if ":" in line)
        if int(fields["SigCgt"].strip(), 16) & bit:
            return
        try:
            proc.wait(timeout=0.005)  # returns only if the script ended early
        except subprocess.TimeoutExpired:
            continue
        raise AssertionError(f"script exited early: {proc.communicate()}")
    raise AssertionError(f"script never installed a handler for signal {signum}")


# -- seed 000's alarm-bounded flock ------------------------------------------------
def test_visitors_alarm_flock(server: CgiServer) -> None:
    n = 60
    paths = interleave(["alarm_flock/visitors.cgi", "alarm_flock/visitors.py"], n)
    names = [f"visitor{i:03d}" for i in range(n)]
    results = hammer(server, [(f"{p}?name={name}", None) for p, name in zip(paths, names)])
    assert [status for status, _ in results] == [200] * n
    answered = sorted(int(re.match(rb"No\.(\d+) ", body).group(1)) for _, body in results)  # type: ignore[union-attr]
    assert answered == list(range(1, n + 1))
    lines = (data_dir(server) / "visitors.dat").read_text().splitlines()
    assert [int(line.split("<>")[0]) for line in lines] == list(range(1, n + 1))
    assert Counter(line.split("<>")[1] for line in lines) == Counter(names)
    assert_unlocked(data_dir(server) / "visitors.dat")


def test_visitors_time_out_while_lock_is_held(server: CgiServer) -> None:
    """A lock held longer than alarm(): both scripts answer 503 "time out", write nothing."""
    datafile = data_dir(server) / "visitors.dat"
    datafile.touch()
    before = datafile.read_bytes()
    with open(datafile, "rb") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)
        started = time.monotonic()
        results = hammer(
            server,
            [
                ("alarm_flock/visitors.cgi?name=late_perl", None),
                ("alarm_flock/visitors.py?name=late_python", None),
            ],
        )
        waited = time.monotonic() - started
        assert datafile.read_bytes() == before
    for status, body in results:
        assert status == 503
        assert b"timed out after 1 s" in body
    assert ALARM_WAIT * 0.9 <= waited < ALARM_WAIT + 10
    status, body = server.request("alarm_flock/visitors.py?name=after")
    assert status == 200 and body.startswith(b"No.")
    assert datafile.read_bytes().startswith(before)


# -- TOP?LOCK (seed 001) -----------------------------------------------------------
def test_toplock_records_once(server: CgiServer) -> None:
    n = 50
    paths = interleave(["toplock/workdata.cgi", "toplock/workdata.py"], n)
    texts = [f"record{i:03d}" for i in range(n)]
    results = hammer(server, [(f"{p}?data={t}", None) for p, t in zip(paths, texts)])
    assert [status for status, _ in results] == [200] * n, [r for r in results if r[0] != 200]
    lines = (data_dir(server) / "workdata.dat").read_text().splitlines()
    assert [int(line.split("<>")[0]) for line in lines] == list(range(1, n + 1))
    assert Counter(line.split("<>")[1] for line in lines) == Counter(texts)
    assert not os.path.lexists(data_dir(server) / "workdata.lock")
    assert not os.path.lexists(data_dir(server) / "workdata.tmp")


# -- temp file + rename under a separate lock file ---------------------------------
def test_ranking_rename_under_lock_file(server: CgiServer) -> None:
    n = 90
    scripts = [
        "rename_lockfile/ranking.cgi",
        "rename_lockfile/ranking.py",
        "rename_lockfile/ranking_replace.py",
    ]
    paths = interleave(scripts, n)
    items = [("alpha", "beta")[i % 2] for i in range(n)]
    results = hammer(server, [(f"{p}?item={item}", None) for p, item in zip(paths, items)])
    assert [status for status, _ in results] == [200] * n, [r for r in results if r[0] != 200]
    tally = {}
    for line in (data_dir(server) / "ranking.dat").read_text().splitlines():
        name, clicks = line.split("<>")[:2]
        tally[name] = int(clicks)
    assert tally == dict(Counter(items))
    assert no_temp_files(data_dir(server)) == []
    assert_unlocked(data_dir(server) / "ranking.dat.lck")


def test_no_lock_or_temp_left_anywhere(server: CgiServer) -> None:
    """After everything above: no lock directory, symlink, TOP?LOCK file or temp file."""
    names = sorted(p.name for p in data_dir(server).iterdir())
    leftovers = [
        name
        for name in names
        if name.endswith((".lock", ".tmp")) or os.path.islink(data_dir(server) / name)
    ]
    owners = [name for name in names if name.endswith(".owner")]
    leftovers += [name for name in owners if owner_record(data_dir(server) / name)]
    assert leftovers == []


def test_locks_tool_sees_no_lock_in_the_data_dir(server: CgiServer) -> None:
    """``perlcompat locks`` on the data directory after the runs: no locks, and no data
    file (``item<>count<>`` lines look like TOP?LOCK lines) taken for one, since
    ``--break-stale`` would delete it."""
    listing = subprocess.run(
        [sys.executable, "-m", "perlcompat", "locks", "--json", str(data_dir(server))],
        capture_output=True,
        env=dict(os.environ, PYTHONPATH=PACKAGE_ROOT),
        check=True,
    )
    assert [lock["name"] for lock in json.loads(listing.stdout)["locks"]] == []
