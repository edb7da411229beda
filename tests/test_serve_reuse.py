"""``perlcompat serve --reuse N``: a child runs the next request only if the last left it clean.

Each test asks for the pid that answered: a clean request's child answers the next one
(same pid); a request that left anything behind (a thread, an alarm, a handler, a file
or lock, a child process, ...) ends its child, and the next request gets a new one.
Whatever a request set (CGI params, ``%INC``, ``$!``, the environment, a module of its
own directory, ``sys.stdout``) is not seen by the next.  Also here, with and without
``--reuse``: a script still running when its forker dies is stopped at ``--timeout``.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from test_serve import Raw, assert_unlocked, request_records, split
from webserver import PACKAGE_ROOT, CgiServer, ServeProcess, copy_examples

from perlcompat import lock, unlock

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="serve needs fork")

REPORT = """
import os, sys
print("Content-Type: text/plain\\n")
print("pid", os.getpid())
"""

SCRIPTS = {
    "clean.py": REPORT
    + """
try:
    hits += 1
except NameError:
    hits = 1
import random
print("hits", hits)
print("rand", random.random())
from perlcompat import OS_ERROR
print("errno", int(OS_ERROR))
open("/nonexistent/x") if os.environ.get("QUERY_STRING") == "fail" else None
""",
    "params.py": REPORT
    + """
from perlcompat.cgi import param
print("name", param("name"))
""",
    "env.py": REPORT
    + """
print("X_SET", os.environ.get("X_SET"))
print("HTTP_X_ONE", os.environ.get("HTTP_X_ONE"))
os.environ["X_SET"] = "left by a request"
""",
    "stdin.py": REPORT
    + """
print("body", repr(sys.stdin.read(3)))
""",
    "recode.py": REPORT
    + """
import io
sys.stdout.flush()
sys.stdout = io.TextIOWrapper(sys.stdout.buffer, encoding="cp932")
print("\\u65e5\\u672c")
""",
    "unclosed.py": REPORT
    + """
f = open(os.path.join(os.environ["DATA"], "unclosed.txt"), "a")
f.write("line\\n")
""",
    "mine.py": REPORT
    + """
import mymodule
mymodule.count += 1
print("count", mymodule.count)
""",
    "mymodule.py": "count = 0\n",
    "req.py": REPORT
    + """
from perlcompat import require
require("lib.pl.py")
print("lib", lib_loaded)
""",
    "lib.pl.py": "lib_loaded = 'yes'\n",
    "locked.py": REPORT
    + """
from perlcompat import lock, unlock
path = os.path.join(os.environ["DATA"], "locked")
print("lock", lock(path), unlock(path))
""",
    # the article's alarm(5) around a blocking flock, ended with alarm(0)
    "alarmed.py": REPORT
    + """
from perlcompat import LOCK_EX, alarm, close, flock, open_
OUT = open_(">> " + os.path.join(os.environ["DATA"], "alarmed.txt"))
alarm(5)
print("flock", flock(OUT, LOCK_EX))
alarm(0)
close(OUT)
""",
    # each leaves something behind: its child must not run another request
    "thread.py": REPORT
    + """
import threading, time
threading.Thread(target=time.sleep, args=(0.2,)).start()
""",
    "daemon.py": REPORT
    + """
import threading, time
threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
""",
    "alarm.py": REPORT
    + """
from perlcompat import alarm
alarm(30)
""",
    "handler.py": REPORT
    + """
import signal
signal.signal(signal.SIGUSR1, lambda *a: None)
""",
    "fd.py": REPORT
    + """
os.open(os.devnull, os.O_RDONLY)
""",
    "handle.py": REPORT
    + """
from perlcompat import open_
OUT = open_(">> " + os.path.join(os.environ["DATA"], "handle.txt"))
""",
    "lock.py": REPORT
    + """
from perlcompat import lock
lock(os.path.join(os.environ["DATA"], "held"))
""",
    "child.py": REPORT
    + """
import subprocess
subprocess.Popen(["sleep", "0.3"])
""",
    "grandchild.py": REPORT
    + """
import subprocess
subprocess.run("sleep 0.3 >/dev/null 2>&1 </dev/null &", shell=True)
""",
    "atexit_.py": REPORT
    + """
import atexit
atexit.register(print, "at exit")
""",
    "umask.py": REPORT
    + """
os.umask(0o077)
""",
    "die.py": REPORT
    + """
