# Shared by every Perl writer of `perlcompat demo` (prepended to each row's program):
# arguments, the ready/go handshake, the pause, the list rows' critical section.
my ($d, $w, $n, $pause, $name, $text) = @ARGV;
$| = 1; print "r"; my @go = <STDIN>;
sub pause { select(undef, undef, undef, $pause) }
sub add_entry {
    my ($i) = @_;
    open(IN, "< $d/list.dat"); my @lines = <IN>; close(IN);
    pause();
    open(OUT, "> $d/list.dat") or die "open: $!";
    print OUT @lines, scalar(@lines) + 1, "<>w$w-$i<>\n" or die "print: $!";
    close(OUT) or die "close: $!";
}
