# `perlcompat demo`: the Perl writer of the mkdir rows (after prelude.pl).
for my $i (0 .. $n - 1) {
    until (mkdir("$d/list.lock", 0755)) { select(undef, undef, undef, 0.001) }
    add_entry($i);
    rmdir("$d/list.lock") or die "rmdir: $!";
}
