"""Tests for helpers.kvtransfer: a KV cache really moves between two processes, and the calls clean up.

Each test starts real processes on 127.0.0.1, so the suite keeps the sizes
tiny: the point is correctness (the bytes arrive intact, the sizes are the
ones helpers.llm predicts, failures kill the children), not speed.
Disaggregated prefill/decode: Zhong et al. 2024 (DistServe), Patel et al.
2024 (Splitwise), Qin et al. 2025 (Mooncake).
"""

from __future__ import annotations

import multiprocessing as mp
import socket

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import _measure, kvcache, kvtransfer, llm
from helpers._measure import free_port
from helpers.kvtransfer import kv_message_bytes


def test_fit_link_through_two_points():
    """1 kB in 1.1 µs and 11 kB in 2.1 µs: 10 kB per µs is 10 GB/s, and 1 kB takes 0.1 µs of it,
    so the latency is 1 µs; the order of the points does not matter."""
    link = kvtransfer.fit_link("test", [1000, 5000, 11000], [1.1e-6, 9.0, 2.1e-6])
    assert link.bandwidth == pytest.approx(10e9) and link.latency == pytest.approx(1e-6)
    again = kvtransfer.fit_link("test", [11000, 1000], [2.1e-6, 1.1e-6])
    assert again.bandwidth == pytest.approx(10e9) and again.latency == pytest.approx(
        1e-6
    )
    assert kvcache.transfer_time(llm.get_model("llama-2-7b"), 1, link) > link.latency


def test_fit_link_without_a_slope():
    """One point, or a larger transfer that was not slower: bandwidth = bytes / seconds, no latency."""
    one = kvtransfer.fit_link("one", [4e6], [1e-3])
    assert one.bandwidth == pytest.approx(4e9) and one.latency == 0.0
    flat = kvtransfer.fit_link("flat", [1e6, 4e6], [1e-3, 1e-3])
    assert flat.bandwidth == pytest.approx(4e9) and flat.latency == 0.0


@pytest.mark.parametrize(
    "nbytes, seconds",
    [([1, 2], [1.0]), ([], []), ([0, 1], [1.0, 2.0]), ([1, 2], [1.0, -1.0])],
)
def test_fit_link_rejects_bad_measurements(nbytes, seconds):
    """Unequal, empty, zero or negative measurements raise ValueError."""
    with pytest.raises(ValueError, match="nbytes and seconds"):
        kvtransfer.fit_link("bad", nbytes, seconds)


def test_measured_breakeven():
    """Transfer faster at 32 and 128 but slower at 64: it wins for good only from 128. Faster
    everywhere: from the shortest. Slower at the longest: never (None)."""
    lengths, recompute = [16, 32, 64, 128], [2.0, 2.0, 2.0, 2.0]
    assert kvtransfer.measured_breakeven(lengths, [5, 1, 3, 1], recompute) == 128
    assert kvtransfer.measured_breakeven(lengths, [1, 1, 1, 1], recompute) == 16
    assert kvtransfer.measured_breakeven(lengths, [1, 1, 1, 3], recompute) is None
    with pytest.raises(ValueError, match="increasing"):
        kvtransfer.measured_breakeven([32, 16], [1, 1], [2, 2])
    with pytest.raises(ValueError, match="equally long"):
        kvtransfer.measured_breakeven([16, 32], [1], [2, 2])


# A ModelConfig built directly (not via helpers.tinygpt) so that the spawned helper
# processes of the clean-up tests, which import this module, do not import torch.
CONFIG = llm.ModelConfig(
    "tiny",
    n_layers=2,
    d_model=64,
    n_heads=4,
    n_kv_heads=2,
    head_dim=16,
    d_ff=176,
    vocab_size=128,
)


@given(
    tokens=st.integers(1, 4096),
    batch=st.integers(1, 8),
    dtype=st.sampled_from(["fp32", "bf16", "fp16"]),
)
def test_message_sizes_add_up_to_the_kv_cache(tokens, batch, dtype):
    """The 2 * n_layers messages carry exactly batch * tokens * kv_cache_bytes_per_token bytes."""
    sizes = kv_message_bytes(CONFIG, tokens, batch=batch, dtype=dtype)
    assert len(sizes) == 2 * CONFIG.n_layers
    assert sum(sizes) == llm.kv_cache_bytes(CONFIG, tokens, batch=batch, dtype=dtype)


