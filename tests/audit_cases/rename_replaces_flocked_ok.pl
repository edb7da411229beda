#!/usr/bin/perl
# nms guestbook.pl: lock a separate "$file.lck" that is never replaced.
use Fcntl qw(:flock);
$file = "guestbook.dat";
open(LCK, "> $file.lck") or die "open: $!";
flock(LCK, LOCK_EX) or die "flock: $!";
open(DATA, "< $file") or die "open: $!";
@entries = <DATA>;
close(DATA);
open(TMP, "> $file.tmp") or die "open: $!";
print TMP "$new\n", @entries;
close(TMP);
rename("$file.tmp", $file) or die "rename: $!";
close(LCK);
