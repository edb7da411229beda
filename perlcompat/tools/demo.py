"""``perlcompat demo``: concurrent writers on every idiom, and what each way of locking lost.

Each row runs several writer processes on one file in a fresh temporary
directory.  Every writer does the same read-modify-write cycle a CGI request
does: read the file, "process" for half a millisecond (the mkdir lock column's 各種処理),
write it back (the lock file made by ``open`` pauses as long between its check
and its create, the gap that idiom leaves); the counter adds one, the lists add
one entry ``w<writer>-<n>``.  The writers report ready, then start together
(their stdin is closed: the starting gun).  Afterwards the file is read: *got*
is the counter's value, or how many expected entries are present exactly once;
*lost* is what is missing.

Rows come in three kinds.  The unsafe originals (no lock, lock only around the
write, ``>`` before flock, a lock file made by ``open``, locking a file that is
then replaced by rename) lose updates.  The perlcompat ports lose none.  Where
``perl`` is installed, Perl writers running the original idiom and perlcompat
writers share one file, and still lose none: both take the same lock.

Exit status 0 when every safe row lost nothing, 1 otherwise.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from subprocess import Popen
    from typing import Any

    from ..perl.handle import PerlFile

    Writer = tuple[str, str]  # ("py" | "perl", variant)

#: "processing" pause between read and write, seconds (the mkdir lock column's 各種処理).
PAUSE = 0.0005
#: cycles per writer (normal run, --quick).
CYCLES = 40
QUICK_CYCLES = 12
#: writers per row.
WRITERS = 4
#: a row whose writers have not finished after this long is stopped and reported.
ROW_TIMEOUT = 60.0
#: the Shift_JIS text every board post carries (表, ソ and 能 end in the byte 0x5C).
SJIS_TEXT = "表示ソ能"


class Row:
    """One line of the table: what runs, and how its file is measured."""

    __slots__ = ("idiom", "kind", "safe", "writers")

    def __init__(self, idiom: str, safe: bool, kind: str, writers: tuple[Writer, ...]) -> None:
        self.idiom = idiom
        self.safe = safe
        self.kind = kind  # "count", "list" (UTF-8 lines) or "sjis" (Shift_JIS lines)
        self.writers = writers


def _py(variant: str, count: int = WRITERS) -> tuple[Writer, ...]:
    return (("py", variant),) * count


def _mixed(perl: str, python: str) -> tuple[Writer, ...]:
    return (("perl", perl), ("py", python), ("perl", perl), ("py", python))


ROWS: tuple[Row, ...] = (
    Row("counter: no lock", False, "count", _py("counter_nolock")),
    Row("counter: '>' before flock", False, "count", _py("counter_truncate_first")),
    Row("counter: perlcompat +< flock", True, "count", _py("counter")),
    Row("counter: Perl +< and perlcompat", True, "count", _mixed("counter", "counter")),
    Row("sjis board: lock only around write", False, "sjis", _py("bbs_write_only")),
    Row("sjis board: perlcompat flock first", True, "sjis", _py("bbs")),
    Row("sjis board: Perl and perlcompat", True, "sjis", _mixed("bbs", "bbs")),
    Row("sub lock: open() lock file", False, "list", _py("openlock")),
    Row("sub lock: perlcompat lock() mkdir", True, "list", _py("mkdir")),
    Row("sub lock: Perl mkdir and perlcompat", True, "list", _mixed("mkdir", "mkdir")),
    Row("symlink: perlcompat lock()", True, "list", _py("symlink")),
    Row("symlink: Perl symlink($$) and perlcompat", True, "list", _mixed("symlink", "symlink")),
    Row("alarm+flock: perlcompat", True, "list", _py("alarm")),
    Row("alarm+flock: Perl and perlcompat", True, "list", _mixed("alarm", "alarm")),
    Row("TOP?LOCK: perlcompat", True, "list", _py("toplock")),
    Row("TOP?LOCK: Perl and perlcompat", True, "list", _mixed("toplock", "toplock")),
    Row("rename: flock on the replaced file", False, "list", _py("rename_self_lock")),
    Row("rename: perlcompat replace_file", True, "list", _py("replace")),
    Row("rename: Perl .lck and replace_file", True, "list", _mixed("rename", "replace")),
)


# -- the Python writers (perlcompat ports of each idiom) ---------------------------
def _check(ok: object, what: str) -> None:
    """Perl's ``... or die "what: $!"``."""
    if not ok:
        from ..perl.die import die
        from ..perl.errno import OS_ERROR

        die(f"{what}: {OS_ERROR}")


