#!/usr/bin/perl
# Seed 000: "open(IN, "< $datafile"); flock(IN, 2);" fails on Solaris.
use Fcntl qw(:flock);
open(IN, "< $datafile") or die "open: $!";
flock(IN, 2) or die "flock: $!";   # EXPECT ex-on-readonly
@lines = <IN>;
close(IN);

open(my $fh, '<', $config) or die "open: $!";
flock($fh, LOCK_EX | LOCK_NB) or die "busy";   # EXPECT ex-on-readonly
my @conf = <$fh>;
close($fh);
