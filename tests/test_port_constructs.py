"""``perlcompat port`` construct by construct: each small Perl script and its port print the
same bytes (real ``perl`` beside the port), with no statement left ``# PORT:``.

Each script exercises what CGI scripts do with values: Perl's truth ("0" is false), numbers
read as text, ``||`` defaults, ``++`` on numbers, interpolation, lists past their end,
``foreach`` writing back to the array, regexes with captures, ``sprintf``, subs and their
implicit return values, ``local`` in a sub, ``eval``/``die``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from webserver import PACKAGE_ROOT

from perlcompat.tools.port.writer import port

SCRIPTS = {
    "truth_and_defaults": r"""
$zero = "0"; $empty = ""; $one = "1"; $zz = "0.0";
print "zero\n" if $zero;
print "empty\n" if $empty;
print "zz true\n" if $zz;
$d = $zero || 'dflt'; print "d=$d\n";
$e = $one || 'dflt'; print "e=$e\n";
print "both\n" if $one && !$zero;
print "neither\n" unless $zero || $empty;
$x = $undefined; print "undef=[$x]\n";
""",
    "numbers_from_text": r"""
$count = "41\n"; $count++; print "count=$count\n";
$n = "12abc" + 1; print "n=$n\n";
$m = "abc" * 2; print "m=$m\n";
$total = 0; foreach $v ("1", "2", "3x") { $total += $v; } print "total=$total\n";
print "eq\n" if "10" == 10.0;
print "ne\n" if "10" ne "10.0";
$p = 17 % 5; $q = -7 % 3; print "p=$p q=$q\n";
$r = 2 ** 10; print "r=$r\n";
print 5 / 2, " ", 4 / 2, " ", int(7 / 2), "\n";
""",
    "strings": r"""
$name = "World"; @list = ("a", "b", "c");
print "Hello, $name! (@list) $list[1] $#list\n";
$s = "x" x 3; print "$s\n";
$t = "abc" . 5 . "def"; print "$t\n";
$u = join("-", @list); print "$u\n";
print "len=", length("a\x{e9}b"), "\n";
print <<EOT;
here $name
  doc $list[-1]
EOT
print <<'RAW';
raw $name
RAW
""",
    "lists_and_hashes": r"""
@a = (1, 2, 3);
push(@a, 4, 5); unshift(@a, 0);
$first = shift(@a); $last = pop(@a);
print "first=$first last=$last rest=@a n=", scalar(@a), "\n";
print "past=[$a[10]]\n";
%h = (); $h{'k'} = 'v'; $h{n} = 2;
print "k=$h{'k'} n=$h{n} missing=[$h{nope}]\n";
foreach $key (sort keys %h) { print "key $key\n"; }
@b = map { $_ * 2 } @a; print "@b\n";
@c = grep { $_ > 2 } @a; print "@c\n";
@r = reverse(@a); print "@r\n";
($x, $y, $z) = split(/,/, "1,2"); print "x=$x y=$y z=[$z]\n";
""",
    "loops": r"""
@lines = ("a<>1<>\n", "b<>2<>\n");
foreach $line (@lines) {
    ($name, $votes) = split(/<>/, $line);
    if ($name eq "b") { $votes++; $line = "$name<>$votes<>\n"; }
}
print @lines;
for ($i = 0; $i < 3; $i++) { print "i=$i\n"; }
$n = 0;
while (1) { $n++; next if $n == 2; last if $n > 4; print "n=$n\n"; }
$k = 5; until ($k <= 2) { $k--; } print "k=$k\n";
""",
    "regexes": r"""
$s = "name=John+Smith&age=42";
foreach $pair (split(/&/, $s)) {
    ($key, $value) = split(/=/, $pair);
    $value =~ tr/+/ /;
    $value =~ s/%([a-fA-F0-9][a-fA-F0-9])/pack("C", hex($1))/eg;
    print "$key => $value\n";
}
$line = "2024-01-15";
if ($line =~ /^(\d+)-(\d+)-(\d+)$/) { print "y=$1 m=$2 d=$3\n"; }
$html = "<b>a & b</b>";
$html =~ s/&/&amp;/g; $html =~ s/</&lt;/g; $html =~ s/>/&gt;/g;
print "$html\n";
$w = "a1b22c333"; $w =~ s/(\d+)/[$1]/g; print "$w\n";
print "ci\n" if "HeLLo" =~ /hello/i;
$t = "abc"; $t =~ tr/a-c/A-C/; print "$t\n";
""",
    "subs": r"""
