"""Every rule of ``perlcompat audit``, in one table, and :func:`judge`, which runs them.

A rule is a :class:`.findings.Policy` (name, default severity, one-line description)
declared in its own module under :mod:`.rules`, beside the code that finds it.  Each
judges the events the walk recorded (:mod:`.walker`, :mod:`.handlers`): per scope in
:data:`SCOPE_CHECKS` order, then across all files (lock-order, unknown-sub).
To add a rule: a module in ``rules/`` with ``POLICY`` and ``check(res, judge)``, and a
line in :data:`POLICIES` and :data:`SCOPE_CHECKS`.
"""

from __future__ import annotations

from .findings import Problem, internal
from .rules import (
    alarm_not_reset,
    append_no_seek,
    check_then_create,
    ex_on_readonly,
    fork_while_locked,
    lock_order,
    read_write,
    rename_replaces_flocked,
    stale_check_then_remove,
    swallowed_flock,
    truncate_before_lock,
    unchecked_result,
    unknown_sub,
    unlink_before_rename,
    write_under_shared_lock,
)
from .rules.common import Judge

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from .findings import Finding, Policy
    from .model import Program, Result

#: Every rule, in the order of the rules table (docs/audit.md).
POLICIES: tuple[Policy, ...] = (
    truncate_before_lock.POLICY,
    check_then_create.POLICY,
    read_write.LOCK_AFTER_READ,
    read_write.LOCK_GAP,
    read_write.UNLOCKED_WRITE,
    read_write.UNLOCKED_UPDATE,
    ex_on_readonly.POLICY,
    write_under_shared_lock.POLICY,
    append_no_seek.POLICY,
    unchecked_result.POLICY,
    swallowed_flock.POLICY,
    stale_check_then_remove.POLICY,
    alarm_not_reset.POLICY,
    fork_while_locked.POLICY,
    unlink_before_rename.POLICY,
    rename_replaces_flocked.POLICY,
    lock_order.POLICY,
    unknown_sub.POLICY,
)

#: rule -> default severity.
RULES = {policy.name: policy.severity for policy in POLICIES}

#: The rules judged on each walked scope (a sub, an anonymous sub, a main program).
SCOPE_CHECKS: tuple[Callable[[Result, Judge], Iterable[Finding]], ...] = (
    truncate_before_lock.check,
    check_then_create.check,
    ex_on_readonly.check,
    write_under_shared_lock.check,
    append_no_seek.check,
    unchecked_result.check,
    swallowed_flock.check,
    read_write.check,
    stale_check_then_remove.check,
    unlink_before_rename.check,
    rename_replaces_flocked.check,
    alarm_not_reset.check,
    fork_while_locked.check,
    lock_order.check,
)


def judge(prog: Program, results: list[Result], failed: dict[str, Problem]) -> list[Finding]:
    """Run every judged rule over the walked scopes; a file whose rules raise goes to *failed*."""
    ctx = Judge(prog, results)
    out: list[Finding] = []
    for res in results:
        for check in SCOPE_CHECKS:
            try:
                out.extend(check(res, ctx))
            except Exception as exc:  # (never crash: report the file)
                name = res.source.name
                failed.setdefault(name, Problem(name, 1, internal(exc)))
    try:
        out.extend(lock_order.check_program(prog, results))
    except Exception as exc:  # (a cross-file rule: blamed on the first file)
        if results:
            name = results[0].source.name
            failed.setdefault(name, Problem(name, 1, internal(exc)))
    out.extend(unknown_sub.check_program(prog, results))
    return out
