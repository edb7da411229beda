#!/usr/bin/perl
# Every rewrite takes the same flock.
use Fcntl qw(:flock);
$logfile = "./bbs.log";

sub post {
    open(LOG, "+< $logfile") or die "open: $!";
    flock(LOG, LOCK_EX) or die "flock: $!";
    my @lines = <LOG>;
    seek(LOG, 0, 0);
    print LOG "$_[0]\n", @lines;
    truncate(LOG, tell(LOG));
    close(LOG);
}

sub admin_clear {
    open(OUT, "+< $logfile") or die "open: $!";
    flock(OUT, LOCK_EX) or die "flock: $!";
    truncate(OUT, 0) or die "truncate: $!";
    close(OUT);
}

# Appending a line without a lock is not a rewrite.
sub access_log {
    open(ACC, ">> access.log") or return;
    print ACC scalar(localtime), "\n";
    close(ACC);
}
