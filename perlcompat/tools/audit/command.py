"""``perlcompat audit PATH...``: the command line around :func:`.run.audit`.

Reads the Perl files under PATH (:mod:`.source`; ``-`` is standard input; ``--exclude
GLOB`` leaves files out; a non-Perl file found in a directory is skipped with a note),
audits them together, and prints one line per finding with its suggestion, or with
``--json`` one document (``version``, ``findings``, ``errors``, ``skipped``).  ``--only
RULE`` and ``--ignore RULE`` select the rules reported.  Exit status: 0 clean (info
findings alone included), 1 any error or warning finding, 2 bad usage or a path that
cannot be read or parsed.
"""

from __future__ import annotations

import re
import sys

from ..quoting import quote
from .findings import Problem
from .registry import RULES
from .run import audit
from .source import read_source, targets, try_read

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

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


def _rule_names(parser: argparse.ArgumentParser, values: list[str]) -> set[str]:
    """The rule names in ``--only``/``--ignore`` values; an unknown one is a usage error."""
    names = {n.strip() for value in values for n in value.split(",") if n.strip()}
    unknown = sorted(names - set(RULES))
    if unknown:
        parser.error(f"unknown rule {', '.join(unknown)} (rules: {', '.join(RULES)})")
    return names


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
    parser.add_argument(
        "paths", nargs="+", metavar="PATH", help="Perl script or directory; - for standard input"
    )
    parser.add_argument("--json", action="store_true", help="print findings as JSON")
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="GLOB",
        help="leave out files and directories whose path or name matches GLOB (repeatable)",
    )
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="RULE",
        help="report only these rules (repeatable, or comma-separated)",
    )
    parser.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="RULE",
        help="do not report these rules (repeatable, or comma-separated)",
    )
    try:
        args = parser.parse_args(argv)
        only, ignore = (_rule_names(parser, values) for values in (args.only, args.ignore))
    except SystemExit as exc:
        return int(exc.code or 0)
    progress = _Progress()
    sources: list[tuple[str, str]] = []
    errors: list[dict[str, object]] = []
    skipped: list[dict[str, object]] = []
    for path, why in targets(args.paths, args.exclude):
        if why:
            sys.stderr.write(f"perlcompat audit: skipped {shown_path(path)}: {why}\n")
            skipped.append({"file": shown_path(path), "reason": why})
            continue
        try:
            if path == "-":
                sources.append((path, sys.stdin.buffer.read().decode("latin-1")))
            else:
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
    findings = [f.as_dict() for f in found if (not only or f.rule in only) and f.rule not in ignore]
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

        doc = {"version": JSON_VERSION, "findings": findings, "errors": errors, "skipped": skipped}
        text = json.dumps(doc, ensure_ascii=False, indent=2)
        sys.stdout.write(_JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n")
    else:
        sys.stdout.write(_format_text(findings))
        counts = {
            s: sum(1 for f in findings if f["severity"] == s) for s in ("error", "warning", "info")
        }
        unread = f", {len(errors)} not audited" if errors else ""
        unread += f", {len(skipped)} skipped" if skipped else ""
        sys.stderr.write(
            f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info "
            f"in {len(sources) - len(problems)} file(s){unread}\n"
        )
    if errors:
        return 2
    return 1 if any(f["severity"] in ("error", "warning") for f in findings) else 0
