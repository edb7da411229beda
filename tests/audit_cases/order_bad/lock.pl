# Seed 003's lock subs, shared by both scripts.
sub lock {
    my $dir = $_[0];
    local $retry = 5;
    while (!mkdir($dir, 0755)) {
        if (--$retry <= 0) { return 0; }
        sleep(1);
    }
    return 1;
}
sub unlock { rmdir($_[0]); }
1;
