#!/usr/bin/perl
# A classic CGI layout: the main path exits, the write section is reached by goto.
$logfile = "log.cgi";
$tmpfile = "log.tmp";
if ($ENV{'REQUEST_METHOD'} eq 'POST') { goto WRITE; }
print "Content-type: text/html\n\n";
exit(0);

WRITE:
open(OUT, "> $tmpfile") or die "open: $!";
print OUT "new entry\n";
close(OUT);
unlink($logfile);   # EXPECT unlink-before-rename
rename($tmpfile, $logfile) or die "rename: $!";
exit(0);
