#!/usr/bin/perl
# A counter whose subs live in a library: require './countlib.pl' shares this script's globals.
require './countlib.pl';

&bump;
print "Content-Type: text/plain\n\n";
print "$count\n";
close(NUMBER);
