"""The FastCGI 1.0 wire format: records and name-value pairs (the protocol layer of ``serve``).

Only what a Responder needs: records are read from a byte buffer as they arrive
(:func:`take_record`) and written with :func:`record`/:func:`stream` (content
split at 65535 bytes, padded to 8), ``FCGI_GET_VALUES`` answered with
:func:`values_result`.  No I/O happens here; ``tools.server`` owns the sockets.  Spec: "FastCGI
Specification", Open Market, 1996 (fastcgi-archives.github.io).
"""

from __future__ import annotations

import struct

VERSION = 1
HEADER = struct.Struct("!BBHHBx")  # version, type, request id, content length, padding
BEGIN_BODY = struct.Struct("!HB5x")  # role, flags
END_BODY = struct.Struct("!IB3x")  # app status, protocol status

BEGIN_REQUEST = 1
ABORT_REQUEST = 2
END_REQUEST = 3
PARAMS = 4
STDIN = 5
STDOUT = 6
STDERR = 7
DATA = 8
GET_VALUES = 9
GET_VALUES_RESULT = 10
UNKNOWN_TYPE = 11

RESPONDER = 1
KEEP_CONN = 1

REQUEST_COMPLETE = 0
CANT_MPX_CONN = 1
OVERLOADED = 2
UNKNOWN_ROLE = 3

MAX_CONTENT = 65535


class ProtocolError(ValueError):
    """The peer sent bytes that are not FastCGI 1.0; the connection is dropped."""


def take_record(buf: bytearray) -> tuple[int, int, bytes] | None:
    """Remove one whole record from the front of *buf*: (type, request id, content), or None."""
    if len(buf) < HEADER.size:
        return None
    version, kind, request_id, length, padding = HEADER.unpack_from(buf)
    if version != VERSION:
        raise ProtocolError(f"FastCGI version {version}, expected {VERSION}")
    end = HEADER.size + length + padding
    if len(buf) < end:
        return None
    content = bytes(buf[HEADER.size : HEADER.size + length])
    del buf[:end]
    return kind, request_id, content


def record(kind: int, request_id: int, content: bytes = b"") -> bytes:
    """One record (content of at most 65535 bytes), padded to a multiple of 8."""
    padding = -len(content) % 8
    return HEADER.pack(VERSION, kind, request_id, len(content), padding) + content + bytes(padding)


def stream(kind: int, request_id: int, data: bytes) -> bytes:
    """*data* as records of *kind* (STDOUT, STDERR); empty *data* gives nothing."""
    view = memoryview(data)
    return b"".join(
        record(kind, request_id, bytes(view[i : i + MAX_CONTENT]))
        for i in range(0, len(data), MAX_CONTENT)
    )


def end_request(request_id: int, app_status: int, protocol_status: int = REQUEST_COMPLETE) -> bytes:
    """The FCGI_END_REQUEST record (with the empty STDOUT that closes the stream first)."""
    body = END_BODY.pack(app_status & 0xFFFFFFFF, protocol_status)
    return record(STDOUT, request_id) + record(END_REQUEST, request_id, body)


def values_result(content: bytes, max_conns: int, max_reqs: int) -> bytes:
    """The FCGI_GET_VALUES_RESULT record answering the FCGI_GET_VALUES *content*."""
    known = {
        b"FCGI_MAX_CONNS": str(max_conns).encode(),
        b"FCGI_MAX_REQS": str(max_reqs).encode(),
        b"FCGI_MPXS_CONNS": b"1",
    }
    try:
        asked = parse_pairs(content)
    except ProtocolError:
        asked = []
    found = pairs([(name, known[name]) for name, _ in asked if name in known])
    return record(GET_VALUES_RESULT, 0, found)


def _length(data: bytes, pos: int) -> tuple[int, int]:
    if pos >= len(data):
        raise ProtocolError("name-value pair cut short")
    if data[pos] < 0x80:
        return data[pos], pos + 1
    if pos + 4 > len(data):
        raise ProtocolError("name-value pair cut short")
    return int.from_bytes(data[pos : pos + 4], "big") & 0x7FFFFFFF, pos + 4


def parse_pairs(data: bytes) -> list[tuple[bytes, bytes]]:
    """The name-value pairs of a PARAMS (or GET_VALUES) stream."""
    pairs = []
    pos = 0
    end = len(data)
    while pos < end:
        # a length under 128 is one byte (almost every one): read here, without a call
        if data[pos] < 0x80:
            name_len, pos = data[pos], pos + 1
        else:
            name_len, pos = _length(data, pos)
        if pos < end and data[pos] < 0x80:
            value_len, pos = data[pos], pos + 1
        else:
            value_len, pos = _length(data, pos)
        if pos + name_len + value_len > end:
            raise ProtocolError("name-value pair cut short")
        name = data[pos : pos + name_len]
        pos += name_len
        pairs.append((name, data[pos : pos + value_len]))
        pos += value_len
    return pairs


def _encode_length(n: int) -> bytes:
    return bytes([n]) if n < 0x80 else (n | 0x80000000).to_bytes(4, "big")


def pairs(items: list[tuple[bytes, bytes]]) -> bytes:
    """Encode name-value pairs (for GET_VALUES_RESULT, and for clients)."""
    return b"".join(
        _encode_length(len(name)) + _encode_length(len(value)) + name + value
        for name, value in items
    )
