#!/usr/bin/perl
# The same order as post.cgi: log first, then counter.
require './lock.pl';
&lock('log.lock') or &error('busy');
&lock('count.lock') or &error('busy');
&reset_both;
&unlock('count.lock');
&unlock('log.lock');

sub ab {
    open(A, "+< a.dat") or die; flock(A, 2) or die;
    open(B, "+< b.dat") or die; flock(B, 2) or die;
    close(B); close(A);
}
sub ab_again {
    open(A, "+< a.dat") or die; flock(A, 2) or die;
    close(A);
    open(B, "+< b.dat") or die; flock(B, 2) or die;
    close(B);
}
sub reset_both { return 1; }
sub error { print "Content-type: text/plain\n\n$_[0]\n"; exit; }
