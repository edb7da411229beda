#!/usr/bin/perl
# Takes the counter lock, then the log lock: the opposite order.
require './lock.pl';
&lock('count.lock') or &error('busy');
&lock('log.lock') or &error('busy');   # EXPECT lock-order
&reset_both;
&unlock('log.lock');
&unlock('count.lock');

# Two flock'ed files in opposite orders in two subs of one script.
sub ab {
    open(A, "+< a.dat") or die; flock(A, 2) or die;
    open(B, "+< b.dat") or die; flock(B, 2) or die;   # EXPECT lock-order
    close(B); close(A);
}
sub ba {
    open(B, "+< b.dat") or die; flock(B, 2) or die;
    open(A, "+< a.dat") or die; flock(A, 2) or die;   # EXPECT lock-order
    close(A); close(B);
}
sub reset_both { return 1; }
sub error { print "Content-type: text/plain\n\n$_[0]\n"; exit; }
