"""``jcode.convert`` throughput against jcode.pl 2.13 under perl, on the same inputs.

Form-sized values (Shift_JIS, EUC-JP, JIS, half-width kana, ASCII; 10-200 bytes)
are converted to each output code, ``--repeat`` passes over ``--values`` values,
by perlcompat.jcode in this process and by jcode.pl in one perl process
(``&jcode'convert(*s, $ocode)`` in a loop timed with Time::HiRes).  Both sides'
outputs are hashed (MD5) and must agree.  Printed: microseconds per call for
each side and their ratio (Python / Perl; below 1 means faster than perl).
A second table is what a CGI request pays: a fresh process that loads the
library and converts one value (median wall time of ``--runs`` starts).

    python bench/bench_jcode.py [--values 2000] [--repeat 5] [--runs 20]

jcode.pl comes from Debian's libjcode-perl, copied with ``unless defined %`` ->
``unless %`` (Perl >= 5.22 refuses the original).
"""

from __future__ import annotations

import argparse
import hashlib
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from perlcompat import jcode

JCODE_PL = Path("/usr/share/perl5/jcode.pl")
PERL = shutil.which("perl") or "/usr/bin/perl"

PERL_LOOP = r"""
use Time::HiRes qw(time); use Digest::MD5;
require $ARGV[0];
open(IN, '<', $ARGV[1]) or die; binmode IN; local $/; $all = <IN>; close IN;
@values = ();
while (length $all) {
    $n = unpack('N', $all); push @values, substr($all, 4, $n); substr($all, 0, 4 + $n) = '';
}
($ocode, $repeat) = ($ARGV[2], $ARGV[3]);
$md5 = Digest::MD5->new;
$t0 = time;
for $r (1 .. $repeat) {
    for $v (@values) { $s = $v; &jcode'convert(*s, $ocode); $md5->add($s) if $r == 1; }
}
$t = time - $t0;
printf "%.6f %s\n", $t, $md5->hexdigest;
"""

SAMPLES = [
    "山田太郎",
    "表示ソ能十、掲示板に書き込みます。",
    "こんにちは！　今日はいい天気ですね。①②③",
    'テスト投稿です <b>太字</b> & "引用"',
    "ｶﾀｶﾅﾃﾞｽ ﾊﾝｶｸ",
    "plain ascii comment, nothing Japanese here",
]


def make_values(count: int, seed: int = 16) -> list[bytes]:
    rng = random.Random(seed)
    values = []
    for _ in range(count):
        text = "".join(rng.choice(SAMPLES) for _ in range(rng.randint(1, 4)))
        encoding = rng.choice(["cp932", "cp932", "euc_jp", "iso2022_jp"])
        try:
            values.append(text.encode(encoding))
        except UnicodeEncodeError:
            values.append(text.encode("cp932"))
    return values


def python_loop(values: list[bytes], ocode: str, repeat: int) -> tuple[float, str]:
    md5 = hashlib.md5()
    convert = jcode.convert
    t0 = time.perf_counter()
    for r in range(repeat):
        for value in values:
            out = convert(value, ocode)[0]
            if r == 0:
                md5.update(out)
    return time.perf_counter() - t0, md5.hexdigest()


def cold(argv: list[str], runs: int) -> float:
    walls = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        walls.append(time.perf_counter() - t0)
    return statistics.median(walls)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--values", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    values = make_values(args.values)
    calls = len(values) * args.repeat
    with tempfile.TemporaryDirectory() as tmp:
        jcode_pl = Path(tmp) / "jcode.pl"
        jcode_pl.write_bytes(JCODE_PL.read_bytes().replace(b"unless defined %", b"unless %"))
        data = Path(tmp) / "values.bin"
        data.write_bytes(b"".join(len(v).to_bytes(4, "big") + v for v in values))
        script = Path(tmp) / "loop.pl"
        script.write_text(PERL_LOOP)
        print(f"{len(values)} values x {args.repeat} passes ({calls} calls per row)")
        print(f"{'ocode':<6} {'perl us/call':>13} {'python us/call':>15} {'ratio':>7}  outputs")
        for ocode in ("sjis", "euc", "jis"):
            out = subprocess.run(
                [PERL, str(script), str(jcode_pl), str(data), ocode, str(args.repeat)],
                check=True,
                capture_output=True,
                text=True,
            ).stdout.split()
            perl_time, perl_md5 = float(out[0]), out[1]
            py_time, py_md5 = python_loop(values, ocode, args.repeat)
            same = "same" if perl_md5 == py_md5 else "DIFFERENT"
            print(
                f"{ocode:<6} {perl_time / calls * 1e6:>13.2f} {py_time / calls * 1e6:>15.2f}"
                f" {py_time / perl_time:>7.2f}  {same}"
            )
            if same != "same":
                return 1
        one = "表示ソ能十、掲示板".encode("euc_jp")
        perl_cold = cold(
            [
                PERL,
                "-e",
                f"require '{jcode_pl}'; $s = pack('H*', '{one.hex()}');"
                " &jcode'convert(*s, 'sjis'); print $s",
            ],
            args.runs,
        )
        py_cold = cold(
            [
                sys.executable,
                "-c",
                "from perlcompat import jcode; import sys; "
                f"sys.stdout.buffer.write(jcode.convert(bytes.fromhex('{one.hex()}'), 'sjis')[0])",
            ],
            args.runs,
        )
        py_base = cold([sys.executable, "-c", "pass"], args.runs)
        print(f"\none CGI request (fresh process, load + convert one value), median of {args.runs}")
        print(f"perl jcode.pl:     {perl_cold * 1e3:7.1f} ms")
        print(
            f"perlcompat.jcode:  {py_cold * 1e3:7.1f} ms  (python -c pass: {py_base * 1e3:.1f} ms)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
