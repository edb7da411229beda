# `perlcompat demo`: the Perl writer of the alarm rows (after prelude.pl).
for my $i (0 .. $n - 1) {
    eval {
        local $SIG{ALRM} = sub { die "time out" };
        open(OUT, "+< $d/list.dat") or die "open: $!";
        alarm(5);
        flock(OUT, 2) or die "flock: $!";
        alarm(300);
        my @lines = <OUT>;
        pause();
        seek(OUT, 0, 0) or die "seek: $!";
        print OUT @lines, scalar(@lines) + 1, "<>w$w-$i<>\n" or die "print: $!";
        truncate(OUT, tell(OUT)) or die "truncate: $!";
        close(OUT) or die "close: $!";
        alarm(0);
    };
    die $@ if $@;
}
