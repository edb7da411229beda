"""perlcompat.locks.record: lock templates (render -> match round trips, hostile input, guess)."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from perlcompat.locks import owner, record
from perlcompat.locks.record import Fields, Template, guess, template

NOW = 1_764_090_283.0  # a fixed moment, so expected texts are exact


def test_every_field_round_trips() -> None:
    os.environ["REMOTE_ADDR"] = "192.0.2.7"
    try:
        text = " ".join("{" + name + "}" for name in record.FIELDS) + "\n"
        tpl = Template(text)
        rendered = tpl.render(stale=60, now=NOW)
        fields = tpl.match(rendered)
    finally:
        del os.environ["REMOTE_ADDR"]
    assert fields is not None
    assert fields.pid == os.getpid()
    assert fields.host == owner.hostname()
    assert fields.made == NOW  # {time} wins over {localtime}
    assert fields.expires == NOW + 60
    assert fields.text["addr"] == "192.0.2.7"
    assert fields.text["any"] == ""
    assert 0 <= float(fields.text["rand"]) < 10000
    assert set(fields.text) == set(record.FIELDS)


@pytest.mark.parametrize("name", sorted(record.FIELDS))
def test_each_field_alone_round_trips(name: str) -> None:
    tpl = Template("x{" + name + "}y\n")
    rendered = tpl.render(stale=30, now=NOW)
    fields = tpl.match(rendered)
    assert fields is not None, rendered
    assert rendered.startswith("x") and rendered.endswith("y\n")
    assert fields.text[name] == rendered[1:-2]
    # the same as a file name (no trailing newline)
    named = Template("x{" + name + "}y").render(stale=30, now=NOW)
    assert Template("x{" + name + "}y").fullmatch_name(named) is not None


def test_render_texts_are_exact() -> None:
    assert Template("{pid}\n").render(stale=1) == f"{os.getpid()}\n"
    assert Template("{host}.{pid}\n").render(stale=1) == f"{owner.hostname()}.{os.getpid()}\n"
    assert Template("{time} {expires}").render(stale=90.7, now=NOW + 0.9) == (
        f"{int(NOW)} {int(NOW + 0.9 + 90.7)}"
    )
    assert Template("{{{pid}}}").render(stale=1) == "{" + str(os.getpid()) + "}"
    assert Template("<{any}>").render(stale=1) == "<>"


def test_localtime_is_perls_scalar_localtime() -> None:
    perl = subprocess.run(
        ["perl", "-e", f"print scalar localtime({int(NOW)})"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert Template("{localtime}").render(stale=1, now=NOW) == perl
    fields = Template("{localtime}\n").match(perl + "\n")
    assert fields is not None and fields.made == NOW
    # a day of month below 10 is padded with a space, as Perl does
    early = time.mktime((2026, 11, 5, 3, 4, 5, 0, 0, -1))
    perl_early = subprocess.run(
        ["perl", "-e", f"print scalar localtime({int(early)})"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "  5 " in perl_early
    fields = Template("{localtime}").match(perl_early)
    assert fields is not None and fields.made == early


def test_rand_is_shaped_as_perl_prints_it() -> None:
    tpl = Template("{rand}")
    for _ in range(50):
        text = tpl.render(stale=1)
        assert 0 <= float(text) < 10000
        assert len(text.replace(".", "").lstrip("0")) <= 15
    perl = subprocess.run(
        ["perl", "-e", "print rand(10000)"], capture_output=True, text=True, check=True
    ).stdout
    assert tpl.match(perl) is not None


def test_trailing_whitespace_is_ignored_on_both_sides() -> None:
    tpl = Template("{pid}\n")
    assert tpl.match("123").pid == 123  # type: ignore[union-attr]
    assert tpl.match("123\n\n  ").pid == 123  # type: ignore[union-attr]
    assert tpl.match(b"123\r\n").pid == 123  # type: ignore[union-attr]
    assert Template("{pid}").match("123\n").pid == 123  # type: ignore[union-attr]
    # a newline between fields also reads Perl's :crlf on Windows
    crlf = b"42\r\nwww.example.org\r\n1700000000\r\n"
    fields = Template("{pid}\n{host}\n{expires}\n").match(crlf)
    assert fields is not None
    assert (fields.pid, fields.host, fields.expires) == (42, "www.example.org", 1700000000.0)
    # but leading whitespace is content
    assert tpl.match(" 123\n") is None


def test_whole_content_only() -> None:
    tpl = Template("{pid}\n")
    assert tpl.match("123\nmore") is None
    assert tpl.match("123abc") is None
    assert tpl.match("") is None
    assert tpl.match("perlcompat excl pid=5 host=h\n") is None
    assert Template("lock{time}_{pid}_{addr}").fullmatch_name("lock1700000000_42_10.0.0.1") == (
        Fields({"time": "1700000000", "pid": "42", "addr": "10.0.0.1"})
    )
    held = Template("lock{time}_{pid}_{addr}")
    assert held.fullmatch_name("lock1700000000_42_10.0.0.1\n") is None


def test_host_backtracks_over_dots() -> None:
    fields = Template("{host}.{pid}\n").match("mail.example.org.4242\n")
    assert fields is not None
    assert (fields.host, fields.pid) == ("mail.example.org", 4242)


def test_repeated_field_must_repeat_the_same_text() -> None:
    tpl = Template("{pid}:{pid}")
    assert tpl.match("12:12") is not None
    assert tpl.match("12:13") is None


def test_names_picks_matching_entries() -> None:
    tpl = template("lock{time}_{pid}_{addr}")
    found = tpl.names(["data.txt", "lock", "lock1700000000_42_", "lock17_x_1", "lock9_8_::1"])
    assert [name for name, _ in found] == ["lock1700000000_42_", "lock9_8_::1"]
    assert found[0][1].pid == 42 and found[0][1].made == 1700000000.0
    assert found[1][1].text["addr"] == "::1"


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("", "empty"),
        ("{pid", "unbalanced '{'"),
        ("pid}", "unbalanced '}'"),
        ("{pid}}", "unbalanced '}'"),
        ("{name}", "unknown field {name}"),
        ("{PID}", "unknown field {PID}"),
        ("{ pid }", "unknown field { pid }"),
        ("{}", "unknown field {}"),
    ],
)
def test_bad_templates_are_refused_by_name(text: str, what: str) -> None:
    with pytest.raises(ValueError, match=".*" + __import__("re").escape(what)):
        Template(text)


def test_a_template_is_a_str() -> None:
    with pytest.raises(TypeError, match="str"):
        Template(b"{pid}")  # type: ignore[arg-type]


def test_expires_needs_a_stale_time() -> None:
    with pytest.raises(ValueError, match="expires"):
        Template("{expires}").render(stale=None)
    assert Template("{pid}").render(stale=None) == str(os.getpid())


@pytest.mark.parametrize(
    "data",
    [
        b"\xff\xfe\x00\x01",
        "\u202e1234\n",
        "1" * 100_000,
        "99999999999999999999999999\n",
        "0\n",
        "-5\n",
        "١٢٣\n",  # Arabic-Indic digits: \d would take them, a pid is ASCII
        "\x00\n",
        "%s%n{pid}\n",
    ],
)
def test_hostile_content_never_names_a_live_pid(data: str | bytes) -> None:
    fields = Template("{pid}\n").match(data)
    assert fields is None or fields.pid is None
    assert guess(data) in (None, "{pid}\n")
    assert record.foreign("LOCK", data, method="excl")  # the message never fails


def test_hostile_names_do_not_match_a_held_pattern() -> None:
    tpl = Template("lock{time}_{pid}_{addr}")
    for name in ("lock1_2_a/b", "lock1_2_a b", "lockx_2_", "../lock1_2_", "lock1_2"):
        assert tpl.fullmatch_name(name) is None, name


def test_template_is_cached_and_frozen() -> None:
    assert template("{pid}\n") is template("{pid}\n")
    fields = Template("{pid}").match("7")
    assert fields is not None
    with pytest.raises(AttributeError):
        fields.pid = 8  # type: ignore[misc]


@pytest.mark.parametrize(
    ("perl", "expected"),
    [
        # lockrun: print L "$$\n"; Proc::PID::File, LockFile::Simple: a bare pid
        ('print "$$\\n"', "{pid}\n"),
        ("print $$", "{pid}\n"),
        # SpamAssassin Mail::SpamAssassin::Locker::UnixNFSSafe: "$hostname.$$\n"
        ('use Sys::Hostname; print hostname() . ".$$\\n"', "{host}.{pid}\n"),
        # File::NFSLock 1.22: "$HOSTNAME $$ ".time()." ".rand(10000)."\n"
        (
            'use Sys::Hostname; print hostname() . " $$ " . time() . " " . rand(10000) . "\\n"',
            "{host} {pid} {time} {rand}\n",
        ),
        # pid, host and expiry lines
        ('print "$$\\nwww.example.org\\n" . (time() + 3600) . "\\n"', "{pid}\n{host}\n{expires}\n"),
        # scalar localtime
        ('print scalar(localtime) . "\\n"', "{localtime}\n"),
    ],
)
def test_guess_knows_the_perl_formats(perl: str, expected: str) -> None:
    written = subprocess.run(["perl", "-e", perl], capture_output=True, check=True).stdout
    assert guess(written) == expected
    assert template(expected).match(written) is not None


def test_guess_unknown() -> None:
    assert guess("hello world\n") is None
    assert guess("perlcompat excl pid=1 host=h\n") is None
    assert guess("") is None


def test_foreign_message_names_content_and_declaration() -> None:
    message = record.foreign("data/count.lock", "12345\n", method="excl")
    assert message == (
        "data/count.lock holds '12345\\n', not a perlcompat lock record; if a Perl script "
        "writes this lock, declare its format: lock('data/count.lock', method='excl', "
        "record='{pid}\\n')"
    )
    other = record.foreign("x.lock", "some text", method="excl")
    assert "holds 'some text'" in other and "record='...'" in other and "{pid}" in other
    symlink = record.foreign("l", "7", method="symlink", keyword="target")
    assert symlink.endswith("target='{pid}\\n')")


def test_stale_rules(tmp_path: object) -> None:
    child = subprocess.Popen(["true"])
    child.wait()
    dead = Template("{pid}\n").match(f"{child.pid}\n")
    assert dead is not None
    assert dead.alive() is False
    assert "no longer runs" in (dead.stale(stale=None) or "")

    live = Template("{pid}\n").match(f"{os.getpid()}\n")
    assert live is not None and live.alive() is True
    assert live.stale(stale=60, mtime=NOW, now=NOW + 30) is None
    assert "old" in (live.stale(stale=60, mtime=NOW, now=NOW + 61) or "")
    assert live.stale(stale=None, mtime=NOW, now=NOW + 10**6) is None

    # another host: its pid is not judged here, only its age or expiry
    elsewhere = Template("{host}.{pid}\n").match(f"not-{owner.hostname()}.{child.pid}\n")
    assert elsewhere is not None and elsewhere.alive() is None
    assert elsewhere.stale(stale=60, mtime=NOW, now=NOW + 1) is None

    expired = Template("{pid}\n{host}\n{expires}\n").match(f"{os.getpid()}\nh\n{int(NOW)}\n")
    assert expired is not None
    assert expired.stale(stale=None, now=NOW - 1) is None
    assert "expired" in (expired.stale(stale=None, now=NOW + 5) or "")

    # the age is from the later of mtime and the recorded time
    made = Template("{time}").match(str(int(NOW)))
    assert made is not None
    assert made.stale(stale=60, mtime=NOW - 1000, now=NOW + 30) is None
    assert made.stale(stale=60, mtime=None, now=NOW + 61) is not None
