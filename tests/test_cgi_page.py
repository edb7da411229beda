"""perlcompat.cgi's url(), self_url(), start_html(), POST_MAX, DISABLE_UPLOADS against CGI.pm.

As in tests/test_cgi.py: each batch of environments goes once through one perl
process running the real CGI.pm (Debian libcgi-pm-perl; ``initialize_globals``
between cases) and once through ``perlcompat.cgi`` here, and every answer must be
the same bytes.  Uploads over ``body.SPOOL_SIZE`` go to a temporary file: a
child process reading a 16 MB upload must not grow by the upload's size.
"""

# ruff: noqa: E501  (the call tables read best one case a line)
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from test_cgi import NO_SHRINK, ROOT, _raw, b64, dump_python, multipart_case, url_cases

import perlcompat.cgi as cgi
from perlcompat import Die, open_
from perlcompat.cgi import body
from perlcompat.perl import stdio

Env = dict[str, str]

# -- url(), self_url() and the environment methods -----------------------------------------
#: (the Perl call on $q, the same call on the Python query object)
URL_CALLS: list[tuple[str, Callable[[cgi.CGI], object]]] = [
    ("url()", lambda q: q.url()),
    ("url(-relative => 1)", lambda q: q.url(relative=1)),
    ("url(-absolute => 1)", lambda q: q.url(absolute=1)),
    ("url(-full => 1)", lambda q: q.url(full=1)),
    ("url(-path_info => 1)", lambda q: q.url(path_info=1)),
    ("url(-path => 1, -query => 1)", lambda q: q.url(path=1, query=1)),
    ("url(-relative => 1, -path_info => 1, -query => 1)", lambda q: q.url(relative=1, path_info=1, query=1)),
    ("url(-absolute => 1, -query => 1)", lambda q: q.url(absolute=1, query=1)),
    ("url(-base => 1)", lambda q: q.url(base=1)),
    ("url(-rewrite => 0)", lambda q: q.url(rewrite=0)),
    ("url(-rewrite => 0, -absolute => 1, -path_info => 1)", lambda q: q.url(rewrite=0, absolute=1, path_info=1)),
    ("url(-query_string => 1, -relative => 0)", lambda q: q.url(query_string=1, relative=0)),
    ("url(-Relative => 1)", lambda q: q.url(Relative=1)),
    ("self_url()", lambda q: q.self_url()),
    ("self_url(-query => 0)", lambda q: q.self_url(query=0)),
    ("remote_host()", lambda q: q.remote_host()),
    ("remote_addr()", lambda q: q.remote_addr()),
    ("path_info()", lambda q: q.path_info()),
    ("script_name()", lambda q: q.script_name()),
    ("query_string()", lambda q: q.query_string()),
    ("protocol()", lambda q: q.protocol()),
    ("virtual_host()", lambda q: q.virtual_host()),
    ("virtual_port()", lambda q: q.virtual_port()),
    ("server_name()", lambda q: q.server_name()),
    ("server_port()", lambda q: q.server_port()),
    ("http('host')", lambda q: q.http("host")),
    ("http('X-Forwarded-Host')", lambda q: q.http("X-Forwarded-Host")),
    ("http('HTTP_HOST')", lambda q: q.http("HTTP_HOST")),
    ("https()", lambda q: q.https()),
]  # fmt: skip

ENV_PERL = r"""
use strict; use warnings; no warnings 'uninitialized';
use CGI; use JSON::PP; use MIME::Base64;
$SIG{__WARN__} = sub {};
binmode STDOUT;
open(my $in, '<', $ARGV[0]) or die;
my $cases = decode_json(do { local $/; <$in> });
my @calls = @{decode_json(decode_base64($ARGV[1]))};
for my $c (@$cases) {
    %ENV = map { $_ => decode_base64($c->{env}{$_}) } keys %{$c->{env}};
    CGI::initialize_globals();
    $CGI::IIS = ($ENV{SERVER_SOFTWARE} =~ /IIS/) ? 1 : 0;
    close STDIN; my $body = ''; open(STDIN, '<', \$body) or die;
    my $q = CGI->new;
    my @out = map { my $v = eval "\$q->$_"; defined $v ? "=$v" : 'undef' } @calls;
    print unpack('H*', join("\0", @out)), "\n";
}
"""


