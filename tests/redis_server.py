"""A throw-away ``redis-server`` on a free loopback port, for tests and benchmarks."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry


def free_port() -> int:
    """Return a loopback TCP port nobody listens on right now (redis cannot take port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """One ``redis-server`` without persistence, restartable on the same port."""

    def __init__(self, workdir: str, *extra: str) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed (apt-get install redis-server)")
        self.binary = binary
        self.workdir = workdir
        self.extra = extra
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0
        os.makedirs(workdir, exist_ok=True)

    @property
    def url(self) -> str:
        """The server's ``redis://`` URL, database 0."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        """Start the server (on a new free port the first time) and wait until it answers PING."""
        for _attempt in range(5):
            if not self.port:
                self.port = free_port()
            log = open(os.path.join(self.workdir, f"redis-{self.port}.log"), "ab")  # noqa: SIM115
            self.proc = subprocess.Popen(
                [
                    self.binary,
                    "--port", str(self.port),
                    "--bind", "127.0.0.1",
                    "--save", "",
                    "--appendonly", "no",
                    "--dir", self.workdir,
                    *self.extra,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )  # fmt: skip
            log.close()
            self.started_at = time.monotonic()
            if self._wait_ready():
                return self
            self.port = 0  # the port was taken meanwhile: try another
        raise RuntimeError(f"redis-server did not start; see logs in {self.workdir}")

    def _wait_ready(self) -> bool:
        client = redis.Redis(
            port=self.port,
            socket_connect_timeout=1,
            socket_timeout=1,
            retry=Retry(NoBackoff(), 0),  # one PING per try: our loop does the retrying
        )
        deadline = time.monotonic() + 10
        assert self.proc is not None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                client.ping()
                return True
            except redis.AuthenticationError:
                return True  # answering, but wants a password
            except (redis.ConnectionError, redis.TimeoutError):
                time.sleep(0.005)  # not listening yet, or not answering within 1 s yet
            finally:
                client.close()
        self.stop()
        return False

    def client(self, **kwargs: object) -> redis.Redis:
        """A redis-py client for direct inspection."""
        return redis.Redis(port=self.port, **kwargs)  # type: ignore[arg-type]

    def declare_empty(self) -> None:
        """Tell perlcompat no lock from before this start exists (lifts the restart hold-off)."""
        with self.client() as client:
            client.set("perlcompat:epoch", 0)

    def stop(self) -> None:
        """Kill the server with SIGKILL (it saves nothing) and reap it."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
        self.proc = None

    def pause(self) -> None:
        """Stop the server with SIGSTOP: connections are still accepted, nothing is answered."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """Let a paused server run again (SIGCONT)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)

    def restart(self) -> None:
        """Kill and start again on the same port, with empty memory."""
        self.stop()
        self.start()
