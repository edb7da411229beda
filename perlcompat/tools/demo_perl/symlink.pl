# `perlcompat demo`: the Perl writer of the symlink rows (after prelude.pl).
for my $i (0 .. $n - 1) {
    until (symlink($$, "$d/list.lock")) { select(undef, undef, undef, 0.001) }
    add_entry($i);
    unlink("$d/list.lock") or die "unlink: $!";
}
