"""unknown-sub: a lock-named sub defined in no audited file; the audit guessed from its name."""

from __future__ import annotations

from ..findings import Finding, Policy
from ..model import Program, Result
from ..source import display

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator


POLICY = Policy("unknown-sub", "info", "a lock-named sub defined nowhere audited, once per sub")


def check_program(prog: Program, results: list[Result]) -> Iterator[Finding]:
    seen: set[tuple[str, str]] = set()
    for res in results:
        for name, line, kind in res.unknown:
            if (res.source.name, name.lstrip("&")) in seen:
                continue
            seen.add((res.source.name, name.lstrip("&")))
            missing = res.source.missing
            where = (
                f" ({', '.join(missing)}, which it requires, is not beside it)" if missing else ""
            )
            taken = "takes a lock" if kind == "lock" else "releases a lock"
            yield POLICY.finding(
                res.source.name,
                line,
                f"{display(name)} is not defined in the audited files{where}: the audit assumes "
                f"from its name that it {taken}; audit the file that defines it with this "
                "script to check",
                "",
            )
