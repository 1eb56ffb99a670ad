"""helpers.kvpool against a real Mooncake master started on a free loopback port.

The fixture starts ``mooncake_master`` (with its HTTP metadata server) once for
the module and checks, when it stops it, that no process of its group is left.
The tests put and get real objects and KV caches, within one process and
between two spawned processes, and check the failures a reader meets: a
missing key, a master that is not running (a clear error within seconds, no
hang), a master that is stopped on an error.
"""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest

from helpers import kvpool
from helpers._measure import free_port
from helpers.llm import kv_cache_bytes

REASON = kvpool.unavailable_reason()
pytestmark = pytest.mark.skipif(
    REASON is not None, reason=f"Mooncake cannot run here: {REASON}"
)


def _group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture(scope="module")
def pool():
    started = time.monotonic()
    local = kvpool.start_local_pool(timeout=30)
    assert time.monotonic() - started < 30
    yield local
    local.stop()
    assert not local.running()
    assert _group_gone(local.pid), "a process of the master's group outlived stop()"


@pytest.fixture(scope="module")
def client(pool):
    """One client for the module: closing one takes about 2 s, and each test uses its own keys."""
    with kvpool.connect(pool.address, segment_bytes=64 << 20) as c:
        yield c


def _config():
    from helpers.tinygpt import tiny_config

    return tiny_config(
        n_layers=3,
        d_model=32,
        n_heads=4,
        n_kv_heads=2,
        head_dim=8,
        d_ff=64,
        vocab_size=64,
        name="pool-test",
    )


@pytest.mark.parametrize("nbytes", [1, 4096, (1 << 20) + 3])
def test_bytes_round_trip_and_size(client, nbytes):
    """What is put comes back byte for byte, and the pool reports its size in bytes."""
    data = np.random.default_rng(nbytes).integers(0, 256, nbytes, dtype=np.uint8)
    client.put(f"bytes/{nbytes}", data)
    assert client.size(f"bytes/{nbytes}") == nbytes
    assert client.get(f"bytes/{nbytes}") == data.tobytes()


def test_a_float_array_is_stored_as_its_bytes(client):
    """A float32 array of n elements is 4n bytes in the pool, not n (Mooncake counts buffer items)."""
    data = np.arange(1000, dtype=np.float32)
    client.put("floats", data)
    assert client.size("floats") == 4000
    assert np.array_equal(np.frombuffer(client.get("floats"), np.float32), data)


def test_missing_key_is_a_key_error(client):
    with pytest.raises(KeyError, match="no object 'absent'"):
        client.get("absent")
    with pytest.raises(KeyError, match="absent"):
        client.size("absent")


def test_kv_cache_round_trip_layer_by_layer(pool, client):
    """A TinyGPT cache put layer by layer by one client is fetched intact by another."""
    import torch

    from helpers.tinygpt import TinyGPT

    config = _config()
    model = TinyGPT(config, seed=1)
    _, cache = model.prefill(torch.randint(0, 64, (1, 24)))
    seconds = client.put_kv_cache("cache", cache)
    assert len(seconds) == config.n_layers and all(s > 0 for s in seconds)
    for layer in range(config.n_layers):
        for kind in ("k", "v"):
            assert client.size(f"cache/{layer}/{kind}") * 2 * config.n_layers == (
                kv_cache_bytes(config, 24, dtype="fp32")
            )
    with kvpool.connect(pool.address, segment_bytes=0) as reader:
        got = reader.get_kv_cache("cache", config, 24)
        with pytest.raises(ValueError, match="needs"):
            reader.get_kv_cache("cache", config, 25)
        with pytest.raises(KeyError):
            reader.get_kv_cache("no-such-cache", config, 24)
    assert all(
        torch.equal(a, b) for pair, mine in zip(got, cache) for a, b in zip(pair, mine)
    )


def test_master_not_running_is_a_clear_error_within_seconds():
    """Nothing listens on the port: ConnectionError naming the master, no hang."""
    port = free_port()
    address = kvpool.PoolAddress(
        f"127.0.0.1:{port}", f"http://127.0.0.1:{port}/metadata"
    )
    started = time.monotonic()
    with pytest.raises(ConnectionError, match="master .* does not accept"):
        kvpool.connect(address, timeout=1.0)
    assert time.monotonic() - started < 5


def test_master_is_stopped_on_an_error_and_leaves_no_process():
    """An exception inside ``with`` stops the master and its whole process group."""
    with pytest.raises(RuntimeError, match="boom"):
        with kvpool.start_local_pool(timeout=30) as local:
            pid = local.pid
            assert local.running()
            raise RuntimeError("boom")
    assert not local.running()
    assert _group_gone(pid)
    local.stop()  # idempotent


