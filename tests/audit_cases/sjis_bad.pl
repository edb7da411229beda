#!/usr/bin/perl
# 掲示板（表示ソフト）の書き込み処理。Shift_JIS、改行は CRLF。
# 「表」「ソ」「能」の2バイト目は 0x5C（ダメ文字）なので文字列では \ を重ねる。
$logfile = "./bbs.log";
$title = "表\示ソ\フト";
$note = '予\定は十\分';

# ロックの前に上書きモードで開いている（内容が消える）
open(OUT, ">$logfile") || &error("ファイルが開けません：表\示");   # EXPECT truncate-before-lock
flock(OUT, 2) || &error("ロックできません：能\力不足");
print OUT "$name<>$comment<>$title<>\n";
close(OUT);

# ロックファイルの有無を見てから作る（隙がある）
$lockfile = "./bbs.lock";
while (-e $lockfile) { sleep(1); }   # ソ\フト側で待つ
open(LOCK, ">$lockfile") or &error("ロック失敗");   # EXPECT check-then-create
close(LOCK);
unlink($lockfile);

sub error {
    print "Content-type: text/html; charset=Shift_JIS\n\n<p>$_[0]</p>\n";
    exit;
}
