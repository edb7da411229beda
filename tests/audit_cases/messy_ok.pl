#!/usr/bin/perl
# Unsafe-looking text that is not code: POD, heredocs, strings, regexes, comments.
# open(OUT, ">$datafile"); flock(OUT, 2);  <- a comment
use strict;
my %opt = (s => 1, y => 2, q => 3);
my $size = -s $0;
my $half = $opt{s} / 2;
my @parts = split /\//, "a/b/c";
my $re = qr{open\(OUT, ">\$f"\)};
(my $copy = "flock(IN, 2)") =~ s/flock/lock/g;
my $q = q{ eval "flock(OUT, 2)"; unlink($lock); rename($t, $f); };
my $count = $#parts + 1;
my $msg = <<'EOT';
open(OUT, "> $datafile");
flock(OUT, 2);
print OUT $data;
EOT
my $html = <<"EOT" . <<'EOT2';
alarm(5); flock(OUT, 2);
EOT
unlink($lockfile); rename($tmp, $file);
EOT2
print "Content-type: text/plain\n\n$msg$html$q$re$copy$size$half$count\n";

=head1 NAME

messy_ok.pl - open(OUT, ">$datafile"); flock(OUT, 2); in POD is documentation

=cut

format STDOUT =
@<<<<<<<< open(OUT, ">$f"); flock(OUT, 2);
$count
.

exit;
__END__
open(OUT, "> $datafile");
flock(OUT, 2);
print OUT $data;
