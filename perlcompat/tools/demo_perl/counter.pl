# `perlcompat demo`: the Perl writer of the counter rows (after prelude.pl).
for my $i (1 .. $n) {
    open(OUT, "+< $d/count.dat") or die "open: $!";
    flock(OUT, 2)                or die "flock: $!";
    my $count = <OUT>; $count++;
    pause();
    seek(OUT, 0, 0)              or die "seek: $!";
    print OUT "$count\n"         or die "print: $!";
    truncate(OUT, tell(OUT))     or die "truncate: $!";
    close(OUT)                   or die "close: $!";
}