sub add { my ($a, $b) = @_; return $a + $b; }
sub greet { local($who) = @_; "hi $who"; }
sub count_args { scalar(@_); }
sub first { $_[0]; }
print add(2, 3), "\n";
print &greet("bob"), "\n";
print count_args(1, 2, 3), "\n";
print "first=", &first("x", "y"), "\n";
$msg = sprintf("%05d|%-4s|%4s|%.2f|%x", 42, "ab", "cd", 3.14159, 255);
print "$msg\n";
printf("%3d|%s\n", "7", "x");
printf STDOUT "%-3s|\n", "ab";
""",
    "hashes_and_braces": r"""
%U = ('a' => 'x', 'b', 2); @L = (5, 6); $n = "bob";
print "${U{a}}/${L[1]}/${n}s/$U{b}/$L[0] \$n \@x $n\n";
$v = "a%41%4a+b"; $v =~ tr/+/ /; $v =~ s/%([0-9A-Fa-f][0-9a-fA-F])/pack("C",hex($1))/ge;
print "$v\n";
sub split { return "mine"; }
@parts = split(/-/, "p-q");
print "@parts ", &split("x"), "\n";
""",
    "loop_variable_and_case": r"""
$x = "before";
foreach $x (1, 2) { print "in $x\n"; }
print "after $x\n";
$w = "Straße Ünï abc"; print uc($w), "|", lc("ÀB Cd"), "\n";
""",
    "magic_increment": r"""
$id = "a9"; $id++; $zz = "Zz"; $zz++; $n = "0099"; $n++; $line = "41\n"; $line++;
print "$id $zz $n $line\n";
""",
    "bytes": r"""
