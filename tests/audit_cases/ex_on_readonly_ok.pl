#!/usr/bin/perl
# Read mode takes a shared lock: 1 or 5 (LOCK_SH, LOCK_SH|LOCK_NB).
use Fcntl qw(:flock);
open(IN, "< $datafile") or die "open: $!";
flock(IN, 1) or die "flock: $!";
@lines = <IN>;
close(IN);

open(my $fh, '<', $config) or die "open: $!";
flock($fh, LOCK_SH | LOCK_NB) or die "busy";
my @conf = <$fh>;
close($fh);
