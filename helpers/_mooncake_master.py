"""The Mooncake master of a local pool: where it listens, whether it can run here, and its process.

Part of :mod:`helpers.kvpool` (which re-exports :class:`PoolAddress`,
:class:`LocalPool`, :func:`start_local_pool` and :func:`unavailable_reason`):
the ``mooncake_master`` binary started on free loopback ports in its own
process group, and always stopped, with the address checks the clients use.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from . import _args
from ._measure import free_port

_HOST = "127.0.0.1"


@dataclass(frozen=True)
class PoolAddress:
    """Where a client finds the pool, and how it moves bytes.

    Attributes
    ----------
    master : str
        ``host:port`` of the master's RPC service.
    metadata : str
        URL of the metadata server (``http://host:port/metadata``), or an etcd address.
    protocol : str
        ``"tcp"`` (any machine) or ``"rdma"`` (RDMA NICs, CUDA build).
    devices : str
        RDMA device names, comma-separated (``"mlx5_0,mlx5_1"``); empty for TCP.
    hostname : str
        This client's address as the other clients reach it.
    """

    master: str
    metadata: str
    protocol: str = "tcp"
    devices: str = ""
    hostname: str = _HOST


def load_cuda_runtime() -> None:
    """Import torch, if present, before ``mooncake.store``.

    The CUDA build's ``store.so`` links against ``libcudart.so.12``, which a
    spawned worker finds on the loader's path only once torch has loaded the
    CUDA runtime of its NVIDIA wheels; without torch, nothing is done.
    """
    try:
        import torch  # noqa: F401
    except ImportError:
        pass


def unavailable_reason() -> str | None:
    """Why a Mooncake pool cannot run here (``None`` if it can): package, binary or libraries missing."""
    if _master_binary() is None:
        return "mooncake_master was not found (pip install mooncake-transfer-engine-non-cuda)"
    try:
        load_cuda_runtime()
        from mooncake.store import MooncakeDistributedStore  # noqa: F401
    except ImportError as exc:  # a missing libibverbs/librdmacm shows up here
        return f"mooncake.store does not import: {exc}"
    return None


def _master_binary() -> str | None:
    path = os.pathsep.join(
        (os.path.dirname(sys.executable), os.environ.get("PATH", ""))
    )
    return shutil.which("mooncake_master", path=path)


def _die_with_parent() -> None:
    """In the child before exec: Linux sends it SIGTERM if this process dies (even by SIGKILL)."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def reachable(host: str, port: int, timeout: float) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"address must be 'host:port', got {address!r}")
    return host, int(port)


def metadata_host_port(url: str) -> tuple[str, int]:
    return split_address(url.removeprefix("http://").split("/", 1)[0])


class LocalPool:
    """A ``mooncake_master`` with its HTTP metadata server on loopback, in its own process group.

    Use :func:`start_local_pool`; :meth:`stop` (called by ``with``, on errors and at exit)
    ends the whole process group: SIGTERM, then SIGKILL after ``grace`` seconds.
    """

    def __init__(self, process: Any, address: PoolAddress, log: Any) -> None:
        self.process = process
        self.address = address
        self._log = log
        atexit.register(self.stop)

    @property
    def pid(self) -> int:
        """Process id of the master (also its process group id)."""
        return self.process.pid

    def running(self) -> bool:
        """Whether the master process is alive."""
        return self.process.poll() is None

    def log_tail(self, *, lines: int = 20) -> str:
        """The last ``lines`` lines the master wrote (for error messages)."""
        self._log.flush()
        self._log.seek(0)
        return "".join(
            self._log.read().decode(errors="replace").splitlines(True)[-lines:]
        )

    def stop(self, *, grace: float = 5.0) -> None:
        """Stop the master and everything in its process group; idempotent."""
        if self.process.poll() is None:
            for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, grace)):
                try:
                    os.killpg(self.process.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    self.process.wait(wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        if not self._log.closed:
            self._log.close()
        atexit.unregister(self.stop)

    def __enter__(self) -> LocalPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_local_pool(*, timeout: float = 30.0, host: str = _HOST) -> LocalPool:
    """Start ``mooncake_master`` with its HTTP metadata server on free ports of ``host``.

    Returns once both the RPC port and the metadata server accept connections;
    past ``timeout`` seconds, or if the master exits, it is killed and a
    :class:`RuntimeError` (with the master's last log lines) is raised.
    """
    timeout = _args.positive("timeout", timeout)
    reason = unavailable_reason()
    if reason is not None:
        raise RuntimeError(f"cannot start a Mooncake pool: {reason}")
    rpc, http, metrics = (free_port(host=host) for _ in range(3))
    log = tempfile.TemporaryFile()
    process = subprocess.Popen(
        [
            str(_master_binary()),
            f"-rpc_address={host}",
            f"-rpc_port={rpc}",
            "-enable_http_metadata_server=true",
            f"-http_metadata_server_host={host}",
            f"-http_metadata_server_port={http}",
            f"-metrics_port={metrics}",
            "-logtostderr",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: stop() ends everything it starts
        preexec_fn=_die_with_parent,
    )
    address = PoolAddress(f"{host}:{rpc}", f"http://{host}:{http}/metadata")
    pool = LocalPool(process, address, log)
    deadline = time.monotonic() + timeout
    try:
        while not (reachable(host, rpc, 0.2) and reachable(host, http, 0.2)):
            if not pool.running():
                raise RuntimeError(
                    f"mooncake_master exited with code {process.returncode}:\n"
                    + pool.log_tail()
                )
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"mooncake_master did not listen within timeout={timeout} s:\n"
                    + pool.log_tail()
                )
            time.sleep(0.05)
    except BaseException:
        pool.stop()
        raise
    return pool
