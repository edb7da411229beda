#!/usr/bin/perl
# Guestbook locked with the mkdir lock sub / `sub unlock`: a lock directory
# made with mkdir, 5 tries 1 s apart, removed after 3 minutes if left behind.
#   GET  guestbook.cgi                        list the entries
#   POST guestbook.cgi (name=..&comment=..)   sign (appended at the end)
# guestbook.dat holds "name<>comment<>time<>" lines (UTF-8).

$datafile = ($ENV{'PERLCOMPAT_DATA_DIR'} || '.') . '/guestbook.dat';
$lockdir  = ($ENV{'PERLCOMPAT_DATA_DIR'} || '.') . '/guestbook.lock';

&decode;
if ($ENV{'REQUEST_METHOD'} eq 'POST') {
    &lock($lockdir) or &error('Busy: please try again in a moment.');
    open(IN, "< $datafile");                   # lock first, then read (the mkdir lock column)
    @lines = <IN>;
    close(IN);
    push(@lines, "$FORM{'name'}<>$FORM{'comment'}<>" . time . "<>\n");
    open(OUT, "> $datafile") or &error("Can't write: $!");   # every writer holds the lock
    print OUT @lines;
    close(OUT);
    &unlock($lockdir);
    $signed = $FORM{'name'};
}
&html;
exit;

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
        $value =~ s/&/&amp;/g;
        $value =~ s/</&lt;/g;
        $value =~ s/>/&gt;/g;
        $value =~ s/"/&quot;/g;
        $value =~ s/\r\n|\r|\n/<br>/g;
        $FORM{$key} = $value;
    }
}

# ロック開始 (the mkdir lock column, verbatim but for one word: see README.md)
sub lock{

my $dir = $_[0];
# 古いロック(3分以前)は削除
if(-e $dir){
	my $t = (stat($dir))[9];
	if(defined $t && $t < time - 180){ &unlock($dir); }   # "defined": see README.md
}
# ロックできなかったら5回まで1秒間待ってみる
local $retry = 5;
while(!mkdir($dir,0755)){
	if(--$retry <= 0){ return 0; }
	sleep(1);
}
return 1;

}

# ロック解除
sub unlock{
	rmdir("$_[0]");
}

sub html {
    print "Content-Type: text/html; charset=UTF-8\n\n";
    print "<html><head><title>Guestbook</title></head><body>\n";
    if ($signed ne '') { print "<p>Thank you, $signed.</p>\n"; }
    open(IN, "< $datafile");
    while (<IN>) {
        ($name, $comment, $time) = split(/<>/);
        print "<p><b>$name</b>: $comment</p>\n";
    }
    close(IN);
    print "</body></html>\n";
}

sub error {
    print "Status: 503 Service Unavailable\n";
    print "Content-Type: text/html; charset=UTF-8\n\n";
    print "<html><body><p>$_[0]</p></body></html>\n";
    exit;
}