def _open(mode: str, path: str) -> PerlFile:
    """``open(FH, MODE, PATH) or die``."""
    from .. import open_

    fh = open_(mode, path)
    if not fh:
        from ..perl.die import die
        from ..perl.errno import OS_ERROR

        die(f"Can't open {mode} {path}: {OS_ERROR}")
    return fh


def _counter_nolock(d: str, wid: int, n: int) -> None:
    from .. import close, print_

    for _ in range(n):
        fh = _open("<", f"{d}/count.dat")
        count = int(fh.readline() or 0)
        close(fh)
        time.sleep(PAUSE)
        out = _open(">", f"{d}/count.dat")
        print_(out, f"{count + 1}\n")
        close(out)


def _counter_truncate_first(d: str, wid: int, n: int) -> None:
    from .. import LOCK_EX, LOCK_SH, close, flock, print_

    for _ in range(n):
        fh = _open("<", f"{d}/count.dat")
        flock(fh, LOCK_SH)
        count = int(fh.readline() or 0)
        close(fh)
        time.sleep(PAUSE)
        out = _open(">", f"{d}/count.dat")  # truncates now, before the lock below
        flock(out, LOCK_EX)
        print_(out, f"{count + 1}\n")
        close(out)


def _counter(d: str, wid: int, n: int) -> None:
    from .. import LOCK_EX, close, flock, print_, seek, tell, truncate

    for _ in range(n):
        out = _open("+<", f"{d}/count.dat")
        _check(flock(out, LOCK_EX), "flock")
        count = int(out.readline() or 0)
        time.sleep(PAUSE)
        _check(seek(out, 0, 0), "seek")
        _check(print_(out, f"{count + 1}\n"), "print")
        _check(truncate(out, tell(out)), "truncate")
        _check(close(out), "close")


def _board_line(no: int, wid: int, i: int) -> str:
    return f"{no}<>名無し<>w{wid}-{i} {SJIS_TEXT}<>\n"


def _top_number(lines: list[str | bytes]) -> int:
    return int(str(lines[0]).split("<>")[0]) if lines else 0


def _bbs_write_only(d: str, wid: int, n: int) -> None:
    from .. import LOCK_EX, close, flock, print_, seek, tell, truncate

    for i in range(n):
        fh = _open("<:encoding(cp932)", f"{d}/bbs.dat")  # read without the lock ...
        lines = fh.readlines()
        close(fh)
        time.sleep(PAUSE)
        out = _open("+<:encoding(cp932)", f"{d}/bbs.dat")  # ... lock only to write
        flock(out, LOCK_EX)
        seek(out, 0, 0)
        print_(out, _board_line(_top_number(lines) + 1, wid, i), *lines)
        truncate(out, tell(out))
        close(out)


def _bbs(d: str, wid: int, n: int) -> None:
    from .. import LOCK_EX, close, flock, print_, seek, tell, truncate

    for i in range(n):
        out = _open("+<:encoding(cp932)", f"{d}/bbs.dat")
        _check(flock(out, LOCK_EX), "flock")  # lock first, then read (the mkdir lock column)
        lines = out.readlines()
        time.sleep(PAUSE)
        _check(seek(out, 0, 0), "seek")
        _check(print_(out, _board_line(_top_number(lines) + 1, wid, i), *lines), "print")
        _check(truncate(out, tell(out)), "truncate")
        _check(close(out), "close")


