#!/usr/bin/perl
# Seed 000's timeout: 5 s to wait for the lock, 300 s for the work, then reset.
eval {
    local $SIG{ALRM} = sub { die "time out" };
    open(OUT, "+< $datafile") or die;
    alarm(5);
    flock(OUT, 2) or die;
    alarm(300);
    seek(OUT, 0, 0);
    print OUT $data;
    truncate(OUT, tell(OUT));
    close(OUT);
    alarm(0);
};
alarm 0;
if ($@ =~ /time out/) {
    print "busy\n";
}
elsif ($@) { die }
