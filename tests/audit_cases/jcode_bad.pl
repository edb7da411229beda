#!/usr/bin/perl
# jcode.pl calls between the read and the write keep the findings (Perl 4 and 5 forms).
require './jcode.pl';
$logfile = "./log.dat";
&jcode'convert(*name, 'sjis');
jcode::convert(\$comment, 'sjis', 'euc', 'z');

open(IN, "$logfile") or &error("open");
@lines = <IN>;
close(IN);
foreach $line (@lines) { &jcode'convert(*line, 'sjis'); $code = &jcode'getcode(*line); }
&jcode'h2z_sjis(*name);
unshift(@lines, "$name<>$comment\n");

&lock('lockdir') or &error('busy');   # EXPECT lock-after-read
open(OUT, ">$logfile") or &error("write");
print OUT @lines;
close(OUT);
&unlock('lockdir');

open(CNT, "count.txt") or &error("open");
$count = <CNT>;
close(CNT);
$count = &jcode'sjis($count);
jcode::sjis2euc(\$count);
open(CNT, "> count.txt") or &error("open");   # EXPECT unlocked-update
print CNT $count + 1;
close(CNT);

sub lock {
    my $dir = $_[0];
    my $retry = 5;
    while (!mkdir($dir, 0755)) {
        if (--$retry <= 0) { return 0; }
        sleep(1);
    }
    return 1;
}
sub unlock { rmdir($_[0]); }
sub error { print "Content-type: text/plain\n\n$_[0]\n"; exit; }