def _add_entry(d: str, wid: int, i: int, target: str = "list.dat") -> None:
    """The list rows' critical section: read all, pause, write all plus one line."""
    from .. import close, print_

    fh = _open("<", f"{d}/list.dat")
    lines = fh.readlines()
    close(fh)
    time.sleep(PAUSE)
    out = _open(">", f"{d}/{target}")
    _check(print_(out, *lines, f"{len(lines) + 1}<>w{wid}-{i}<>\n"), "print")
    _check(close(out), "close")


def _openlock(d: str, wid: int, n: int) -> None:
    from .. import close, filetest, unlink

    for i in range(n):
        while filetest("-e", f"{d}/list.lock"):  # the Perl locking article's while (-f $lock)
            time.sleep(0.0002)
        # the gap between the check and the create, where a busy server deschedules a
        # CGI process: waiters that all saw the lock go all walk through it
        time.sleep(PAUSE)
        close(_open(">", f"{d}/list.lock"))  # ... then create it
        _add_entry(d, wid, i)
        unlink(f"{d}/list.lock")


def _method_lock(method: str) -> Callable[[str, int, int], None]:
    def writer(d: str, wid: int, n: int) -> None:
        from .. import lock, unlock

        for i in range(n):
            _check(lock(f"{d}/list.lock", method=method, retry=None), "lock")
            _add_entry(d, wid, i)
            _check(unlock(f"{d}/list.lock", method=method), "unlock")

    return writer


def _alarm(d: str, wid: int, n: int) -> None:
    from .. import LOCK_EX, alarm, close, die, flock, local_sig, print_, seek, tell, truncate

    for i in range(n):
        with local_sig("ALRM", lambda *_: die("time out")):
            out = _open("+<", f"{d}/list.dat")
            alarm(5)
            _check(flock(out, LOCK_EX), "flock")
            alarm(300)
            lines = out.readlines()
            time.sleep(PAUSE)
            _check(seek(out, 0, 0), "seek")
            _check(print_(out, *lines, f"{len(lines) + 1}<>w{wid}-{i}<>\n"), "print")
            _check(truncate(out, tell(out)), "truncate")
            _check(close(out), "close")
            alarm(0)


def _toplock(d: str, wid: int, n: int) -> None:
    from .. import Lock, rename, still_holding

    for i in range(n):
        with Lock(f"{d}/list.lock", method="toplock", retry=None) as held:
            _add_entry(d, wid, i, target="list.tmp")  # TOP?LOCK: into a work file
            _check(still_holding(held), "lock lost")
            _check(rename(f"{d}/list.tmp", f"{d}/list.dat"), "rename")


def _rename_self_lock(d: str, wid: int, n: int) -> None:
    from .. import LOCK_EX, close, flock, rename

    for i in range(n):
        fh = _open("<", f"{d}/list.dat")
        flock(fh, LOCK_EX)  # the lock is on this inode; the rename below replaces it
        tmp = f"list.dat.{os.getpid()}.tmp"
        _add_entry(d, wid, i, target=tmp)
        rename(f"{d}/{tmp}", f"{d}/list.dat")
        close(fh)


def _replace(d: str, wid: int, n: int) -> None:
    from .. import replace_file

    for i in range(n):

        def add(old: str | bytes, i: int = i) -> str:
            text = old if isinstance(old, str) else old.decode()
            number = text.count("\n") + 1
            time.sleep(PAUSE)
            return f"{text}{number}<>w{wid}-{i}<>\n"

        # fsync=False: like the Perl writers, this measures locking, not the disk
        replace_file(f"{d}/list.dat", add, fsync=False)


