"""Tests for :mod:`helpers.traces`: loading, checking and downloading the Mooncake traces, and their prefill FLOP.

References: the trace format and "cache ratio" are from Mooncake (Qin et al., FAST'25, qin2025mooncake).
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import urllib.error
import warnings
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from toy_traces import abc_trace_file, make_trace, write_trace

from helpers import cachesim as cs
from helpers import llm, papers, routing, traces
from helpers import traces as tr


@pytest.fixture
def abc_trace(tmp_path):
    """Chapter 9's Question 3 (toy_traces.abc_trace_file), loaded."""
    return traces.load_trace(abc_trace_file(tmp_path / "abc_trace.jsonl"))


def test_trace_prefill_flops_adds_every_prompt(abc_trace, tmp_path):
    """The no-cache prefill FLOP of a trace is the sum over its prompts, repeated lengths included."""
    expected = sum(llm.prefill_cost("llama-3-8b", n).flops for n in (1536, 1024, 2048))
    assert traces.trace_prefill_flops(abc_trace, "llama-3-8b") == pytest.approx(
        expected
    )
    twice = traces.load_trace(
        write_trace(
            tmp_path / "twice_trace.jsonl",
            [(100, [0]), (100, [0])],
            spacing_ms=1,
            output_length=1,
        )
    )
    assert traces.trace_prefill_flops(twice, "llama-3-8b") == pytest.approx(
        2 * llm.prefill_cost("llama-3-8b", 100).flops
    )
    with pytest.raises(TypeError, match="trace"):
        traces.trace_prefill_flops("tiny", "llama-3-8b")


def test_load_traces_returns_the_named_traces():
    """Available traces come back by name, in order (a single name is accepted as a string)."""
    loaded = traces.load_traces(["tiny"])
    assert list(loaded) == ["tiny"] and loaded["tiny"].n_requests == 16
    assert list(traces.load_traces("tiny")) == ["tiny"]
    with pytest.raises(ValueError, match="names"):
        traces.load_traces([])


def test_load_traces_falls_back_to_the_sample_with_a_warning(monkeypatch):
    """If an open trace cannot be loaded (offline), every cell still runs on the bundled sample,
    and the warning says why."""
    real = traces.load_trace

    def offline(name):
        if name == "tiny":
            return real(name)
        raise FileNotFoundError(f"trace {name!r} is not on this machine")

    monkeypatch.setattr(traces, "load_trace", offline)
    with pytest.warns(UserWarning, match="tiny"):
        loaded = traces.load_traces(["conversation", "synthetic"])
    assert list(loaded) == ["tiny"]


def test_load_tiny_matches_file():
    """The bundled tiny trace loads with every field equal to an independent json parse."""
    trace = tr.load_trace("tiny")
    rows = [
        json.loads(line)
        for line in open(Path(cs.__file__).parent / "data" / "tiny_trace.jsonl")
    ]
    assert len(trace) == trace.n_requests == len(rows) == 16
    assert_array_equal(trace.arrival_s, [r["timestamp"] / 1e3 for r in rows])
    assert_array_equal(trace.input_lengths, [r["input_length"] for r in rows])
    assert_array_equal(trace.output_lengths, [r["output_length"] for r in rows])
    for i, r in enumerate(rows):
        assert trace.blocks(i).tolist() == r["hash_ids"]
        # the tiny trace follows the Mooncake convention: one id per started 512-token block
        assert len(r["hash_ids"]) == math.ceil(r["input_length"] / 512)
    assert trace.input_tokens == sum(r["input_length"] for r in rows)


def test_trace_arrays_are_read_only():
    """A Trace is frozen: neither its fields nor its arrays can be changed in place."""
    trace = tr.load_trace("tiny")
    with pytest.raises(ValueError, match="read-only"):
        trace.block_ids[0] = 99
    with pytest.raises(AttributeError):
        trace.name = "other"  # type: ignore[misc]
    mine = np.array([3, 4], dtype=np.int64)
    built = make_trace([[1, 2]])
    copy = cs.Trace(
        built.name,
        built.arrival_s,
        built.input_lengths,
        built.output_lengths,
        mine,
        built.offsets,
    )
    mine[0] = 9  # the caller's array stays writable, and the trace keeps its own copy
    assert copy.block_ids.tolist() == [3, 4]


def test_load_path(tmp_path):
    """A plain path loads; its name is the file stem without '_trace'."""
    path = write_trace(tmp_path / "mine_trace.jsonl", [(600, [1, 2]), (100, [1])])
    trace = tr.load_trace(path)
    assert trace.name == "mine"
    assert trace.block_ids.tolist() == [1, 2, 1]
    assert trace.offsets.tolist() == [0, 2, 3]


