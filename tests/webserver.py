"""A real lighttpd with mod_cgi serving copies of examples/, for the end-to-end tests.

``CgiServer(root, env).start()`` writes a config, runs ``lighttpd -D`` in the
foreground on a free loopback port, and returns once the port accepts
connections (or raises with lighttpd's error log if it exits first).  Scripts
ending in ``.cgi``/``.pl`` run under perl, ``.py`` under this test's Python;
*env* is added to every CGI's environment (lighttpd passes no other variables).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
#: the directory that holds the ``perlcompat`` package (for the CGIs' PYTHONPATH).
PACKAGE_ROOT = str(EXAMPLES.parent)


def find_tool(name: str, *extra: str) -> str:
    """Return the path of *name* (also looked for in *extra* dirs), or fail saying how to get it."""
    found = shutil.which(name, path=os.pathsep.join([os.environ.get("PATH", ""), *extra]))
    if found is None:
        raise RuntimeError(
            f"{name} is not installed (apt-get install {name}); the e2e tests need it"
        )
    return found


def copy_examples(www: Path) -> None:
    """Copy every example directory's scripts into *www*, keeping the directories."""
    for source in sorted(EXAMPLES.iterdir()):
        if source.is_dir():
            target = www / source.name
            target.mkdir(parents=True)
            for script in source.iterdir():
                if script.suffix in (".cgi", ".pl", ".py"):
                    shutil.copy2(script, target / script.name)


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _quote(value: str) -> str:
    if '"' in value or "\\" in value:
        raise ValueError(f"cannot put {value!r} in a lighttpd config string")
    return f'"{value}"'


class CgiServer:
    """One lighttpd process serving *root* with CGI for .cgi/.pl (perl) and .py (Python)."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root = root
        self.env = env
        self.lighttpd = find_tool("lighttpd", "/usr/sbin", "/usr/local/sbin")
        self.perl = find_tool("perl")
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.errorlog = root.parent / "lighttpd-error.log"

    def config(self) -> str:
        """The lighttpd configuration for the current port."""
        env = ", ".join(f"{_quote(k)} => {_quote(v)}" for k, v in sorted(self.env.items()))
        interpreters = {".cgi": self.perl, ".pl": self.perl, ".py": sys.executable}
        assign = ", ".join(f"{_quote(k)} => {_quote(v)}" for k, v in interpreters.items())
        return "\n".join(
            [
                f"server.document-root = {_quote(str(self.root))}",
                'server.bind = "127.0.0.1"',
                f"server.port = {self.port}",
                f"server.errorlog = {_quote(str(self.errorlog))}",
                'server.modules += ("mod_cgi", "mod_setenv")',
                f"cgi.assign = ({assign})",
                f"setenv.add-environment = ({env})",
                "server.max-connections = 256",
                "",
            ]
        )

    def start(self) -> CgiServer:
        """Start lighttpd on a free port; return when it accepts connections."""
        for _attempt in range(5):
            self.port = free_port()
            conf = self.root.parent / "lighttpd.conf"
            conf.write_text(self.config())
            self.process = subprocess.Popen(
                [self.lighttpd, "-D", "-f", str(conf)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            if self._wait_listening(self.process, deadline=time.monotonic() + 15):
                return self
            # it exited: most likely someone took the port between probe and bind
        log = self.errorlog.read_text() if self.errorlog.exists() else "(no error log)"
        raise RuntimeError(f"lighttpd did not start:\n{log}")

    def _wait_listening(self, process: subprocess.Popen[bytes], deadline: float) -> bool:
        """True once the port accepts a connection; False if lighttpd exits first."""
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return True
            except ConnectionRefusedError:
                pass
            try:
                process.wait(timeout=0.01)  # returns only if lighttpd has exited
                return False
            except subprocess.TimeoutExpired:
                continue
        process.kill()
        process.wait()
        raise RuntimeError(f"lighttpd did not listen on port {self.port} within 15 s")

    def stop(self) -> None:
        """Stop lighttpd (SIGTERM, then SIGKILL after 10 s)."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def url(self, path: str) -> str:
        """The URL of *path* (``"counter/count.cgi?x=1"``) on this server."""
        return f"http://127.0.0.1:{self.port}/{path.lstrip('/')}"

    def request(
        self, path: str, data: bytes | None = None, timeout: float = 60
    ) -> tuple[int, bytes]:
        """GET (or POST *data* as a form) *path*; return (status, body), errors included."""
        headers = {}
        if data is not None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        req = urllib.request.Request(self.url(path), data=data, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as response:
                return int(response.status), response.read()
        except urllib.error.HTTPError as exc:
            with exc:
                return int(exc.code), exc.read()
