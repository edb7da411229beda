#!/usr/bin/perl
# Seed 003: lock before reading, hold it until the write is done.
$logfile = "./log.dat";

&lock('lockdir') or &error('busy');
open(IN, "$logfile") or &error("open");
@lines = <IN>;
close(IN);
unshift(@lines, "$name<>$comment\n");
splice(@lines, 50);
open(OUT, ">$logfile") or &error("write");
print OUT @lines;
close(OUT);
&unlock('lockdir');

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
