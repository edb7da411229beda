# countlib.pl: the settings and subs the counter shares, loaded into the script's package
# by `require './countlib.pl';` (its $datafile, $count and NUMBER are the script's).
use Fcntl;

$datafile = ($ENV{'PERLCOMPAT_DATA_DIR'} || '.') . '/libcount.dat';

sub error {
    print "Content-Type: text/plain\n\n";
    print "error: $_[0]\n";
    exit;
}

# WWWBoard's shape: the number file stays open and locked after the sub returns,
# until the script closes NUMBER (or exits).
sub bump {
    sysopen(NUMBER, $datafile, O_RDWR|O_CREAT) or &error("open: $!");
    flock(NUMBER, 2)                             or &error("flock: $!");
    $count = <NUMBER>;
    $count++;
    seek(NUMBER, 0, 0);
    print NUMBER $count;
    truncate(NUMBER, tell(NUMBER));
}

1;