@pytest.mark.parametrize(
    "line, message",
    [
        ("{not json", "not valid JSON"),
        ('{"timestamp": 0, "input_length": 5, "output_length": 1}', "hash_ids"),
        (
            '{"timestamp": 0, "input_length": -5, "output_length": 1, "hash_ids": [1]}',
            "input_length",
        ),
        (
            '{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": []}',
            "hash_ids",
        ),
        (
            '{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [1, "x"]}',
            "hash_ids",
        ),
        ("[1, 2]", "JSON object"),
    ],
)
def test_malformed_line_names_line(tmp_path, line, message):
    """A malformed third line raises ValueError naming the file, 'line 3' and the problem."""
    good = json.dumps(
        {"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [1]}
    )
    path = tmp_path / "bad.jsonl"
    path.write_text(good + "\n" + good + "\n" + line + "\n")
    with pytest.raises(ValueError, match="line 3") as info:
        tr.load_trace(path)
    assert message in str(info.value) and "bad.jsonl" in str(info.value)


def test_missing_file_and_bad_types(tmp_path):
    """A missing path is FileNotFoundError naming it; a non-path is TypeError; an empty file is ValueError."""
    with pytest.raises(FileNotFoundError, match="nothere.jsonl"):
        tr.load_trace(tmp_path / "nothere.jsonl")
    with pytest.raises(TypeError, match="path_or_name"):
        tr.load_trace(42)  # type: ignore[arg-type]
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(ValueError, match="no requests"):
        tr.load_trace(tmp_path / "empty.jsonl")
    with pytest.raises(KeyError, match="name"):
        tr.trace_path("chat")


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """No $MOONCAKE_TRACES, an empty cache in tmp_path, and a tiny 'conversation' whose sha256 we know."""
    data = (Path(tr.__file__).parent / "data" / "tiny_trace.jsonl").read_bytes()
    monkeypatch.delenv(tr.ENV_VAR, raising=False)
    monkeypatch.setattr(tr, "CACHE_DIR", tmp_path / "cache")
    monkeypatch.setattr(
        tr,
        "TRACE_SHA256",
        {"conversation": hashlib.sha256(data).hexdigest(), "synthetic": "0" * 64},
    )
    return data


def test_offline_error_says_how_to_get_the_file(isolated, monkeypatch):
    """Offline, a named trace fails with FileNotFoundError giving the URL, the sha256 and the env var."""

    def offline(*args, **kwargs):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(tr.urllib.request, "urlopen", offline)
    with pytest.raises(FileNotFoundError) as info:
        tr.load_trace("conversation")
    text = str(info.value)
    assert (
        "raw.githubusercontent.com/kvcache-ai/Mooncake" in text and tr.ENV_VAR in text
    )
    assert tr.TRACE_SHA256["conversation"] in text


def test_download_verifies_and_caches(isolated, monkeypatch):
    """A download with the right sha256 lands in the cache and is read from there next time."""
    calls = []

    def serve(url, timeout):
        calls.append(url)
        return io.BytesIO(isolated)

    monkeypatch.setattr(tr.urllib.request, "urlopen", serve)
    first = tr.load_trace("conversation")
    assert calls == [tr.TRACE_URL.format(name="conversation")]
    assert (tr.CACHE_DIR / "conversation_trace.jsonl").read_bytes() == isolated
    second = tr.load_trace("conversation")
    assert len(calls) == 1 and len(first) == len(second) == 16
    # wrong checksum: refused, nothing written
    with pytest.raises(ValueError, match="sha256"):
        tr.load_trace("synthetic")
    assert not (tr.CACHE_DIR / "synthetic_trace.jsonl").exists()


def test_env_folder_first_and_checksum(isolated, tmp_path, monkeypatch):
    """$MOONCAKE_TRACES is searched first, and a file there with the wrong sha256 is rejected."""
    folder = tmp_path / "env"
    folder.mkdir()
    (folder / "conversation_trace.jsonl").write_bytes(isolated)
    (folder / "synthetic_trace.jsonl").write_bytes(isolated)  # wrong for 'synthetic'
    monkeypatch.setenv(tr.ENV_VAR, str(folder))
    assert tr.trace_path("conversation") == folder / "conversation_trace.jsonl"
    with pytest.raises(ValueError, match="sha256"):
        tr.trace_path("synthetic")


def test_load_trace_from_a_url_downloads_once_into_the_cache(tmp_path, monkeypatch):
    """``load_trace(url)`` fetches a trace over HTTP (here a server on 127.0.0.1), caches it, and reads the cached copy next time."""
    import functools
    import http.server
    import shutil
    import threading

    served = tmp_path / "served"
    served.mkdir()
    shutil.copy(tr._BUNDLED["tiny"], served / "tiny_trace.jsonl")
    handler = functools.partial(
        http.server.SimpleHTTPRequestHandler, directory=str(served)
    )
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setattr(tr, "CACHE_DIR", tmp_path / "cache")
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/tiny_trace.jsonl"
        trace = tr.load_trace(url)
        assert trace.n_requests == tr.load_trace("tiny").n_requests
        assert (tmp_path / "cache" / "tiny_trace.jsonl").is_file()
    finally:
        server.shutdown()
        server.server_close()
    # the server is gone: the second load must come from the cache
    assert tr.load_trace(url).n_requests == trace.n_requests


def test_load_trace_from_an_unreachable_url_says_so(tmp_path, monkeypatch):
    """A URL that cannot be fetched raises FileNotFoundError naming path_or_name, not a bare socket error."""
    import socket

    monkeypatch.setattr(tr, "CACHE_DIR", tmp_path / "cache")
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(FileNotFoundError, match="path_or_name"):
        tr.load_trace(f"http://127.0.0.1:{port}/nothing_trace.jsonl")


def test_arrival_s_is_the_files_milliseconds_in_seconds(tmp_path):
    """``write_trace`` stamps request i at 10 i ms: arrivals 0, 0.01, 0.02 s; the duration is the
    last arrival, 0.02 s (the trace starts at 0)."""
    trace = tr.load_trace(write_trace(tmp_path / "t.jsonl", [(5, [0])] * 3))
    assert_allclose(trace.arrival_s, [0.0, 0.01, 0.02])
    assert trace.duration_s == pytest.approx(0.02)
    with pytest.raises(ValueError, match="arrival_s"):
        make_trace([[0]]).__class__(
            name="bad",
            arrival_s=np.array([-1.0]),
            input_lengths=np.array([1]),
            output_lengths=np.array([1]),
            block_ids=np.array([0]),
            offsets=np.array([0, 1]),
        )


def test_timestamps_still_read_and_build_in_milliseconds_with_a_warning():
    """The old field: ``Trace(timestamps=ms)`` builds the same trace as ``arrival_s=ms / 1000``,
    and ``trace.timestamps`` gives milliseconds back; both warn with the new name."""
    built = make_trace([[0], [1]])
    kwargs = dict(
        name="old",
        input_lengths=built.input_lengths,
        output_lengths=built.output_lengths,
        block_ids=built.block_ids,
        offsets=built.offsets,
    )
    with pytest.warns(DeprecationWarning, match="arrival_s"):
        old = tr.Trace(timestamps=np.array([0, 1_500]), **kwargs)
    assert_allclose(old.arrival_s, [0.0, 1.5])
    with pytest.warns(DeprecationWarning, match="arrival_s"):
        assert_allclose(old.timestamps, [0.0, 1_500.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tr.Trace(arrival_s=np.array([0.0, 1.5]), **kwargs)  # the new name does not warn


@pytest.mark.parametrize(
    "old, new",
    [
        ("load_trace", tr.load_trace),
        ("load_traces", tr.load_traces),
        ("trace_path", tr.trace_path),
        ("trace_prefill_flops", tr.trace_prefill_flops),
        ("ENV_VAR", tr.ENV_VAR),
        ("local_vs_global", routing.local_vs_global),
        ("LocalGlobal", routing.LocalGlobal),
        ("prefill_flops_saved", llm.prefill_flops_saved),
        ("PAPER_TABLE2", papers.MOONCAKE_TABLE2),
        ("PAPER_FIG10_NODES", papers.MOONCAKE_FIG10_NODES),
    ],
)
def test_names_moved_out_of_cachesim_still_work_with_a_warning(old, new):
    """An older notebook's ``cachesim.load_trace`` still reaches the moved object, warning where it went."""
    with pytest.warns(DeprecationWarning, match=r"helpers\.cachesim\." + old):
        assert getattr(cs, old) is new
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert (
            cs.stack_distances and cs.Trace is tr.Trace
        )  # names that stayed do not warn
    with pytest.raises(AttributeError, match="no_such_name"):
        cs.no_such_name  # noqa: B018
