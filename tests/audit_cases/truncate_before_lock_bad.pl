#!/usr/bin/perl
# Seed 000: "open(OUT, "> $datafile"); flock(OUT, 2);" empties the file before the lock.
use Fcntl qw(:flock);
$datafile = "./bbs.dat";

open(OUT, "> $datafile") || die "Can't open: $!";   # EXPECT truncate-before-lock
flock(OUT, 2) || die "Can't flock: $!";
print OUT "$name<>$message\n";
close(OUT);

sub save_counter {
    my ($file, $count) = @_;
    open(my $fh, '+>', $file) or die "open $file: $!";   # EXPECT truncate-before-lock
    flock($fh, LOCK_EX) or die "flock: $!";
    print $fh $count;
    close($fh);
}
