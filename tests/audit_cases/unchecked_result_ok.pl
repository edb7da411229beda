#!/usr/bin/perl
use Fcntl qw(:flock);
$datafile = "data.txt";

open(OUT, "+< $datafile") or die "Can't open: $!";
flock(OUT, LOCK_EX) or die "Can't flock: $!";
print OUT "x\n";
close(OUT);

open(LOG, ">> $logfile") || die "Can't open $logfile: $!";
unless (flock(LOG, 2)) { die "flock: $!"; }
seek(LOG, 0, 2);
print LOG "entry\n";
close LOG;

&lock('lockdir') or &error('busy');
&write_data;
&unlock('lockdir');

die "no lock" unless &lock('other');
&unlock('other');

sub lock {
    my $retry = 5;
    while (!mkdir($_[0], 0755)) {
        if (--$retry <= 0) { return 0; }
        sleep(1);
    }
    return 1;
}
sub unlock { rmdir($_[0]); }
sub write_data { return 1; }
sub error { print "Content-type: text/plain\n\n$_[0]\n"; exit; }

# The lexical handle is tested on the next statement.
open(my $in, '<', "conf.txt");
unless ($in) { die "Can't open conf.txt: $!"; }
my @conf = <$in>;
close($in);
sysopen(my $out, "state.txt", $flags);
die "Can't open state.txt: $!" unless $out;
close($out);
