"""examples/cgi_guestbook under a real lighttpd: the CGI.pm original and its perlcompat.cgi port.

The same forms (urlencoded and multipart/form-data, uploads, Shift_JIS and stray
bytes, several values of one name, a cookie) go in order to guestbook.cgi on one
server and guestbook.py on another, each with its own data directory: every
response (status, headers, page) and the final log must be identical byte for
byte.  Then both scripts take concurrent posts on one shared log: every post is
there exactly once with its own number.
"""

# ruff: noqa: E501  (the forms table reads best one request a line)
from __future__ import annotations

import fcntl
import http.client
import re
import urllib.parse
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from webserver import PACKAGE_ROOT, CgiServer, copy_examples

PERL, PYTHON = "cgi_guestbook/guestbook.cgi", "cgi_guestbook/guestbook.py"
BOUNDARY = "----formBoundaryx7MA4YWxkTrZu0gW"


def start(base: Path) -> CgiServer:
    www, data = base / "www", base / "data"
    www.mkdir(parents=True)
    data.mkdir()
    copy_examples(www)
    return CgiServer(www, {"PERLCOMPAT_DATA_DIR": str(data), "PYTHONPATH": PACKAGE_ROOT}).start()


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[tuple[CgiServer, CgiServer]]:
    perl, python = start(tmp_path / "perl"), start(tmp_path / "python")
    try:
        yield perl, python
    finally:
        perl.stop()
        python.stop()


def urlencoded(*pairs: tuple[str, bytes]) -> tuple[str, bytes]:
    body = "&".join(f"{k}={urllib.parse.quote_from_bytes(v)}" for k, v in pairs)
    return "application/x-www-form-urlencoded", body.encode()


def multipart(*parts: tuple[str, bytes, str | None]) -> tuple[str, bytes]:
    """(name, value, file name or None) parts as a browser sends them."""
    body = b""
    for name, value, filename in parts:
        body += f"--{BOUNDARY}\r\n".encode()
        disposition = f'Content-Disposition: form-data; name="{name}"'
        if filename is not None:
            disposition += f'; filename="{filename}"'
            disposition += "\r\nContent-Type: application/octet-stream"
        body += disposition.encode("utf-8") + b"\r\n\r\n" + value + b"\r\n"
    body += f"--{BOUNDARY}--\r\n".encode()
    return f"multipart/form-data; boundary={BOUNDARY}", body


def send(
    server: CgiServer,
    path: str,
    form: tuple[str, bytes] | None = None,
    cookie: str | None = None,
    raw: bytes | None = None,
) -> tuple[int, list[tuple[str, str]], bytes]:
    """One request; (status, headers without Date/Server, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    headers = {}
    if cookie is not None:
        headers["Cookie"] = cookie
    try:
        if form is None and raw is None:
            conn.request("GET", "/" + path, headers=headers)
        else:
            ctype, body = form if form is not None else ("application/x-www-form-urlencoded", raw)
            headers["Content-Type"] = ctype
            conn.request("POST", "/" + path, body=body, headers=headers)
        response = conn.getresponse()
        kept = [(k, v) for k, v in response.getheaders() if k not in ("Date", "Server")]
        return response.status, kept, response.read()
    finally:
        conn.close()


def same_moment(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """A cookie's expires= date names the second of the request: compare it as a placeholder."""
    return [(k, re.sub(r"expires=[^;]*", "expires=<date>", v)) for k, v in headers]


SJIS_NAME = "山田".encode("cp932")
SJIS_TEXT = "表示ソ能\r\n二行目".encode("cp932")  # 0x5C trail bytes, a CR LF
PHOTO = (
    bytes(range(256)) + b"\r\n--" + BOUNDARY[:-1].encode() + b"\r\n" + b"\x00" * 10
)  # almost a delimiter

FORMS: list[dict[str, object]] = [
    {"form": urlencoded(("name", b"Taro"), ("message", b"hello <b>&"), ("topic", b"perl"), ("topic", b"cgi"))},
    {"form": urlencoded(("name", SJIS_NAME), ("message", SJIS_TEXT), ("topic", b"python"))},
    {"raw": b"name=a+b;message=x%zz+a=b=c&flag&topic=perl;topic=&=v"},
    {"form": multipart(("name", "花子".encode(), None), ("message", b"stray \xff\xfe bytes\r\nline", None),
                       ("topic", b"python", None), ("topic", b"cgi", None), ("photo", PHOTO, "pic 1.png"))},
    {"form": multipart(("name", b"Jiro", None), ("message", b"no file", None), ("photo", b"", ""))},
    {"form": urlencoded(("message", b"remembered by the cookie")), "cookie": "gbname=%E5%A4%AA%E9%83%8E"},
    {"form": urlencoded(("name", b"nobody"), ("message", b""))},  # no message: the page only
    {"cookie": "gbname=Saburo; other=1"},  # GET
]  # fmt: skip


def test_the_same_forms_give_the_same_pages_and_log(
    servers: tuple[CgiServer, CgiServer],
) -> None:
    perl, python = servers
    for i, request in enumerate(FORMS):
        kwargs = dict(request)
        want = send(perl, PERL, **kwargs)  # type: ignore[arg-type]
        got = send(python, PYTHON, **kwargs)  # type: ignore[arg-type]
        assert want[0] == 200, (i, want)
        assert (got[0], same_moment(got[1])) == (want[0], same_moment(want[1])), i
        assert got[2] == want[2], i
    logs = [Path(s.env["PERLCOMPAT_DATA_DIR"]) / "gbook.log" for s in servers]
    log = logs[0].read_bytes()
    assert logs[1].read_bytes() == log
    assert log.count(b"\n") == 6  # every post with a message
    assert SJIS_NAME in log and b"\xff\xfe" in log and b"pic 1.png %d bytes" % len(PHOTO) in log
    assert "太郎".encode() in log  # the name came from the cookie


def test_concurrent_posts_from_both_scripts_are_each_kept_once(tmp_path: Path) -> None:
    server = start(tmp_path)
    try:
        n = 60
        calls = []
        for i in range(n):
            path = PERL if i % 2 == 0 else PYTHON
            if i % 3 == 0:
                form = multipart(("name", b"user%d" % i, None), ("message", b"post-%03d" % i, None))
            else:
                form = urlencoded(("name", b"user%d" % i), ("message", b"post-%03d" % i))
            calls.append((path, form))
        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(lambda call: send(server, call[0], form=call[1]), calls))
        assert [status for status, _, _ in results] == [200] * n
        posted = sorted(int(re.search(rb"No\.(\d+) posted", page)[1]) for _, _, page in results)  # type: ignore[index]
        assert posted == list(range(1, n + 1))  # every number handed out exactly once
        log = Path(server.env["PERLCOMPAT_DATA_DIR"]) / "gbook.log"
        lines = log.read_bytes().split(b"\n")[:-1]
        assert [int(line.split(b"<>")[0]) for line in lines] == list(range(n, 0, -1))
        messages = sorted(line.split(b"<>")[3] for line in lines)
        assert messages == [b"post-%03d" % i for i in range(n)]  # each post once
        with open(log, "rb") as handle:  # nobody still holds the flock
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        server.stop()
