#!/usr/bin/perl
# A script that forks its index rebuild while it holds the mkdir lock: in Perl the lock
# directory stays until the child removes it; in a port lock()'s exit cleanup in the
# parent removes it while the child still works, and a second process takes it too.
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
sub make_index { }
