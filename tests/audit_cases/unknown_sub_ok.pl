#!/usr/bin/perl
# The same board with its lock subs in the script: nothing is unknown.
$lockfile = "bbs.lock";
$logfile = "bbs.log";
&LOCK($lockfile) or &error("busy");
open(IN, $logfile) or &error("open");
@lines = <IN>;
close(IN);
open(OUT, "> $logfile") or &error("open");
print OUT "new\n", @lines;
close(OUT);
&UNLOCK($lockfile);
&jcode'convert(*lines, 'sjis');
exit;

sub LOCK {
    foreach (1 .. 5) {
        return 1 if mkdir($_[0], 0755);
        sleep(1);
    }
    return 0;
}
sub UNLOCK { rmdir($_[0]); }
sub error { print "Content-type: text/plain\n\n$_[0]\n"; exit; }