PYTHON_WRITERS: dict[str, Callable[[str, int, int], None]] = {
    "counter_nolock": _counter_nolock,
    "counter_truncate_first": _counter_truncate_first,
    "counter": _counter,
    "bbs_write_only": _bbs_write_only,
    "bbs": _bbs,
    "openlock": _openlock,
    "mkdir": _method_lock("mkdir"),
    "symlink": _method_lock("symlink"),
    "alarm": _alarm,
    "toplock": _toplock,
    "rename_self_lock": _rename_self_lock,
    "replace": _replace,
}


# -- the Perl writers (the original idioms) ------------------------------------------
_PERL_PRELUDE = r"""
my ($d, $w, $n, $pause, $name, $text) = @ARGV;
$| = 1; print "r"; my @go = <STDIN>;
sub pause { select(undef, undef, undef, $pause) }
sub add_entry {
    my ($i) = @_;
    open(IN, "< $d/list.dat"); my @lines = <IN>; close(IN);
    pause();
    open(OUT, "> $d/list.dat") or die "open: $!";
    print OUT @lines, scalar(@lines) + 1, "<>w$w-$i<>\n" or die "print: $!";
    close(OUT) or die "close: $!";
}
"""

PERL_WRITERS: dict[str, str] = {
    "counter": r"""
for my $i (1 .. $n) {
    open(OUT, "+< $d/count.dat") or die "open: $!";
    flock(OUT, 2)                or die "flock: $!";
    my $count = <OUT>; $count++;
    pause();
    seek(OUT, 0, 0)              or die "seek: $!";
    print OUT "$count\n"         or die "print: $!";
    truncate(OUT, tell(OUT))     or die "truncate: $!";
    close(OUT)                   or die "close: $!";
}
""",
    "bbs": r"""
for my $i (0 .. $n - 1) {
    open(DAT, "+< $d/bbs.dat") or die "open: $!";
    flock(DAT, 2)              or die "flock: $!";
    my @lines = <DAT>;
    my ($no) = split(/<>/, $lines[0]); $no++;
    pause();
    unshift(@lines, "$no<>$name<>w$w-$i $text<>\n");
    seek(DAT, 0, 0)            or die "seek: $!";
    print DAT @lines           or die "print: $!";
    truncate(DAT, tell(DAT))   or die "truncate: $!";
    close(DAT)                 or die "close: $!";
}
""",
    "mkdir": r"""
for my $i (0 .. $n - 1) {
    until (mkdir("$d/list.lock", 0755)) { select(undef, undef, undef, 0.001) }
    add_entry($i);
    rmdir("$d/list.lock") or die "rmdir: $!";
}
""",
    "symlink": r"""
for my $i (0 .. $n - 1) {
    until (symlink($$, "$d/list.lock")) { select(undef, undef, undef, 0.001) }
    add_entry($i);
    unlink("$d/list.lock") or die "unlink: $!";
}
""",
    "alarm": r"""
for my $i (0 .. $n - 1) {
    eval {
        local $SIG{ALRM} = sub { die "time out" };
        open(OUT, "+< $d/list.dat") or die "open: $!";
        alarm(5);
        flock(OUT, 2) or die "flock: $!";
        alarm(300);
        my @lines = <OUT>;
        pause();
        seek(OUT, 0, 0) or die "seek: $!";
        print OUT @lines, scalar(@lines) + 1, "<>w$w-$i<>\n" or die "print: $!";
        truncate(OUT, tell(OUT)) or die "truncate: $!";
        close(OUT) or die "close: $!";
        alarm(0);
    };
    die $@ if $@;
}
""",
    "toplock": r"""
my $lockfile = "$d/list.lock";
my ($id, $appended);
sub toplock {
    unless ($appended) {
        open(LOCK, ">> $lockfile") or return 0;
        print LOCK "$id<>" . time . "<>\n";
        close(LOCK);
        $appended = 1;
    }
    open(LOCK, "< $lockfile") or do { $appended = 0; return 0; };
    my @lock = <LOCK>;
    close(LOCK);
    my ($wid) = split(/<>/, $lock[0]);
    return 1 if $wid eq $id;
    $appended = 0 unless grep { (split(/<>/))[0] eq $id } @lock;
    return 0;
}
for my $i (0 .. $n - 1) {
    $id = join('', map { int(rand(10)) } 1 .. 30);
    $appended = 0;
    until (toplock()) { select(undef, undef, undef, 0.001) }
    open(IN, "< $d/list.dat"); my @lines = <IN>; close(IN);
    pause();
    open(WORK, "> $d/list.tmp") or die "open: $!";
    print WORK @lines, scalar(@lines) + 1, "<>w$w-$i<>\n";
    close(WORK);
    toplock() or die "lost the lock";
    rename("$d/list.tmp", "$d/list.dat") or die "rename: $!";
    unlink($lockfile);
}
""",
    "rename": r"""
for my $i (0 .. $n - 1) {
    open(LOCK, "> $d/list.dat.lck") or die "open lock: $!";
    flock(LOCK, 2)                  or die "flock: $!";
    open(IN, "< $d/list.dat"); my @lines = <IN>; close(IN);
    pause();
    open(TMP, "> $d/list.dat.$$.tmp") or die "open temp: $!";
    print TMP @lines, scalar(@lines) + 1, "<>w$w-$i<>\n" or die "print: $!";
    close(TMP)                      or die "close: $!";
    rename("$d/list.dat.$$.tmp", "$d/list.dat") or die "rename: $!";
    close(LOCK);
}
""",
}


