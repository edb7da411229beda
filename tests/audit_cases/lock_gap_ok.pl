#!/usr/bin/perl
# One handle, one lock, from the read to the write.
use Fcntl qw(:flock SEEK_SET);
$file = "./count.txt";

open(FH, "+< $file") or die "open: $!";
flock(FH, LOCK_EX) or die "flock: $!";
$count = <FH>;
$count++;
seek(FH, 0, SEEK_SET) or die "seek: $!";
print FH $count;
truncate(FH, tell(FH)) or die "truncate: $!";
close(FH);

sub one_hold {
    &lock('data.lock') or die "busy";
    open(IN, "data.txt") or die;
    my @rows = <IN>;
    close(IN);
    push(@rows, "new\n");
    open(OUT, "> data.txt") or die;
    print OUT @rows;
    close(OUT);
    &unlock('data.lock');
}

sub lock { return mkdir($_[0], 0755) ? 1 : 0; }
sub unlock { rmdir($_[0]); }