from perlcompat import die
die("died")
""",
}
# what the hostile review of --reuse found: each A must leave nothing its B sees
SCRIPTS.update(
    {
        "capture.py": REPORT + "import io\nprint('SECRET-OF-A')\nsys.stdout = io.StringIO()\n",
        "errswap.py": REPORT
        + "import io\nsys.stderr.write('A-STDERR-SECRET')\nsys.stderr = io.StringIO()\n",
        "footer.py": REPORT
        + """
import page
class Footer:
    def __init__(self, who):
        self.who, self.me = who, self
    def __del__(self):
        print("<!-- page of", self.who, "-->")
page.footer = Footer(os.environ["QUERY_STRING"])
""",
        "page.py": "footer = None\n",
        "readline.py": REPORT
        + "from perlcompat import STDIN\nprint('line', repr(STDIN.readline()))\n",
        "readall.py": REPORT + "from perlcompat import STDIN\nprint('all', repr(STDIN.read()))\n",
        "binmode.py": REPORT
        + """
from perlcompat import STDOUT, binmode, print_
print_(STDOUT, "e \\u00e9\\n")
if os.environ.get("QUERY_STRING") == "set":
    binmode(STDOUT, ":encoding(latin-1)")
    STDOUT.autoflush(1)
""",
        "forks.py": REPORT
        + "sys.stdout.flush()\npid = os.fork()\nif pid == 0:\n    sys.exit(0)\n"
        + "os.waitpid(pid, 0)\nprint('done', 1)\n",
        "ns.py": REPORT
        + "from helpers import session\nprint('user', session.user)\n"
        + "session.user = os.environ.get('QUERY_STRING')\n",
        "helpers/session.py": "user = None\n",
        "lib/state.py": "user = None\n",
        "vialink.py": REPORT
        + "sys.path.insert(0, os.environ['LINKED'] + '/lib')\nimport state\n"
        + "print('user', state.user)\nstate.user = os.environ.get('QUERY_STRING')\n",
        "world.py": REPORT
        + """
import builtins, gc, socket, time, warnings
print("tz", time.tzname[0], "filters", len(warnings.filters))
print("user", getattr(builtins, "user", None))
print("gc", gc.isenabled(), "timeout", socket.getdefaulttimeout())
if os.environ.get("QUERY_STRING") == "set":
    os.environ["TZ"] = "Asia/Tokyo"
    time.tzset()
    warnings.simplefilter("error")
""",
        "builtin.py": REPORT + "import builtins\nbuiltins.user = 'alice'\n",
        "nogc.py": REPORT + "import gc\ngc.disable()\n",
        "timeout.py": REPORT + "import socket\nsocket.setdefaulttimeout(5)\n",
        "environ.py": REPORT + "os.environ = dict(os.environ)\n",
        "logs.py": REPORT + "import logging\nlogging.getLogger('x').info('quiet')\n",
    }
)

# what the second hostile review found
CALENDAR = "import calendar\nprint('cal', getattr(calendar, 'MINE', 'stdlib'))\n"
SCRIPTS.update(
    {
        "fdowner.py": REPORT
        + "sys.stdout.flush()\nsys.stdout = open(sys.stdout.fileno(), 'w')\nprint('owned', 1)\n",
        "logger.py": REPORT
        + """
