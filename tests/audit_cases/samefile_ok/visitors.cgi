#!/usr/bin/perl
# $datafile is set from the environment here: the name means this script's file only.
$datafile = ($ENV{'DATA_DIR'} || '.') . '/visitors.dat';
$count = "count.dat";
$logfile = $ENV{'LOG_FILE'};
open(OUT, "+>> $datafile") or die "open: $!";
flock(OUT, 2) or die "flock: $!";
seek(OUT, 0, 2) or die "seek: $!";
print OUT "$ENV{'REMOTE_ADDR'}\n";
close(OUT) or die "close: $!";
open(C, "+< $count") or die "open: $!";
flock(C, 2) or die "flock: $!";
close(C) or die "close: $!";
open(LOG, ">> $logfile") or die "open: $!";
flock(LOG, 2) or die "flock: $!";
seek(LOG, 0, 2) or die "seek: $!";
print LOG "visit\n";
close(LOG) or die "close: $!";
