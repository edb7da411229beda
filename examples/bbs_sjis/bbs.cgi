#!/usr/bin/perl
# 簡易掲示板 (Shift_JIS)。「コラム:ロック処理」の話: 読む前にロックし、追加して書き直す。
#   GET  bbs.cgi                      掲示板を見る
#   POST bbs.cgi (name=..&message=..) 書き込む (新しい記事が先頭)
# bbs.dat は「番号<>名前<>本文<>時刻<>」の行。このファイルもデータも Shift_JIS。

$datafile = ($ENV{'PERLCOMPAT_DATA_DIR'} || '.') . '/bbs.dat';
require './jcode.pl';  # jcode.pl 2.13 (Perl 5.22 以降は defined % を外したもの)

&decode;
if ($ENV{'REQUEST_METHOD'} eq 'POST') { &regist; }
&html;
exit;

# フォームを解読する (Shift_JIS のバイトのまま)
sub decode {
    if ($ENV{'REQUEST_METHOD'} eq 'POST') {
        read(STDIN, $buffer, $ENV{'CONTENT_LENGTH'});
    } else {
        $buffer = $ENV{'QUERY_STRING'};
    }
    foreach $pair (split(/&/, $buffer)) {
        ($key, $value) = split(/=/, $pair);
        $value =~ tr/+/ /;
        $value =~ s/%([a-fA-F0-9][a-fA-F0-9])/pack("C", hex($1))/eg;
        &jcode'convert(*value, 'sjis');  # EUC-JP や JIS で来ても Shift_JIS に
        $value =~ s/&/&amp;/g;
        $value =~ s/</&lt;/g;
        $value =~ s/>/&gt;/g;
        $value =~ s/"/&quot;/g;
        $value =~ s/\r\n|\r|\n/<br>/g;
        $FORM{$key} = $value;
    }
}

# 書き込む: ロックしてから読む (書く直前だけロックしても記事は消える)
sub regist {
    if ($FORM{'name'} eq '' || $FORM{'message'} eq '') { &error('名前と本文を書いてください。'); }
    unless (-e $datafile) {
        open(NEW, ">> $datafile") or &error("作れません: $!");
        close(NEW);
    }
    open(DAT, "+< $datafile") or &error("開けません: $!");
    flock(DAT, 2)             or &error("ロックできません: $!");
    @lines = <DAT>;
    ($no) = split(/<>/, $lines[0]);
    $no++;
    unshift(@lines, "$no<>$FORM{'name'}<>$FORM{'message'}<>" . time . "<>\n");
    seek(DAT, 0, 0)           or &error("seek: $!");
    print DAT @lines          or &error("print: $!");
    truncate(DAT, tell(DAT))  or &error("truncate: $!");
    close(DAT)                or &error("close: $!");
    $posted = $no;
}

# 掲示板を出す (読むだけなので共有ロック)
sub html {
    print "Content-Type: text/html; charset=Shift_JIS\n\n";
    print "<html><head><title>掲示板</title></head><body>\n";
    if ($posted) { print "<p>No.$posted を書き込みました。</p>\n"; }
    print "<form method=\"POST\" action=\"$ENV{'SCRIPT_NAME'}\">\n";
    print "名前 <input name=\"name\"> 本文 <input name=\"message\"> <input type=\"submit\">\n";
    print "</form>\n";
    if (open(IN, "< $datafile")) {
        flock(IN, 1) or &error("ロックできません: $!");
        while (<IN>) {
            ($no, $name, $message, $time) = split(/<>/);
            print "<dl><dt>[$no] $name</dt><dd>$message</dd></dl>\n";
        }
        close(IN);
    }
    print "</body></html>\n";
}

sub error {
    print "Content-Type: text/html; charset=Shift_JIS\n\n";
    print "<html><body><p>$_[0]</p></body></html>\n";
    exit;
}