import logging
log = logging.getLogger("shop")
handler = logging.StreamHandler(sys.stdout)
handler.setFormatter(logging.Formatter("log of " + os.environ["QUERY_STRING"] + ": %(message)s"))
log.addHandler(handler)
log.setLevel(logging.INFO)
log.info("order")
""",
        "shoplog.py": REPORT + "import logging\nlogging.getLogger('shop').info('order of bob')\n",
        "patch.py": REPORT + "from perlcompat.cgi import CGI\nCGI.param = lambda *a: 'HIJACKED'\n",
        "stdcal.py": REPORT
        + "import calendar\nprint('cal', getattr(calendar, 'MINE', 'stdlib'))\n",
        "two/calendar.py": "MINE = 'mine'\n",
        "two/usecal.py": REPORT
        + "import calendar\nprint('cal', getattr(calendar, 'MINE', 'stdlib'))\n",
        "gccb.py": REPORT + "import gc\ngc.callbacks.append(lambda *a: None)\n",
        "decimal_.py": REPORT + "import decimal\ndecimal.getcontext().prec = 3\n",
        "watch.py": REPORT
        + "import perlcompat.locks.cleanup as c\nprint('watching', c._atexit_done)\n",
    }
)

# what the third hostile review found
SCRIPTS.update(
    {
        "cthread.py": REPORT
        + "import _thread, time\n_thread.start_new_thread(time.sleep, (0.5,))\n",
        "factory.py": REPORT
        + "import logging\nold = logging.getLogRecordFactory()\n"
        + "logging.setLogRecordFactory(lambda *a, **k: old(*a, **k))\n",
        "nolog.py": REPORT + "import logging\nlogging.disable(logging.CRITICAL)\n",
        "email/data.txt": "a data directory named like a standard-library package\n",
        "httpc.py": REPORT + "import http.client\n",
        "mailcheck.py": REPORT
        + "import http.client, email.message\n"
        + "print('same', issubclass(http.client.HTTPMessage, email.message.Message))\n",
        "detach.py": REPORT
        + "import io\nsys.stdout.flush()\n"
        + "sys.stdout = io.TextIOWrapper(sys.stdout.detach(), encoding='cp932')\nprint('ok', 1)\n",
        "single.py": REPORT
        + "from perlcompat import Lock\n"
        + "Lock(os.path.join(os.environ['DATA'], 'single'), is_singleton=True)\n",
        "odd.py": """
import sys
class Odd:
    def write(self, text):
        return sys.__stdout__.write(text)
sys.stdout = Odd()
print("Content-Type: text/plain\\n")
print("odd", 1)
""",
        "delout.py": REPORT + "print('gone', 1)\ndel sys.stdout\n",
    }
)

LEAVERS = [
    "thread.py",
    "daemon.py",
    "alarm.py",
    "handler.py",
    "fd.py",
    "handle.py",
    "lock.py",
    "child.py",
    "grandchild.py",
    "atexit_.py",
    "umask.py",
    "builtin.py",
    "nogc.py",
    "timeout.py",
    "environ.py",
    "fdowner.py",
    "logger.py",
    "patch.py",
    "gccb.py",
    "decimal_.py",
    "cthread.py",
    "factory.py",
    "nolog.py",
]


class Site:
    def __init__(self, base: Path) -> None:
        self.www = base / "www"
        self.data = base / "data"
        self.www.mkdir()
        self.data.mkdir()
        copy_examples(self.www)
        for name, code in SCRIPTS.items():
            (self.www / name).parent.mkdir(exist_ok=True)
            (self.www / name).write_text(code.lstrip())
        (base / "link").symlink_to(self.www)  # another spelling of the scripts' directory
        env = {"PERLCOMPAT_DATA_DIR": str(self.data), "DATA": str(self.data)}
        env["LINKED"] = str(base / "link")
        self.serve = ServeProcess(
            self.www, base / "fcgi.sock", "--timeout", "5", "--reuse", "1000", env=env
        ).start()
        self.http = CgiServer(
            self.www, {**env, "PYTHONPATH": PACKAGE_ROOT}, fastcgi=str(self.serve.sock)
        )

    def ask(self, script: str, query: str = "", body: bytes = b"", **extra: str) -> dict[str, str]:
        """Run *script* once; its answer's ``word value`` lines as a dict (with the status)."""
        client = Raw(self.serve.sock)
        params = {
            "SCRIPT_FILENAME": str(self.www / script),
            "REQUEST_METHOD": "POST" if body else "GET",
            "QUERY_STRING": query,
            "CONTENT_LENGTH": str(len(body)),
            **extra,
        }
        try:
            client.send(*request_records(1, params, body))
            reply = client.read(1)[1]
        finally:
            client.close()
        _head, text = split(reply.stdout)
        lines = text.decode(errors="replace").splitlines()
        words = dict(line.split(" ", 1) for line in lines if " " in line)
        words["status"] = str(reply.app_status)
        words["stderr"] = reply.stderr.decode()
        return words


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    site = Site(tmp_path_factory.mktemp("reuse"))
    site.http.start()
    try:
        yield site
    finally:
        site.http.stop()
        assert site.serve.stop() == 0, site.serve.log


def test_a_clean_request_leaves_its_child_for_the_next(site: Site) -> None:
    answers = [site.ask("clean.py", "fail" if i == 2 else "") for i in range(6)]
    assert {a["pid"] for a in answers[1:]} == {answers[1]["pid"]}  # one child answers them all
    assert [a["hits"] for a in answers] == ["1"] * 6  # the script's globals are its own
    assert [a["errno"] for a in answers] == ["0"] * 6  # $! starts unset: not the last's ENOENT
    assert len({a["rand"] for a in answers}) == 6  # random is seeded anew
    assert answers[2]["status"] == "1" and "FileNotFoundError" in answers[2]["stderr"]


