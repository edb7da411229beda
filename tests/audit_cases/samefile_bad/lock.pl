# Settings and the locked update, shared by both scripts through require.
$datafile = "./data.txt";
sub update {
    open(DAT, "+< $datafile") or die "open: $!";
    flock(DAT, 2) or die "flock: $!";
    my @lines = <DAT>;
    seek(DAT, 0, 0) or die "seek: $!";
    print DAT @lines, "$_[0]\n";
    truncate(DAT, tell(DAT)) or die "truncate: $!";
    close(DAT) or die "close: $!";
}
1;
