#!/usr/bin/perl
# The posting code flocks the log, the admin "clear" code rewrites it without a lock.
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
    open(OUT, "> $logfile") or die "open: $!";   # EXPECT unlocked-write
    print OUT "";
    close(OUT);
}