$s = "caf\xc3\xa9 au lait";
print length($s), " ", length(""), "\n";
$t = substr($s, 0, 4); $u = substr($s, 5); $v = substr($s, -4, 2);
print "[$t] [$u] [$v]\n";
print ord("A"), " ", ord(""), " ", ord($s), " ", ord(substr($s, 3, 1)), "\n";
$c = chr(65) . chr(0xe9); print length($c), " $c\n";
print index($s, "au"), " ", index($s, "zz"), " ", rindex("a-b-c", "-"), "\n";
$w = $s; $w =~ tr/a-z/A-Z/; print "$w\n";
$cnt = ($s =~ tr/a//); print "cnt=$cnt\n";
$x = $s; $x =~ tr/\200-\377//d; print "$x\n";
$y = "a  b   c"; $y =~ tr/ //s; print "$y\n";
""",
    "commands": r"""
$out = `echo hello`; print "out=$out";
@lines = `printf 'a\nb\n'`; print scalar(@lines), " $lines[1]";
$rc = system("sh", "-c", "exit 3"); print "rc=$rc status=$?\n";
$none = system("/nonexistent/cmd"); print "none=$none ", $? >> 8, "\n";
$st = $? >> 8; $low = $? & 127; print "st=$st low=$low\n";
$saved = $?; system("true"); print "ok=$? saved=$saved\n";
$name = "there"; $o = qx(echo hi $name); print $o;
open(MAIL, "| cat") || die "no cat: $!"; print MAIL "piped\n"; close(MAIL);
open(P, "echo from pipe |") || die "no echo: $!"; $l = <P>; close(P); print "got $l";
""",
    "warn_and_die_hooks": r"""
$SIG{__WARN__} = sub { print "warned: $_[0]"; };
warn "careful\n";
$SIG{__DIE__} = \&fatal;
sub fatal { print "fatal: $_[0]"; }
eval { die "inside\n"; };
print "after [$@]";
""",
    "topic_outside_loops": r"""
@LINES = ("a\n", "<!--begin-->\n", "b <x>\n");
sub show { $_ = "in sub"; }
for ($i = 0; $i <= 2; $i++) {
    $_ = $LINES[$i];
    if (/<!--begin-->/) { print "found at $i\n"; }
    else { s/\n/!\n/; s/<([^>]|\n)*>/[tag]/g; print; }
}
foreach (1, 2) { print "loop $_\n"; }
print "after: $_";
&show; print "now: $_\n";
$c = "x<!-- caf\xc3\xa9 -->y"; $c =~ s/<!--(.|\n)*-->//g; print "$c\n";
""",
    "bits_and_pack": r"""
$w = 300; $neg = -2;
$s = pack("C", $w & 0x00ff) . pack("C", ($w & 0xff00) >> 8) . pack("CCC", 0x21, 0xf9, 0x04);
$s .= pack("C4", 1, 2, 3, 259); print length($s), " ", ord(substr($s, 8, 1)), "\n";
$f = 0x80; $f |= 0x01; $g = 0xff; $g &= 0x0f; $n = $neg; $n >>= 60; $m = $neg & 0xff;
$x = $w ^ 5; $y = 1 << 3; print "$f $g $n $m $x $y ", $neg | 1, "\n";
$t = "0x10"; $z = $t & 7; $p = pack("C", $neg); print "$z ", length($p), ord($p), "\n";
""",
    "foreach_changes_elements": r"""
@a = ("a1\n", "b2\n");
foreach (@a) { chomp; }
foreach $x (@a) { $x =~ s/\d/N/; }
print "@a\n";
foreach (@a) { s/N/M/; tr/a-z/A-Z/; }
foreach $y (@a) { $y =~ tr/M/m/; chomp($y); $y++; }
print "@a\n";
foreach (@a) { $_ = lc($_) . "!"; }
s/!/?/ foreach @a; $_ .= "x" for (@a);
print "@a\n";
print "[$_]" foreach @a;
$s = "a1,b2"; foreach (split(/,/, $s)) { s/\d/N/; print "$_\n"; } print "$s\n";
""",
    "url_encoder_and_counted_regexes": r"""
$v = "a b/caf\xc3\xa9&x=1"; $w = $v;
$v =~ s/(\W)/sprintf("%%%02X", unpack("C", $1))/eg; print "$v\n";
$w =~ s/([^\w ])/'%' . unpack('H2', $1)/eg; print "$w\n";
print "date\n" if "2024/01/31" =~ m|^\d{4}/\d{2}/\d{2}$|;
print "mail\n" if "a.b\@example.org" =~ /[\w\.\-]+\@[\w\.\-]+\.[a-zA-Z]{2,5}$/;
for ($i = 0; $i < 3; $i++) { foreach $x (1, 2) { next if $x == 1; print "$i $x\n"; } }
""",
    "times_slices_and_lists": r"""
@t = gmtime(86400 * 365); print "@t\n"; $s = gmtime(0); print "$s\n";
($min, $hour, $mday) = (gmtime(100000))[1..3]; print "$min $hour $mday\n";
@z = (1, 2)[1..3]; @e = (split(/,/, ""))[0..1]; print scalar(@z), " ", scalar(@e), "\n";
@m = (0) x 5; print "@m\n";
@a = (1..10); splice(@a, 4); print "@a\n"; splice(@a, -2); print "@a\n";
@R = (5, 6, 2); @H = (0) x 3; ++$H[ ${R[2]} ]; $H[${R[2]}]++; print "@H\n";
$r = reverse("caf\xc3\xa9"); $t = reverse("ab", "cd"); print length($r), " $t\n";
""",
    "hash_keys_in_strings": r"""
%h = ("abc" => 1, "xabcx" => 2, "enhi" => "hello", "n3" => 3);
$k = "xabcx"; $lang = "en"; $n = 3;
print "v=$h{$k} $h{abc} $h{'abc'} $h{$lang.'hi'} $h{'n'.$n}\n";
print "found\n" if index($k, "abc") >= $[;
""",
    "eval_and_die": r"""
eval { die "time out\n"; };
if ($@ =~ /time out/) { print "caught\n"; }
eval { $ok = 1; };
print "no error [$@]\n" unless $@;
""",
}


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_port_prints_what_perl_prints(name: str, tmp_path: Path) -> None:
    script = tmp_path / f"{name}.pl"
    script.write_text(SCRIPTS[name].lstrip("\n"), encoding="utf-8")
    result = port(str(script))
    assert result.port_lines == 0, [line for line in result.text.splitlines() if "PORT:" in line]
    out = tmp_path / f"{name}.py"
    out.write_text(result.text, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": PACKAGE_ROOT, "TZ": "UTC"}
    perl = subprocess.run(["perl", str(script)], capture_output=True, env=env, timeout=60)
    python = subprocess.run([sys.executable, str(out)], capture_output=True, env=env, timeout=60)
    assert python.stderr == b"", python.stderr.decode(errors="replace")
    assert perl.returncode == python.returncode == 0
    assert python.stdout == perl.stdout


@pytest.mark.parametrize("encoding", ["euc_jp", "shift_jis"])
def test_a_japanese_script_prints_its_own_bytes(encoding: str, tmp_path: Path) -> None:
    """Literals of an EUC-JP or Shift_JIS script come out as the bytes Perl prints."""
    text = (
        '$title = "掲示板";  # 表示\n'
        '$line = "名前<>本文<>\\n";\n'
        "($name, $body) = split(/<>/, $line);\n"
        'print "<h1>$title</h1>\\n$name: $body\\n", length($title), "\\n";\n'
    )
    script = tmp_path / "jp.cgi"
    script.write_bytes(text.encode(encoding))
    result = port(str(script))
    assert result.port_lines == 0
    out = tmp_path / "jp.py"
    out.write_text(result.text, encoding="utf-8")
    assert "# 表示" in result.text  # comments read in the script's own encoding
    env = {**os.environ, "PYTHONPATH": PACKAGE_ROOT}
    perl = subprocess.run(["perl", str(script)], capture_output=True, env=env, timeout=60)
    python = subprocess.run([sys.executable, str(out)], capture_output=True, env=env, timeout=60)
    assert python.stderr == b""
    assert python.stdout == perl.stdout
    assert "<h1>掲示板</h1>".encode(encoding) in python.stdout


def test_increment_is_perlcompats_own_inc(tmp_path: Path) -> None:
    """``$id++`` on a string is perlcompat's ``inc``, imported as every other name: no stand-in."""
    script = tmp_path / "inc.pl"
    script.write_text('open(F, "id.txt"); $n = <F>; $n++; print "$n\\n";\n', encoding="utf-8")
    text = port(str(script)).text
    assert "n = inc(n)" in text
    assert "def inc" not in text and "except ImportError" not in text
    imports = text[: text.index("def main")]
    assert "inc" in [w.strip(" ,()") for w in imports.replace("\n", " ").split()]


def test_a_library_the_tool_cannot_read_defines_the_subs_called(tmp_path: Path) -> None:
    """``require $lib`` (a path computed at run time) and a sub the script does not define:
    the library's port, required beside the script, defines it, as Perl's ``require`` does."""
    (tmp_path / "helper.pl").write_text(
        'sub hello { print "hello $_[0]\\n"; return 2; }\n1;\n', encoding="utf-8"
    )
    script = tmp_path / "main.pl"
    script.write_text(
        '$lib = "./helper" . ".pl"; require $lib;\n$n = &hello("x"); print "n=$n\\n";\n',
        encoding="utf-8",
    )
    result = port(str(script))
    assert result.port_lines == 0, result.text
    (tmp_path / "main.py").write_text(result.text, encoding="utf-8")
    library = port(str(tmp_path / "helper.pl"), library=True)
    (tmp_path / "helper.py").write_text(library.text, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": PACKAGE_ROOT}
    perl = subprocess.run(
        ["perl", "main.pl"], capture_output=True, env=env, cwd=tmp_path, timeout=60
    )
    python = subprocess.run(
        [sys.executable, "main.py"], capture_output=True, env=env, cwd=tmp_path, timeout=60
    )
    assert python.stderr == b"", python.stderr.decode(errors="replace")
    assert python.stdout == perl.stdout == b"hello x\nn=2\n"
    (tmp_path / "helper.py").unlink()  # no library: a loud error, never a silent no-op
    missing = subprocess.run(
        [sys.executable, "main.py"], capture_output=True, env=env, cwd=tmp_path, timeout=60
    )
    assert missing.returncode != 0 and b"helper.py" in missing.stderr
