#!/usr/bin/perl
open(OUT, "+< $datafile") or die "open: $!";
eval { flock(OUT, 2) or die "flock: $!" };
if ($@) { print "Content-type: text/plain\n\nbusy\n"; exit; }
seek(OUT, 0, 0);
print OUT $data;
truncate(OUT, tell(OUT));
close(OUT);

open(LOG, "+< $logfile") or die "open: $!";
eval { flock(LOG, 2) } or die "flock failed: $!";
seek(LOG, 0, 0);
print LOG $data;
truncate(LOG, tell(LOG));
close(LOG);
