#!/usr/bin/perl
# Writes made while holding only a shared lock.
use Fcntl qw(:flock);
$file = "./count.txt";

# The classic counter: flock(OUT, 1) is LOCK_SH, and two copies write at once.
open(OUT, "+< $file") or die "open: $!";
flock(OUT, 1) or die "flock: $!";   # EXPECT write-under-shared-lock
$count = <OUT>;
$count++;
seek(OUT, 0, 0);
print OUT $count;
truncate(OUT, tell(OUT));
close(OUT);

# Matt's TextCounter's create(): a new count file written under LOCK_SH.
sub create {
    open(COUNT, "+>> $_[0]") or die "$!";
    flock(COUNT, LOCK_SH) or die "$!";   # EXPECT write-under-shared-lock
    print COUNT "0";
    close(COUNT);
}

sub clear {
    my ($log) = @_;
    open(my $fh, "+< $log") or die;
    flock($fh, LOCK_SH | LOCK_NB) or return;   # EXPECT write-under-shared-lock
    truncate($fh, 0) or die;
    close($fh);
}
