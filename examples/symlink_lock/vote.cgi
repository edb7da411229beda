#!/usr/bin/perl
# Vote tally locked with the Perl locking article's symlink lock: symlink($$, $lockfile) makes
# the lock and names its owner; a signal trap removes it if the server kills us,
# but only if readlink says it is ours.
#   GET vote.cgi?item=NAME   add one vote for NAME (letters, digits, _)
#   GET vote.cgi             show the tally
# vote.dat holds "item<>votes<>" lines.

$datafile = ($ENV{'PERLCOMPAT_DATA_DIR'} || '.') . '/vote.dat';
$lockfile = ($ENV{'PERLCOMPAT_DATA_DIR'} || '.') . '/vote.lock';

&decode;
$item = $FORM{'item'};
if ($item ne '') {
    $item =~ /^\w+$/ or &error("Bad item name.");
    # シグナルハンドラをセット
    $SIG{HUP} = $SIG{INT} = $SIG{PIPE} = $SIG{QUIT} = $SIG{TERM} = \&unlock;
    $retry = 5;                                # リトライ回数セット
    while (!symlink($$, $lockfile)) {          # 作成。出来なければ待つ
        if (--$retry <= 0) { &error("BUSY"); } # 5回ダメならあきらめる
        sleep(1);                              # 1秒待つ
    }
    open(IN, "< $datafile");
    @lines = <IN>;
    close(IN);
    $found = 0;
    foreach $line (@lines) {
        ($name, $votes) = split(/<>/, $line);
        if ($name eq $item) { $votes++; $line = "$name<>$votes<>\n"; $found = 1; }
    }
    push(@lines, "$item<>1<>\n") unless $found;
    open(OUT, "> $datafile") or &error("Can't write: $!");
    print OUT @lines;
    close(OUT);
    unlink($lockfile);                         # 削除
}
&html;
exit;

sub unlock {
    # プロセス番号が一致して、自分が作ったロックならば消去
    if ($$ == readlink($lockfile)) {
        unlink($lockfile);
    }
    exit;
}

sub decode {
    foreach $pair (split(/&/, $ENV{'QUERY_STRING'})) {
        ($key, $value) = split(/=/, $pair);
        $value =~ tr/+/ /;
        $value =~ s/%([a-fA-F0-9][a-fA-F0-9])/pack("C", hex($1))/eg;
        $FORM{$key} = $value;
    }
}

sub html {
    print "Content-Type: text/plain\n\n";
    print "voted $item\n" if $item ne '';
    open(IN, "< $datafile");
    print <IN>;
    close(IN);
}

sub error {
    print "Status: 503 Service Unavailable\n";
    print "Content-Type: text/plain\n\n";
    print "$_[0]\n";
    exit;
}
