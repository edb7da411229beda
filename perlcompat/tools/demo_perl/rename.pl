# `perlcompat demo`: the Perl writer of the rename rows (after prelude.pl).
for my $i (0 .. $n - 1) {
    open(LOCK, "> $d/list.dat.lck") or die "open lock: $!";
    flock(LOCK, 2)                  or die "flock: $!";
    open(IN, "< $d/list.dat"); my @lines = <IN>; close(IN);
    pause();
    open(TMP, "> $d/list.dat.$$.tmp") or die "open temp: $!";
    print TMP @lines, scalar(@lines) + 1, "<>w$w-$i<>\n" or die "print: $!";
    close(TMP)                      or die "close: $!";
    rename("$d/list.dat.$$.tmp", "$d/list.dat") or die "rename: $!";
    close(LOCK);
}
