#!/usr/bin/perl
# The lock sub without the racy stale removal (recovery is left to an operator).
sub lock {
    my $dir = $_[0];
    local $retry = 5;
    while (!mkdir($dir, 0755)) {
        if (--$retry <= 0) { return 0; }
        sleep(1);
    }
    return 1;
}
sub unlock { rmdir("$_[0]"); }

# Removing old temporary files by age is not a lock.
opendir(DIR, "./tmp") or die;
foreach $f (readdir(DIR)) {
    next if $f =~ /^\./;
    unlink("./tmp/$f") if (-M "./tmp/$f" > 1);
}
closedir(DIR);
