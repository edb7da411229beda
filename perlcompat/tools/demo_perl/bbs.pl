# `perlcompat demo`: the Perl writer of the bbs rows (after prelude.pl).
for my $i (0 .. $n - 1) {
    open(DAT, "+< $d/bbs.dat") or die "open: $!";
    flock(DAT, 2)              or die "flock: $!";
    my @lines = <DAT>;
    my ($no) = split(/<>/, $lines[0]); $no++;
    pause();
    unshift(@lines, "$no<>$name<>w$w-$i $text<>\n");
    seek(DAT, 0, 0)            or die "seek: $!";
    print DAT @lines           or die "print: $!";
    truncate(DAT, tell(DAT))   or die "truncate: $!";
    close(DAT)                 or die "close: $!";
}
