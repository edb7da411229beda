#!/usr/bin/perl
# Guestbook on CGI.pm: a form (name, message, topic checkboxes, an optional photo) posted
# urlencoded or as multipart/form-data; entries "no<>name<>topics<>message<>photo<>" are
# kept newest first in one log, rewritten under flock; the visitor's name is remembered in
# a cookie.  GET (or a POST without a message) shows the last ten entries.

use CGI;

$logfile = ($ENV{'PERLCOMPAT_DATA_DIR'} || '.') . '/gbook.log';
$q = CGI->new;

$name = $q->param('name');
$name = $q->cookie('gbname') if !defined($name) || $name eq '';
$name = 'anonymous' if !defined($name) || $name eq '';
$message = $q->param('message');
@topics = $q->multi_param('topic');

if ($ENV{'REQUEST_METHOD'} eq 'POST' && defined($message) && $message ne '') {
    $photo = '';
    $fh = $q->upload('photo');
    if ($fh) {
        $data = join('', <$fh>);
        $photo = $q->param('photo') . ' ' . length($data) . ' bytes';
    }
    $cookie = $q->cookie(-name => 'gbname', -value => $name, -expires => '+30d');
    foreach $field ($name, $message, @topics, $photo) {
        $field = $q->escapeHTML($field);
        $field =~ s/\r\n|\r|\n/<br>/g;
    }
    unless (-e $logfile) {                  # first post: create it; ">>" never truncates
        open(NEW, ">> $logfile") or die "Can't create: $!";
        close(NEW);
    }
    open(LOG, "+< $logfile") or die "Can't open: $!";
    flock(LOG, 2)            or die "Can't flock: $!";
    @lines = <LOG>;
    ($last) = split(/<>/, $lines[0]);
    $no = $last + 1;
    unshift(@lines, "$no<>$name<>" . join(',', @topics) . "<>$message<>$photo<>\n");
    seek(LOG, 0, 0)          or die "Can't seek: $!";
    print LOG @lines;
    truncate(LOG, tell(LOG)) or die "Can't truncate: $!";
    close(LOG)               or die "Can't close: $!";
    print $q->header(-charset => 'UTF-8', -cookie => $cookie);
    print "<p>No.$no posted</p>\n";
} else {
    print $q->header(-charset => 'UTF-8');
}

open(IN, "< $logfile");                     # unchecked: no log yet reads as no entries
@lines = <IN>;
close(IN);
print "<h1>Guestbook (", scalar(@lines), " entries)</h1>\n";
print "<form method=\"post\" enctype=\"multipart/form-data\">\n";
print "<input name=\"name\" value=\"", $q->escapeHTML($name), "\">\n";
print "<textarea name=\"message\"></textarea>\n";
print "<input type=\"checkbox\" name=\"topic\" value=\"$_\">$_\n" foreach ('perl', 'python', 'cgi');
print "<input type=\"file\" name=\"photo\"><input type=\"submit\"></form>\n<ul>\n";
$shown = 0;
foreach $line (@lines) {
    last if ++$shown > 10;
    ($no, $who, $topics, $text, $photo) = split(/<>/, $line);
    print "<li>No.$no $who [$topics]: $text", ($photo ne '' ? " ($photo)" : ''), "</li>\n";
}
print "</ul>\n";
