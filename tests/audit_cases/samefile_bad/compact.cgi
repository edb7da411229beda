#!/usr/bin/perl
# "$dir/data.txt" with $dir = "." is lock.pl's "./data.txt": the same file.
$dir = ".";
$datafile = "$dir/data.txt";
open(TMP, "> $datafile.tmp") or die "open: $!";
print TMP "compacted\n";
close(TMP) or die "close: $!";
rename("$datafile.tmp", $datafile) or die "rename: $!";   # EXPECT rename-replaces-flocked
