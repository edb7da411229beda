#!/usr/bin/perl
# Seed 000 ("Perl exclusive control"), every idiom written the safe way.
use Fcntl qw(:flock);
$datafile = "./bbs.dat";
$lockdir  = "./bbs.lockdir";
$lockfile = "./bbs.lock";
$lockfile2 = "./bbs.lock.held";

# mkdir lock: create or fail in one step.
$retry = 5;
while (!mkdir($lockdir, 0755)) {
    if (--$retry <= 0) { &error("BUSY"); }
    sleep(1);
}
&work;
rmdir($lockdir);

# symlink lock holding our pid, removed by the signal trap only if it is ours.
$SIG{HUP} = $SIG{INT} = $SIG{PIPE} = $SIG{QUIT} = $SIG{TERM} = \&unlock;
sub unlock {
    if ($$ == readlink($lockfile)) {
        unlink($lockfile);
    }
    exit;
}
$retry = 5;
while (!symlink($$, $lockfile)) {
    if (--$retry <= 0) { &error("BUSY"); }
    sleep(1);
}
&work;
unlink($lockfile);

# rename lock: the marker's absence means "in use".
$retry = 5;
while (!rename($lockfile, $lockfile2)) {
    if (--$retry <= 0) { &error("BUSY"); }
    sleep(1);
}
&work;
rename($lockfile2, $lockfile);

# read: shared lock.
sub read_all {
open(IN, "< $datafile") or die "Can't open: $!";
flock(IN, 1)            or die "Can't flock: $!";
@lines = <IN>;
close(IN);
}

# append: lock, then seek to the end.
open(OUT, ">> $datafile") or die "Can't open: $!";
flock(OUT, 2)             or die "Can't flock: $!";
seek(OUT, 0, 2)           or die "Can't seek: $!";
print OUT "$data\n";
close(OUT);

# overwrite: "+<", lock, seek, print, truncate(tell).
open(OUT, "+< $datafile") or die "Can't open    : $!";
flock(OUT, 2)             or die "Can't flock   : $!";
seek(OUT, 0, 0)           or die "Can't seek    : $!";
print OUT "$data\n"       or die "Can't print   : $!";
truncate(OUT, tell(OUT))  or die "Can't truncate: $!";
close(OUT);

# one lock file around a whole series of operations.
open(LOCK, "> $lockfile.all") or die "Can't open lockfile: $!";
flock(LOCK, 2)                or die "Can't flock        : $!";
&work;
close(LOCK);

# bounded wait for the lock, bounded run time, then reset.
eval {
    local $SIG{ALRM} = sub { die "time out" };
    open(OUT, "+< $datafile") or die;
    alarm(5);
    flock(OUT, 2) or die;
    alarm(300);
    @lines = <OUT>;
    seek(OUT, 0, 0);
    print OUT @lines, "$data\n";
    truncate(OUT, tell(OUT));
    close(OUT);
    alarm(0);
};
alarm(0);
if ($@ =~ /time out/) {
    &error("BUSY");
}
elsif ($@) { die }

sub work { return 1; }
sub error { print "Content-type: text/html\n\n$_[0]\n"; exit; }
