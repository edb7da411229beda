"""jcode.pl 2.13's interface: Japanese code conversion byte for byte as Perl scripts do it.

Perl's ``&jcode'convert(*s, 'sjis')`` converts ``$s`` in place and returns the
input code; here ``s, code = jcode.convert(s, "sjis")`` returns both.  Every
function that changes its ``*s`` argument in Perl returns ``(new value, what
Perl returns)``; values are ``bytes`` (Perl's byte strings) or the ``str`` that
perlcompat's default text handles make of them (UTF-8 with ``surrogateescape``),
which come back as ``str``.  The output equals jcode.pl 2.13's on every input
(tests/test_jcode.py runs the real jcode.pl on random and exhaustive inputs).

The algorithm is jcode.pl's documented one, restated as byte patterns:

* ``getcode``: no ESC or 8-bit byte -> undef; a JIS escape -> ``jis``; a byte
  in 00-06, 7F, FF -> ``binary``; else the total length of runs of Shift_JIS
  two-byte characters against runs of EUC-JP characters (half-width kana count
  for EUC only): the longer wins, a tie is undef.
* Shift_JIS <-> EUC-JP is arithmetic on each two-byte character (bytes wrap
  modulo 256 as Perl's ``pack 'C'``, so user-defined/IBM rows F0-FC come out as
  jcode.pl garbles them); EUC's JIS X 0212 becomes the geta mark 81 AC.
* JIS: each run of non-ASCII characters gets ``ESC $ B`` (X 0208), ``ESC ( I``
  (kana) or ``ESC $ ( D`` (X 0212) before it and ``ESC ( B`` after it; the
  escapes ``ESC $ @``, ``ESC & @ ESC $ B``, ``ESC ( J`` are read as well.
* ``h2z_*``/``z2h_*``: JIS X 0201 kana (with a following voiced mark joined
  where X 0208 has the combined letter) <-> X 0208 kana; full-width kana
  without a half-width form are dropped by ``z2h_jis``, as in jcode.pl.
* ``tr``: Perl's tr/// over two-byte characters (any 8-bit byte starts one),
  JIS text worked on as EUC-JP, ``a-z`` and one-lead-byte two-byte ranges expanded.

Only Perl's documented return counts are approximate: they follow jcode.pl,
except ``jis2sjis`` on X 0212 text (jcode.pl returns the length of ``$_`` there).
"""

from __future__ import annotations

import contextlib
import re
from _thread import allocate_lock
from collections.abc import Callable
from typing import TypeVar

# jcode.pl's Shift_JIS <-> EUC-JP arithmetic lives with the exact codecs, which use it too
from .perl.jexact import GETA as _GETA, e2s as _e2s, register as _register_codecs, s2e as _s2e

__all__ = [
    "convert",
    "convf",
    "euc",
    "euc2euc",
    "euc2jis",
    "euc2sjis",
    "get_inout",
    "getcode",
    "h2z_euc",
    "h2z_jis",
    "h2z_sjis",
    "h2zf",
    "jis",
    "jis2euc",
    "jis2jis",
    "jis2sjis",
    "jis_inout",
    "sjis",
    "sjis2euc",
    "sjis2jis",
    "sjis2sjis",
    "to",
    "tr",
    "trans",
    "what",
    "z2h_euc",
    "z2h_jis",
    "z2h_sjis",
    "z2hf",
]

V = TypeVar("V", bytes, str)

# -- byte patterns (jcode.pl's character classes) ---------------------------
_SJIS_C = rb"[\x81-\x9f\xe0-\xfc][\x40-\x7e\x80-\xfc]"
_SJIS_KANA = rb"[\xa1-\xdf]"
_EUC_C = rb"[\xa1-\xfe][\xa1-\xfe]"
_EUC_KANA = rb"\x8e[\xa1-\xdf]"
_EUC_0212 = rb"\x8f[\xa1-\xfe][\xa1-\xfe]"
_JIS0208 = rb"\x1b\$@|\x1b\$B|\x1b&@\x1b\$B"
_JIS0212 = rb"\x1b\$\(D"
_ASC = rb"\x1b\([BJ]"
_KANA = rb"\x1b\(I"
_JIS_ANY = _JIS0208 + b"|" + _JIS0212 + b"|" + _ASC + b"|" + _KANA

