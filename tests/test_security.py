"""Another local user must not turn a lock, a replace or an admin's cleanup against a victim.

The attacks of issue 23, each run for real: a second user (made by the fixture
with ``useradd`` and removed after) swaps directories with
``renameat2(RENAME_EXCHANGE)``, plants FIFOs, reads temp files as they appear.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).parent.parent
ENV = dict(os.environ, PYTHONPATH=str(ROOT))
ENV.pop("PERLCOMPAT_LOCK_ROOT", None)

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="a second user needs root (CI is root)")


class User(NamedTuple):
    name: str
    uid: int
    gid: int


@pytest.fixture
def other_user() -> Iterator[User]:
    """A real second local user, removed afterwards."""
    import pwd

    name = f"pcsec{os.getpid()}{os.urandom(2).hex()}"
    subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
        check=True,
        capture_output=True,
    )
    try:
        entry = pwd.getpwnam(name)
        yield User(name, entry.pw_uid, entry.pw_gid)
    finally:
        subprocess.run(["userdel", name], check=False, capture_output=True)


def become(user: User) -> None:
    os.setgroups([])
    os.setgid(user.gid)
    os.setuid(user.uid)


def locks(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "perlcompat", "locks", *args],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=60,
    )


def _old_lock_dirs(directory: Path, names: list[str], owner: User | None) -> None:
    for name in names:
        path = directory / name
        if not path.exists():
            path.mkdir()
            if owner is not None:
                os.chown(path, owner.uid, owner.gid)
        os.utime(path, (1, 1))


RENAME_EXCHANGE = 2
AT_FDCWD = -100


class Swapper:
    """A process of *user* exchanging *a* with each of *others* in turn until stopped."""

    def __init__(self, user: User, a: Path, others: list[Path]) -> None:
        self.stop_read, self.stop_write = os.pipe()
        ready_read, ready_write = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # pragma: no cover - the child
            code = 0
            try:
                os.close(self.stop_write)
                os.close(ready_read)
                become(user)
                os.set_blocking(self.stop_read, False)
                libc = ctypes.CDLL(None, use_errno=True)
                pairs = [(bytes(a), bytes(other)) for other in others]
                os.write(ready_write, b"x")
                n = 0
                while True:
                    first, second = pairs[n % len(pairs)]
                    n += 1
                    for _ in range(2):  # swap, and swap back: always ends as it began
                        if libc.renameat2(AT_FDCWD, first, AT_FDCWD, second, RENAME_EXCHANGE):
                            raise OSError(ctypes.get_errno(), "renameat2")
                    try:
                        if os.read(self.stop_read, 1) == b"":
                            break
                    except BlockingIOError:
                        continue
            except BaseException:
                code = 1
            os._exit(code)
        os.close(self.stop_read)
        os.close(ready_write)
        assert os.read(ready_read, 1) == b"x"
        os.close(ready_read)

    def stop(self) -> None:
        os.close(self.stop_write)
        _, status = os.waitpid(self.pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0


@needs_root
def test_break_stale_as_root_never_removes_outside_dir_while_another_user_swaps_it(
    other_user: User,
) -> None:
    # The attacker owns a directory in /tmp holding DIR (as a compromised CGI
    # user does), plus two others DIR is swapped with by symlink: one of its
    # own, one of root's, each holding the same stale lock names as DIR.
    names = [f"s{i}.lock" for i in range(40)]
    base = Path(tempfile.mkdtemp(prefix="pcsec", dir="/tmp"))
    victim = Path(tempfile.mkdtemp(prefix="pcsecroot", dir="/tmp"))
    try:
        base.chmod(0o755)
        victim.chmod(0o755)
        os.chown(base, other_user.uid, other_user.gid)
        directory, theirs = base / "locks", base / "theirs"
        for path in (directory, theirs):
            path.mkdir()
            os.chown(path, other_user.uid, other_user.gid)
        links = [base / "to-theirs", base / "to-root"]
        for link, target in zip(links, (theirs, victim)):
            link.symlink_to(target)
            os.chown(link, other_user.uid, other_user.gid, follow_symlinks=False)
        _old_lock_dirs(theirs, names, other_user)
        _old_lock_dirs(victim, names, None)
        removed_inside = refused = ran = 0
        for _ in range(10):
            _old_lock_dirs(directory, names, other_user)
            swapper = Swapper(other_user, directory, links)
            try:
                result = locks(str(directory), "--break-stale", "--json")
            finally:
                swapper.stop()
            if result.returncode == 0:
                ran += 1
            else:
                assert "refusing to follow" in result.stderr, result.stderr
                refused += 1
            assert directory.is_dir() and not directory.is_symlink()
            removed_inside += sum(not (directory / name).exists() for name in names)
            outside = [p for d in (theirs, victim) for p in d.iterdir()]
            assert len(outside) == 2 * len(names), "removed outside DIR"
        assert ran and removed_inside  # the runs overlapped the swaps and did remove in DIR
    finally:
        shutil.rmtree(base)
        shutil.rmtree(victim)


@needs_root
def test_root_refuses_a_root_owned_dir_another_user_can_rename(other_user: User) -> None:
    base = Path(tempfile.mkdtemp(prefix="pcsec", dir="/tmp"))
    try:
        base.chmod(0o755)
        os.chown(base, other_user.uid, other_user.gid)
        (base / "locks").mkdir()
        (base / "locks" / "old.lock").mkdir()
        os.utime(base / "locks" / "old.lock", (1, 1))
        result = locks(str(base / "locks"), "--break-stale")
        assert result.returncode == 2
        assert "refusing to remove locks as root" in result.stderr
        assert "can be renamed by another user" in result.stderr
        assert (base / "locks" / "old.lock").is_dir()
        # the same layout, read only: listed as usual
        listed = locks(str(base / "locks"))
        assert listed.returncode == 0 and "old.lock" in listed.stdout
        # world-writable (sticky or not) is refused too
        os.chown(base, 0, 0)
        (base / "locks").chmod(0o1777)
        result = locks(str(base / "locks"), "--break-stale")
        assert result.returncode == 2 and "mode 1777" in result.stderr
        assert (base / "locks" / "old.lock").is_dir()
    finally:
        shutil.rmtree(base)


@needs_root
def test_root_drops_to_the_owner_of_dir(other_user: User) -> None:
    # DIR belongs to another user, who has made it read-only: root could remove
    # its stale lock, its owner cannot, and root works there as its owner.
    base = Path(tempfile.mkdtemp(prefix="pcsec", dir="/tmp"))
    try:
        base.chmod(0o755)
        directory = base / "locks"
        directory.mkdir()
        _old_lock_dirs(directory, ["old.lock"], other_user)
        os.chown(directory, other_user.uid, other_user.gid)
        directory.chmod(0o555)
        result = locks(str(directory), "--break-stale")
        assert result.returncode == 0, result.stderr
        assert (directory / "old.lock").is_dir()
        assert "no permission to remove entries" in result.stdout
        directory.chmod(0o755)
        result = locks(str(directory), "--break-stale")
        assert result.returncode == 0, result.stderr
        assert not (directory / "old.lock").exists()
    finally:
        shutil.rmtree(base)


@needs_root
def test_symlinks_another_user_placed_are_not_followed(other_user: User) -> None:
    base = Path(tempfile.mkdtemp(prefix="pcsec", dir="/tmp"))
    victim = Path(tempfile.mkdtemp(prefix="pcsecroot", dir="/tmp"))
    try:
        base.chmod(0o1777)
        _old_lock_dirs(victim, ["old.lock"], None)
        link = base / "locks"
        link.symlink_to(victim)
        os.chown(link, other_user.uid, other_user.gid, follow_symlinks=False)
        for args in (
            (str(link), "--break-stale"),
            (str(link / "old.lock"), "--lock", "--break-stale"),
        ):
            result = locks(*args)
            assert result.returncode == 2, result
            assert "is a symlink another user could have placed" in result.stderr
            assert (victim / "old.lock").is_dir()
        # root's own link in a directory only root can write is followed
        safe = Path(tempfile.mkdtemp(prefix="pcsecsafe", dir="/tmp"))
        try:
            safe.chmod(0o755)
            (safe / "locks").symlink_to(victim)
            result = locks(str(safe / "locks"), "--break-stale")
            assert result.returncode == 0, result.stderr
            assert not (victim / "old.lock").exists()
        finally:
            shutil.rmtree(safe)
    finally:
        shutil.rmtree(base)
        shutil.rmtree(victim)


# -- replace_file: the new content of a 0600 file is never readable by others -------


class Reader:
    """A process of *user* opening every temp file in *directory* as it appears, read later."""

    def __init__(self, user: User, directory: Path) -> None:
        self.stop_write: int
        stop_read, self.stop_write = os.pipe()
        self.result_read, result_write = os.pipe()
        ready_read, ready_write = os.pipe()
        self.saw_read, saw_write = os.pipe()  # a byte once it has seen a temp file
        os.set_blocking(self.saw_read, False)
        self.pid = os.fork()
        if self.pid == 0:  # pragma: no cover - the child
            try:
                os.close(self.stop_write)
                os.close(ready_read)
                become(user)
                os.set_blocking(stop_read, False)
                held: dict[str, int] = {}
                os.write(ready_write, b"x")
                while True:
                    for name in os.listdir(directory):
                        if name.endswith(".tmp") and name not in held:
                            try:
                                held[name] = os.open(os.path.join(directory, name), os.O_RDONLY)
                            except OSError:
                                held[name] = -1
                            if len(held) == 1:
                                os.write(saw_write, b"s")
                    try:
                        if os.read(stop_read, 1) == b"":
                            break
                    except BlockingIOError:
                        continue
                leaked = sum(b"secret" in os.pread(fd, 4096, 0) for fd in held.values() if fd >= 0)
                os.write(result_write, f"{len(held)} {leaked}".encode())
            except BaseException as exc:
                os.write(result_write, repr(exc).encode())
            finally:
                os._exit(0)
        os.close(stop_read)
        os.close(result_write)
        os.close(ready_write)
        os.close(saw_write)
        assert os.read(ready_read, 1) == b"x"
        os.close(ready_read)

    def saw_one(self) -> bool:
        """True once the reader has seen a temp file appear."""
        try:
            return os.read(self.saw_read, 1) == b"s"
        except BlockingIOError:
            return False

    def stop(self) -> tuple[int, int]:
        os.close(self.stop_write)
        os.close(self.saw_read)
        with os.fdopen(self.result_read, "rb") as stream:
            text = stream.read().decode()
        seen, leaked = map(int, text.split())
        os.waitpid(self.pid, 0)
        return seen, leaked


@pytest.fixture
def public_dir() -> Iterator[Path]:
    """A directory in /tmp that every user can traverse and list (mode 0755)."""
    base = Path(tempfile.mkdtemp(prefix="pcsec", dir="/tmp"))
    base.chmod(0o755)
    try:
        yield base
    finally:
        shutil.rmtree(base)


@needs_root
@pytest.mark.parametrize("fsync", [True, False])
def test_replace_file_never_shows_a_0600_files_new_content(
    other_user: User, public_dir: Path, fsync: bool
) -> None:
    from perlcompat import replace_file

    tmp_path = public_dir  # the other user may traverse and list it, as a CGI data directory
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"secret 0\n")
    secret.chmod(0o600)
    reader = Reader(other_user, tmp_path)
    saw = False
    try:  # 300 updates, more on a loaded machine until the reader has seen a temp file
        for i in range(20000):
            replace_file(secret, f"secret {i}\n", fsync=fsync)
            saw = saw or reader.saw_one()
            if i >= 299 and saw:
                break
    finally:
        seen, leaked = reader.stop()
    assert seen > 0  # it did see temp files appear
    assert leaked == 0
    assert secret.stat().st_mode & 0o777 == 0o600


def _acl(entries: list[tuple[int, int, int]]) -> bytes:
    """The binary ``system.posix_acl_access`` value of *entries* (tag, perm, id)."""
    import struct

    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *entry) for entry in entries)


ANY = 0xFFFFFFFF


def test_replace_file_keeps_owner_mode_and_acl(tmp_path: Path) -> None:
    from perlcompat import replace_file

    data = tmp_path / "board.dat"
    data.write_text("old\n")
    data.chmod(0o640)
    # user 65534 may read it and the owning group only read (mask r--): 0640
    acl = _acl([(1, 6, ANY), (2, 4, 65534), (4, 4, ANY), (0x10, 4, ANY), (0x20, 0, ANY)])
    os.setxattr(data, "system.posix_acl_access", acl)
    mode = data.stat().st_mode
    replace_file(data, "new\n")
    assert data.read_text() == "new\n"
    assert os.getxattr(data, "system.posix_acl_access") == acl
    assert data.stat().st_mode == mode
    # a file without an ACL in a directory with a default ACL gets none from it
    plain = tmp_path / "plain.dat"
    plain.write_text("old\n")
    plain.chmod(0o600)
    os.setxattr(tmp_path, "system.posix_acl_default", acl)
    replace_file(plain, "new\n")
    with pytest.raises(OSError):
        os.getxattr(plain, "system.posix_acl_access")
    assert plain.stat().st_mode & 0o7777 == 0o600


def test_replace_file_makes_a_new_file_as_open_does(tmp_path: Path) -> None:
    from perlcompat import replace_file

    old = os.umask(0o027)
    try:
        replace_file(tmp_path / "new.dat", "x\n")
        (tmp_path / "plain.dat").write_text("x\n")
    finally:
        os.umask(old)
    assert (tmp_path / "new.dat").stat().st_mode == (tmp_path / "plain.dat").stat().st_mode


# -- a FIFO planted where a lock file goes never hangs the caller -------------------


def run_as(user: User, func: Callable[[], object], patience: float = 20) -> str:
    """``repr`` of what *func* returned or raised, run as *user*; "hung" past *patience* s."""
    import select

    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(read_end)
            become(user)
            try:
                text = f"returned {func()!r}"
            except BaseException as exc:
                text = f"raised {exc!r}"
            os.write(write_end, text.encode())
        finally:
            os._exit(0)
    os.close(write_end)
    try:
        ready, _, _ = select.select([read_end], [], [], patience)
        if not ready:
            os.kill(pid, 9)
            return "hung"
        return os.read(read_end, 65536).decode()
    finally:
        os.close(read_end)
        os.waitpid(pid, 0)


@needs_root
def test_a_fifo_at_replace_files_lock_file_is_refused_at_once(
    other_user: User, public_dir: Path
) -> None:
    import fcntl  # noqa: F401  (loaded before the other user may no longer read it)

    from perlcompat import replace_file

    public_dir.chmod(0o1777)
    os.mkfifo(public_dir / "count.txt.lck", 0o644)  # another user's (root's) FIFO
    start = time.monotonic()
    outcome = run_as(other_user, lambda: replace_file(public_dir / "count.txt", "1\n", timeout=2))
    assert time.monotonic() - start < 10
    assert outcome.startswith("raised") and "not a regular file" in outcome, outcome
    assert not (public_dir / "count.txt").exists()


@needs_root
def test_a_fifo_at_a_semaphore_slot_is_refused_at_once(other_user: User, public_dir: Path) -> None:
    from perlcompat import Semaphore

    public_dir.chmod(0o1777)
    for i in range(2):
        os.mkfifo(public_dir / f"jobs.{i}", 0o644)
    start = time.monotonic()
    outcome = run_as(other_user, lambda: Semaphore(str(public_dir / "jobs"), 2, retry=2).acquire())
    assert time.monotonic() - start < 10
    assert outcome.startswith("raised") and "not a regular file" in outcome, outcome


def test_replace_file_in_a_read_only_directory_says_eacces() -> None:
    import errno

    from perlutil import as_unprivileged

    from perlcompat import replace_file

    base = Path(tempfile.mkdtemp(prefix="pcsec", dir="/tmp"))
    try:
        base.chmod(0o555)

        def attempt() -> object:
            try:
                replace_file(base / "data.txt", "x\n")
            except OSError as exc:
                return exc.errno
            return None

        assert as_unprivileged(attempt) == errno.EACCES
    finally:
        base.chmod(0o755)
        shutil.rmtree(base)


# -- a Redis URL's secrets appear in no exception, warning or log ----------------------

#: a password as base64 makes them: unencoded / # ? @ between distinctive pieces.
PIECES = ("Zq7v", "Wx9k", "Kp3n", "Lm2b", "Rt5y")
PASSWORD = "Zq7v/Wx9k#Kp3n?Lm2b@Rt5y"


def _url_forms(port: int, closed: int) -> list[str]:
    from urllib.parse import quote

    coded = quote(PASSWORD, safe="")
    forms = []
    for p in (port, closed):
        forms += [
            f"redis://:{PASSWORD}@127.0.0.1:{p}/0",
            f"redis://user:{PASSWORD}@127.0.0.1:{p}/0",
            f"redis://:{coded}@127.0.0.1:{p}/0",
            f"redis://127.0.0.1:{p}/0?password={coded}",
            f"redis://127.0.0.1:{p}/0?Pass%77ord={coded}&socket_timeout=1",
            f"rediss://127.0.0.1:{p}/0?ssl_password={coded}",
            f"rediss://127.0.0.1:{p}/0?ssl_password={PASSWORD}",
            f"redis://:{coded}@127.0.0.1:{p}/0?client_name=a@b",
        ]
    return [*forms, f"unix://:{PASSWORD}@/nonexistent/redis.sock", f"redis://:{PASSWORD}@[::1"]


def test_no_redis_url_secret_in_any_error_warning_or_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import logging
    import traceback
    import warnings

    from redis_server import RedisServer, free_port

    from perlcompat import OS_ERROR, Lock, lock
    from perlcompat.locks.methods import redis as redis_lock

    srv = RedisServer(str(tmp_path / "redis"), "--requirepass", "the-right-one").start()
    caplog.set_level(logging.DEBUG)
    texts: list[str] = []
    try:
        for url in _url_forms(srv.port, free_port()):
            texts.append(redis_lock.redact(url))
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    texts.append(f"lock() returned {lock('k', url=url, retry=1)}")
                    texts.append(str(OS_ERROR))
                except Exception as exc:
                    texts.append(
                        "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
                    )
                try:
                    Lock("k", url=url, timeout=0.3).acquire()
                    texts.append(f"{url} was granted")
                except Exception as exc:
                    texts.append(
                        "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
                    )
            texts += [str(w.message) for w in caught]
    finally:
        srv.stop()
    texts += [record.getMessage() for record in caplog.records]
    everything = "\n".join(texts)
    assert "was granted" not in everything
    leaks = [piece for piece in PIECES if piece in everything]
    assert not leaks, everything
    assert "***" in everything


# -- control characters in names and Perl text are quoted on human output ----------

ESCAPES = ("\x1b", "\x07", "\x9b", "\r")


def test_locks_quotes_control_characters_in_names(tmp_path: Path) -> None:
    for name in ("fake\nx.lock  mkdir  -  -  alive  1s  no  kept", "erase\x1b[1A\x1b[2K.lock"):
        (tmp_path / name).mkdir()
        os.utime(tmp_path / name, (1, 1))
    (tmp_path / "plain.lock").mkdir()
    os.utime(tmp_path / "plain.lock", (1, 1))
    result = locks(str(tmp_path), "--break-stale")
    assert result.returncode == 0, result.stderr
    rows = result.stdout.splitlines()
    assert len(rows) == 4  # the header and one row per lock: no fake row
    assert not any(char in result.stdout for char in ESCAPES)
    assert "'fake'$'\\n''x.lock  mkdir" in result.stdout
    assert "'erase'$'\\033''[1A'$'\\033''[2K.lock'" in result.stdout
    assert all(row.endswith("removed") for row in rows[1:])


def test_audit_quotes_control_characters_in_file_names_and_perl_text(tmp_path: Path) -> None:
    script = tmp_path / "count\x1b[8m.pl"
    perl = b'open(OUT, ">>/tmp/log\x1b]0;owned\x07.txt");\nprint OUT "x";\nclose(OUT);\n'
    script.write_bytes(perl)
    result = subprocess.run(
        [sys.executable, "-m", "perlcompat", "audit", str(tmp_path)],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=60,
    )
    assert result.returncode == 1, result.stderr
    assert not any(char in result.stdout + result.stderr for char in ESCAPES)
    assert f"'{tmp_path}/count'$'\\033''[8m.pl':1: warning" in result.stdout
    assert "/tmp/log$'\\033']0;owned$'\\a'.txt" in result.stdout
    # --json: JSON escapes C0 itself; DEL, C1 (a one-byte CSI) and bidi controls too
    script.write_bytes(perl.replace(b"\x07", "\x9b\u202e".encode()))
    result = subprocess.run(
        [sys.executable, "-m", "perlcompat", "audit", "--json", str(tmp_path)],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=60,
    )
    assert not any(char in result.stdout for char in (*ESCAPES, "\u202e"))
    assert "\\u009b" in result.stdout and "\\u202e" in result.stdout


def test_quote_reads_back_in_a_shell() -> None:
    from perlcompat.tools.quoting import quote

    for text in ("a\nb", "it's\x1b[2K", "\n", "x\u202ey", "tab\there", "plain"):
        shown = quote(text)
        assert not any(char in shown for char in "\n\x1b\u202e\t")
        back = subprocess.run(
            ["bash", "-c", f"printf %s {shown}"], capture_output=True, text=True, check=True
        )
        assert back.stdout == text


# -- the audit of a hostile script: thousands of locks held at once -----------------


def test_audit_tracks_at_most_max_held_locks_at_once_and_says_so() -> None:
    from perlcompat.tools.audit.run import audit
    from perlcompat.tools.audit.walker import MAX_HELD

    n = MAX_HELD + 30
    held = "".join(f'open(F{i}, ">>/tmp/f{i}") or die;\nflock(F{i}, 2) or die;\n' for i in range(n))
    # and two locks taken in both orders: still found among the first ones
    sub = (
        'sub a { open(P, ">>/tmp/p") or die; flock(P, 2) or die;'
        ' open(Q, ">>/tmp/q") or die; flock(Q, 2) or die; close(Q); close(P); }\n'
        'sub b { open(Q, ">>/tmp/q") or die; flock(Q, 2) or die;'
        ' open(P, ">>/tmp/p") or die; flock(P, 2) or die; close(P); close(Q); }\n'
    )
    found = audit([("many.pl", sub + held)])
    notes = [f for f in found if "the audit tracks at most" in f.message]
    assert len(notes) == 1 and notes[0].severity == "info"
    assert notes[0].line == 2 + 2 * MAX_HELD + 2  # the flock of the first lock past the limit
    order = [f for f in found if f.rule == "lock-order" and f.severity == "error"]
    assert sorted(f.line for f in order) == [1, 2]


# -- the demo removes its temp directory on SIGTERM and SIGHUP, as on Ctrl-C --------


def _a_row_has_started(tmp: Path) -> bool:
    """True once a directory in *tmp* holds a row's data files (other entries come and go:
    ``tempfile`` probes TMPDIR with a short-lived file before it makes the demo's directory)."""
    for entry in tmp.iterdir():
        try:
            if any(p.name.startswith("row") for p in entry.iterdir()):
                return True
        except (NotADirectoryError, FileNotFoundError):
            continue
    return False


