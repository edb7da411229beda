#!/usr/bin/perl
# Access counter (the Perl locking article): read, add one and write back through one "+<"
# handle, under flock, with `or die "...: $!"` after every call.
# GET /count.cgi -> text/plain, the visitor number (for an SSI include).

$datafile = ($ENV{'PERLCOMPAT_DATA_DIR'} || '.') . '/count.dat';

unless (-e $datafile) {                     # first visit: create it; ">>" never truncates
    open(NEW, ">> $datafile") or die "Can't create  : $!";
    close(NEW);
}
open(OUT, "+< $datafile") or die "Can't open    : $!";
flock(OUT, 2)             or die "Can't flock   : $!";
$count = <OUT>;                             # read under the lock, not before it
$count++;
seek(OUT, 0, 0)           or die "Can't seek    : $!";
print OUT "$count\n"      or die "Can't print   : $!";
truncate(OUT, tell(OUT))  or die "Can't truncate: $!";
close(OUT)                or die "Can't close   : $!";

print "Content-Type: text/plain\n\n";
print "$count\n";