_re_not_japanese = re.compile(rb"[\x1b\x80-\xff]")
_re_jis = re.compile(_JIS_ANY)
_re_bin = re.compile(rb"[\x00-\x06\x7f\xff]")
_re_sjis_runs = re.compile(b"(?:" + _SJIS_C + b")+")
_re_euc_runs = re.compile(b"(?:" + _EUC_C + b"|" + _EUC_KANA + b"|" + _EUC_0212 + b")+")
_re_sjis_char = re.compile(_SJIS_C + b"|" + _SJIS_KANA)
_re_sjis_c = re.compile(_SJIS_C)
_re_sjis_split = re.compile(b"((?:" + _SJIS_C + b")+)|(?:" + _SJIS_KANA + b")+")
_re_sjis_outer = re.compile(b"(?:" + _SJIS_C + b"|" + _SJIS_KANA + b")+")
_re_euc_char = re.compile(_EUC_C + b"|" + _EUC_KANA + b"|" + _EUC_0212)
_re_euc_c = re.compile(_EUC_C)
_re_euc_split = re.compile(
    b"((?:" + _EUC_C + b")+)|((?:" + _EUC_KANA + b")+)|(?:" + _EUC_0212 + b")+"
)
_re_jis_seg = re.compile(b"(" + _JIS_ANY + rb")([^\x1b]*)")
_re_jis0208 = re.compile(_JIS0208)
_re_asc = re.compile(_ASC)
_re_kana_seg = re.compile(_KANA + rb"([^\x1b]*)")
_re_0208_join = re.compile(b"((?:" + _JIS0208 + rb")[^\x1b]*)(?:" + _JIS0208 + b")")
_re_0208_seg = re.compile(b"(?:" + _JIS0208 + rb")([^\x1b]+)")
_re_z2h_pairs = re.compile(rb'((?:%[!-~]|![#"&VW+,<])+)|(?:[^!%][!-~]|![^#"&VW+,<])+')
_re_pair = re.compile(rb"..")
_re_h2z_7bit = re.compile(rb"([\x21-\x5f])([\x5e\x5f])?")
_re_h2z_euc = re.compile(rb"\x8e([\xa1-\xdf])(?:\x8e([\xde\xdf]))?")
_re_h2z_sjis = re.compile(b"((?:" + _SJIS_C + rb")+)|([\xa1-\xdf])([\xde\xdf])?")
_re_z2h_euc = re.compile(_EUC_C + b"|" + _EUC_KANA)

_HI2LO = bytes.maketrans(bytes(range(0xA1, 0xFF)), bytes(range(0x21, 0x7F)))
_LO2HI = bytes.maketrans(bytes(range(0x21, 0x7F)), bytes(range(0xA1, 0xFF)))

#: the JIS escapes jcode.pl writes (``jis_inout`` changes them)
_esc = {"0208": b"\x1b$B", "asc": b"\x1b(B"}
_ESC_KANA = b"\x1b(I"
_ESC_0212 = b"\x1b$(D"


class _Memo(dict[bytes, bytes]):
    """A character table filled on first use (jcode.pl caches the same way)."""

    def __init__(self, func: Callable[[bytes], bytes]) -> None:
        super().__init__()
        self.func = func

    def __missing__(self, key: bytes) -> bytes:
        value = self[key] = self.func(key)
        return value


_S2E = _Memo(_s2e)
_E2S = _Memo(_e2s)
_S2J = _Memo(lambda c: _s2e(c).translate(_HI2LO))


# -- kana tables -------------------------------------------------------------
_h2z_euc: dict[bytes, bytes] = {}  # half-width kana byte(s) -> EUC-JP X 0208
_z2h_euc_tab: dict[bytes, bytes] = {}  # EUC-JP X 0208 -> 8E-prefixed kana
_z2h_sjis_tab: dict[bytes, bytes] = {}  # Shift_JIS X 0208 -> kana byte(s)
_h2z_jis: dict[bytes, bytes] = {}  # 7-bit kana (ESC ( I) -> 7-bit X 0208
_z2h_jis: dict[bytes, bytes] = {}  # 7-bit X 0208 -> 7-bit kana
_kana_lock = allocate_lock()


