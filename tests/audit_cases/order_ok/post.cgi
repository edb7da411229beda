#!/usr/bin/perl
# Takes the log lock, then the counter lock.
require './lock.pl';
&lock('log.lock') or &error('busy');
&lock('count.lock') or &error('busy');
&write_both;
&unlock('count.lock');
&unlock('log.lock');
sub write_both { return 1; }
sub error { print "Content-type: text/plain\n\n$_[0]\n"; exit; }
