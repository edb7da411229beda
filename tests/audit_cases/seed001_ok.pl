#!/usr/bin/perl
# Seed 001 (TOP?LOCK): append a request, the first line wins; check again before renaming.
$id = int(rand(1e15)) . $$ . int(rand(1e15));
$tm = time;
open(LOCK, ">>test.lock") or die "Can't open test.lock: $!";
print LOCK "$id<>$tm<>\n";
close(LOCK);

&check_lock or exit;
open(DATA, ">workdata.tmp") or die "Can't open workdata.tmp: $!";
print DATA "01<>更新データを追加します<>\n";
close(DATA);
&check_lock or exit;
rename("workdata.tmp", "workdata.dat") or die "Can't rename: $!";

sub check_lock {
    open(LOCK, "<test.lock") or return 0;
    my @lock = <LOCK>;
    close(LOCK);
    my ($wid, $wtm) = split(/<>/, $lock[0]);
    return $wid eq $id ? 1 : 0;
}
