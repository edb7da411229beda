#!/usr/bin/perl
# Read under a shared lock, release it, write under a new exclusive lock.
use Fcntl qw(:flock);
$file = "./count.txt";

open(IN, "< $file") or die "open: $!";
flock(IN, LOCK_SH) or die "flock: $!";
$count = <IN>;
close(IN);
$count++;
open(OUT, "+< $file") or die "open: $!";   # EXPECT lock-gap
flock(OUT, LOCK_EX) or die "flock: $!";
seek(OUT, 0, 0);
print OUT $count;
truncate(OUT, tell(OUT));
close(OUT);

sub two_holds {
    &lock('data.lock') or die "busy";
    open(IN, "data.txt") or die;
    my @rows = <IN>;
    close(IN);
    &unlock('data.lock');
    push(@rows, "new\n");
    &lock('data.lock') or die "busy";
    open(OUT, "> data.txt") or die;   # EXPECT lock-gap
    print OUT @rows;
    close(OUT);
    &unlock('data.lock');
}

sub lock { return mkdir($_[0], 0755) ? 1 : 0; }
sub unlock { rmdir($_[0]); }
