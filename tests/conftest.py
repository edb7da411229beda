"""Fixtures shared by test modules."""

import signal

from sharedfs import sshd_server, two_hosts, two_hosts_uncached

__all__ = ["sshd_server", "two_hosts", "two_hosts_uncached"]

# A pytest started as a background job of a script inherits SIGINT ignored, and so would
# every child it starts (an ignored signal stays ignored across exec): the tests that
# interrupt a child with SIGINT need Python's and Perl's default disposition there.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
