#!/usr/bin/perl
# Link ranking rewritten through a temp file and rename, under a separate lock
# file (the Perl locking article's "まとめてロック"; nms guestbook.pl locks "$file.lck" the same
# way).  The lock must not be the data file itself: rename gives the data file
# a new inode, and a writer already waiting in flock on the old one would write
# to a deleted file and lose its update.
#   GET ranking.cgi?item=NAME   one more click for NAME (letters, digits, _)
#   GET ranking.cgi             the ranking
# ranking.dat holds "item<>clicks<>" lines.

$datafile = ($ENV{'PERLCOMPAT_DATA_DIR'} || '.') . '/ranking.dat';
$lockfile = "$datafile.lck";
$tmpfile  = "$datafile.$$.tmp";

&decode;
$item = $FORM{'item'};
if ($item ne '') {
    $item =~ /^\w+$/ or &error("Bad item name.");
    # ロックファイルは内容がどうなっても関係ないから上書きモードでいい
    open(LOCK, "> $lockfile") or &error("Can't open lockfile: $!");
    flock(LOCK, 2)            or &error("Can't flock: $!");
    open(IN, "< $datafile");
    @lines = <IN>;
    close(IN);
    $found = 0;
    foreach $line (@lines) {
        ($name, $clicks) = split(/<>/, $line);
        if ($name eq $item) { $clicks++; $line = "$name<>$clicks<>\n"; $found = 1; }
    }
    push(@lines, "$item<>1<>\n") unless $found;
    open(TMP, "> $tmpfile")   or &error("Can't open temp: $!");
    print TMP @lines          or &error("Can't write temp: $!");
    close(TMP)                or &error("Can't close temp: $!");
    -s $tmpfile == length(join('', @lines)) or &error("Temp file is short.");  # 確認はファイルサイズで
    rename($tmpfile, $datafile) or &error("Can't rename: $!");
    close(LOCK);                                # ロックの終了
}

print "Content-Type: text/plain\n\n";
print "clicked $item\n" if $item ne '';
open(IN, "< $datafile");
print <IN>;
close(IN);
exit;

sub decode {
    foreach $pair (split(/&/, $ENV{'QUERY_STRING'})) {
        ($key, $value) = split(/=/, $pair);
        $value =~ tr/+/ /;
        $value =~ s/%([a-fA-F0-9][a-fA-F0-9])/pack("C", hex($1))/eg;
        $FORM{$key} = $value;
    }
}

sub error {
    unlink($tmpfile);
    print "Status: 503 Service Unavailable\n";
    print "Content-Type: text/plain\n\n";
    print "$_[0]\n";
    exit;
}
