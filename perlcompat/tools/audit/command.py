"""``perlcompat audit PATH...``: the command line around :func:`.run.audit`.

Reads the Perl files under PATH (:mod:`.source`), audits them together, and prints one
line per finding with its suggestion, or with ``--json`` one document (``version``,
``findings``, ``errors``).  Exit status: 0 clean (info findings alone included), 1 any
error or warning finding, 2 bad usage or a path that cannot be read or parsed.
"""

from __future__ import annotations

import re
import sys

from ..quoting import quote
from .findings import Problem
from .run import audit
from .source import iter_files, read_source, try_read

#: ``version`` of the ``--json`` document; bumped only when a field changes meaning.
JSON_VERSION = 1


#: what JSON leaves raw but a terminal acts on: DEL, C1 controls, separators, bidi controls.
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def shown_path(path: str) -> str:
    """*path* printable in any locale: undecodable name bytes as ``\\xNN``."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _format_text(findings: list[dict[str, object]]) -> str:
    """One line per finding; file names and Perl text quoted as ``ls`` quotes names."""
    lines = []
    for f in findings:
        where = quote(str(f["file"]))
        message = quote(str(f["message"]), sentence=True)
        lines.append(f"{where}:{f['line']}: {f['severity']} {f['rule']}: {message}")
        if f["suggestion"]:
            lines.append(f"    perlcompat: {quote(str(f['suggestion']), sentence=True)}")
    return "".join(line + "\n" for line in lines)


class _Progress:
    """``audited N/M`` on one stderr line, only when stderr is a terminal."""

    def __init__(self) -> None:
        self.on = sys.stderr.isatty()
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        if self.on and total >= 20 and (done % 10 == 0 or done == total):
            sys.stderr.write(f"\raudit: {done}/{total} ")
            sys.stderr.flush()
            self.shown = True

    def clear(self) -> None:
        if self.shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def main(argv: list[str]) -> int:
    """``perlcompat audit``: print findings.

    Exit status: 0 clean (info findings alone included), 1 any error or warning finding,
    2 bad usage or a path that cannot be read or parsed.
    """
    import argparse

    parser = argparse.ArgumentParser(
        prog="perlcompat audit",
        description="Report unsafe file-locking idioms in Perl CGI scripts, "
        "each with the perlcompat line to use instead.",
        epilog="exit status: 0 clean, 1 findings (errors or warnings), "
        "2 bad usage or a file that cannot be read or parsed",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="Perl script or directory")
    parser.add_argument("--json", action="store_true", help="print findings as JSON")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    progress = _Progress()
    sources: list[tuple[str, str]] = []
    errors: list[dict[str, object]] = []
    for path in iter_files(args.paths):
        try:
            sources.append((path, read_source(path)))
        except OSError as exc:
            reason = exc.strerror or str(exc)
            shown = f"{quote(shown_path(path))}: {quote(reason, sentence=True)}"
            sys.stderr.write(f"perlcompat audit: cannot read {shown}\n")
            entry = {"file": shown_path(path), "line": 0, "message": f"cannot read: {reason}"}
            errors.append(entry)
    problems: list[Problem] = []
    try:
        found = audit(sources, problems, load=try_read, progress=progress)
    finally:
        progress.clear()
    findings = [f.as_dict() for f in found]
    for f in findings:
        f["file"] = shown_path(str(f["file"]))
    for problem in problems:
        where, why = quote(shown_path(problem.file)), quote(problem.message, sentence=True)
        sys.stderr.write(f"{where}: {why}\n")
        entry = problem.as_dict()
        entry["file"] = shown_path(problem.file)
        errors.append(entry)
    if args.json:
        import json

        doc = {"version": JSON_VERSION, "findings": findings, "errors": errors}
        text = json.dumps(doc, ensure_ascii=False, indent=2)
        sys.stdout.write(_JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n")
    else:
        sys.stdout.write(_format_text(findings))
        counts = {
            s: sum(1 for f in findings if f["severity"] == s) for s in ("error", "warning", "info")
        }
        unread = f", {len(errors)} not audited" if errors else ""
        sys.stderr.write(
            f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info "
            f"in {len(sources) - len(problems)} file(s){unread}\n"
        )
    if errors:
        return 2
    return 1 if any(f["severity"] in ("error", "warning") for f in findings) else 0
