#!/usr/bin/perl
# Seed 000: append, lock, write; the end of file may have moved before the lock.
open(OUT, ">> $datafile") or die "open: $!";
flock(OUT, 2) or die "flock: $!";   # EXPECT append-no-seek
print OUT "$data\n";
close(OUT);