def test_params_environment_and_stdin_are_the_requests_own(site: Site) -> None:
    alice = site.ask("params.py", "name=alice")
    other = site.ask("params.py", "")
    assert (alice["name"], other["name"]) == ("alice", "None")
    assert alice["pid"] == other["pid"]
    first = site.ask("env.py", HTTP_X_ONE="one")
    second = site.ask("env.py")
    assert first["X_SET"] == second["X_SET"] == "None"
    assert (first["HTTP_X_ONE"], second["HTTP_X_ONE"]) == ("one", "None")
    assert first["pid"] == second["pid"]
    unread = site.ask("stdin.py", body=b"x" * 300_000)  # most of it never read
    read = site.ask("stdin.py", body=b"abc")
    assert (unread["body"], read["body"]) == ("'xxx'", "'abc'")


def test_a_replaced_stdout_and_an_unclosed_file(site: Site) -> None:
    recoded = site.ask("recode.py")
    after = site.ask("clean.py")
    assert recoded["pid"] == after["pid"]
    assert after["hits"] == "1"
    client = Raw(site.serve.sock)
    params = {"SCRIPT_FILENAME": str(site.www / "recode.py"), "REQUEST_METHOD": "GET"}
    client.send(*request_records(1, params))
    assert split(client.read(1)[1].stdout)[1].endswith("\u65e5\u672c\n".encode("cp932"))
    client.close()
    (site.data / "unclosed.txt").unlink(missing_ok=True)
    pids = {site.ask("unclosed.py")["pid"] for _ in range(3)}
    assert (site.data / "unclosed.txt").read_text() == "line\n" * 3  # written, not lost
    assert len(pids) == 1


def test_the_scripts_own_modules_and_required_files_load_anew(site: Site) -> None:
    answers = [site.ask("mine.py") for _ in range(3)]
    assert [a["count"] for a in answers] == ["1", "1", "1"]
    required = [site.ask("req.py") for _ in range(3)]
    assert [a["lib"] for a in required] == ["yes"] * 3
    assert len({a["pid"] for a in answers + required}) == 1


@pytest.mark.parametrize("script", LEAVERS)
def test_a_request_that_leaves_something_ends_its_child(site: Site, script: str) -> None:
    before = site.ask("clean.py")["pid"]
    assert site.ask("clean.py")["pid"] == before
    leaver = site.ask(script, "alice")
    assert leaver["status"] == "0", leaver
    assert leaver["pid"] == before  # it ran in the warm child...
    after = site.ask("clean.py")
    assert after["pid"] != before  # ...which ran nothing after it
    assert after["hits"] == "1"
    if script == "lock.py":  # released when its child ended, as at a script's exit
        assert lock(str(site.data / "held")) == 1
        assert unlock(str(site.data / "held")) == 1
    if script == "atexit_.py":
        assert leaver["at"] == "exit"


def test_a_script_that_locks_and_unlocks_is_reused(site: Site) -> None:
    answers = [site.ask("locked.py") for _ in range(4)]
    assert [a["lock"] for a in answers] == ["1 1"] * 4
    alarmed = [site.ask("alarmed.py") for _ in range(4)]
    assert [a["flock"] for a in alarmed] == ["1"] * 4
    assert len({a["pid"] for a in answers[1:] + alarmed}) == 1


def test_die_and_exit_statuses_reach_the_server_and_the_child_goes_on(site: Site) -> None:
    died = site.ask("die.py")
    after = site.ask("clean.py")
    assert died["status"] == "255" and "died" in died["stderr"]
    assert after["pid"] == died["pid"]


def test_counter_hammered_by_perl_and_reused_children(site: Site) -> None:
    clients, each = 8, 40
    paths = [("counter/count.cgi", "counter/count.py")[i % 2] for i in range(clients * each)]
    (site.data / "count.dat").unlink(missing_ok=True)
    with ThreadPoolExecutor(clients) as pool:
        results = list(pool.map(site.http.request, paths))
    assert [status for status, _ in results] == [200] * len(paths), results[:3]
    numbers = sorted(int(body) for _, body in results)
    assert numbers == list(range(1, len(paths) + 1))
    assert (site.data / "count.dat").read_bytes() == f"{len(paths)}\n".encode()
    assert_unlocked(site.data / "count.dat")
    # few children served them all (each ran many requests)
    pids = {site.ask("clean.py")["pid"] for _ in range(5)}
    assert len(pids) == 1


