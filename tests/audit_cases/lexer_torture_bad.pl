#!/usr/bin/perl
# Constructs that trip naive tokenizers; the bug on each marked line must still be found.
use Fcntl qw(:flock SEEK_END);
my ($x, $y, %h, @a, $r, $code) = (1, 2, (s => 1, y => 2, tr => 3), (1, 2), {}, sub { 1 });
my $ratio = $x / $y / 2;
my $mins = time / 60;
my $last = $#a + $#{$r->{list} || []};
my @w = split /,/, "a,b";
my $it = ($x =~ /it's/) ? 'yes' : "no";
my $dq = ($x =~ m{"}x) ? 1 : 0;
(my $t = "a#b") =~ s#a#b#g;
(my $u = "abc") =~ tr/a-c/A-C/;
(my $v = "abc") =~ y/a/b/;
my $sub = $h{s} + $h{y} + $h{tr};
my @list = qw(open close flock);
my $size = (-s $0) || 0;
my $age = -M $0;
my $pid = $$;
my $err = "$!";
local $/ = undef;
local $, = ",";
my $str = "a" x 3;
my $m = $x % 2;
my %copy = %h;
my $amp = &$code();
my $pkg = $main::x;
my $here = <<~EOT;
    "unbalanced ' quotes
    EOT
my $n = 0x1F + 1_000 + .5 + 1e3;
my $range = join ",", 1 .. 3;
print STDERR "warn\n" if $x < $y and $y > $x;
open(OUT, ">", "data.txt") or die "open: $!";   # EXPECT truncate-before-lock
flock(OUT, LOCK_EX) or die "flock: $!";
print OUT "$x $y\n";
close(OUT);
my $w2 = $x <=> $y;
open my $fh, '<', "conf.txt" || die;   # EXPECT unchecked-result
while (<$fh>) { chomp; }
close $fh;
$LOCK_EX = 2;
open(CFG, "+< conf.txt") or die;
flock(CFG, Fcntl::LOCK_EX()) or die;
flock(CFG, &LOCK_UN);
flock(CFG, $LOCK_EX) or die;
flock(CFG, &LOCK_EX | &LOCK_NB) or die;
&get_block(1);
close(CFG);
sub get_block { return 0; }
