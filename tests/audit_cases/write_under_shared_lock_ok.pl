#!/usr/bin/perl
# Shared locks only around reads; every write under LOCK_EX.
use Fcntl qw(:flock);
$file = "./count.txt";

open(IN, "< $file") or die "open: $!";
flock(IN, 1) or die "flock: $!";
$count = <IN>;
close(IN);

open(OUT, "+< $file") or die "open: $!";
flock(OUT, LOCK_EX) or die "flock: $!";
$count = <OUT>;
$count++;
seek(OUT, 0, 0);
print OUT $count;
truncate(OUT, tell(OUT));
close(OUT);

# A shared lock released before the write is lock-gap's business, not this rule's.
open(REP, "< ./report.txt") or die;
flock(REP, LOCK_SH) or die;
@rows = <REP>;
flock(REP, LOCK_UN);
close(REP);
print STDOUT @rows;
