#!/usr/bin/perl
# Seed 003 (CGI lock column): a bulletin board with mkdir locks, done right.
require './jcode.pl';
$logfile   = "./bbs.log";
$countfile = "./count.dat";

&lock('lockdir_log') or &error('只今混雑しています。しばらくお待ちください。');
open(IN, "$logfile") or &error("Can't open $logfile");
@lines = <IN>;
close(IN);
&jcode'convert(*comment, 'sjis');
unshift(@lines, "$name<>$comment<>\n");
splice(@lines, 100);
open(OUT, ">$logfile") or &error("Can't write $logfile");
print OUT @lines;
close(OUT);

# A second, separate resource takes its own lock, nested in one fixed order.
&lock('lockdir_count') or &error('busy');
open(CNT, "$countfile") or &error("Can't open $countfile");
$count = <CNT>;
close(CNT);
open(CNT, ">$countfile") or &error("Can't write $countfile");
print CNT $count + 1;
close(CNT);
&unlock('lockdir_count');
&unlock('lockdir_log');

print "Content-type: text/html\n\n";
print <<"HTML";
<html><body>
<p>書き込みました ($count)</p>
<!-- open(OUT, ">$logfile"); flock(OUT, 2); in a heredoc is text -->
</body></html>
HTML
exit;

sub lock {
    my $dir = $_[0];
    local $retry = 5;
    while (!mkdir($dir, 0755)) {
        if (--$retry <= 0) { return 0; }
        sleep(1);
    }
    return 1;
}

sub unlock {
    rmdir("$_[0]");
}

sub error {
    print "Content-type: text/html\n\n<p>$_[0]</p>\n";
    exit;
}