def child(argv: Sequence[str] | None = None) -> int:
    """Entry point of one Python writer: VARIANT DIR WRITER CYCLES."""
    variant, directory, wid, cycles = sys.argv[1:5] if argv is None else argv
    sys.stdout.write("r")
    sys.stdout.flush()
    sys.stdin.read()  # returns when the parent closes our stdin: go
    PYTHON_WRITERS[variant](directory, int(wid), int(cycles))
    return 0


# -- running a row ---------------------------------------------------------------------
def _setup(kind: str, directory: str) -> None:
    """Create the (empty) data file a row's writers open with ``+<``."""
    name = {"count": "count.dat", "sjis": "bbs.dat", "list": "list.dat"}[kind]
    with open(os.path.join(directory, name), "wb"):
        pass


def _measure(kind: str, directory: str, expected: list[str]) -> int:
    """What survived: the counter's value, or expected entries present exactly once."""
    if kind == "count":
        with open(os.path.join(directory, "count.dat"), "rb") as stream:
            number = stream.read().strip()
        return int(number) if number.isdigit() else 0
    import re
    from collections import Counter

    name, encoding = ("bbs.dat", "shift_jis") if kind == "sjis" else ("list.dat", "utf-8")
    with open(os.path.join(directory, name), "rb") as stream:
        raw = stream.read()
    seen: Counter[str] = Counter()
    for line in raw.splitlines():
        try:
            text = line.decode(encoding)  # a line that no longer decodes is lost
        except UnicodeDecodeError:
            continue
        if kind == "sjis" and SJIS_TEXT not in text:
            continue
        match = re.search(r"<>w(\d+)-(\d+)[ <]", text)
        if match:
            seen[f"w{match.group(1)}-{match.group(2)}"] += 1
    return sum(1 for entry in expected if seen[entry] == 1)


def _python_command() -> list[str]:
    # -S skips site (this writer needs nothing from site-packages on POSIX); Windows
    # needs portalocker from site-packages for flock.
    flags = [] if sys.platform == "win32" else ["-S"]
    code = "import sys; from perlcompat.tools.demo import child; sys.exit(child())"
    return [sys.executable, *flags, "-c", code]


