"""Run the real jcode.pl 2.13 in one long-lived perl process for differential tests.

``JcodePerl.call(op, data, *args)`` sends one request and returns
``(converted bytes, perl's return value as text)``; ``call_many`` pipelines a
list of requests (a writer thread feeds perl while the answers are read), so
tens of thousands of cases take seconds.  Requests and answers are
length-prefixed, so any bytes pass.  Debian's jcode.pl says ``defined %hash``,
which Perl >= 5.22 refuses: a copy with ``unless defined %`` -> ``unless %``
(the edit live sites made) is what runs.

jcode.pl's ``tr`` keeps the table of its last call and reuses it while *from*
and *to* stay the same, even when *opt* changed (``d`` or not decides the
table); perlcompat.jcode builds the table from all three.  The driver forgets
the table before each ``tr``, so every answer is what a fresh perl process
gives and does not depend on the calls before it.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

from perlutil import PERL

JCODE_PL = Path("/usr/share/perl5/jcode.pl")

#: ops: getcode -> "matched,code"; convert(ocode, icode, opt) -> icode;
#: tr(hex from, hex to, opt) -> count;
#: any other name is &jcode'NAME(*s, opt) -> its count as a number
DRIVER = r"""
require $ARGV[0];
binmode STDIN; binmode STDOUT; $| = 1;
sub arg { $_[0] eq "\x01" ? undef : $_[0] }
while (defined($head = <STDIN>)) {
    chomp $head;
    ($op, $a1, $a2, $a3, $len) = split(/\t/, $head, -1);
    ($a1, $a2, $a3) = (&arg($a1), &arg($a2), &arg($a3));
    $s = '';
    $got = $len ? read(STDIN, $s, $len) : 0;
    die "short read" unless $got == $len;
    if ($op eq 'getcode') {
        ($m, $c) = &jcode'getcode(*s);
        $r = "$m," . (defined $c ? $c : 'undef');
    } elsif ($op eq 'tr') {
        undef $jcode::prev_from;  # forget the last table: see the module docstring
        $r = &jcode'tr(*s, pack('H*', $a1), pack('H*', $a2), $a3);
    } elsif ($op eq 'convert') {
        $r = &jcode'convert(*s, $a1, $a2, $a3);
        $r = 'undef' unless defined $r;
    } else {
        $r = &{"jcode'$op"}(*s, $a1);
        $r = $r + 0;
    }
    print length($s), "\t", $r, "\n", $s;
}
"""

_UNDEF = "\x01"


def patched_jcode(directory: str | os.PathLike[str]) -> Path:
    """Copy jcode.pl into *directory* with ``unless defined %`` -> ``unless %``."""
    source = JCODE_PL.read_bytes()
    target = Path(directory) / "jcode.pl"
    target.write_bytes(source.replace(b"unless defined %", b"unless %"))
    return target


class JcodePerl:
    """One perl process running jcode.pl, answering requests on a pipe."""

    def __init__(self) -> None:
        self._dir = tempfile.TemporaryDirectory()
        jcode = patched_jcode(self._dir.name)
        driver = Path(self._dir.name) / "driver.pl"
        driver.write_text(DRIVER)
        self.proc = subprocess.Popen(
            [PERL, str(driver), str(jcode)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin
        self._out = self.proc.stdout

    @staticmethod
    def _request(op: str, data: bytes, args: Sequence[str | None]) -> bytes:
        fields = [(_UNDEF if a is None else a) for a in (*args, None, None, None)[:3]]
        head = "\t".join([op, *fields, str(len(data))]) + "\n"
        return head.encode("latin-1") + data

    def _answer(self) -> tuple[bytes, str]:
        head = self._out.readline()
        if not head:
            raise RuntimeError(f"jcode.pl driver died (exit {self.proc.wait()})")
        length, result = head.decode("latin-1").rstrip("\n").split("\t")
        data = self._out.read(int(length))
        return data, result

    def call(self, op: str, data: bytes, *args: str | None) -> tuple[bytes, str]:
        """Run one request and return (the value after the call, perl's return value)."""
        self._in.write(self._request(op, data, args))
        self._in.flush()
        return self._answer()

    def call_many(
        self, requests: Iterable[tuple[str, bytes, Sequence[str | None]]]
    ) -> list[tuple[bytes, str]]:
        """Pipeline *requests* (op, data, args) and return the answers in order."""
        blobs = [self._request(op, data, args) for op, data, args in requests]

        def feed() -> None:
            for blob in blobs:
                self._in.write(blob)
            self._in.flush()

        writer = threading.Thread(target=feed)
        writer.start()
        try:
            return [self._answer() for _ in blobs]
        finally:
            writer.join()

    def close(self) -> None:
        self._in.close()
        self.proc.wait(timeout=30)
        self._out.close()
        self._dir.cleanup()
