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

# A fork under a flock: the child shares the open file and the lock stays with it after
# the parent's close, in Perl and in a port alike (os.fork shares the descriptor too).
open(NUM, "+< $numfile") or die "open: $!";
flock(NUM, 2) or die "flock: $!";
$n = <NUM>;
if (fork == 0) {
    &send_mail($n);
    exit 0;
}
seek(NUM, 0, 0);
print NUM $n + 1;
truncate(NUM, tell(NUM));
close(NUM);
sub send_mail { }