def run_perl_calls(
    cases: list[Env], calls: list[str], tmp: Path, perl: str = ENV_PERL
) -> list[bytes]:
    script = tmp / "env.pl"
    script.write_text(perl)
    data = tmp / "cases.json"
    data.write_text(
        json.dumps([{"env": {k: b64(_raw(v)) for k, v in env.items()}} for env in cases])
    )
    run = subprocess.run(
        ["perl", str(script), str(data), b64(json.dumps(calls).encode())],
        capture_output=True,
        check=True,
        timeout=120,
    )
    return [bytes.fromhex(line) for line in run.stdout.decode().splitlines()]


def answer(value: object) -> bytes:
    return b"undef" if value is None else b"=" + _raw(str(value))


def run_python_calls(
    cases: list[Env],
    calls: list[Callable[[cgi.CGI], object]],
    monkeypatch: pytest.MonkeyPatch,
    tmp: Path,
) -> list[bytes]:
    out = []
    (tmp / "empty").write_bytes(b"")
    for env in cases:
        with monkeypatch.context() as patch:
            for key in list(os.environ):
                patch.delenv(key)
            for key, value in env.items():
                patch.setenv(key, value)
            patch.setitem(stdio._HANDLES, "STDIN", open_("<", tmp / "empty"))
            patch.setattr(cgi, "_saved", None)
            patch.setattr(cgi, "XHTML", 1)
            q = cgi.CGI()
            out.append(b"\0".join(answer(call(q)) for call in calls))
    return out


