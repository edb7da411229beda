#!/usr/bin/perl
# rename replaces the target atomically: no window without the file.
$datafile = "data.txt";
$tmpfile = "data.tmp";
open(LOCK, "> data.lck") or die "open: $!";
flock(LOCK, 2) or die "flock: $!";
open(TMP, "> $tmpfile") or die "open: $!";
print TMP @lines;
close(TMP);
rename($tmpfile, $datafile) or die "rename: $!";
close(LOCK);
unlink($tmpfile);
