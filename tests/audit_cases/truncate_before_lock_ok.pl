#!/usr/bin/perl
# Seed 000, done right: open "+<", lock, then rewrite in place.
use Fcntl qw(:flock);
$datafile = "./bbs.dat";
$lockfile = "./bbs.lock";

open(OUT, "+< $datafile") or die "Can't open    : $!";
flock(OUT, 2)             or die "Can't flock   : $!";
@lines = <OUT>;
seek(OUT, 0, 0)           or die "Can't seek    : $!";
print OUT "$data\n"       or die "Can't print   : $!";
print OUT @lines;
truncate(OUT, tell(OUT))  or die "Can't truncate: $!";
close(OUT);

# "まとめてロック": an empty lock file may be opened with ">", it holds no data.
open(LOCK, "> $lockfile") or die "Can't open lockfile: $!";
flock(LOCK, 2)            or die "Can't flock        : $!";
&update_everything;
close(LOCK);

sub update_everything { return 1; }