def compare_calls(
    cases: list[Env],
    calls: list[tuple[str, Callable[[cgi.CGI], object]]],
    tmp: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    want = run_perl_calls(cases, [perl for perl, _ in calls], tmp)
    got = run_python_calls(cases, [call for _, call in calls], monkeypatch, tmp)
    assert len(want) == len(cases)
    for env, w, g in zip(cases, want, got):
        for perl, w1, g1 in zip([p for p, _ in calls], w.split(b"\0"), g.split(b"\0")):
            assert g1 == w1, (perl, env)
        assert g == w, env


@st.composite
def server_env(draw: st.DrawFn) -> Env:
    env: Env = {"REQUEST_METHOD": "GET"}
    choices: dict[str, list[str | None]] = {
        "SERVER_NAME": [None, "www.example.org", "", "0", "ホスト.example"],
        "SERVER_PORT": [None, "80", "443", "8080", "", "0", "08080", "abc"],
        "HTTP_HOST": [None, "h.example", "h.example:81", "h.example:443", "h.example:0", "0"],
        "HTTP_X_FORWARDED_HOST": [None, "a.example, b.example:82", "p.example"],
        "HTTPS": [None, "on", "ON", "off"],
        "SERVER_PROTOCOL": [None, "HTTP/1.1", "INCLUDED", "HTTPS/1.0"],
        "SCRIPT_NAME": [
            None,
            "/cgi-bin/ffa.cgi",
            "/x//y/s.cgi",
            "",
            "/日本/s.cgi",
            "/a b/s.cgi",
            "/s.cgi?x",
        ],
        "PATH_INFO": [None, "", "/x/y", "/a b", "/日本", "/s.cgi"],
        "QUERY_STRING": [
            None,
            "",
            "a=1&b=x%20y",
            "k",
            "a=1;a=2;%E3%81%82=%82%A0",
            ".cgifields=z&.cgifields=a&x=1",
            "a=<&>\"'",
        ],
        "REMOTE_HOST": [None, "", "client.example", "0"],
        "REMOTE_ADDR": [None, "192.0.2.1", ""],
        "SERVER_SOFTWARE": [None, "Apache", "Microsoft-IIS/10.0"],
    }
    for key, values in choices.items():
        value = draw(st.sampled_from(values))
        if value is not None:
            env[key] = value
    uri = draw(st.sampled_from(["none", "same", "slashes", "escaped", "other", "zero"]))
    script, info = env.get("SCRIPT_NAME", ""), env.get("PATH_INFO", "")
    query = "?" + env["QUERY_STRING"] if env.get("QUERY_STRING") else ""
    if uri == "same":
        env["REQUEST_URI"] = script + info + query
    elif uri == "slashes":
        env["REQUEST_URI"] = script.replace("/", "//") + info.replace("/", "///") + query
    elif uri == "escaped":
        env["REQUEST_URI"] = (script + info).replace(" ", "%20").replace("y", "%79") + query
    elif uri == "other":
        env["REQUEST_URI"] = "/rewritten/path" + query
    elif uri == "zero":
        env["REQUEST_URI"] = "0"
    return env


FIXED_ENVS: list[Env] = [
    # FACTS.md, measured 2026-11-27
    {"REQUEST_METHOD": "GET", "SERVER_NAME": "www.example.org", "SERVER_PORT": "8080", "SCRIPT_NAME": "/cgi-bin/ffa.cgi", "QUERY_STRING": "a=1&b=x%20y"},
    {"REQUEST_METHOD": "GET", "HTTP_HOST": "h.example:81", "SERVER_PORT": "443", "SCRIPT_NAME": "/s.cgi", "PATH_INFO": "/x/y", "REQUEST_URI": "/s.cgi/x//y?q=1", "QUERY_STRING": "q=1"},
    {"REQUEST_METHOD": "GET", "SCRIPT_NAME": "/s.cgi", "PATH_INFO": "/s.cgi", "SERVER_SOFTWARE": "Microsoft-IIS/10.0"},
    {"REQUEST_METHOD": "GET", "SCRIPT_NAME": "/s.cgi", "PATH_INFO": "/s.cgi/more", "SERVER_SOFTWARE": "Microsoft-IIS/10.0"},
    {"REQUEST_METHOD": "GET", "SCRIPT_NAME": "/s.cgi\n", "PATH_INFO": "/p\n", "REQUEST_URI": "/s.cgi/p\n"},
    {"REQUEST_METHOD": "GET", "SCRIPT_NAME": "/dir/", "REMOTE_ADDR": "0", "REMOTE_HOST": "0"},
    {"REQUEST_METHOD": "GET"},
    {"REQUEST_METHOD": "HEAD"},
]  # fmt: skip


def test_url_like_cgi_pm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    compare_calls(FIXED_ENVS, URL_CALLS, tmp_path, monkeypatch)


def test_the_measured_urls() -> None:
    """FACTS.md's figures, written out: what a reader of the docs expects."""
    env = FIXED_ENVS[0]
    q = cgi.CGI("a=1&b=x y")
    saved = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(env)
        assert q.url() == "http://www.example.org:8080/cgi-bin/ffa.cgi"
        assert q.url(relative=1) == "ffa.cgi"
        assert q.self_url() == "http://www.example.org:8080/cgi-bin/ffa.cgi?a=1;b=x%20y"
        assert q.remote_host() == "localhost"
    finally:
        os.environ.clear()
        os.environ.update(saved)


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck), phases=NO_SHRINK)
@given(cases=st.lists(server_env(), min_size=40, max_size=40))
def test_generated_urls_like_cgi_pm(
    cases: list[Env], tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    compare_calls(cases, URL_CALLS, tmp_path_factory.mktemp("url"), monkeypatch)


def test_url_refuses_an_unknown_keyword() -> None:
    with pytest.raises(TypeError, match="unknown keyword 'relativ'"):
        cgi.CGI({}).url(relativ=1)


def test_the_function_interface(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        monkeypatch.delenv(key)
    monkeypatch.setenv("REQUEST_METHOD", "GET")
    monkeypatch.setenv("QUERY_STRING", "a=1")
    monkeypatch.setenv("SCRIPT_NAME", "/cgi-bin/f.cgi")
    monkeypatch.setenv("REMOTE_ADDR", "192.0.2.7")
    monkeypatch.setattr(cgi, "_saved", None)
    monkeypatch.setattr(cgi, "_default_query", None)
    monkeypatch.setattr(cgi, "XHTML", 1)
    assert cgi.url() == "http://localhost/cgi-bin/f.cgi"
    assert cgi.url(relative=1) == "f.cgi"
    assert cgi.self_url() == "http://localhost/cgi-bin/f.cgi?a=1"
    assert cgi.remote_host() == "192.0.2.7"
    assert cgi.start_html("T").endswith("<title>T</title>\n" + META + "</head>\n<body>\n")
    assert cgi.end_html() == "\n</body>\n</html>"


META = '<meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1" />\n'


# -- start_html() and end_html() ---------------------------------------------------
HTML_CALLS: list[tuple[str, Callable[[cgi.CGI], object]]] = [
    ("start_html()", lambda q: q.start_html()),
    ("start_html('Pos <title>')", lambda q: q.start_html("Pos <title>")),
    ("start_html(-title => 'T <&>\"\\'', -bgcolor => '#ffffff', -text => 'black', -link => 'blue', -vlink => 'purple', -alink => 'red')",
     lambda q: q.start_html(title="T <&>\"'", bgcolor="#ffffff", text="black", link="blue", vlink="purple", alink="red")),
    ("start_html(-title => 'ja', -lang => 'ja', -encoding => 'Shift_JIS')", lambda q: q.start_html(title="ja", lang="ja", encoding="Shift_JIS")),
    ("start_html(-title => qq{\\x93\\xfa\\x96\\x7b}, -encoding => 'Shift_JIS')", lambda q: q.start_html(title=b"\x93\xfa\x96\x7b".decode("utf-8", "surrogateescape"), encoding="Shift_JIS")),
    ("start_html(-title => '0')", lambda q: q.start_html(title="0")),
    ("start_html(-lang => '')", lambda q: q.start_html(lang="")),
    ("start_html(-lang => '0')", lambda q: q.start_html(lang="0")),
    ("start_html(-encoding => '')", lambda q: q.start_html(encoding="")),
    ("start_html(-encoding => 'euc-jp', -declare_xml => 1)", lambda q: q.start_html(encoding="euc-jp", declare_xml=1)),
    ("start_html(-style => '/a.css')", lambda q: q.start_html(style="/a.css")),
    ("start_html(-style => {-src => '/s.css', -media => 'print'})", lambda q: q.start_html(style={"src": "/s.css", "media": "print"})),
    ("start_html(-style => {-src => ['/a.css', '/b.css'], -alternate => 1, -type => 'text/x'})", lambda q: q.start_html(style={"src": ["/a.css", "/b.css"], "alternate": 1, "type": "text/x"})),
    ("start_html(-style => {-code => 'body { color: red }'})", lambda q: q.start_html(style={"code": "body { color: red }"})),
    ("start_html(-style => {-verbatim => '@import url(/x.css);'})", lambda q: q.start_html(style={"verbatim": "@import url(/x.css);"})),
    ("start_html(-style => [{-src => '/a.css', -media => 'screen'}, '/b.css'])", lambda q: q.start_html(style=[{"src": "/a.css", "media": "screen"}, "/b.css"])),
    ("start_html(-script => 'alert(1)')", lambda q: q.start_html(script="alert(1)")),
    ("start_html(-script => {-src => '/a.js', -charset => 'utf-8'})", lambda q: q.start_html(script={"src": "/a.js", "charset": "utf-8"})),
    ("start_html(-script => {-language => 'JavaScript1.2', -code => 'x()'})", lambda q: q.start_html(script={"language": "JavaScript1.2", "code": "x()"})),
    ("start_html(-script => [{-type => 'text/perlscript', -code => 'print 1'}, {-language => 'VBScript', -code => 'x'}])",
     lambda q: q.start_html(script=[{"type": "text/perlscript", "code": "print 1"}, {"language": "VBScript", "code": "x"}])),
    ("start_html(-noscript => 'Turn JavaScript on')", lambda q: q.start_html(noscript="Turn JavaScript on")),
    ("start_html(-meta => {keywords => 'a b', description => 'd'})", lambda q: q.start_html(meta={"keywords": "a b", "description": "d"})),
    ("start_html(-head => '<link rel=\"icon\" href=\"/f\" />')", lambda q: q.start_html(head='<link rel="icon" href="/f" />')),
    ("start_html(-head => ['<base target=\"_top\" />', '<meta http-equiv=\"Content-Type\" content=\"text/html; charset=x\" />'])",
     lambda q: q.start_html(head=['<base target="_top" />', '<meta http-equiv="Content-Type" content="text/html; charset=x" />'])),
    ("start_html(-author => 'me@example.org')", lambda q: q.start_html(author="me@example.org")),
    ("start_html(-base => 1, -target => '_blank')", lambda q: q.start_html(base=1, target="_blank")),
    ("start_html(-xbase => 'http://x.example/')", lambda q: q.start_html(xbase="http://x.example/")),
    ("start_html(-onLoad => 'f()', -class => 'main', -x_y => undef, -bgcolor => 'a\"b<')", lambda q: q.start_html(onLoad="f()", **{"class": "main"}, x_y=None, bgcolor='a"b<')),
    ("start_html(-dtd => ['-//W3C//DTD XHTML 1.0 Strict//EN', 'http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd'], -declare_xml => 1)",
     lambda q: q.start_html(dtd=["-//W3C//DTD XHTML 1.0 Strict//EN", "http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd"], declare_xml=1)),
    ("start_html(-dtd => '-//IETF//DTD HTML 3.2//EN', -title => 'old', -lang => 'en')", lambda q: q.start_html(dtd="-//IETF//DTD HTML 3.2//EN", title="old", lang="en")),
    ("start_html(-dtd => 1, -style => {-code => 'p{}'}, -script => 'go()', -author => 'a', -meta => {k => 'v'}, -base => 1)",
     lambda q: q.start_html(dtd=1, style={"code": "p{}"}, script="go()", author="a", meta={"k": "v"}, base=1)),
    ("start_html(-dtd => 'nonsense')", lambda q: q.start_html(dtd="nonsense")),
    ("charset('Shift_JIS') . $q->start_html()", lambda q: q.charset("Shift_JIS") + q.start_html()),
    ("end_html()", lambda q: q.end_html()),
]  # fmt: skip

#: each call on its own: CGI.pm's $XHTML stays off after an HTML 4 DTD
HTML_PERL = ENV_PERL.replace(
    "my @out = map {", "my @out = map { CGI::initialize_globals(); $q->{'.charset'} = 'ISO-8859-1';"
)


@pytest.mark.parametrize("env", [FIXED_ENVS[0], FIXED_ENVS[-1]], ids=["server", "bare"])
def test_start_html_like_cgi_pm(env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    want = run_perl_calls([env], [perl for perl, _ in HTML_CALLS], tmp_path, HTML_PERL)[0].split(
        b"\0"
    )
    got = []
    for _, call in HTML_CALLS:
        got += run_python_calls([env], [call], monkeypatch, tmp_path)
    for (perl, _), w, g in zip(HTML_CALLS, want, got):
        assert g == w, perl
    assert len(want) == len(got) == len(HTML_CALLS)


def test_an_html4_dtd_turns_xhtml_off_for_the_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As CGI.pm's global $XHTML: the second start_html() has no DTD and is HTML 4 too."""
    calls = [
        HTML_CALLS[29],
        HTML_CALLS[0],
        HTML_CALLS[16],
        ("start_html(-style => '/a.css')", HTML_CALLS[10][1]),
    ]
    env = FIXED_ENVS[-1]
    want = run_perl_calls([env], [perl for perl, _ in calls], tmp_path)[0]
    got = run_python_calls([env], [call for _, call in calls], monkeypatch, tmp_path)[0]
    assert got == want
    assert b"XHTML" not in want.split(b"\0")[1]


# -- POST_MAX, DISABLE_UPLOADS and uploads spooled to a file ------------------------
LIMITS_PERL = ENV_PERL  # (not used: the request dump of test_cgi.py is)


def limited_perl() -> str:
    from test_cgi import DUMP_PERL

    return DUMP_PERL.replace(
        "CGI::initialize_globals();",
        "CGI::initialize_globals(); $CGI::POST_MAX = $ENV{T_POST_MAX}; $CGI::DISABLE_UPLOADS = $ENV{T_DISABLE_UPLOADS};",
    )


def compare_limited(
    cases: list[tuple[Env, bytes]], tmp: Path, monkeypatch: pytest.MonkeyPatch, spool: int
) -> None:
    from test_cgi import run_perl

    want = run_perl(cases, tmp, limited_perl())
    got = []
    body_file = tmp / "body"
    for env, data in cases:
        with monkeypatch.context() as patch:
            for key in list(os.environ):
                patch.delenv(key)
            for key, value in env.items():
                patch.setenv(key, value)
            body_file.write_bytes(data)
            patch.setitem(stdio._HANDLES, "STDIN", open_("<", body_file))
            patch.setattr(cgi, "_saved", None)
            patch.setattr(cgi, "POST_MAX", int(env["T_POST_MAX"]))
            patch.setattr(cgi, "DISABLE_UPLOADS", int(env["T_DISABLE_UPLOADS"]))
            patch.setattr(body, "SPOOL_SIZE", spool)
            try:
                got.append(dump_python(cgi.CGI()))
            except Die as exc:
                got.append(b"DIE:" + _raw(str(exc)))
    assert len(want) == len(cases)
    for case, w, g in zip(cases, want, got):
        assert g == w, case


def limited(case: tuple[Env, bytes], post_max: int, disable: int) -> tuple[Env, bytes]:
    env, data = case
    return {**env, "T_POST_MAX": str(post_max), "T_DISABLE_UPLOADS": str(disable)}, data


limited_cases = st.builds(
    limited,
    st.one_of(url_cases, multipart_case()),
    st.sampled_from([-1, 0, 10, 100, 1024]),
    st.sampled_from([0, 1]),
)


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck), phases=NO_SHRINK)
@given(
    cases=st.lists(limited_cases, min_size=30, max_size=30), spool=st.sampled_from([0, 64, 1 << 20])
)
def test_post_max_and_disable_uploads_like_cgi_pm(
    cases: list[tuple[Env, bytes]],
    spool: int,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    compare_limited(cases, tmp_path_factory.mktemp("limit"), monkeypatch, spool)


UPLOAD = (
    b'--B\r\nContent-Disposition: form-data; name="t"\r\n\r\ntext\r\n'
    b'--B\r\nContent-Disposition: form-data; name="f"; filename="a.txt"\r\n'
    b"Content-Type: text/plain\r\n\r\n" + b"x" * 1500 + b"\r\n--B--\r\n"
)


def test_the_measured_limits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """FACTS.md: POST_MAX 1024 and a 2000-byte body; DISABLE_UPLOADS and a file field."""
    post = {
        "REQUEST_METHOD": "POST",
        "CONTENT_TYPE": "application/x-www-form-urlencoded",
        "CONTENT_LENGTH": "2000",
    }
    form = b"a=" + b"1" * 1998
    mp = {
        "REQUEST_METHOD": "POST",
        "CONTENT_TYPE": "multipart/form-data; boundary=B",
        "CONTENT_LENGTH": str(len(UPLOAD)),
    }
    cases = [
        ({**post, "T_POST_MAX": "1024", "T_DISABLE_UPLOADS": "0"}, form),
        ({**post, "T_POST_MAX": "-1", "T_DISABLE_UPLOADS": "0"}, form),
        ({**mp, "T_POST_MAX": "-1", "T_DISABLE_UPLOADS": "1"}, UPLOAD),
        ({**mp, "T_POST_MAX": "-1", "T_DISABLE_UPLOADS": "0"}, UPLOAD),
        ({**mp, "T_POST_MAX": "1024", "T_DISABLE_UPLOADS": "0"}, UPLOAD),
    ]
    compare_limited(cases, tmp_path, monkeypatch, 0)
    for key in list(os.environ):
        monkeypatch.delenv(key)
    for key, value in post.items():
        monkeypatch.setenv(key, value)
    (tmp_path / "form").write_bytes(form)
    monkeypatch.setitem(stdio._HANDLES, "STDIN", open_("<", tmp_path / "form"))
    monkeypatch.setattr(cgi, "_saved", None)
    monkeypatch.setattr(cgi, "POST_MAX", 1024)
    q = cgi.CGI()
    assert (q.param("a"), q.cgi_error()) == (None, "413 Request entity too large")
    assert cgi.CGI().cgi_error() == "413 Request entity too large"  # (a second object too)
    for key, value in mp.items():
        monkeypatch.setenv(key, value)
    (tmp_path / "mp").write_bytes(UPLOAD)
    monkeypatch.setitem(stdio._HANDLES, "STDIN", open_("<", tmp_path / "mp"))
    monkeypatch.setattr(cgi, "_saved", None)
    monkeypatch.setattr(cgi, "POST_MAX", -1)
    monkeypatch.setattr(cgi, "DISABLE_UPLOADS", 1)
    q = cgi.CGI()
    assert (q.param(), q.param("t"), q.param("f"), q.upload("f")) == (
        ["t", "f"],
        "text",
        None,
        None,
    )


#: a child that reads one upload and reports its peak RSS before and after, in KiB
#: (VmHWM: ru_maxrss of a child carries its parent's peak over the exec)
RSS_CHILD = r"""
import hashlib, re
import perlcompat.cgi as cgi
def peak():
    with open("/proc/self/status") as status:
        return re.search(r"VmHWM:\s*(\d+)", status.read())[1]
before = peak()
q = cgi.CGI()
f = q.upload("f")
digest = hashlib.sha256()
for chunk in iter(lambda: f.read(1 << 16), b""):
    digest.update(chunk)
print(before, peak(), digest.hexdigest(), type(f).__name__, q.param("t"))
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads VmHWM (Linux)")
def test_a_big_upload_is_spooled_to_a_file_not_held_in_memory(tmp_path: Path) -> None:
    """16 MB upload: the reader grows by far less than the upload (it grew ~2.3x it before)."""
    import hashlib

    content = bytes(range(256)) * (16 << 12)
    data = (
        b'--B\r\nContent-Disposition: form-data; name="f"; filename="big.bin"\r\n'
        b"Content-Type: application/octet-stream\r\n\r\n" + content + b"\r\n"
        b'--B\r\nContent-Disposition: form-data; name="t"\r\n\r\nafter\r\n--B--\r\n'
    )
    (tmp_path / "body").write_bytes(data)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(ROOT),
        "REQUEST_METHOD": "POST",
        "CONTENT_TYPE": "multipart/form-data; boundary=B",
        "CONTENT_LENGTH": str(len(data)),
        "TMPDIR": str(tmp_path),
    }
    with open(tmp_path / "body", "rb") as stdin:
        run = subprocess.run(
            [sys.executable, "-c", RSS_CHILD],
            stdin=stdin,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert run.returncode == 0, run.stderr
    before, after, digest, kind, text = run.stdout.split()
    assert digest == hashlib.sha256(content).hexdigest() and text == "after"
    assert kind == "BufferedRandom"  # a temporary file, not a BytesIO
    grown = int(after) - int(before)  # KiB
    assert grown < 8 * 1024, f"peak RSS grew by {grown} KiB reading a 16 MiB upload"
    assert list(tmp_path.iterdir()) == [tmp_path / "body"]  # (the temporary file is gone)


def perl_value(value: object) -> str:
    """*value* as a Perl literal: str, int, None, list, dict (CGI.pm takes ``-src`` or ``src``)."""
    if value is None:
        return "undef"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, list):
        return "[" + ", ".join(perl_value(v) for v in value) + "]"
    assert isinstance(value, dict)
    return "{" + ", ".join(f"'{k}' => {perl_value(v)}" for k, v in value.items()) + "}"


START_OPTIONS: dict[str, list[object]] = {
    "title": ["", "0", "T <&>", "Guest'book"],
    "author": ["a@b.c", "x y"],
    "base": [0, 1],
    "xbase": ["http://x.example/"],
    "target": ["_top"],
    "meta": [{"k": "v"}, {"b": "2", "a": "1"}],
    "head": ["<link />", ["<x />", "<meta http-equiv='Content-Type' content='x' />"]],
    "style": ["/a.css", {"src": "/s.css", "media": "print"}, {"code": "p{}", "type": "text/x"},
              [{"src": ["/a.css", "/b.css"], "title": "t"}, "/c.css"], {"verbatim": ["a", "b"]}],
    "script": ["go()", {"src": "/a.js", "charset": "utf-8", "type": "text/vbscript"},
               [{"code": "x", "language": "PerlScript"}, "y()"], {"language": "JavaScript1.2"}],
    "noscript": ["no js"],
    "dtd": [1, "nonsense", "-//W3C//DTD HTML 3.2 Final//EN", ["-//W3C//DTD XHTML 1.1//EN", "http://x/xhtml11.dtd"],
            ["-//W3C//DTD HTML 4.01//EN", "http://www.w3.org/TR/html4/strict.dtd"]],
    "lang": ["", "ja", "0"],
    "encoding": ["", "utf-8"],
    "declare_xml": [0, 1],
    "bgcolor": ["#fff"],
    "onLoad": ["f()"],
    "x_y": [None],
    "class": ['a"b'],
}  # fmt: skip


@st.composite
def start_html_call(draw: st.DrawFn) -> tuple[str, Callable[[cgi.CGI], object]]:
    keys = draw(st.lists(st.sampled_from(sorted(START_OPTIONS)), max_size=7, unique=True))
    options = {key: draw(st.sampled_from(START_OPTIONS[key])) for key in keys}
    charset = draw(st.sampled_from([None, "Shift_JIS"]))
    perl = "start_html(" + ", ".join(f"'-{k}' => {perl_value(v)}" for k, v in options.items()) + ")"
    if charset is None:
        return perl, lambda q: q.start_html(**options)
    return (
        f"charset('{charset}') . $q->{perl}",
        lambda q: q.charset(charset) + q.start_html(**options),
    )


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck), phases=NO_SHRINK)
@given(calls=st.lists(start_html_call(), min_size=40, max_size=40))
def test_generated_start_html_like_cgi_pm(
    calls: list[tuple[str, Callable[[cgi.CGI], object]]],
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tmp = tmp_path_factory.mktemp("html")
    env = FIXED_ENVS[1]
    want = run_perl_calls([env], [perl for perl, _ in calls], tmp, HTML_PERL)[0].split(b"\0")
    got = [run_python_calls([env], [call], monkeypatch, tmp)[0] for _, call in calls]
    assert len(want) == len(got)
    for (perl, _), w, g in zip(calls, want, got):
        assert g == w, perl


def test_an_upload_is_made_from_a_file_or_from_bytes() -> None:
    made = cgi.Upload("a.txt", b"hello", {"Content-Type": "text/plain"})
    assert (str(made), made.file.read(), made.content) == ("a.txt", b"hello", b"hello")
    assert made.file.tell() == 5  # (.content keeps the position)
