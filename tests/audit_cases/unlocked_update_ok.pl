#!/usr/bin/perl
# The same counter with seed 000's "+<" idiom.
use Fcntl qw(:flock);
$countfile = "count.txt";
open(CNT, "+<$countfile") or die "open: $!";
flock(CNT, LOCK_EX) or die "flock: $!";
$count = <CNT>;
$count++;
seek(CNT, 0, 0) or die "seek: $!";
print CNT $count;
truncate(CNT, tell(CNT)) or die "truncate: $!";
close(CNT);
print "Content-type: text/plain\n\n$count\n";

# A helper that reads and rewrites with no lock of its own, called only under the lock.
&lock('lockdir') or die "busy";
&add_entry("hello");
&unlock('lockdir');

sub add_entry {
    open(IN, "log.txt") or die "open: $!";
    my @lines = <IN>;
    close(IN);
    open(OUT, "> log.txt") or die "open: $!";
    print OUT "$_[0]\n", @lines;
    close(OUT);
}
sub lock { return mkdir($_[0], 0755) ? 1 : 0; }
sub unlock { rmdir($_[0]); }
