#!/usr/bin/perl
use Fcntl qw(:flock);
$datafile = "data.txt";

open(OUT, "+< $datafile");   # EXPECT unchecked-result
flock(OUT, LOCK_EX);   # EXPECT unchecked-result
print OUT "x\n";
close(OUT);

open LOG, ">> $logfile" || die "Can't open $logfile: $!";   # EXPECT unchecked-result
flock LOG, 2 or die "flock: $!";
seek(LOG, 0, 2);
print LOG "entry\n";
close LOG;

&lock('lockdir');   # EXPECT unchecked-result
&write_data;
&unlock('lockdir');

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

open(my $in, '<', "conf.txt");   # EXPECT unchecked-result
my @conf = <$in>;
close($in);
