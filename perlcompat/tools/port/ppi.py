"""Run PPI on a Perl script: ``perl ppi_dump.pl SCRIPT`` and its JSON as a :class:`.tree.Node`."""

from __future__ import annotations

import json
import os
import subprocess

from .tree import Node, Script

DUMPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ppi_dump.pl")


class PortError(Exception):
    """The script cannot be read or parsed (no perl, no PPI, PPI gave up): the message says why."""


def parse_file(path: str, perl: str = "perl") -> Script:
    """The PPI document of the Perl script at *path*, with its text in its own encoding."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise PortError(f"cannot read {path}: {exc.strerror}") from None
    try:
        done = subprocess.run([perl, DUMPER, path], capture_output=True, check=False, timeout=120)
    except FileNotFoundError:
        raise PortError(f"perlcompat port needs perl to parse {path}: {perl!r} not found") from None
    if done.returncode != 0:
        err = done.stderr.decode("utf-8", "replace").strip()
        if "Can't locate PPI.pm" in err:
            raise PortError(
                "perlcompat port needs PPI, the Perl parser: apt-get install libppi-perl "
                "(or cpan PPI)"
            )
        raise PortError(err or f"perl {DUMPER} {path} failed ({done.returncode})")
    script = Script(path, raw)
    script.root = Node.load(json.loads(done.stdout.decode("ascii")), script.decode)
    return script