def _kana_tables() -> None:
    """Build the JIS X 0201 <-> X 0208 kana tables from Unicode's compatibility mapping.

    Built in local dicts under a lock and published with ``_z2h_jis`` last, so a
    thread that sees ``_z2h_jis`` filled sees every table whole.
    """
    if _z2h_jis:
        return
    with _kana_lock:
        if _z2h_jis:
            return
        import unicodedata

        h2z: dict[bytes, bytes] = {}
        marks = {0xDE: "\u309b", 0xDF: "\u309c"}  # NFKC maps these to combining marks
        for byte in range(0xA1, 0xE0):
            letter = bytes((byte,)).decode("cp932")
            wide = marks.get(byte) or unicodedata.normalize("NFKC", letter)
            h2z[bytes((byte,))] = wide.encode("euc_jp")
            for mark in (0xDE, 0xDF):
                joined = unicodedata.normalize("NFKC", letter + bytes((mark,)).decode("cp932"))
                if len(joined) == 1 and 0xB3 <= byte <= 0xCE:
                    with contextlib.suppress(UnicodeEncodeError):
                        h2z[bytes((byte, mark))] = joined.encode("euc_jp")
        z2h_jis: dict[bytes, bytes] = {}
        for half, full in h2z.items():
            _z2h_euc_tab[full] = b"".join(b"\x8e" + half[i : i + 1] for i in range(len(half)))
            _z2h_sjis_tab[_e2s(full)] = half
            _h2z_jis[half.translate(_HI2LO)] = full.translate(_HI2LO)
            z2h_jis[full.translate(_HI2LO)] = half.translate(_HI2LO)
        _h2z_euc.update(h2z)
        _z2h_jis.update(z2h_jis)


# -- value handling ------------------------------------------------------------
def _as_bytes(value: object, func: str) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape")
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"jcode.{func}: expected bytes or str, not {type(value).__name__}")


def _back(value: V, data: bytes) -> V:
    if isinstance(value, str):
        return data.decode("utf-8", "surrogateescape")
    return data


def _inplace(
    func: Callable[[bytes, str | None], tuple[bytes, int]],
) -> Callable[..., tuple[V, int]]:
    name = func.__name__.lstrip("_")

    def wrapper(value: V, opt: str | None = None) -> tuple[V, int]:
        data, count = func(_as_bytes(value, name), opt)
        return _back(value, data), count

    wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__doc__ = func.__doc__
    return wrapper


# -- code recognition ----------------------------------------------------------
def _getcode(data: bytes) -> tuple[int, str | None]:
    if not _re_not_japanese.search(data):
        return 0, None
    if _re_jis.search(data):
        return 1, "jis"
    if _re_bin.search(data):
        return 0, "binary"
    sjis = sum(map(len, _re_sjis_runs.findall(data)))
    euc = sum(map(len, _re_euc_runs.findall(data)))
    if sjis > euc:
        return sjis, "sjis"
    return euc, ("euc" if euc > sjis else None)


def getcode(value: bytes | str, wantarray: bool = False) -> object:
    """``&jcode'getcode(*s)``: ``'jis'``, ``'sjis'``, ``'euc'``, ``'binary'`` or None.

    ``wantarray=True`` gives Perl's list-context ``($matched, $code)``.
    """
    matched, code = _getcode(_as_bytes(value, "getcode"))
    return (matched, code) if wantarray else code


def what(value: bytes | str) -> str | None:
    """``&jcode'what($s)``: the code of *value* (``getcode`` by value)."""
    return _getcode(_as_bytes(value, "what"))[1]


# -- conversions (bytes -> (bytes, count)) ---------------------------------------
def _sjis2jis(data: bytes, opt: str | None) -> tuple[bytes, int]:
    if opt:
        data = _sjis2sjis(data, opt)[0]
    count = 0
    esc_0208, esc_asc = _esc["0208"], _esc["asc"]
    s2j = _S2J.__getitem__

    def run(m: re.Match[bytes]) -> bytes:
        nonlocal count
        if m.group(1) is not None:
            chars = _re_sjis_c.findall(m.group(1))
            count += len(chars)
            return esc_0208 + b"".join(map(s2j, chars))
        count += len(m.group())
        return _ESC_KANA + m.group().translate(_HI2LO)

    def outer(m: re.Match[bytes]) -> bytes:
        return _re_sjis_split.sub(run, m.group()) + esc_asc

    return _re_sjis_outer.sub(outer, data), count


