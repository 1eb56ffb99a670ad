"""Tests of :mod:`helpers.fusion`: ResNet-50's kernels unfused (eager) and fused.

Hand counts from torchvision's ResNet-50 (v1.5): 53 convolutions each followed
by a batch norm; ReLU after the stem and twice plus once after the add in each
of the 16 bottlenecks (1 + 16 x 3 = 49); 16 residual adds; max- and avg-pool; fc.
"""

from __future__ import annotations

from collections import Counter

import pytest
from numpy.testing import assert_allclose

from helpers import fusion, ops


def test_kernel_counts():
    """Eager: 53 + 53 + 49 + 16 + 2 + 1 = 174 kernels; fused: 53 convs, 2 pools, fc = 56."""
    unfused = fusion.resnet50_kernels()
    kinds = Counter(k.kind for k in unfused)
    assert len(unfused) == 174
    assert kinds == {
        "conv": 53,
        "bn": 53,
        "relu": 49,
        "add": 16,
        "maxpool": 1,
        "avgpool": 1,
        "fc": 1,
    }
    assert len(fusion.resnet50_kernels(fused=True)) == 56


def test_stem_batch_norm_bytes():
    """The stem's BN reads and writes 64 x 112 x 112 fp16 values: 2 x 2 x 802,816 bytes."""
    bn = next(k for k in fusion.resnet50_kernels() if k.name == "bn1")
    assert bn.cost.bytes == 2 * 2 * 64 * 112 * 112
    assert bn.cost.flops == 2 * 64 * 112 * 112


def _elementwise_bytes_by_hand() -> int:
    """ResNet-50's unfused elementwise bytes in fp16 (2 bytes a value), from its shapes alone.

    A BN or ReLU reads and writes its input (4 bytes a value), an add reads two and writes one
    (6), a pool reads its input and writes its output. Stem: BN and ReLU on 64 x 112^2 = 802,816
    values, max-pool to 64 x 56^2. A bottleneck of width w at S^2 (stages w = 64, 128, 256, 512
    at S = 56, 28, 14, 7 with 3, 4, 6, 3 blocks): conv1's E1 = w x S_in^2 values (S_in = 2S in
    a stage's first block after the first: the stride is on conv2), conv2's E2 = w x S^2, conv3's
    E3 = 4w x S^2; BN+ReLU on E1 and E2 (8 bytes a value), BN, add and ReLU on E3 (4 + 6 + 4),
    and the first block's downsample BN (4 E3). Average pool: 2048 x 7^2 in, 2048 out.
    """
    stem = 64 * 112 * 112
    total = 8 * stem + 2 * (stem + 64 * 56 * 56)
    side = 56
    for w, s, blocks in ((64, 56, 3), (128, 28, 4), (256, 14, 6), (512, 7, 3)):
        for b in range(blocks):
            e1, e2, e3 = w * (side if b == 0 else s) ** 2, w * s * s, 4 * w * s * s
            total += 8 * e1 + 8 * e2 + 14 * e3 + (4 * e3 if b == 0 else 0)
        side = s
    return total + 2 * (2048 * 7 * 7 + 2048)


def test_unfused_elementwise_bytes_exceed_the_convolutions():
    """Unfused BN, ReLU and adds move more bytes (118 MB in fp16) than all 53 convolutions (90 MB)."""
    unfused = fusion.resnet50_kernels()
    conv = sum(k.cost.bytes for k in unfused if k.kind == "conv")
    elementwise = fusion.elementwise_bytes(unfused)
    assert_allclose(conv, sum(l.cost.bytes for l in ops.resnet50_layers()[:-1]))
    assert elementwise > conv
    assert elementwise == _elementwise_bytes_by_hand() == 118_218_752
    fused = fusion.resnet50_kernels(fused=True)
    assert fusion.elementwise_bytes(fused) < 0.03 * elementwise  # pools only


def test_fused_keeps_the_flops_of_the_convolutions_and_reads_the_shortcut():
    """Fusing removes kernels and bytes, not matrix work; each block's last conv reads the shortcut."""
    fused = fusion.resnet50_kernels(fused=True)
    conv3 = next(k for k in fused if k.name == "layer1.0.conv3")
    plain = next(l for l in ops.resnet50_layers() if l.name == "layer1.0.conv3")
    assert conv3.cost.bytes - plain.cost.bytes == 2 * 256 * 56 * 56


@pytest.mark.parametrize("batch", [2, 8])
def test_elementwise_bytes_grow_with_the_batch(batch):
    """Elementwise bytes have no weights to amortize: they scale exactly with the batch."""
    one = fusion.elementwise_bytes(fusion.resnet50_kernels(1))
    assert_allclose(
        fusion.elementwise_bytes(fusion.resnet50_kernels(batch)), batch * one
    )


def test_bad_input():
    """fused must be a bool and batch a whole number >= 1."""
    with pytest.raises(TypeError, match="fused"):
        fusion.resnet50_kernels(fused="yes")
    with pytest.raises(ValueError, match="batch"):
        fusion.resnet50_kernels(0)


