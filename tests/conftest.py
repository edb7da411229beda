"""Fixtures shared by test modules."""

from sharedfs import sshd_server, two_hosts, two_hosts_uncached

__all__ = ["sshd_server", "two_hosts", "two_hosts_uncached"]
