"""Which files are Perl, and their text: :func:`iter_files`, :func:`targets`, :func:`read_source`.

Files are read as bytes and decoded as latin-1 (exact offsets and lines in any encoding);
text and file names are shown in messages with undecodable bytes as ``\\xNN``.
:func:`targets` is what the command line audits: the files under its paths less those
``--exclude`` matches, each with the reason it is skipped, if it is (a file found in a
directory that is not Perl: another interpreter's ``#!`` line, or binary data).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence


PERL_SUFFIXES = (".pl", ".cgi", ".pm", ".plx", ".ph", ".t")


def _is_perl_file(path: str) -> bool:
    if path.lower().endswith(PERL_SUFFIXES):
        return True
    try:
        with open(path, "rb") as handle:
            head = handle.read(128)
    except OSError:
        return False
    first = head.split(b"\n", 1)[0]
    return first.startswith(b"#!") and b"perl" in first


def iter_files(paths: Sequence[str]) -> Iterator[str]:
    """Perl scripts under *paths*: files as given, directories walked in sorted order."""
    for path in paths:
        if os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(files):
                    full = os.path.join(root, name)
                    if os.path.isfile(full) and _is_perl_file(full):
                        yield full
        else:
            yield path


def not_perl(path: str) -> str:
    """Why a file found in a directory is not a Perl script, or ``""`` if it may be one."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(8192)
    except OSError:
        return ""  # reading it will say why
    if b"\0" in head:
        return "binary data"
    first = head.split(b"\n", 1)[0].rstrip(b"\r")
    if first.startswith(b"#!") and b"perl" not in first:
        return "not Perl: " + first.decode("latin-1")
    return ""


def _excluded(path: str, patterns: Sequence[str]) -> bool:
    from fnmatch import fnmatchcase

    name = os.path.basename(path.rstrip("/" + os.sep)) or path
    return any(fnmatchcase(path, p) or fnmatchcase(name, p) for p in patterns)


def targets(paths: Sequence[str], exclude: Sequence[str] = ()) -> Iterator[tuple[str, str]]:
    """(path, why skipped or ``""``) for each file to audit under *paths*, in order.

    A path given by name is audited whatever it holds (``-`` is standard input); in a
    directory, Perl files (:func:`iter_files`' test) that are not another
    interpreter's script or binary data.  A file or directory whose path or name
    matches an *exclude* glob (``fnmatch``: ``*/old/*``, ``jcode.pl``) is left out.
    """
    for path in paths:
        if path != "-" and _excluded(path, exclude):
            continue
        if not os.path.isdir(path):
            yield path, ""
            continue
        for root, dirs, files in os.walk(path):
            dirs[:] = sorted(
                d
                for d in dirs
                if not d.startswith(".") and not _excluded(os.path.join(root, d), exclude)
            )
            for name in sorted(files):
                full = os.path.join(root, name)
                if _excluded(full, exclude) or not os.path.isfile(full):
                    continue
                if _is_perl_file(full):
                    yield full, not_perl(full)


#: Larger files are not scripts (a log, a dump): refused rather than read into memory.
MAX_BYTES = 32 << 20


def read_source(path: str) -> str:
    """The bytes of *path* as latin-1 text: any encoding, exact byte offsets and lines.

    Raises OSError (EFBIG) for a file over :data:`MAX_BYTES`, EINVAL for anything
    that is not a regular file (a FIFO, a device).
    """
    import errno
    import stat

    # O_NONBLOCK: a FIFO given by name must not hang the audit; only regular files are read
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(MAX_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_BYTES:
        raise OSError(errno.EFBIG, f"larger than {MAX_BYTES >> 20} MiB: not a script", path)
    return data.decode("latin-1")


def try_read(path: str) -> str | None:
    """A required library's text, or None when it is not there."""
    try:
        return read_source(path) if os.path.isfile(path) else None
    except OSError:
        return None


def display(text: str) -> str:
    """Source text for a message: UTF-8 shown as such, other bytes as ``\\xNN``."""
    if text.isascii():
        return text
    try:
        raw = text.encode("latin-1")
    except UnicodeEncodeError:
        return text  # already shown
    return raw.decode("utf-8", "backslashreplace")