@pytest.mark.parametrize("signum", [15, 1])
def test_demo_removes_its_temp_directory_when_stopped(tmp_path: Path, signum: int) -> None:
    env = dict(ENV, TMPDIR=str(tmp_path))
    proc = subprocess.Popen(
        [sys.executable, "-m", "perlcompat", "demo", "--quick"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        deadline = time.monotonic() + 60
        # the first row's directory holds its data files once the writers run
        while not _a_row_has_started(tmp_path):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)  # polled: the demo signals nothing before its first row ends
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signum, err
    assert list(tmp_path.iterdir()) == []


# -- an mkdir lock's owner file left by another user is replaced, as documented -----


@needs_root
def test_mkdir_replaces_an_owner_file_of_another_user(public_dir: Path) -> None:
    from perlutil import as_unprivileged

    from perlcompat.locks import owner as _owner

    public_dir.chmod(0o777)
    owner_file = public_dir / "board.lock.owner"
    owner_file.write_bytes(_owner.padded())  # root's blank record: no longer anyone's
    owner_file.chmod(0o644)

    def take() -> tuple[int, str | None, int]:
        from perlcompat import Lock

        with Lock(str(public_dir / "board.lock"), method="mkdir", timeout=5):
            fields = _owner.parse(owner_file.read_bytes(), "mkdir") or {}
            return os.getpid(), fields.get("pid"), owner_file.stat().st_uid

    pid, recorded, uid = as_unprivileged(take)  # type: ignore[misc]
    assert recorded == str(pid)
    assert uid == 65534


# -- root's lock() breaks a stale lock only where no other user can move things ---------


@needs_root
def test_root_lock_refuses_to_break_in_a_directory_another_user_controls(
    other_user: User, public_dir: Path
) -> None:
    import errno

    from perlcompat import OS_ERROR, Lock, lock, unlock

    theirs = public_dir / "theirs"
    theirs.mkdir()
    os.chown(theirs, other_user.uid, other_user.gid)
    _old_lock_dirs(theirs, ["board.lock"], other_user)
    assert lock(str(theirs / "board.lock"), retry=2, wait=0.05, stale=60) == 0
    assert int(OS_ERROR) == errno.EPERM
    with pytest.raises(PermissionError, match="refusing to break the stale lock"):
        Lock(str(theirs / "board.lock"), retry=2, wait=0.05, stale=60).acquire()
    assert (theirs / "board.lock").is_dir()
    # root's own directory (only root can change it or its parents): broken as before
    mine = public_dir / "mine"
    mine.mkdir()
    _old_lock_dirs(mine, ["board.lock"], None)
    assert lock(str(mine / "board.lock"), retry=2, wait=0.05, stale=60) == 1
    assert unlock(str(mine / "board.lock")) == 1


@needs_root
def test_root_replace_file_leaves_temp_files_where_another_user_controls_the_directory(
    other_user: User, public_dir: Path
) -> None:
    from perlcompat import replace_file

    gone = subprocess.Popen(["true"])
    gone.wait()  # a writer that has exited: its temp file is an orphan
    for owner in (other_user, None):
        directory = public_dir / ("theirs" if owner else "mine")
        directory.mkdir()
        if owner is not None:
            os.chown(directory, owner.uid, owner.gid)
        orphan = directory / f".data.txt.{gone.pid}.0123abcd.tmp"
        orphan.write_bytes(b"half-written\n")
        replace_file(directory / "data.txt", "new\n")
        assert (directory / "data.txt").read_text() == "new\n"
        assert orphan.exists() == (owner is not None)
