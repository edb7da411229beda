"""A real lighttpd with mod_cgi (and mod_fastcgi) serving copies of examples/, for the e2e tests.

Also a real nginx (:class:`NginxServer`, unprivileged, its own prefix) in front of
``perlcompat serve`` with the configuration docs/serve.md gives.

``CgiServer(root, env).start()`` writes a config, runs ``lighttpd -D`` in the
foreground on a free loopback port, and returns once the port accepts
connections (or raises with lighttpd's error log if it exits first).  Scripts
ending in ``.cgi``/``.pl`` run under perl, ``.py`` under this test's Python;
*env* is added to every CGI's environment (lighttpd passes no other variables).
With ``fastcgi=SOCKET``, ``.py`` goes to the FastCGI server on that unix socket
(``perlcompat serve``) and ``.cgi``/``.pl`` stay with mod_cgi.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
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

    def __init__(
        self, root: Path, env: dict[str, str], fastcgi: str | None = None, stream: bool = False
    ) -> None:
        self.root = root
        self.stream = stream  # server.stream-response-body = 2: answers go out as they come
        self.env = env
        self.fastcgi = fastcgi  # a unix socket path: .py goes there (mod_fastcgi), not mod_cgi
        self.lighttpd = find_tool("lighttpd", "/usr/sbin", "/usr/local/sbin")
        self.perl = find_tool("perl")
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.errorlog = root.parent / "lighttpd-error.log"

    def config(self) -> str:
        """The lighttpd configuration for the current port."""
        env = ", ".join(f"{_quote(k)} => {_quote(v)}" for k, v in sorted(self.env.items()))
        interpreters = {".cgi": self.perl, ".pl": self.perl, ".py": sys.executable}
        fastcgi = []
        if self.fastcgi is not None:
            del interpreters[".py"]
            fastcgi = [
                'server.modules += ("mod_fastcgi")',
                f'fastcgi.server = (".py" => (("socket" => {_quote(self.fastcgi)})))',
            ]
        assign = ", ".join(f"{_quote(k)} => {_quote(v)}" for k, v in interpreters.items())
        return "\n".join(
            [
                *fastcgi,
                f"server.document-root = {_quote(str(self.root))}",
                'server.bind = "127.0.0.1"',
                f"server.port = {self.port}",
                f"server.errorlog = {_quote(str(self.errorlog))}",
                'server.modules += ("mod_cgi", "mod_setenv")',
                f"cgi.assign = ({assign})",
                f"setenv.add-environment = ({env})",
                "server.max-connections = 256",
                *(["server.stream-response-body = 2"] if self.stream else []),
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


class NginxServer:
    """One nginx in front of ``perlcompat serve`` on *fastcgi* (a unix socket) for ``.py``.

    Its config, pid file, logs and temp directories live in *workdir* (``-p``), so it runs
    unprivileged; run as root it keeps root for its worker (the socket is mode 0660).
    The location block is the one docs/serve.md gives.
    """

    def __init__(self, root: Path, fastcgi: str, workdir: Path) -> None:
        self.root = root
        self.fastcgi = fastcgi
        self.workdir = workdir
        self.nginx = find_tool("nginx", "/usr/sbin", "/usr/local/sbin")
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.errorlog = workdir / "error.log"

    def config(self) -> str:
        """The nginx configuration for the current port."""
        params = Path("/etc/nginx/fastcgi_params")
        include = f"include {params};" if params.exists() else _FASTCGI_PARAMS
        temps = "\n".join(
            f"    {kind}_temp_path {self.workdir / kind};"
            for kind in ("client_body", "fastcgi", "proxy", "scgi", "uwsgi")
        )
        user = "user root;" if os.geteuid() == 0 else ""
        return f"""
{user}
daemon off;
worker_processes 1;
pid {self.workdir / "nginx.pid"};
error_log {self.errorlog} info;
events {{ worker_connections 1024; }}
http {{
    access_log off;
{temps}
    server {{
        listen 127.0.0.1:{self.port};
        root {self.root};
        location ~ \\.py$ {{
            {include}
            fastcgi_param SCRIPT_FILENAME $document_root$fastcgi_script_name;
            fastcgi_param HTTP_PROXY "";
            fastcgi_pass unix:{self.fastcgi};
        }}
    }}
}}
"""

    def start(self) -> NginxServer:
        """Start nginx on a free port; return when it accepts connections."""
        for _attempt in range(5):
            self.port = free_port()
            conf = self.workdir / "nginx.conf"
            conf.write_text(self.config())
            argv = [self.nginx, "-e", str(self.errorlog), "-p", str(self.workdir), "-c", str(conf)]
            self.process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            if _wait_listening(self.process, self.port, time.monotonic() + 15):
                return self
        log = self.errorlog.read_text() if self.errorlog.exists() else "(no error log)"
        raise RuntimeError(f"nginx did not start:\n{log}")

    def stop(self) -> None:
        """Stop nginx (SIGTERM, then SIGKILL after 10 s)."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def url(self, path: str) -> str:
        """The URL of *path* on this server."""
        return f"http://127.0.0.1:{self.port}/{path.lstrip('/')}"

    def request(
        self, path: str, data: bytes | None = None, timeout: float = 60
    ) -> tuple[int, bytes]:
        """GET (or POST *data* as a form) *path*; return (status, body), errors included."""
        return CgiServer.request(self, path, data, timeout)  # type: ignore[arg-type]