@pytest.mark.slow
def test_distributed_transfer_moves_a_verified_kv_cache():
    """The decode worker receives the prefill worker's cache over gloo, equal to its own prefill, and times it."""
    results = kvtransfer.distributed_kv_transfer(
        CONFIG, [3, 40], batch=2, repeats=2, warmup=1, backend="gloo", timeout=60
    )
    assert [r.tokens for r in results] == [3, 40]
    for r in results:
        assert r.path == "gloo"
        assert r.verified
        assert r.nbytes == llm.kv_cache_bytes(CONFIG, r.tokens, batch=2, dtype="fp32")
        assert r.messages == 2 * CONFIG.n_layers
        assert r.repeats == 2
        assert r.seconds > 0 and r.bandwidth > 0
        assert r.device.startswith("CPU")
    assert mp.active_children() == []


@pytest.mark.slow
def test_distributed_transfer_of_a_random_cache_without_a_model():
    """With prefill=False the same bytes move (a seeded random cache) and are verified, without building the model."""
    (result,) = kvtransfer.distributed_kv_transfer(
        CONFIG, 7, repeats=1, warmup=0, backend="gloo", timeout=60, prefill=False
    )
    assert result.verified
    assert result.nbytes == llm.kv_cache_bytes(CONFIG, 7, dtype="fp32")
    assert mp.active_children() == []


@pytest.mark.slow
def test_reference_paths_move_the_same_bytes_intact():
    """The socket and shared-memory references deliver the sender's bytes unchanged, in the same messages."""
    sizes = kv_message_bytes(CONFIG, 100, dtype="fp32")
    for fn, path in (
        (kvtransfer.socket_transfer, "socket"),
        (kvtransfer.shared_memory_transfer, "shared_memory"),
    ):
        result = fn(sizes, repeats=3, warmup=1, timeout=30)
        assert result.path == path
        assert result.verified
        assert result.nbytes == sum(sizes)
        assert result.messages == len(sizes)
        assert result.seconds > 0
    assert mp.active_children() == []


@pytest.mark.slow
def test_timeout_kills_the_children(monkeypatch):
    """A worker that never answers is killed when the timeout expires, and the call raises TimeoutError."""
    with pytest.raises(TimeoutError, match="timeout"):
        _measure.run_children([(_sleep_forever, ())], timeout=1.5)
    assert mp.active_children() == []


@pytest.mark.slow
def test_worker_failure_is_reported_and_cleaned_up():
    """A worker that raises makes the call raise RuntimeError with its traceback; no child survives."""
    with pytest.raises(RuntimeError, match="boom"):
        _measure.run_children([(_fail, ()), (_sleep_forever, ())], timeout=20)
    assert mp.active_children() == []


def test_free_port_is_bindable():
    """free_port returns a port on 127.0.0.1 that can be bound right away."""
    port = free_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", port))
    assert 0 < port < 65536


def test_bad_inputs_name_the_parameter():
    """Bad arguments raise before any process starts, naming the argument."""
    with pytest.raises(ValueError, match="backend"):
        kvtransfer.distributed_kv_transfer(CONFIG, 4, backend="mpi")
    with pytest.raises(ValueError, match="tokens"):
        kvtransfer.distributed_kv_transfer(CONFIG, [])
    with pytest.raises(ValueError, match="tokens"):
        kvtransfer.distributed_kv_transfer(CONFIG, 0)
    with pytest.raises(ValueError, match="timeout"):
        kvtransfer.distributed_kv_transfer(CONFIG, 4, timeout=0)
    with pytest.raises(ValueError, match="message_bytes"):
        kvtransfer.socket_transfer([])
    with pytest.raises(TypeError, match="message_bytes"):
        kvtransfer.shared_memory_transfer([1.5])
    with pytest.raises(KeyError, match="dtype"):
        kv_message_bytes(CONFIG, 4, dtype="fp64")


def _sleep_forever(results) -> None:
    import time

    time.sleep(3600)


def _fail(results) -> None:
    results.put((0, False, "Traceback: boom"))


def test_mla_messages_are_one_latent_per_layer():
    """DeepSeek-V3: 61 messages of tokens * 576 * 2 bytes, adding up to the 70,272 B/token of the cache."""
    sizes = kvtransfer.kv_message_bytes("deepseek-v3", 10)
    assert sizes == (10 * 576 * 2,) * 61


