#!/usr/bin/perl
# A board whose lock subs live in a library that was not given (and is not beside it).
require "./bbslib.pl";
$lockfile = "bbs.lock";
$logfile = "bbs.log";
&LOCK($lockfile);   # EXPECT unknown-sub
open(IN, $logfile) or &error("open");
@lines = <IN>;
close(IN);
open(OUT, "> $logfile") or &error("open");
print OUT "new\n", @lines;
close(OUT);
&UNLOCK($lockfile);   # EXPECT unknown-sub
&UNLOCK($lockfile);
exit;
