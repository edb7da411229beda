"""``perlcompat audit`` suggests the call that takes the same lock as the script (issue 22 item 9).

The script's own lock path, method and format: daycount.cgi's ``symlink(".", $lockfile)``
sub gets ``method="symlink", target="."`` and its ``./lock/daycount.lock``, not a
placeholder mkdir ``"lockdir"`` (followed as written: ELOOP at once).  A script that
locks with fcntl record locks (File::FcntlLock's ``->lock($fh, F_SETLKW)``, Perl's own
``fcntl(FH, F_SETLKW, $struct)``) is not reported as taking no lock; one that renames its
data file away and back (in a lock sub, or inline) is never told to flock it.
"""

from __future__ import annotations

import pytest

from perlcompat.tools.audit.run import audit

#: daycount.cgi's lock subs as public Japanese counter scripts write them (the
#: `$lockkey` 1 symlink / 2 mkdir choice, a 60 s stale rule, `&error` when busy).
DAYCOUNT = """#!/usr/bin/perl
$lockkey = 1;
$lockfile = "./lock/daycount.lock";
$logfile = "./daycount.dat";

if ($lockkey) { &lock; }
open(IN, "$logfile") || &error("Open Error");
$data = <IN>;
close(IN);
$data++;
open(OUT, ">$logfile") || &error("Write Error");
print OUT $data;
close(OUT);
if ($lockkey) { &unlock; }
exit;

sub lock {
\tif (-e $lockfile) {
\t\tlocal($mtime) = (stat($lockfile))[9];
\t\tif ($mtime && $mtime < time - 60) { &unlock; }
\t}
\tlocal($retry) = 5;
\tif ($lockkey == 1) {
\t\twhile (!symlink(".", $lockfile)) {
\t\t\tif (--$retry <= 0) { &error('LOCK is BUSY'); }
\t\t\tsleep(1);
\t\t}
\t} elsif ($lockkey == 2) {
\t\twhile (!mkdir($lockfile, 0755)) {
\t\t\tif (--$retry <= 0) { &error('LOCK is BUSY'); }
\t\t\tsleep(1);
\t\t}
\t}
\t$lockflag = 1;
}

sub unlock {
\tif ($lockkey == 1) { unlink($lockfile); }
\telsif ($lockkey == 2) { rmdir($lockfile); }
\t$lockflag = 0;
}

sub error {
\t&unlock if ($lockflag);
\tprint "Content-type: text/plain\\n\\n$_[0]\\n";
\texit;
}
"""


def test_daycount_gets_its_own_lock_path_and_the_symlink_method() -> None:
    [f] = audit([("daycount.cgi", DAYCOUNT)])
    assert f.rule == "stale-check-then-remove"
    call = f.suggestion.split("  #")[0]
    assert call.startswith('lock("./lock/daycount.lock", method="symlink", target=".", '), call
    assert call.endswith('stale=60) or error("busy")'), call
    assert '"lockdir"' not in f.suggestion


@pytest.mark.parametrize(
    ("target", "expected"),
    [('"/$$"', 'method="symlink", target="/{pid}"'), ("$$", 'method="symlink", ')],
)
def test_symlink_targets_become_target_templates(target: str, expected: str) -> None:
    script = DAYCOUNT.replace('symlink(".", $lockfile)', f"symlink({target}, $lockfile)")
    [f] = audit([("daycount.cgi", script)])
    assert expected in f.suggestion
    if target == "$$":
        assert "target=" not in f.suggestion  # the symlink method's own target is the pid


def test_an_mkdir_lock_sub_keeps_the_default_method_and_gets_the_path() -> None:
    script = DAYCOUNT.replace('while (!symlink(".", $lockfile))', "while (!mkdir($lockfile, 0755))")
    [f] = audit([("daycount.cgi", script)])
    assert f.suggestion.startswith('lock("./lock/daycount.lock", wait=1, stale=60)')


FCNTLLOCK = """#!/usr/bin/perl
use File::FcntlLock;
my $file = "count.dat";
open(my $fh, '+<', $file) or die "open: $!";
my $fs = File::FcntlLock->new(l_type => F_WRLCK);
$fs->lock($fh, F_SETLKW) or die "Locking failed: " . $fs->error;
my $n = <$fh>;
seek($fh, 0, 0);
print $fh $n + 1;
truncate($fh, tell($fh));
close($fh);
"""

