#!/usr/bin/perl
# Message board with delete keys, as every site ran one: posts are "no<>name<>msg<>crypt<>date<>"
# lines, newest first, in one log updated under flock.  POST name, msg, key adds a post;
# POST del=NO and key deletes it when crypt($key, $stored) eq $stored.  GET shows the posts
# with an unchecked open (on the first visit there is no log, and the page still shows) and
# the log's (stat)[9].

$logfile = ($ENV{'PERLCOMPAT_DATA_DIR'} || '.') . '/board.log';

read(STDIN, $buffer, $ENV{'CONTENT_LENGTH'});
foreach $pair (split(/&/, $buffer)) {
    ($key, $value) = split(/=/, $pair);
    $value =~ tr/+/ /;
    $value =~ s/%([a-fA-F0-9][a-fA-F0-9])/pack("C", hex($1))/eg;
    $value =~ s/&/&amp;/g;
    $value =~ s/</&lt;/g;
    $value =~ s/>/&gt;/g;
    $value =~ s/\r?\n/ /g;
    $FORM{$key} = $value;
}

$deleted = 0;
if ($ENV{'REQUEST_METHOD'} eq 'POST') {
    unless (-e $logfile) {                  # first post: create it; ">>" never truncates
        open(NEW, ">> $logfile") or die "Can't create: $!";
        close(NEW);
    }
    open(LOG, "+< $logfile") or die "Can't open: $!";
    flock(LOG, 2)            or die "Can't flock: $!";
    @lines = <LOG>;
    if ($FORM{'del'} ne '') {
        @new = ();
        foreach $line (@lines) {
            ($no, $name, $msg, $pass, $date) = split(/<>/, $line);
            if ($no == $FORM{'del'} && $pass ne '' && crypt($FORM{'key'}, $pass) eq $pass) {
                $deleted++;
                next;
            }
            push(@new, $line);
        }
        @lines = @new;
    } else {
        ($last) = split(/<>/, $lines[0]);
        $no = $last + 1;
        @chars = ('a'..'z', 'A'..'Z', '0'..'9', '.', '/');
        $salt = $chars[int(rand(64))] . $chars[int(rand(64))];
        $pass = $FORM{'key'} ne '' ? crypt($FORM{'key'}, $salt) : '';
        $date = localtime(time);
        unshift(@lines, "$no<>$FORM{'name'}<>$FORM{'msg'}<>$pass<>$date<>\n");
    }
    seek(LOG, 0, 0)          or die "Can't seek: $!";
    print LOG @lines;
    truncate(LOG, tell(LOG)) or die "Can't truncate: $!";
    close(LOG)               or die "Can't close: $!";
}

open(IN, "< $logfile");                     # unchecked: no log yet reads as no posts
@lines = <IN>;
close(IN);
$mtime = (stat($logfile))[9];

print "Content-Type: text/plain\n\n";
print "posts: ", scalar(@lines), "\n";
print "updated: ", ($mtime ? $mtime : '-'), "\n";
print "deleted: $deleted\n";
foreach $line (@lines) {
    ($no, $name, $msg) = split(/<>/, $line);
    print "$no $name: $msg\n";
}
