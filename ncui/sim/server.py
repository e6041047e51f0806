"""Run the simulator: in a background thread (the demo, tests) or in the foreground (``ncui sim``)."""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from typing import Optional

import uvicorn

from .app import SimConfig, create_app
from .world import World


class SimServer:
    """``with SimServer(World("k8s-market")) as sim: sim.api_url, sim.token``.

    Binds the socket itself, so ``port=0`` gives a free port known before serving starts.
    """

    def __init__(self, world: World, host: str = "127.0.0.1", port: int = 0,
                 config: Optional[SimConfig] = None, log_level: str = "warning") -> None:
        self.world = world
        self.config = config or SimConfig()
        self.app = create_app(world, self.config)
        self.sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self.host, self.port = host, self.sock.getsockname()[1]
        self._server = uvicorn.Server(uvicorn.Config(
            self.app, log_level=log_level, access_log=False, lifespan="off",
            timeout_graceful_shutdown=2, timeout_keep_alive=5))
        self._thread: Optional[threading.Thread] = None

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
        return [f"NC_API={self.api_url}", f"NC_ACCESS={self.access_url}", f"NC_TOKEN={self.token}"]

    # ---- running ------------------------------------------------------------------------------

    def serve_forever(self) -> None:
        """Serve in this thread until interrupted."""
        asyncio.run(self._server.serve(sockets=[self.sock]))

    def start(self, timeout: float = 10.0) -> "SimServer":
        self._thread = threading.Thread(target=self.serve_forever, name="ncui-sim", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the simulator did not start")
            time.sleep(0.005)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                self._server.force_exit = True
                self._thread.join(timeout)
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self) -> "SimServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


logging.getLogger("uvicorn.error").addFilter(
    lambda rec: "fault injection" not in rec.getMessage() and "_Dropped" not in str(rec.exc_info))