#: Debian's /etc/nginx/fastcgi_params, for an nginx installed without it.
_FASTCGI_PARAMS = " ".join(
    f"fastcgi_param {name} {value};"
    for name, value in (
        ("QUERY_STRING", "$query_string"),
        ("REQUEST_METHOD", "$request_method"),
        ("CONTENT_TYPE", "$content_type"),
        ("CONTENT_LENGTH", "$content_length"),
        ("SCRIPT_NAME", "$fastcgi_script_name"),
        ("REQUEST_URI", "$request_uri"),
        ("DOCUMENT_URI", "$document_uri"),
        ("DOCUMENT_ROOT", "$document_root"),
        ("SERVER_PROTOCOL", "$server_protocol"),
        ("REQUEST_SCHEME", "$scheme"),
        ("GATEWAY_INTERFACE", "CGI/1.1"),
        ("SERVER_SOFTWARE", "nginx/$nginx_version"),
        ("REMOTE_ADDR", "$remote_addr"),
        ("REMOTE_PORT", "$remote_port"),
        ("SERVER_ADDR", "$server_addr"),
        ("SERVER_PORT", "$server_port"),
        ("SERVER_NAME", "$server_name"),
        ("REDIRECT_STATUS", "200"),
    )
)


def _wait_listening(process: subprocess.Popen[bytes], port: int, deadline: float) -> bool:
    """True once *port* accepts a connection; False if *process* exits first."""
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except ConnectionRefusedError:
            pass
        try:
            process.wait(timeout=0.01)  # returns only if the server has exited
            return False
        except subprocess.TimeoutExpired:
            continue
    process.kill()
    process.wait()
    raise RuntimeError(f"the web server did not listen on port {port} within 15 s")


class ServeProcess:
    """``perlcompat serve`` on a unix socket for *root*; its stderr is collected in ``log``.

    *nofile* sets its descriptor limit (RLIMIT_NOFILE); *fastcgi* replaces the unix
    socket with another ``--fastcgi`` address (``HOST:PORT``).
    """

    def __init__(
        self,
        root: Path,
        sock: Path,
        *args: str,
        env: dict[str, str] | None = None,
        nofile: int = 0,
        fastcgi: str = "",
    ):
        self.nofile = nofile
        self.argv = [
            sys.executable,
            "-m",
            "perlcompat",
            "serve",
            "--fastcgi",
            fastcgi or f"unix:{sock}",
            "--root",
            str(root),
            *args,
        ]
        self.sock = sock
        self.env = {**os.environ, "PYTHONPATH": PACKAGE_ROOT, **(env or {})}
        self.process: subprocess.Popen[bytes] | None = None
        self.lines: list[str] = []
        self._listening = threading.Event()
        self._changed = threading.Condition()

    def start(self) -> ServeProcess:
        """Start it; return once it says it listens (or raise with what it said)."""
        self.process = subprocess.Popen(
            self.argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=self.env,
            preexec_fn=self._limit if self.nofile else None,
        )
        threading.Thread(target=self._collect, daemon=True).start()
        if not self._listening.wait(30) or self.process.poll() is not None:
            self.stop()
            raise RuntimeError(f"perlcompat serve did not start:\n{self.log}")
        return self

    def _limit(self) -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_NOFILE, (self.nofile, self.nofile))

    def _collect(self) -> None:
        assert self.process is not None and self.process.stderr is not None
        for line in self.process.stderr:
            with self._changed:
                self.lines.append(line.decode("utf-8", "replace"))
                self._changed.notify_all()
            if "listening on" in self.lines[-1]:
                self._listening.set()
        self._listening.set()  # it exited: start() looks at poll()
        with self._changed:
            self.lines.append("")  # wakes wait_for: nothing more will come
            self._changed.notify_all()

    def wait_for(self, text: str, timeout: float = 20) -> bool:
        """True once *text* is in the log (the server may write it just after answering)."""
        with self._changed:
            return self._changed.wait_for(lambda: text in self.log, timeout)

    @property
    def log(self) -> str:
        """Everything the server wrote to its stderr so far."""
        return "".join(self.lines)

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def stop(self) -> int | None:
        """SIGTERM (SIGKILL after 10 s); return its exit status."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode
