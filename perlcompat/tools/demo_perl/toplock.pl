# `perlcompat demo`: the Perl writer of the toplock rows (after prelude.pl).
my $lockfile = "$d/list.lock";
my ($id, $appended);
sub toplock {
    unless ($appended) {
        open(LOCK, ">> $lockfile") or return 0;
        print LOCK "$id<>" . time . "<>\n";
        close(LOCK);
        $appended = 1;
    }
    open(LOCK, "< $lockfile") or do { $appended = 0; return 0; };
    my @lock = <LOCK>;
    close(LOCK);
    my ($wid) = split(/<>/, $lock[0]);
    return 1 if $wid eq $id;
    $appended = 0 unless grep { (split(/<>/))[0] eq $id } @lock;
    return 0;
}
for my $i (0 .. $n - 1) {
    $id = join('', map { int(rand(10)) } 1 .. 30);
    $appended = 0;
    until (toplock()) { select(undef, undef, undef, 0.001) }
    open(IN, "< $d/list.dat"); my @lines = <IN>; close(IN);
    pause();
    open(WORK, "> $d/list.tmp") or die "open: $!";
    print WORK @lines, scalar(@lines) + 1, "<>w$w-$i<>\n";
    close(WORK);
    toplock() or die "lost the lock";
    rename("$d/list.tmp", "$d/list.dat") or die "rename: $!";
    unlink($lockfile);
}
