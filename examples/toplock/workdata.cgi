#!/usr/bin/perl
# Record list locked with TOP?LOCK (the TOP?LOCK article, Sajiro DATABASE): every writer
# appends "id<>time<>" to the lock file; the one whose line is first holds the
# lock.  The update goes to a work file, the lock is checked again, and only
# then is the work file renamed into place.  Removing the lock file releases.
#   GET workdata.cgi?data=TEXT   add a record; answers "No.N"
#   GET workdata.cgi             the records
# workdata.dat holds "no<>text<>" lines.

$datadir  = $ENV{'PERLCOMPAT_DATA_DIR'} || '.';
$lockfile = "$datadir/workdata.lock";
$datafile = "$datadir/workdata.dat";
$workfile = "$datadir/workdata.tmp";

&decode;
$data = $FORM{'data'};
if ($data ne '') {
    # ファイルのロック (30桁の乱数を ID に)
    $id = join('', map { int(rand(10)) } 1 .. 30);
    $retry = 50;
    while (!&toplock) {
        if (--$retry <= 0) { &error("BUSY"); }
        select(undef, undef, undef, 0.1);       # 0.1秒待つ
    }
    $locked = 1;
    # ファイルの更新 (作業ファイルに)
    open(IN, "< $datafile");
    @lines = <IN>;
    close(IN);
    $no = @lines + 1;
    push(@lines, "$no<>$data<>\n");
    open(DATA, "> $workfile") or &error("Can't write: $!");
    print DATA @lines;
    close(DATA);
    # 再度ファイルのロック確認、ロック成功のときだけ本番ファイルに
    &toplock or do { $locked = 0; &error("Lost the lock."); };
    rename($workfile, $datafile) or &error("Can't rename: $!");
    unlink($lockfile);                          # ロック解除
}

print "Content-Type: text/plain\n\n";
if ($data ne '') {
    print "No.$no\n";
} else {
    open(IN, "< $datafile");
    print <IN>;
    close(IN);
}
exit;

# 自分の行が先頭なら 1。古いロック (600秒) は削除。
sub toplock {
    unless ($appended) {
        open(LOCK, ">> $lockfile") or return 0;
        print LOCK "$id<>" . time . "<>\n";
        close(LOCK);
        $appended = 1;
    }
    open(LOCK, "< $lockfile") or do { $appended = 0; return 0; };   # 削除された: 並び直す
    @lock = <LOCK>;
    close(LOCK);
    ($wid, $wtm) = split(/<>/, $lock[0]);
    if ($wid eq $id) { return 1; }
    unless (grep { (split(/<>/))[0] eq $id } @lock) { $appended = 0; }  # 入れ替わった
    if ($wtm ne '' && $wtm < time - 600) { unlink($lockfile); $appended = 0; }  # 空なら書き込み中
    return 0;
}

sub decode {
    foreach $pair (split(/&/, $ENV{'QUERY_STRING'})) {
        ($key, $value) = split(/=/, $pair);
        $value =~ tr/+/ /;
        $value =~ s/%([a-fA-F0-9][a-fA-F0-9])/pack("C", hex($1))/eg;
        $value =~ s/<>|[\r\n]/ /g;
        $FORM{$key} = $value;
    }
}

sub error {
    unlink($lockfile) if $locked;               # 自分のロックだけ消す
    print "Status: 503 Service Unavailable\n";
    print "Content-Type: text/plain\n\n";
    print "$_[0]\n";
    exit;
}
