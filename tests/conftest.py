"""Fixtures shared by test modules, and the ``privileged`` marker.

A test that needs root, FUSE (``/dev/fuse``) or new namespaces is marked
``privileged``: every test of the shared-storage harness (its fixtures mount
sshfs and start an sshd) is marked here, the others by hand.  CI runs them all
as root; a packager building as a plain user deselects them with
``pytest -m "not privileged"``.
"""

from __future__ import annotations

import signal

import pytest
from sharedfs import sshd_server, two_hosts, two_hosts_uncached

#: fixtures that need root or FUSE: a test using one is ``privileged``.
PRIVILEGED_FIXTURES = frozenset({"sshd_server", "two_hosts", "two_hosts_uncached"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that uses a privileged fixture as ``privileged``."""
    for item in items:
        if PRIVILEGED_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.privileged)


__all__ = ["sshd_server", "two_hosts", "two_hosts_uncached"]

# A pytest started as a background job of a script inherits SIGINT and SIGQUIT ignored
# (POSIX, without job control), and so would every child it starts (an ignored signal
# stays ignored across exec): the tests that stop a child with SIGINT or SIGQUIT need
# Python's and Perl's default disposition there.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
SIGQUIT = getattr(signal, "SIGQUIT", None)  # (Windows has none)
if SIGQUIT is not None and signal.getsignal(SIGQUIT) == signal.SIG_IGN:
    signal.signal(SIGQUIT, signal.SIG_DFL)