FCNTL = """#!/usr/bin/perl
use Fcntl;
my $file = "count.dat";
open(FH, "+< $file") or die "open: $!";
my $struct = pack('s s l l i', F_WRLCK, 0, 0, 0, 0);
fcntl(FH, F_SETLKW, $struct) or die "fcntl: $!";
my $n = <FH>;
seek(FH, 0, 0);
print FH $n + 1;
truncate(FH, tell(FH));
close(FH);
"""


@pytest.mark.parametrize("script", [FCNTLLOCK, FCNTL], ids=["File::FcntlLock", "fcntl"])
def test_fcntl_locked_updates_are_not_reported_as_unlocked(script: str) -> None:
    assert audit([("count.cgi", script)]) == []
    unlocked = "\n".join(line for line in script.split("\n") if "F_SETLKW" not in line)
    [f] = audit([("count.cgi", unlocked)])  # without the lock: reported, as before
    assert f.rule == "unlocked-update"


def test_fcntl_lock_taken_after_the_read_suggests_fcntllock_not_flock() -> None:
    late = FCNTLLOCK.replace(
        '$fs->lock($fh, F_SETLKW) or die "Locking failed: " . $fs->error;\n', ""
    )
    late = late.replace("my $n = <$fh>;\n", "my $n = <$fh>;\n$fs->lock($fh, F_SETLKW) or die;\n")
    [f] = audit([("count.cgi", late)])
    assert f.rule == "lock-after-read"
    assert f.suggestion.startswith("fs = FcntlLock(l_type=F_WRLCK); fs.lock(fh, F_SETLKW)")
    assert "flock" not in f.suggestion


RENAME_IF = """#!/usr/bin/perl
$datafile = "./data.txt";
$tmpfile = "./data.tmp";
if (!rename($datafile, $tmpfile)) { &error("busy"); }
open(IN, $tmpfile) || &error("open");
@lines = <IN>;
close(IN);
push(@lines, "new\\n");
open(OUT, ">$tmpfile") || &error("write");
print OUT @lines;
close(OUT);
rename($tmpfile, $datafile);
exit;
sub error { print "Content-type: text/plain\\n\\n$_[0]\\n"; exit; }
"""

RENAME_FOREACH = """#!/usr/bin/perl
$file = "./log.txt";
$new = "$file.$$";
foreach (1 .. 5) {
    if (rename($file, $new)) { $ok = 1; last; }
    sleep(1);
}
&error("busy") unless $ok;
open(IN, $new) || &error("open");
@lines = <IN>;
close(IN);
open(OUT, ">$new") || &error("write");
print OUT @lines, "x\\n";
close(OUT);
rename($new, $file);
exit;
sub error { print "Content-type: text/plain\\n\\n$_[0]\\n"; exit; }
"""


@pytest.mark.parametrize("script", [RENAME_IF, RENAME_FOREACH], ids=["if", "foreach"])
def test_a_data_file_renamed_away_and_back_is_never_told_to_flock(script: str) -> None:
    findings = audit([("bbs.cgi", script)])
    assert findings and all("flock(" not in f.suggestion for f in findings)
    for f in findings:
        if f.rule in ("unlocked-update", "unlocked-write"):
            assert 'method="rename"' in f.suggestion and "data=True" in f.suggestion


def test_a_rename_lock_sub_suggests_the_data_file_rename_call() -> None:
    script = RENAME_IF.replace(
        'if (!rename($datafile, $tmpfile)) { &error("busy"); }',
        "&lock;",  # its result unchecked: reported, with the call that takes the same lock
    ).replace("rename($tmpfile, $datafile);\nexit;", "&unlock;\nexit;")
    script += """sub lock {
    foreach (1 .. 5) { return 1 if rename($datafile, $tmpfile); sleep(1); }
    return 0;
}
sub unlock { rename($tmpfile, $datafile); }
"""
    findings = audit([("bbs.cgi", script)])
    [f] = [f for f in findings if f.rule == "unchecked-result"]
    assert f.suggestion.startswith(
        'lock("./data.txt", method="rename", held="./data.tmp", data=True, '
    ), f.suggestion
    assert all("flock(" not in g.suggestion for g in findings)
