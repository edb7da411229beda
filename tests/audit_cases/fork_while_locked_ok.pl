#!/usr/bin/perl
# The lock is released before the worker is forked; the child takes its own.
open(OUT, "+< $datafile") or die "open: $!";
flock(OUT, 2) or die "flock: $!";
$count = <OUT>;
seek(OUT, 0, 0);
print OUT $count + 1;
truncate(OUT, tell(OUT));
close(OUT);
$pid = fork();
if ($pid == 0) {
    open(LOG, ">> $logfile") or die "open: $!";
    flock(LOG, 2) or die "flock: $!";
    seek(LOG, 0, 2);
    print LOG "$count\n";
    close(LOG);
    exit 0;
}
waitpid($pid, 0);
