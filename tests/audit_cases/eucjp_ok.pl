#!/usr/bin/perl
# 掲示板の書き込み処理（EUC-JP）。正しいロックなので何も報告されない。
use Fcntl qw(:flock);
$logfile = "./bbs.log";

open(LOG, "+< $logfile") or &error("ファイルが開けません");
flock(LOG, LOCK_EX) or &error("ロックできません");
@lines = <LOG>;
unshift(@lines, "$name<>$comment<>\n");
seek(LOG, 0, 0) or &error("シークできません");
print LOG @lines;
truncate(LOG, tell(LOG)) or &error("切り詰めできません");
close(LOG);

print "Content-type: text/html; charset=EUC-JP\n\n";
print <<"HTML";
<p>書き込みました。表示ソフトに戻る</p>
<!-- open(OUT, ">$logfile"); flock(OUT, 2); -->
HTML

sub error {
    print "Content-type: text/html; charset=EUC-JP\n\n<p>$_[0]</p>\n";
    exit;
}
