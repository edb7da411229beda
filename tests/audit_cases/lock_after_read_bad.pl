#!/usr/bin/perl
# Seed 003's wrong lock: read, process, then lock only around the write.
$logfile = "./log.dat";

open(IN, "$logfile") or &error("open");
@lines = <IN>;
close(IN);
unshift(@lines, "$name<>$comment\n");
splice(@lines, 50);

&lock('lockdir') or &error('busy');   # EXPECT lock-after-read
open(OUT, ">$logfile") or &error("write");
print OUT @lines;
close(OUT);
&unlock('lockdir');

sub count_up {
    open(my $in, '<', 'count.txt') or return;
    my $count = <$in>;
    close($in);
    open(my $out, '+<', 'count.txt') or return;
    flock($out, 2) or return;   # EXPECT lock-after-read
    seek($out, 0, 0);
    print $out $count + 1;
    close($out);
}

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