def _euc2jis(data: bytes, opt: str | None) -> tuple[bytes, int]:
    if opt:
        data = _euc2euc(data, opt)[0]
    count = 0
    esc_0208, esc_asc = _esc["0208"], _esc["asc"]

    def run(m: re.Match[bytes]) -> bytes:
        nonlocal count
        text = m.group()
        if m.group(1) is not None:
            esc = esc_0208
        elif m.group(2) is not None:
            esc, text = _ESC_KANA, text.replace(b"\x8e", b"")
        else:
            esc, text = _ESC_0212, text.replace(b"\x8f", b"")
        count += len(text)
        return esc + text.translate(_HI2LO)

    def outer(m: re.Match[bytes]) -> bytes:
        return _re_euc_split.sub(run, m.group()) + esc_asc

    return _re_euc_runs.sub(outer, data), count


def _jis_segments(data: bytes, convert: Callable[[bytes, bytes], bytes]) -> bytes:
    return _re_jis_seg.sub(lambda m: convert(m.group(1), m.group(2)), data)


def _jis2euc(data: bytes, opt: str | None) -> tuple[bytes, int]:
    count = 0

    def seg(esc: bytes, text: bytes) -> bytes:
        nonlocal count
        if _re_asc.match(esc):
            return text
        count += sum(0x21 <= c <= 0x7E for c in text)
        text = text.translate(_LO2HI)
        if esc == _ESC_KANA:
            return re.sub(rb"([\xa1-\xdf])", b"\x8e\\1", text)
        if esc == _ESC_0212:
            return _re_euc_c.sub(lambda m: b"\x8f" + m.group(), text)
        return text

    data = _jis_segments(data, seg)
    if opt:
        data = _euc2euc(data, opt)[0]
    return data, count


def _jis2sjis(data: bytes, opt: str | None) -> tuple[bytes, int]:
    if opt:
        data = _jis2jis(data, opt)[0]
    count = 0
    e2s = _E2S.__getitem__

    def seg(esc: bytes, text: bytes) -> bytes:
        nonlocal count
        if esc == _ESC_0212:
            return _re_pair.sub(_GETA, text)
        if _re_asc.match(esc):
            return text
        count += sum(0x21 <= c <= 0x7E for c in text)
        text = text.translate(_LO2HI)
        if esc == _ESC_KANA:
            return text
        return _re_euc_c.sub(lambda m: e2s(m.group()), text)

    return _jis_segments(data, seg), count


def _sjis2euc(data: bytes, opt: str | None) -> tuple[bytes, int]:
    s2e = _S2E.__getitem__
    data, count = _re_sjis_char.subn(lambda m: s2e(m.group()), data)
    if opt:
        data = _euc2euc(data, opt)[0]
    return data, count


def _euc2sjis(data: bytes, opt: str | None) -> tuple[bytes, int]:
    if opt:
        data = _euc2euc(data, opt)[0]
    e2s = _E2S.__getitem__
    return _re_euc_char.subn(lambda m: e2s(m.group()), data)


def _jis2jis(data: bytes, opt: str | None) -> tuple[bytes, int]:
    data = _re_jis0208.sub(lambda m: _esc["0208"], data)
    data = _re_asc.sub(lambda m: _esc["asc"], data)
    return _same_code(data, opt, _h2z_jis_b, _z2h_jis_b)


def _sjis2sjis(data: bytes, opt: str | None) -> tuple[bytes, int]:
    return _same_code(data, opt, _h2z_sjis_b, _z2h_sjis_b)


def _euc2euc(data: bytes, opt: str | None) -> tuple[bytes, int]:
    return _same_code(data, opt, _h2z_euc_b, _z2h_euc_b)


def _same_code(
    data: bytes,
    opt: str | None,
    h2z: Callable[[bytes], tuple[bytes, int]],
    z2h: Callable[[bytes], tuple[bytes, int]],
) -> tuple[bytes, int]:
    """``xxx2xxx``: ``z`` in *opt* widens kana, ``h`` narrows them (Perl returns z2h's count)."""
    count = 0
    if opt and "z" in opt:
        data = h2z(data)[0]
    if opt and "h" in opt:
        data, count = z2h(data)
    return data, count