def test_bytes_saved_by_hand_count():
    """Per fp16 output element (2 bytes), fusing saves: a BN's read and write (4 bytes) after every
    conv; a ReLU's (4) after the stem and each block's conv1 and conv2; at each block's end the
    add's three tensors (6) and the ReLU's (4), less the shortcut the fused conv3 reads (2)."""
    per_element = {
        "conv1": 4 + 4,
        "conv2": 4 + 4,
        "conv3": 4 + 6 + 4 - 2,
        "downsample": 4,
    }
    expected = 0.0
    for layer in ops.resnet50_layers()[:-1]:  # every conv; the fc has no BN
        kind = "conv1" if layer.name == "conv1" else layer.name.rsplit(".", 1)[1]
        expected += per_element[kind] * layer.c_out * layer.out_size**2
    assert_allclose(fusion.bytes_saved(1), expected)
    assert_allclose(
        fusion.bytes_saved(1) / 1e6, 105.0, atol=0.05
    )  # Chapter 3, Question 3


def test_bytes_saved_grows_with_the_batch_and_doubles_in_fp32():
    """The saving scales exactly with the batch; fp32 moves twice the bytes of fp16."""
    one = fusion.bytes_saved(1)
    assert_allclose(fusion.bytes_saved(64), 64 * one)
    assert_allclose(fusion.bytes_saved(1, dtype="fp32"), 2 * one)


def test_elementwise_tensors_at_batch_64_exceed_the_t4_l2():
    """At batch 64 over 99 % of the eager elementwise bytes are in tensors larger than the T4's
    4 MiB L2, so their round trips reach DRAM (Chapter 3, Question 3)."""
    l2 = 4 * 2**20
    kernels = [k for k in fusion.resnet50_kernels(64) if not k.matrix]
    inputs = {"add": 3}  # an add moves three tensors; BN, ReLU and the pools about two
    big = sum(
        k.cost.bytes for k in kernels if k.cost.bytes / inputs.get(k.kind, 2) > l2
    )
    assert big > 0.99 * fusion.elementwise_bytes(kernels)


def test_bytes_saved_bad_input():
    """batch must be a whole number >= 1, dtype a known one."""
    with pytest.raises(ValueError, match="batch"):
        fusion.bytes_saved(0)
    with pytest.raises((ValueError, KeyError), match="dtype"):
        fusion.bytes_saved(1, dtype="fp7")


def test_linear_stack_kernel_counts_and_bytes_by_hand():
    eager = fusion.linear_stack_kernels(8192, 1024, layers=40)
    fused = fusion.linear_stack_kernels(8192, 1024, layers=40, fused=True)
    assert (len(eager), len(fused)) == (80, 40)
    relu_bytes = 2 * 2 * 8192 * 1024  # fp16, read and written once
    matmul_bytes = 2 * (1024 * 1024 + 8192 * 2 * 1024)
    assert sum(k.cost.bytes for k in eager) == 40 * (matmul_bytes + relu_bytes)
    assert sum(k.cost.bytes for k in fused) == 40 * matmul_bytes
    # fusing moves the ReLU's FLOP into the matmul, it does not drop them
    assert sum(k.cost.flops for k in eager) == sum(k.cost.flops for k in fused)


def test_kernel_seconds_puts_relus_on_the_vector_roof():
    from helpers import hardware

    kernels = fusion.linear_stack_kernels(1, 1024, layers=1)
    matmul_s, relu_s = fusion.kernel_seconds(kernels, "H100")
    h100 = hardware.get_accelerator("H100")
    relu = kernels[1].cost
    assert relu_s == pytest.approx(
        max(relu.flops / h100.vector_flops("fp16"), relu.bytes / h100.memory_bandwidth)
    )
    matmul = kernels[0].cost
    assert matmul_s == pytest.approx(
        max(matmul.flops / h100.flops("fp16"), matmul.bytes / h100.memory_bandwidth)
    )


def test_fusion_halves_an_overhead_bound_stack_and_saves_bytes_on_a_busy_one():
    from helpers import achievable, dispatch

    h100 = achievable.achievable_device("H100", "fp16")

    def stream(batch, fused):
        g = fusion.kernel_seconds(
            fusion.linear_stack_kernels(batch, 1024, fused=fused), h100
        )
        return dispatch.stream_time(g, 5e-6, kernel_floor_s=dispatch.kernel_floor(h100))

    assert stream(1, True) / stream(1, False) == pytest.approx(0.5, rel=0.02)
    saved = stream(8192, False) - stream(8192, True)
    relu_bytes = 40 * 2 * 2 * 8192 * 1024
    assert saved > relu_bytes / h100.memory_bandwidth


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(batch=0, width=8), "batch"),
        (dict(batch=1, width=0), "width"),
        (dict(batch=1, width=8, layers=0), "layers"),
    ],
)
def test_linear_stack_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=name):
        fusion.linear_stack_kernels(**kwargs)
