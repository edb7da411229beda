#!/usr/bin/perl
# A counter with no lock at all: two hits at once count as one.
$countfile = "count.txt";
open(IN, $countfile) or die "open: $!";
$count = <IN>;
close(IN);
$count++;
open(OUT, ">$countfile") or die "open: $!";   # EXPECT unlocked-update
print OUT $count;
close(OUT);
print "Content-type: text/plain\n\n$count\n";

# The same helper called once under the lock and once without it.
&lock('lockdir') or die "busy";
&add_entry("hello");
&unlock('lockdir');
&add_entry("again");

sub add_entry {
    open(IN, "log.txt") or die "open: $!";
    my @lines = <IN>;
    close(IN);
    open(OUT, "> log.txt") or die "open: $!";   # EXPECT unlocked-update
    print OUT "$_[0]\n", @lines;
    close(OUT);
}
sub lock { return mkdir($_[0], 0755) ? 1 : 0; }
sub unlock { rmdir($_[0]); }