def test_master_dies_with_its_parent():
    """A master whose starter is killed (no atexit, no finally) exits too: PR_SET_PDEATHSIG."""
    import subprocess
    import sys

    code = (
        "from helpers import kvpool; import os, sys, time\n"
        "pool = kvpool.start_local_pool(timeout=30)\n"
        "print(pool.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    starter = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True
    )
    try:
        pid = int(starter.stdout.readline())
        starter.send_signal(signal.SIGKILL)
        starter.wait(10)
        deadline = time.monotonic() + 10
        while not _group_gone(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _group_gone(pid), "the master outlived the process that started it"
    finally:
        starter.kill()
        starter.wait(10)


@pytest.mark.slow
def test_two_processes_put_and_get_objects(pool):
    """A writer process puts, a reader process gets the same bytes; both timed, sizes exact."""
    sizes = [1 << 10, 1 << 18]
    puts, gets = kvpool.pool_object_transfer(sizes, pool.address, repeats=2)
    assert [r.nbytes for r in puts] == sizes == [r.nbytes for r in gets]
    assert all(r.verified for r in gets)
    assert all(r.seconds > 0 and r.repeats == 2 for r in puts + gets)


@pytest.mark.slow
def test_disaggregated_decode_matches_recompute(pool):
    """The decode process, from the fetched cache, generates exactly the recomputed tokens."""
    config = _config()
    (result,) = kvpool.pool_kv_transfer(
        config, [20], pool.address, new_tokens=6, repeats=1, warmup=0, seed=3
    )
    assert result.nbytes == kv_cache_bytes(config, 20, dtype="fp32")
    assert result.get.messages == 2 * config.n_layers
    assert len(result.generated) == 6
    assert result.generated == kvpool.recompute_tokens(config, 20, new_tokens=6, seed=3)
    assert min(result.prefill_s, result.put_s, result.overlapped_s) > 0
    assert result.fallback is None and result.get.path == "mooncake get (zero copy)"


def test_zero_copy_round_trip_into_registered_tensors(pool, client):
    """batch_put_from / batch_get_into move a cache into preallocated, registered tensors unchanged."""
    import torch

    config = _config()
    assert client.zero_copy, (
        client.fallback_reason
    )  # 0.3.13 has the registered-buffer API
    cache = [
        (torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8))
        for _ in range(config.n_layers)
    ]
    client.put_kv_cache("zc/5", cache)
    out = client.empty_kv_cache(config, 5)
    got = client.get_kv_cache("zc/5", config, 5, out=out)
    assert all(g[0].data_ptr() == o[0].data_ptr() for g, o in zip(got, out))  # in place
    for (k, v), (gk, gv) in zip(cache, got):
        assert torch.equal(k, gk) and torch.equal(v, gv)
    with pytest.raises(KeyError):
        client.get_kv_cache("zc/missing", config, 5, out=out)
    client.unregister([t for pair in out for t in pair])


class _OldStore:
    """A store without the registered-buffer API (an older Mooncake build): put/get bytes only."""

    def __init__(self):
        self.objects = {}

    def put(self, key, view):
        self.objects[key] = bytes(view)
        return 0

    def get(self, key):
        return self.objects.get(key, b"")

    def get_size(self, key):
        return len(self.objects[key]) if key in self.objects else -1

    def close(self):
        pass


def test_a_build_without_zero_copy_falls_back_and_says_so():
    """Without register_buffer/put_from/get_into the client copies through bytes and names the reason."""
    import torch

    config = _config()
    client = kvpool.PoolClient(_OldStore(), kvpool.PoolAddress("h:1", "http://h:2/m"))
    assert not client.zero_copy
    assert "register_buffer" in client.fallback_reason
    cache = [(torch.ones(1, 2, 3, 8), torch.zeros(1, 2, 3, 8))] * config.n_layers
    client.put_kv_cache("old", cache)
    out = client.empty_kv_cache(config, 3)
    got = client.get_kv_cache("old", config, 3, out=out)
    assert torch.equal(got[0][0], cache[0][0]) and torch.equal(got[-1][1], cache[0][1])
    off = kvpool.PoolClient(
        _OldStore(), kvpool.PoolAddress("h:1", "http://h:2/m"), zero_copy=False
    )
    assert "zero_copy=False" in off.fallback_reason


def test_bad_input_names_the_parameter(pool):
    with pytest.raises(TypeError, match="address"):
        kvpool.connect("127.0.0.1:1")
    with pytest.raises(ValueError, match="segment_bytes"):
        kvpool.connect(pool.address, segment_bytes=-1)
    with pytest.raises(ValueError, match="host:port"):
        kvpool.connect(kvpool.PoolAddress("nohost", "http://127.0.0.1:1/metadata"))
    with pytest.raises(ValueError, match="sizes"):
        kvpool.pool_object_transfer([], pool.address)
    with pytest.raises(ValueError, match="tokens"):
        kvpool.pool_kv_transfer(_config(), [], pool.address)
    with pytest.raises(ValueError, match="timeout"):
        kvpool.start_local_pool(timeout=0)