def _start(
    writers: tuple[Writer, ...], directory: str, cycles: int, perl: str | None
) -> list[Popen[bytes]]:
    import subprocess

    from .. import __file__ as package_init  # perlcompat/__init__.py

    root = os.path.dirname(os.path.dirname(os.path.abspath(package_init)))  # holds perlcompat/
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    for name in ("PERLCOMPAT_LOCK_ROOT", "PERLCOMPAT_LOCK_URL"):  # the rows name their locks
        env.pop(name, None)
    procs: list[Popen[bytes]] = []
    for wid, (language, variant) in enumerate(writers):
        if language == "py":
            command = [*_python_command(), variant, directory, str(wid), str(cycles)]
        else:
            assert perl is not None
            poster = os.fsdecode("名無し".encode("cp932"))  # Shift_JIS bytes as arguments
            text = os.fsdecode(SJIS_TEXT.encode("cp932"))
            script = _PERL_PRELUDE + PERL_WRITERS[variant]
            command = [perl, "-e", script, directory, str(wid), str(cycles), str(PAUSE)]
            command += [poster, text]
        procs.append(
            subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
            )
        )
    _LIVE.extend(procs)
    return procs


#: every writer started, so that a stopping signal can end them before the directory goes.
_LIVE: list[Popen[bytes]] = []


def _stop_writers() -> None:
    """Kill and reap the writers still running (the demo is stopping)."""
    while _LIVE:
        proc = _LIVE.pop()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _exit_on(signum: int, frame: object) -> None:
    """SIGTERM/SIGHUP: leave through the ``with`` blocks (their temp directory is removed)."""
    raise SystemExit(128 + signum)


def run_row(row: Row, base: str, cycles: int, perl: str | None) -> tuple[dict[str, Any], str]:
    """Run one row in a new directory under *base*; return its result and writer errors."""
    import subprocess
    import tempfile

    directory = tempfile.mkdtemp(prefix="row", dir=base)
    _setup(row.kind, directory)
    procs = _start(row.writers, directory, cycles, perl)
    errors = []
    for proc in procs:  # everyone is ready: imports done, files about to be opened
        assert proc.stdout is not None
        if proc.stdout.read(1) != b"r":
            errors.append("a writer did not start")
    started = time.perf_counter()
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.close()  # the starting gun
    deadline = started + ROW_TIMEOUT
    for proc in procs:
        try:
            proc.wait(timeout=max(deadline - time.perf_counter(), 0.1))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            errors.append(f"writer {proc.args!r:.60} stopped after {ROW_TIMEOUT:g} s")
    seconds = time.perf_counter() - started
    for proc in procs:
        assert proc.stdout is not None and proc.stderr is not None
        err = proc.stderr.read()  # a writer's stderr is a few lines: it cannot fill the pipe
        proc.stdout.close()
        proc.stderr.close()
        if proc.returncode:
            text = err.decode("utf-8", "replace").strip().splitlines()
            errors.append(f"writer exited {proc.returncode}: {text[-1] if text else ''}")
    writers = len(row.writers)
    expected_entries = [f"w{w}-{i}" for w in range(writers) for i in range(cycles)]
    expected = writers * cycles
    got = _measure(row.kind, directory, expected_entries)
    result: dict[str, Any] = {
        "idiom": row.idiom,
        "safe": row.safe,
        "writers": writers,
        "expected": expected,
        "got": got,
        "lost": expected - got,
        "seconds": round(seconds, 3),
    }
    return result, "; ".join(errors)


def _rows_to_run(perl: str | None) -> tuple[list[Row], list[str]]:
    """The rows this machine can run, and why the others are left out."""
    rows: list[Row] = []
    skipped: list[str] = []
    for row in ROWS:
        uses_perl = any(language == "perl" for language, _ in row.writers)
        if uses_perl and perl is None:
            skipped.append(f"{row.idiom} (perl is not installed)")
        elif sys.platform == "win32" and row.idiom.startswith("symlink"):
            skipped.append(f"{row.idiom} (symlinks need privileges on Windows)")
        elif sys.platform == "win32" and "'>' before flock" in row.idiom:
            skipped.append(f"{row.idiom} (Windows locks are mandatory: '>' fails instead)")
        else:
            rows.append(row)
    return rows, skipped


