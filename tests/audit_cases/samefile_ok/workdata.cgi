#!/usr/bin/perl
# Another $datafile, also from the environment: replacing it by rename touches nothing
# visitors.cgi flocks.  $count is never assigned here: it is not visitors.cgi's count.dat.
$datadir = $ENV{'DATA_DIR'} || '.';
$datafile = ($ENV{'DATA_DIR'} || '.') . '/work.dat';
$lockdir = "$datadir/work.lock";
mkdir($lockdir, 0755) or die "busy: $!";
open(TMP, "> $datafile.tmp") or die "open: $!";
print TMP "data\n";
close(TMP) or die "close: $!";
rename("$datafile.tmp", $datafile) or die "rename: $!";
rename("$count.new", $count) or die "rename: $!";
rmdir($lockdir);