def test_a_reused_child_that_times_out_is_replaced(tmp_path: Path) -> None:
    www = tmp_path / "www"
    www.mkdir()
    (www / "pid.py").write_text(REPORT.lstrip())
    slow = "import time\nsys.stdout.flush()\ntime.sleep(60)\n"
    (www / "slow.py").write_text(REPORT.lstrip() + slow)
    serve = ServeProcess(www, tmp_path / "s.sock", "--timeout", "1", "--reuse", "10").start()
    try:

        def ask(script: str) -> tuple[int | None, bytes]:
            client = Raw(serve.sock)
            client.send(*request_records(1, {"SCRIPT_FILENAME": str(www / script)}))
            reply = client.read(1)[1]
            client.close()
            return reply.app_status, split(reply.stdout)[1]

        first = ask("pid.py")
        assert ask("pid.py") == first
        _status, body = ask("slow.py")
        assert body == first[1]  # the warm child ran it, and was stopped at --timeout
        assert ask("pid.py")[1] != first[1]
    finally:
        assert serve.stop() == 0, serve.log


def test_nothing_a_request_printed_reaches_the_next_client(site: Site) -> None:
    captured = site.ask("capture.py")
    plain = site.ask("plain.py" if (site.www / "plain.py").exists() else "clean.py")
    assert "SECRET-OF-A" not in str(plain)
    swapped = site.ask("errswap.py")
    after = site.ask("clean.py")
    assert "A-STDERR-SECRET" in swapped["stderr"] and "A-STDERR-SECRET" not in str(after)
    alice = site.ask("footer.py", "alice")
    bob = site.ask("clean.py")
    assert "alice" not in str(bob)
    assert alice["pid"] == bob["pid"] == after["pid"] == captured["pid"] == swapped["pid"]


def test_stdin_and_the_standard_handles_start_fresh(site: Site) -> None:
    first = site.ask("readline.py", body=b"secret=alice\npassword=hunter2\n")
    bob = site.ask("readall.py", body=b"bob\n")
    carol = site.ask("readall.py", body=b"carol\n")
    form = site.ask(
        "params.py", body=b"name=dave", CONTENT_TYPE="application/x-www-form-urlencoded"
    )
    assert first["line"] == repr("secret=alice\n")
    assert (bob["all"], carol["all"], form["name"]) == (repr("bob\n"), repr("carol\n"), "dave")
    site.ask("binmode.py", "set")
    again = site.ask("binmode.py")
    assert again["e"] == "\u00e9"  # UTF-8 again, not the last request's latin-1
    assert len({a["pid"] for a in (first, bob, carol, form, again)}) == 1


def test_a_script_that_forks_is_answered_and_its_copy_runs_nothing_else(site: Site) -> None:
    before = site.ask("clean.py")["pid"]
    forked = site.ask("forks.py")
    assert (forked["status"], forked["done"], forked["pid"]) == ("0", "1", before)
    assert site.ask("clean.py")["pid"] == before  # the child itself, not its copy


def test_modules_of_the_scripts_own_directory_load_anew(site: Site) -> None:
    assert site.ask("ns.py", "alice")["user"] == "None"
    assert site.ask("ns.py")["user"] == "None"  # a namespace package is the script's own too
    assert site.ask("vialink.py", "alice")["user"] == "None"
    assert site.ask("vialink.py")["user"] == "None"  # reached through a symlinked spelling


def test_the_process_and_interpreter_settings_are_the_first_requests(site: Site) -> None:
    fresh = site.ask("world.py")
    site.ask("world.py", "set")
    after = site.ask("world.py")
    for key in ("tz", "gc"):
        assert after[key] == fresh[key]
    assert after["pid"] == fresh["pid"]
    logged = [site.ask("logs.py")["pid"] for _ in range(3)]
    assert len(set(logged)) == 1  # importing logging (its atexit handler) keeps the child