def test_rendezvous_comes_from_the_environment():
    """MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE name the rendezvous; none set means 'both here'."""
    launcher = {
        "MASTER_ADDR": "node-a",
        "MASTER_PORT": "29500",
        "RANK": "1",
        "WORLD_SIZE": "8",
    }
    # L4-7: a launcher's variables alone are not a request to join (its job is not ours)
    assert kvtransfer.rendezvous_from_env(environ=launcher) is None
    env = {**launcher, "WORLD_SIZE": "2", "KV_LAB_RENDEZVOUS": "env"}
    r = kvtransfer.rendezvous_from_env(environ=env)
    assert r == kvtransfer.Rendezvous("node-a", 29500, 1, 2)
    assert r.environ() == {k: v for k, v in env.items() if k != "KV_LAB_RENDEZVOUS"}
    assert kvtransfer.rendezvous_from_env(environ={"KV_LAB_RENDEZVOUS": "env"}) is None
    with pytest.raises(ValueError, match="MASTER_PORT, RANK, WORLD_SIZE"):
        kvtransfer.rendezvous_from_env(
            environ={"MASTER_ADDR": "node-a", "KV_LAB_RENDEZVOUS": "env"}
        )
    with pytest.raises(ValueError, match="RANK"):
        kvtransfer.rendezvous_from_env(environ={**env, "RANK": "x"})
    with pytest.raises(ValueError, match="WORLD_SIZE"):
        kvtransfer.rendezvous_from_env(environ={**env, "WORLD_SIZE": "4"})


def test_spawned_workers_take_gpus_by_rank_not_local_rank(monkeypatch):
    """L4-7: with LOCAL_RANK=3 left by a launcher, spawned NCCL workers still use GPUs 0 and 1."""
    import torch

    monkeypatch.setenv("LOCAL_RANK", "3")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 8)
    spec = {"device": "cuda", "spawned": True}
    devices = [kvtransfer._worker_device("nccl", r, spec) for r in (0, 1)]
    assert [d.index for d in devices] == [0, 1]
    joined = kvtransfer._worker_device("nccl", 1, {"device": "cuda"})
    assert joined.index == 3  # a rendezvous across machines keeps its LOCAL_RANK
    with pytest.raises(ValueError, match="MASTER_PORT"):
        kvtransfer.Rendezvous("node-a", 0, 0)


class _FakeDist:
    """Records sends and receives; a receive takes the oldest sent tensor (one process stands for both)."""

    def __init__(self):
        self.log, self.wire = [], []

    def send(self, tensor, peer):
        self.log.append(("send", tensor.data_ptr(), peer))
        self.wire.append(tensor.clone())

    def recv(self, tensor, peer):
        self.log.append(("recv", tensor.data_ptr(), peer))
        tensor.copy_(self.wire.pop(0))


def test_gpu_cache_over_gloo_is_staged_through_host_buffers(monkeypatch):
    """On one GPU the cache goes device -> host buffer -> send -> host buffer -> device.

    CPU tensors stand for the GPU ones (``device.type`` is faked as "cuda"), so the
    test checks what is sent and received: the host buffers, never the device tensors,
    and the receiver's device tensors end up equal to the sender's.
    """
    import torch

    class _OnGPU(torch.Tensor):
        @property
        def device(self):
            return torch.device("cuda:0")

    monkeypatch.setattr(kvtransfer, "_synchronize_all", lambda tensors: None)
    sent = [torch.randn(2, 3).as_subclass(_OnGPU) for _ in range(4)]
    received = [torch.zeros(2, 3).as_subclass(_OnGPU) for _ in range(4)]
    host_out = kvtransfer.host_staging_buffers(sent, pin=False)
    host_in = kvtransfer.host_staging_buffers(received, pin=False)
    assert host_out is not None and len(host_out) == 4
    dist = _FakeDist()
    kvtransfer.send_cache(dist, sent, host_out, 1)
    kvtransfer.receive_cache(dist, received, host_in, 0)
    sent_ptrs = {("send", h.data_ptr(), 1) for h in host_out}
    recv_ptrs = {("recv", h.data_ptr(), 0) for h in host_in}
    assert set(dist.log) == sent_ptrs | recv_ptrs  # only host buffers on the wire
    for a, b in zip(sent, received):
        assert torch.equal(a.as_subclass(torch.Tensor), b.as_subclass(torch.Tensor))
    assert kvtransfer.host_staging_buffers([torch.zeros(1)]) is None  # CPU: no staging


def test_device_must_match_the_backend():
    with pytest.raises(ValueError, match="device"):
        kvtransfer.distributed_kv_transfer(CONFIG, 4, backend="nccl", device="cpu")
    with pytest.raises(ValueError, match="device"):
        kvtransfer.distributed_kv_transfer(CONFIG, 4, device="tpu")
