#!/usr/bin/perl
# $logfile here is a file of this script's own, whatever visitors.cgi calls $logfile:
# rewriting it needs no lock of visitors.cgi's.
$logfile = $ENV{'REPORT_LOG'};
open(LOG, "> $logfile") or die "open: $!";
print LOG "report\n";
close(LOG) or die "close: $!";
