#!/usr/bin/perl
# $datafile comes from the required lock.pl: the very file update() flocks.
require './lock.pl';
open(OUT, "> $datafile") or die "open: $!";   # EXPECT unlocked-write
print OUT "reset\n";
close(OUT);