def test_a_reused_child_orphaned_by_a_dead_forker_runs_nothing_more(tmp_path: Path) -> None:
    www = tmp_path / "www"
    www.mkdir()
    (www / "pid.py").write_text(REPORT.lstrip())
    slow = "sys.stdout.flush()\nimport time\ntime.sleep(1)\nprint('slow', 'done')\n"
    (www / "slow.py").write_text(REPORT.lstrip() + slow)
    (www / "crash.py").write_text(REPORT.lstrip() + "sys.stdout.flush()\nos._exit(3)\n")
    serve = ServeProcess(www, tmp_path / "s.sock", "--timeout", "4", "--reuse", "10").start()
    try:

        def send(script: str) -> Raw:
            client = Raw(serve.sock)
            client.send(*request_records(1, {"SCRIPT_FILENAME": str(www / script)}))
            return client

        first = send("pid.py")
        warm = split(first.read(1)[1].stdout)[1]
        first.close()
        running = send("slow.py")
        assert split(running.read_until(1, b"pid").stdout)[1] == warm  # in the warm child
        children = Path(f"/proc/{serve.pid}/task/{serve.pid}/children").read_text().split()
        os.kill(int(children[0]), signal.SIGKILL)  # the forker
        reply = running.read(1)[1]
        running.close()
        assert reply.app_status == 0 and b"slow done" in reply.stdout
        crash = send("crash.py")
        crashed = crash.read(1)[1]
        crash.close()
        assert crashed.app_status == 3
        assert split(crashed.stdout)[1] != warm  # not the orphan: a child of the new forker
    finally:
        assert serve.stop() == 0, serve.log


@pytest.mark.parametrize("reuse", ["1", "10"])
def test_a_dead_forkers_running_script_is_still_stopped_at_timeout(
    tmp_path: Path, reuse: str
) -> None:
    """The forker killed while a script runs: the parent adopts the script and stops it at
    --timeout (before: nobody could, it ran on for ever, its end never reported)."""
    www = tmp_path / "www"
    www.mkdir()
    slow = "sys.stdout.flush()\nimport time\ntime.sleep(60)\n"
    (www / "slow.py").write_text(REPORT.lstrip() + slow)
    serve = ServeProcess(www, tmp_path / "s.sock", "--timeout", "2", "--reuse", reuse).start()
    try:
        client = Raw(serve.sock)
        client.send(*request_records(1, {"SCRIPT_FILENAME": str(www / "slow.py")}))
        script = int(split(client.read_until(1, b"pid").stdout)[1].split()[1])
        children = Path(f"/proc/{serve.pid}/task/{serve.pid}/children").read_text().split()
        os.kill(int(children[0]), signal.SIGKILL)  # the forker
        reply = client.read(1)[1]  # at --timeout
        client.close()
        assert reply.app_status == 128 + signal.SIGTERM
        deadline = time.monotonic() + 30
        while os.path.exists(f"/proc/{script}") and time.monotonic() < deadline:
            time.sleep(0.05)  # (reaped by the server: gone)
        assert not os.path.exists(f"/proc/{script}")
    finally:
        assert serve.stop() == 0, serve.log


def test_what_the_second_review_found_reaches_no_other_request(site: Site) -> None:
    site.ask("logger.py", "alice")
    bob = site.ask("shoplog.py")
    assert "alice" not in str(bob) and bob["status"] == "0"
    site.ask("patch.py")
    assert site.ask("params.py", "name=bob")["name"] == "bob"
    owned = site.ask("fdowner.py")
    after = site.ask("clean.py")
    assert owned["owned"] == "1" and after["status"] == "0" and after["hits"] == "1"
    assert site.ask("stdcal.py")["cal"] == "stdlib"
    kept = site.ask("stdcal.py")["pid"]
    mine = site.ask("two/usecal.py")
    assert (mine["cal"], mine["pid"]) == ("mine", kept)  # its own, as in a new process
    for _ in range(3):
        site.ask("locked.py")
    assert site.ask("watch.py")["watching"] == "True"  # registered once, before any request


def test_what_the_third_review_found(site: Site) -> None:
    site.ask("httpc.py")
    assert site.ask("mailcheck.py")["same"] == "True"  # a data directory shadows nothing
    detached = site.ask("detach.py")
    after = site.ask("clean.py")
    assert (detached["ok"], detached["stderr"]) == ("1", "")
    assert after["pid"] == detached["pid"]  # the child goes on
    singles = [site.ask("single.py") for _ in range(3)]
    assert len({a["pid"] for a in singles}) == 1  # a singleton's registry is no change
    for script, word in (("odd.py", "odd"), ("delout.py", "gone")):
        answer = site.ask(script)
        assert (answer["status"], answer[word]) == ("0", "1")
