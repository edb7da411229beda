#!/usr/bin/perl
# The data file is its own lock, and is replaced by rename: waiters lock a dead inode.
use Fcntl qw(:flock);
$file = "guestbook.dat";
open(DATA, "+< $file") or die "open: $!";
flock(DATA, LOCK_EX) or die "flock: $!";
@entries = <DATA>;
open(TMP, "> $file.tmp") or die "open: $!";
print TMP "$new\n", @entries;
close(TMP);
rename("$file.tmp", $file) or die "rename: $!";   # EXPECT rename-replaces-flocked
close(DATA);
