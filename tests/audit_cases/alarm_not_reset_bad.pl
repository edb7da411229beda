#!/usr/bin/perl
# The alarm that bounds the wait for flock is never cancelled.
eval {
    local $SIG{ALRM} = sub { die "time out" };
    open(OUT, "+< $datafile") or die;
    alarm(5);   # EXPECT alarm-not-reset
    flock(OUT, 2) or die;
    seek(OUT, 0, 0);
    print OUT $data;
    truncate(OUT, tell(OUT));
    close(OUT);
};
if ($@ =~ /time out/) { print "busy\n"; }

sub wait_lock {
    alarm 10;   # EXPECT alarm-not-reset
    flock(LOCK, 2) or die "flock: $!";
    return 1;
}
