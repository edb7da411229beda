#!/usr/bin/perl
# Old portability trick: "flock may not exist here, so eval it and carry on".
open(OUT, "+< $datafile") or die "open: $!";
eval "flock(OUT, 2)";   # EXPECT swallowed-flock
seek(OUT, 0, 0);
print OUT $data;
truncate(OUT, tell(OUT));
close(OUT);

open(LOG, "+< $logfile") or die "open: $!";
eval { flock(LOG, 2) };   # EXPECT swallowed-flock
seek(LOG, 0, 0);
print LOG $data;
truncate(LOG, tell(LOG));
close(LOG);
