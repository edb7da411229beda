#!/usr/bin/perl
# A counter that forks a mail worker while it still holds the lock: in Perl the child
# keeps the flock after the parent exits; in a port the parent's exit releases it.
open(OUT, "+< $datafile") or die "open: $!";
flock(OUT, 2) or die "flock: $!";
$count = <OUT>;
$pid = fork();   # EXPECT fork-while-locked
if ($pid == 0) {
    &send_mail($count);
    exit 0;
}
seek(OUT, 0, 0);
print OUT $count + 1;
truncate(OUT, tell(OUT));
close(OUT);

sub rebuild {
    &lock('rebuild.lock') or &error('busy');
    if (fork) {   # EXPECT fork-while-locked
        exit 0;
    }
    &make_index;
    &unlock('rebuild.lock');
}

sub lock { mkdir($_[0], 0755) }
sub unlock { rmdir($_[0]) }
sub error { print "Content-Type: text/plain\n\n$_[0]\n"; exit }
sub send_mail { }
sub make_index { }
