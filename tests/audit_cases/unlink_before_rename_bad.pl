#!/usr/bin/perl
# Windows-era habit: rename would not overwrite, so delete the target first.
$datafile = "data.txt";
$tmpfile = "data.tmp";
open(LOCK, "> data.lck") or die "open: $!";
flock(LOCK, 2) or die "flock: $!";
open(TMP, "> $tmpfile") or die "open: $!";
print TMP @lines;
close(TMP);
unlink($datafile);   # EXPECT unlink-before-rename
rename($tmpfile, $datafile) or die "rename: $!";
close(LOCK);
