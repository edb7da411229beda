#!/usr/bin/perl
# Seed 000's open() lock: test, then create. Both steps can interleave.
$lockfile = "./bbs.lock";
$retry = 5;
while (-f $lockfile) {
    if (--$retry <= 0) { &error("BUSY"); }
    sleep(1);
}
open(LOCK, "> $lockfile") or &error("can't lock");   # EXPECT check-then-create
close(LOCK);
&write_post;
unlink($lockfile);

sub counter_lock {
    my $lock = "count.lck";
    unless (-e $lock) {
        open(L, ">$lock") or return 0;   # EXPECT check-then-create
        close(L);
        return 1;
    }
    return 0;
}

sub init_log {
    if (!-e $logfile) {
        open(LOG, ">$logfile") or die "log: $!";   # EXPECT check-then-create
        print LOG "# created\n";
        close(LOG);
    }
}

sub write_post { return 1; }
sub error { print "Content-type: text/plain\n\n$_[0]\n"; exit; }

sub pid_lock {
    if (-e "run.lock") { return 0; }
    open(PID, "> run.lock") or return 0;   # EXPECT check-then-create
    print PID $$;
    close(PID);
    return 1;
}

sub pid_lock2 {
    return 0 if -e "run2.lock";
    open(PID, "> run2.lock") or return 0;   # EXPECT check-then-create
    print PID $$;
    close(PID);
    return 1;
}

# '+>' empties like '>': the second first request wipes the first one's count.
sub init_count {
    my $file = "count.dat";
    unless (-e $file) {
        open(NEW, "+> $file") or die "create: $!";   # EXPECT check-then-create
        close(NEW);
    }
}

# A lock file made with '>>' is still only tested, then created: two requests both win.
sub append_lock {
    return 0 if -e "append.lock";
    open(L, ">> append.lock") or return 0;   # EXPECT check-then-create
    print L $$;
    close(L);
    return 1;
}