def format_table(results: list[dict[str, Any]]) -> str:
    """The final table: idiom, safe, writers, expected, got, lost, time."""
    header = ("idiom", "safe", "writers", "expected", "got", "lost", "time")
    body = [
        (
            str(r["idiom"]),
            "yes" if r["safe"] else "no",
            str(r["writers"]),
            str(r["expected"]),
            str(r["got"]),
            str(r["lost"]),
            f"{r['seconds']:.2f} s",
        )
        for r in results
    ]
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
    lines = []
    for line in [header, *body]:
        cells = [line[0].ljust(widths[0]), line[1].ljust(widths[1])]
        cells += [cell.rjust(width) for cell, width in zip(line[2:], widths[2:])]
        lines.append("  ".join(cells).rstrip())
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines) + "\n"


def summary(results: list[dict[str, Any]]) -> str:
    """One line under the table: what the unsafe rows lost, what the safe rows kept."""
    parts = []
    for safe, label in ((False, "unsafe idioms"), (True, "perlcompat ports")):
        rows = [r for r in results if r["safe"] is safe]
        if rows:
            lost = sum(r["lost"] for r in rows)
            expected = sum(r["expected"] for r in rows)
            parts.append(f"{label} lost {lost} of {expected} updates")
    return "; ".join(parts) + ".\n"


def main(argv: list[str]) -> int:
    """``perlcompat demo [--json] [--quick]``: run every row, print the table (or JSON).

    SIGTERM and SIGHUP stop it as Ctrl-C does: the writers are killed and the
    temp directory removed (exit status 128 + the signal's number).
    """
    import argparse
    import shutil

    parser = argparse.ArgumentParser(
        prog="perlcompat demo",
        description="Run concurrent writers for every Perl locking idiom, unsafe and "
        "ported, and show how many updates each lost.",
    )
    parser.add_argument("--json", action="store_true", help="print the rows as a JSON list")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_CYCLES} cycles per writer")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    cycles = QUICK_CYCLES if args.quick else CYCLES
    perl = shutil.which("perl")
    rows, skipped = _rows_to_run(perl)

    tty = sys.stderr.isatty()

    def progress(text: str, always: bool = True) -> None:
        if always or tty:  # row-by-row progress only on a terminal
            sys.stderr.write(text)
            sys.stderr.flush()

    for reason in skipped:
        progress(f"skipping {reason}\n")
    import signal

    stopping = [getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)]
    before = {signum: signal.signal(signum, _exit_on) for signum in stopping}
    try:
        return _run_rows(args.json, rows, cycles, perl, progress)
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)


def _run_rows(
    as_json: bool,
    rows: list[Row],
    cycles: int,
    perl: str | None,
    progress: Callable[..., None],
) -> int:
    """Run *rows* in a temp directory removed whatever happens (Ctrl-C, SIGTERM, SIGHUP)."""
    import json
    import tempfile

    results: list[dict[str, Any]] = []
    failures: list[str] = []
    width = max(len(row.idiom) for row in rows)
    with tempfile.TemporaryDirectory(prefix="perlcompat-demo-") as base:
        try:
            for number, row in enumerate(rows, 1):
                progress(f"[{number:2d}/{len(rows)}] {row.idiom:<{width}} ", False)
                result, errors = run_row(row, base, cycles, perl)
                results.append(result)
                verdict = f"lost {result['lost']}" if result["lost"] else "lost none"
                progress(
                    f"{result['got']}/{result['expected']} kept, {verdict}"
                    f" ({result['seconds']:.2f} s)\n",
                    False,
                )
                if errors:
                    progress(f"        writer errors ({row.idiom}): {errors}\n")
                if row.safe and (result["lost"] or errors):
                    failures.append(row.idiom)
        finally:
            _stop_writers()  # before the directory they write in is removed
    if as_json:
        sys.stdout.write(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(format_table(results) + "\n" + summary(results))
    if failures:
        progress(f"FAILED: safe rows lost updates or had errors: {', '.join(failures)}\n")
        return 1
    return 0
