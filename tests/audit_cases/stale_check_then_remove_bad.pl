#!/usr/bin/perl
# Seed 003's sub lock: remove a lock older than 3 minutes, then mkdir.
sub lock {
    my $dir = $_[0];
    if (-e $dir) {
        my $t = (stat($dir))[9];
        if ($t < time - 180) { &unlock($dir); }   # EXPECT stale-check-then-remove
    }
    local $retry = 5;
    while (!mkdir($dir, 0755)) {
        if (--$retry <= 0) { return 0; }
        sleep(1);
    }
    return 1;
}
sub unlock { rmdir("$_[0]"); }

# Seed 001's TOP?LOCK: the first line's time is old, so delete the lock file.
open(LOCK, "test.lock") or die;
@lock = <LOCK>;
close(LOCK);
($wid, $wtm) = split(/<>/, $lock[0]);
if ($wid eq "$id") {
    print "locked\n";
} elsif ($wtm < time - 600) {
    unlink("test.lock");   # EXPECT stale-check-then-remove
    exit;
}

# A lock directory judged by -M.
$lockdir = "./data/lock";
rmdir($lockdir) if (-M $lockdir > 600 / 86400);   # EXPECT stale-check-then-remove
