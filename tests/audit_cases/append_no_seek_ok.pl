#!/usr/bin/perl
# "Programming Perl": seek to the end after taking the lock.
open(OUT, ">> $datafile") or die "open: $!";
flock(OUT, 2) or die "flock: $!";
seek(OUT, 0, 2) or die "seek: $!";
print OUT "$data\n";
close(OUT);
