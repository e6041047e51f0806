"""Run the simulator: in a background thread (the demo, tests) or in the foreground (``ncui sim``)."""

from __future__ import annotations

import asyncio
import logging
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path

import uvicorn

from .app import SimConfig, create_app
from .kube.tls import KubeTLS, self_signed
from .ssh import SshHub
from .world import World


class SimServer:
    """``with SimServer(World("k8s-market")) as sim: sim.api_url, sim.token``.

    Binds the socket itself, so ``port=0`` gives a free port known before serving starts. A box restarted
    in place (a new world behind the same addresses and certificate, as a service restarts) takes the old
    one's ``port``, ``tls_port`` and ``tls_pair``.
    """

    def __init__(
        self,
        world: World,
        host: str = "127.0.0.1",
        port: int = 0,
        config: SimConfig | None = None,
        log_level: str = "warning",
        *,
        tls_port: int = 0,
        tls_pair: tuple[bytes, bytes] | None = None,
    ) -> None:
        self.world = world
        self.config = config or SimConfig()
        self.app = create_app(world, self.config)
        self.sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self.sock.listen(2048)  # connections wait in the backlog until serving starts, never refused in between
        self.host, self.port = host, self.sock.getsockname()[1]
        self._server = uvicorn.Server(
            uvicorn.Config(
                self.app,
                log_level=log_level,
                access_log=False,
                lifespan="off",
                timeout_graceful_shutdown=2,
                timeout_keep_alive=5,
                date_header=False,  # the box dates its answers by its own clock (sim/app.py: DateMiddleware)
                ws="wsproto",  # kubectl port-forward: SPDY tunnelled in a WebSocket (kube/portforward.py)
            )
        )
        # The same app over HTTPS for kubectl: client-go sends credentials (the sign-in plugin's token)
        # only to https servers. The kubeconfig points there and pins this self-signed certificate.
        self.tls_sock = socket.socket(self.sock.family, socket.SOCK_STREAM)
        self.tls_sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.tls_sock.bind((host, tls_port))
        self.tls_sock.listen(2048)
        self.tls_port = self.tls_sock.getsockname()[1]
        self._tls_dir = Path(tempfile.mkdtemp(prefix="ncui-sim-tls-"))
        cert, key = self.tls_pair = tls_pair or self_signed(host)
        (self._tls_dir / "cert.pem").write_bytes(cert)
        (self._tls_dir / "key.pem").write_bytes(key)
        (self._tls_dir / "key.pem").chmod(0o600)
        h = f"[{host}]" if ":" in host else host
        self.app.state.kube_tls = KubeTLS(f"https://{h}:{self.tls_port}", cert)
        self._tls_server = uvicorn.Server(
            uvicorn.Config(
                self.app,
                log_level=log_level,
                access_log=False,
                lifespan="off",
                timeout_graceful_shutdown=2,
                timeout_keep_alive=5,
                date_header=False,  # the box dates its answers by its own clock (sim/app.py: DateMiddleware)
                ws="wsproto",  # kubectl port-forward: SPDY tunnelled in a WebSocket (kube/portforward.py)
                ssl_certfile=str(self._tls_dir / "cert.pem"),
                ssl_keyfile=str(self._tls_dir / "key.pem"),
            )
        )
        # The VM nodes as ssh endpoints (their own loop and thread, run while the HTTP servers run).
        self.ssh = SshHub(world, Path(tempfile.mkdtemp(prefix="ncui-sim-ssh-")))
        self.app.state.ssh = self.ssh
        self._thread: threading.Thread | None = None

    # ---- where it listens ---------------------------------------------------------------------

    @property
    def api_url(self) -> str:
        h = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{h}:{self.port}"

    @property
    def access_url(self) -> str:
        return self.api_url + self.config.access_prefix.rstrip("/")

    @property
    def token(self) -> str:
        return self.world.main_org.token

    def env_lines(self) -> list[str]:
        return [
            f"NC_API={self.api_url}",
            f"NC_ACCESS={self.access_url}",
            f"NC_TOKEN={self.token}",
            f"NC_SSH_CONFIG={self.ssh.config_path}",
        ]

    # ---- running ------------------------------------------------------------------------------

    @property
    def kube_url(self) -> str:
        """The Kubernetes API's HTTPS origin (``<kube_url>/k8s/<cluster>``)."""
        return self.app.state.kube_tls.url

    def serve_forever(self) -> None:
        """Serve in this thread until interrupted."""

        async def both() -> None:
            await asyncio.gather(
                self._server.serve(sockets=[self.sock]), self._tls_server.serve(sockets=[self.tls_sock])
            )

        self.ssh.start()
        try:
            asyncio.run(both())
        finally:
            self.ssh.stop()

    def start(self, timeout: float = 10.0) -> SimServer:
        self._thread = threading.Thread(target=self.serve_forever, name="ncui-sim", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not (self._server.started and self._tls_server.started):
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the simulator did not start")
            time.sleep(0.005)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        kube = getattr(self.app.state, "kube", None)
        if kube is not None:  # end the open watch and log streams now, not after the graceful timeout
            kube.close()
        self._server.should_exit = True
        self._tls_server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                self._server.force_exit = True
                self._tls_server.force_exit = True
                self._thread.join(timeout)
        for s in (self.sock, self.tls_sock):
            try:
                s.close()
            except OSError:
                pass
        self.ssh.stop()  # also when it never served (its folder goes)
        shutil.rmtree(self._tls_dir, ignore_errors=True)

    def __enter__(self) -> SimServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


logging.getLogger("uvicorn.error").addFilter(
    lambda rec: "fault injection" not in rec.getMessage() and "_Dropped" not in str(rec.exc_info)
)