# -- kana width ------------------------------------------------------------------
def _h2z_jis_b(data: bytes) -> tuple[bytes, int]:
    _kana_tables()
    count = 0
    table = _h2z_jis

    def kana(m: re.Match[bytes]) -> bytes:
        nonlocal count
        full = table.get(m.group())
        if full is None:
            full = table[m.group(1)] + (table[m.group(2)] if m.group(2) else b"")
        count += 1
        return full

    data, found = _re_kana_seg.subn(
        lambda m: _esc["0208"] + _re_h2z_7bit.sub(kana, m.group(1)), data
    )
    joined = found
    while joined:  # X 0208 runs made adjacent by the widened kana: drop the escape between
        data, joined = _re_0208_join.subn(rb"\1", data, count=1)
    return data, count


def _h2z_euc_b(data: bytes) -> tuple[bytes, int]:
    _kana_tables()
    table = _h2z_euc

    def kana(m: re.Match[bytes]) -> bytes:
        full = table.get(m.group(1) + (m.group(2) or b""))
        if full is None:
            full = table[m.group(1)] + (table[m.group(2)] if m.group(2) else b"")
        return full

    return _re_h2z_euc.subn(kana, data)


def _h2z_sjis_b(data: bytes) -> tuple[bytes, int]:
    _kana_tables()
    count = 0
    table = _h2z_euc
    e2s = _E2S.__getitem__

    def kana(m: re.Match[bytes]) -> bytes:
        nonlocal count
        if m.group(1) is not None:
            return m.group(1)
        count += 1
        full = table.get(m.group(2) + (m.group(3) or b""))
        if full is not None:
            return e2s(full)
        return e2s(table[m.group(2)]) + (e2s(table[m.group(3)]) if m.group(3) else b"")

    return _re_h2z_sjis.sub(kana, data), count


def _z2h_jis_b(data: bytes) -> tuple[bytes, int]:
    _kana_tables()
    count = 0
    table = _z2h_jis

    def run(m: re.Match[bytes]) -> bytes:
        nonlocal count
        if m.group(1) is None:
            return _esc["0208"] + m.group()
        text = m.group()
        count += len(text) // 2
        return _ESC_KANA + b"".join(table.get(p, b"") for p in _re_pair.findall(text))

    return _re_0208_seg.sub(lambda m: _re_z2h_pairs.sub(run, m.group(1)), data), count


def _z2h_by_table(data: bytes, sjis: bool) -> tuple[bytes, int]:
    """Replace each full-width kana that has a half-width form; (result, how many)."""
    _kana_tables()
    count = 0
    table = _z2h_sjis_tab if sjis else _z2h_euc_tab

    def char(m: re.Match[bytes]) -> bytes:
        nonlocal count
        half = table.get(m.group())
        if half is None:
            return m.group()
        count += 1
        return half

    return (_re_sjis_c if sjis else _re_z2h_euc).sub(char, data), count


def _z2h_euc_b(data: bytes) -> tuple[bytes, int]:
    return _z2h_by_table(data, sjis=False)


def _z2h_sjis_b(data: bytes) -> tuple[bytes, int]:
    return _z2h_by_table(data, sjis=True)


def _no_opt(
    func: Callable[[bytes], tuple[bytes, int]],
) -> Callable[[bytes, str | None], tuple[bytes, int]]:
    def call(data: bytes, opt: str | None) -> tuple[bytes, int]:
        return func(data)

    call.__name__ = func.__name__[:-2]
    call.__doc__ = func.__doc__
    return call


sjis2jis = _inplace(_sjis2jis)
euc2jis = _inplace(_euc2jis)
jis2euc = _inplace(_jis2euc)
jis2sjis = _inplace(_jis2sjis)
sjis2euc = _inplace(_sjis2euc)
euc2sjis = _inplace(_euc2sjis)
jis2jis = _inplace(_jis2jis)
sjis2sjis = _inplace(_sjis2sjis)
euc2euc = _inplace(_euc2euc)
h2z_jis = _inplace(_no_opt(_h2z_jis_b))
h2z_euc = _inplace(_no_opt(_h2z_euc_b))
h2z_sjis = _inplace(_no_opt(_h2z_sjis_b))
z2h_jis = _inplace(_no_opt(_z2h_jis_b))
z2h_euc = _inplace(_no_opt(_z2h_euc_b))
z2h_sjis = _inplace(_no_opt(_z2h_sjis_b))

_CONVF: dict[tuple[str, str], Callable[[bytes, str | None], tuple[bytes, int]]] = {
    ("jis", "jis"): _jis2jis,
    ("jis", "sjis"): _jis2sjis,
    ("jis", "euc"): _jis2euc,
    ("euc", "jis"): _euc2jis,
    ("euc", "sjis"): _euc2sjis,
    ("euc", "euc"): _euc2euc,
    ("sjis", "jis"): _sjis2jis,
    ("sjis", "sjis"): _sjis2sjis,
    ("sjis", "euc"): _sjis2euc,
}
#: ``$jcode'convf{'xxx', 'yyy'}``, ``$jcode'h2zf{'xxx'}``, ``$jcode'z2hf{'xxx'}``
convf = {
    ("jis", "jis"): jis2jis,
    ("jis", "sjis"): jis2sjis,
    ("jis", "euc"): jis2euc,
    ("euc", "jis"): euc2jis,
    ("euc", "sjis"): euc2sjis,
    ("euc", "euc"): euc2euc,
    ("sjis", "jis"): sjis2jis,
    ("sjis", "sjis"): sjis2sjis,
    ("sjis", "euc"): sjis2euc,
}
h2zf = {"jis": h2z_jis, "euc": h2z_euc, "sjis": h2z_sjis}
z2hf = {"jis": z2h_jis, "euc": z2h_euc, "sjis": z2h_sjis}

_register_codecs()  # "sjis-exact" and "euc-jp-exact" for str.encode/bytes.decode


# -- convert ---------------------------------------------------------------------
def convert(
    value: V, ocode: str | None = None, icode: str | None = None, opt: str | None = None
) -> tuple[V, str | None]:
    """``&jcode'convert(*s, $ocode, $icode, $opt)`` as ``s, icode = convert(s, ocode, ...)``.

    *ocode* is ``'jis'`` (the default, as in jcode.pl), ``'sjis'``, ``'euc'`` or
    ``'noconv'``; *icode* is guessed by ``getcode`` when not given; *opt* ``'z'``
    widens half-width kana, ``'h'`` narrows kana.  Returns the converted value and
    the input code; text that is not Japanese (code None) or ``'binary'`` comes back
    unchanged.  An unknown code raises ValueError (jcode.pl dies there).
    """
    data = _as_bytes(value, "convert")
    if not icode:
        icode = _getcode(data)[1]
        if not icode:
            return value, None
    if icode == "binary":
        return value, icode
    if not ocode:
        ocode = "jis"
    elif ocode == "noconv":
        ocode = icode
    func = _CONVF.get((icode, ocode))
    if func is None:
        raise ValueError(
            f"jcode.convert: no conversion from {icode!r} to {ocode!r} "
            "(codes are 'jis', 'sjis', 'euc'; ocode may be 'noconv')"
        )
    return _back(value, func(data, opt)[0]), icode


def to(ocode: str, value: V, icode: str | None = None, opt: str | None = None) -> V:
    """``&jcode'to($ocode, $s, $icode, $opt)``: the converted value."""
    return convert(value, ocode, icode, opt)[0]


def jis(value: V, icode: str | None = None, opt: str | None = None) -> V:
    """``&jcode'jis($s)``: *value* converted to JIS."""
    return convert(value, "jis", icode, opt)[0]


def euc(value: V, icode: str | None = None, opt: str | None = None) -> V:
    """``&jcode'euc($s)``: *value* converted to EUC-JP."""
    return convert(value, "euc", icode, opt)[0]


def sjis(value: V, icode: str | None = None, opt: str | None = None) -> V:
    """``&jcode'sjis($s)``: *value* converted to Shift_JIS."""
    return convert(value, "sjis", icode, opt)[0]


def jis_inout(
    esc_in: bytes | str | None = None, esc_out: bytes | str | None = None
) -> tuple[bytes, bytes]:
    """``&jcode'jis_inout($in, $out)``: set the X 0208 and ASCII escapes; returns both.

    A one-character argument gets ``ESC $`` or ``ESC (`` put before it, as in jcode.pl;
    an argument Perl counts false (``""``, ``"0"``) keeps the current escape
    (jcode.pl's ``shift || $esc``).
    """
    if esc_in and esc_in not in ("0", b"0"):
        new = _as_bytes(esc_in, "jis_inout")
        _esc["0208"] = b"\x1b$" + new if len(new) == 1 else new
    if esc_out and esc_out not in ("0", b"0"):
        new = _as_bytes(esc_out, "jis_inout")
        _esc["asc"] = b"\x1b(" + new if len(new) == 1 else new
    return _esc["0208"], _esc["asc"]


