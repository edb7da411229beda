#!/usr/bin/perl
# Visitor log with the Perl locking article's time-limited flock: alarm(5) bounds the wait for
# the process ahead of us, alarm(300) bounds our own work, and a "time out" from
# the ALRM handler is told apart from every other error through $@.
#   GET visitors.cgi?name=NAME   sign in; answers "No.N NAME"
#   GET visitors.cgi             the log
# visitors.dat holds "no<>name<>time<>" lines, appended at the end.

$datafile = ($ENV{'PERLCOMPAT_DATA_DIR'} || '.') . '/visitors.dat';
$wait = $ENV{'PERLCOMPAT_ALARM_WAIT'} || 5;    # seconds to wait for the lock

&decode;
$name = $FORM{'name'};
if ($name ne '') {
    eval {
        local $SIG{ALRM} = sub { die "time out" }; # 時間が来たら抜け出す
        open(OUT, "+>> $datafile") or die "Can't open: $!";
        alarm($wait);                        # 先行プロセスを待つ時間
        flock(OUT, 2) or die "Can't flock: $!";  # ロック確認。ロック
        alarm(300);                          # 自分自身の制限時間(5分)
        seek(OUT, 0, 0) or die "Can't seek: $!";
        @lines = <OUT>;
        $no = @lines + 1;
        seek(OUT, 0, 2) or die "Can't seek: $!"; # 追加は末尾から
        print OUT "$no<>$name<>" . time . "<>\n" or die "Can't print: $!";
        close(OUT) or die "Can't close: $!"; # closeすれば自動でロック解除
        alarm(0);                            # 無事済んだのでリセット
    };
    if ($@ =~ /time out/) {
        &error("Busy: timed out after $wait s waiting for the lock.");
    }
    elsif ($@) { die }                       # タイムアウト以外の理由なら
}

print "Content-Type: text/plain\n\n";
if ($name ne '') {
    print "No.$no $name\n";
} else {
    open(IN, "< $datafile");
    print <IN>;
    close(IN);
}
exit;

sub decode {
    foreach $pair (split(/&/, $ENV{'QUERY_STRING'})) {
        ($key, $value) = split(/=/, $pair);
        $value =~ tr/+/ /;
        $value =~ s/%([a-fA-F0-9][a-fA-F0-9])/pack("C", hex($1))/eg;
        $value =~ s/<>|[\r\n]/ /g;                # keep the record format intact
        $FORM{$key} = $value;
    }
}

sub error {
    print "Status: 503 Service Unavailable\n";
    print "Content-Type: text/plain\n\n";
    print "$_[0]\n";
    exit;
}
