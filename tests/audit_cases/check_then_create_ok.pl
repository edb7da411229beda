#!/usr/bin/perl
# Atomic lock creation: mkdir and sysopen O_EXCL either create or fail, in one step.
use Fcntl;
$lockdir = "./bbs.lock";
$retry = 5;
while (!mkdir($lockdir, 0755)) {
    if (--$retry <= 0) { &error("BUSY"); }
    sleep(1);
}
# Under the lock, test-then-create is safe: nobody else is here.
unless (-e $logfile) {
    open(LOG, ">$logfile") or die "log: $!";
    print LOG "# created\n";
    close(LOG);
}
rmdir($lockdir);

sub excl_lock {
    my $file = "count.lck";
    if (-e $file) { return 0; }
    sysopen(L, $file, O_WRONLY | O_CREAT | O_EXCL) or return 0;
    close(L);
    return 1;
}

sub error { print "Content-type: text/plain\n\n$_[0]\n"; exit; }

# Creating a data file with '>>' after the test is safe: two first requests may both
# open it, but '>>' never empties what the other wrote; the update then runs under flock.
sub count {
    my $file = "count.dat";
    unless (-e $file) {
        open(NEW, ">> $file") or die "create: $!";
        close(NEW);
    }
    open(DAT, "+< $file") or die "open: $!";
    flock(DAT, 2) or die "flock: $!";
    my $n = <DAT>;
    seek(DAT, 0, 0) or die "seek: $!";
    print DAT $n + 1, "\n";
    truncate(DAT, tell(DAT)) or die "truncate: $!";
    close(DAT) or die "close: $!";
    return $n + 1;
}

sub init_log {
    if (!-e $logfile) {
        open(my $fh, '+>>', $logfile) or die "log: $!";
        close($fh);
    }
}