def get_inout(value: bytes | str) -> tuple[bytes | None, bytes | None]:
    """``&jcode'get_inout($s)``: the first X 0208 and ASCII escapes found in *value*."""
    data = _as_bytes(value, "get_inout")
    found_in = _re_jis0208.search(data)
    found_out = _re_asc.search(data)
    return (found_in.group() if found_in else None, found_out.group() if found_out else None)


# -- tr ----------------------------------------------------------------------------
_re_tr_char = re.compile(rb"[\x80-\xff][\x00-\xff]|[\x00-\xff]")
_re_range2 = re.compile(rb"(([\x80-\xff])[\x80-\xff]-\2[\x80-\xff])")
_ASCII = rb"(?:\\[\-\\]|[\x00-\x5b\x5d-\x7f])"
_re_range1 = re.compile(b"(" + _ASCII + b"-" + _ASCII + b")")
_re_unescape = re.compile(rb"\\(.)")
#: jcode.pl keeps its last table and rebuilds it only when *from* or *to* change
_tr_cache: dict[tuple[bytes, bytes, str | None], dict[bytes, bytes | None]] = {}


def _expand2(m: re.Match[bytes]) -> bytes:
    text = m.group()
    c1, c2, c3, c4 = text[0], text[1], text[3], text[4]
    if c1 == c3 and c2 <= c4:
        return b"".join(bytes((c1, c)) for c in range(c2, c4 + 1))
    return text


def _expand1(m: re.Match[bytes]) -> bytes:
    text = _re_unescape.sub(rb"\1", m.group())
    c1, c2 = text[0], text[2]
    if c1 <= c2:
        return bytes(range(c1, c2 + 1))
    return text


def _tr_table(frm: bytes, to: bytes, opt: str | None) -> dict[bytes, bytes | None]:
    if _re_jis.search(to):
        to = _jis2euc(to, None)[0]
    if _re_jis.search(frm):
        frm = _jis2euc(frm, None)[0]
    frm, to = _re_range2.sub(_expand2, frm), _re_range2.sub(_expand2, to)
    frm, to = _re_range1.sub(_expand1, frm), _re_range1.sub(_expand1, to)
    chars_to: list[bytes | None] = list(_re_tr_char.findall(to))
    chars_from = _re_tr_char.findall(frm)
    if len(chars_to) < len(chars_from):
        pad = b"" if opt and "d" in opt else (chars_to[-1] if chars_to else None)
        chars_to += [pad] * (len(chars_from) - len(chars_to))
    return dict(zip(chars_from, chars_to))


def _tr(data: bytes, frm: bytes, to: bytes, opt: str | None) -> tuple[bytes, int]:
    jis = False
    if _re_jis.search(data):
        jis = True
        data = _jis2euc(data, None)[0]
    if _re_jis.search(to):
        jis = True
    key = (frm, to, opt)
    table = _tr_cache.get(key)  # one dict operation: safe with threads
    if table is None:
        table = _tr_table(frm, to, opt)
        if len(_tr_cache) >= 64:
            _tr_cache.clear()
        _tr_cache[key] = table
    count = 0

    def char(m: re.Match[bytes]) -> bytes:
        nonlocal count
        new = table.get(m.group())
        if new is None:
            return m.group()
        count += 1
        return new

    data = _re_tr_char.sub(char, data)
    if jis:
        data = _euc2jis(data, None)[0]
    return data, count


def tr(value: V, frm: bytes | str, to: bytes | str, opt: str | None = None) -> tuple[V, int]:
    """``&jcode'tr(*s, $from, $to, $opt)``: tr/// for two-byte codes; (new value, count).

    Ranges such as ``a-z`` and two-byte ranges with one lead byte (EUC/JIS) are
    expanded; ``'d'`` in *opt* deletes characters that *to* has no partner for.
    Tables are cached per (*frm*, *to*, *opt*) and safe across threads; jcode.pl
    caches by *frm* and *to* only, so there a second call with another *opt*
    reuses the first call's table (a history-dependent quirk not reproduced).
    """
    data, count = _tr(_as_bytes(value, "tr"), _as_bytes(frm, "tr"), _as_bytes(to, "tr"), opt)
    return _back(value, data), count


def trans(value: V, frm: bytes | str, to: bytes | str, opt: str | None = None) -> V:
    """``&jcode'trans($s, $from, $to, $opt)``: *value* after ``tr``."""
    return tr(value, frm, to, opt)[0]
