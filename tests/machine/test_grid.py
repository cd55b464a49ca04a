"""Launch geometry and special registers, checked against the CUDA definitions written out by
hand: linear tid = x + y*bx + z*bx*by, warp = linear/32, lane = linear%32, cluster rank
= cluster_ctaid.x + cluster_ctaid.y*cx + cluster_ctaid.z*cx*cy (PTX ISA 10.x)."""
import numpy as np
import pytest

from ptxsim.errors import LaunchConfigError
from ptxsim.machine.grid import LaunchGeometry


def test_thread_registers_3d_block():
    g = LaunchGeometry.make(grid=(2, 3, 1), block=(8, 4, 2))
    r = g.special_registers([4])          # CTA linear id 4 = ctaid (0, 2, 0)
    for t in range(64):
        x, y, z = t % 8, (t // 8) % 4, t // 32
        assert (r["%tid.x"][t], r["%tid.y"][t], r["%tid.z"][t]) == (x, y, z)
        assert r["%laneid"][t] == t % 32 and r["%warpid"][t] == t // 32
    assert set(r["%ctaid.x"]) == {0} and set(r["%ctaid.y"]) == {2} and set(r["%ctaid.z"]) == {0}
    assert (r["%ntid.x"][0], r["%ntid.y"][0], r["%ntid.z"][0]) == (8, 4, 2)
    assert (r["%nctaid.x"][0], r["%nctaid.y"][0]) == (2, 3)
    assert r["%tid.x"].dtype == np.uint32 and r["%clock64"].dtype == np.uint64


def test_lanemasks():
    r = LaunchGeometry.make(1, 32).special_registers([0])
    lane = 5
    assert r["%lanemask_eq"][lane] == 0b100000
    assert r["%lanemask_lt"][lane] == 0b011111
    assert r["%lanemask_le"][lane] == 0b111111
    assert r["%lanemask_gt"][lane] == 0xFFFFFFC0
    assert r["%lanemask_ge"][lane] == 0xFFFFFFE0
    assert r["%lanemask_lt"][0] == 0 and r["%lanemask_gt"][31] == 0


def test_cluster_registers_and_order():
    g = LaunchGeometry.make(grid=(4, 4, 1), block=32, cluster=(2, 2, 1))
    order = g.cta_order()
    # cluster 0 = CTAs (0,0),(1,0),(0,1),(1,1) = linear 0, 1, 4, 5, in rank order
    assert order[:4].tolist() == [0, 1, 4, 5]
    assert order[4:8].tolist() == [2, 3, 6, 7]
    assert sorted(order.tolist()) == list(range(16))
    r = g.special_registers(order)
    per = lambda name: r[name][::32]  # noqa: E731
    assert per("%cluster_ctarank").tolist() == [0, 1, 2, 3] * 4
    assert per("%cluster_nctarank").tolist() == [4] * 16
    assert per("%clusterid.x")[:8].tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert per("%nclusterid.y")[0] == 2 and per("%cluster_nctaid.x")[0] == 2
    assert per("%is_explicit_cluster")[0] == 1
    assert LaunchGeometry.make(1, 32).special_registers([0])["%is_explicit_cluster"][0] == 0
    # waves hold whole clusters
    waves = list(g.waves(6))
    assert [w.size for w in waves] == [4, 4, 4, 4]


def test_clock_counters():
    r = LaunchGeometry.make(1, 32).special_registers([0], clock=(1 << 32) + 5)
    assert r["%clock"][0] == 5 and r["%clock_hi"][0] == 1 and r["%clock64"][0] == (1 << 32) + 5
    assert r["%globaltimer_lo"][0] == 5


@pytest.mark.parametrize("grid, block, cluster, msg", [
    ((1,), (1025,), None, "1025"),
    ((1,), (32, 32, 2), None, "2048 threads"),
    ((1,), (1, 1, 65), None, "block.z"),
    ((3,), (32,), (2,), "multiple of cluster"),
    ((16,), (32,), (16,), "at most 8"),
    ((1, 65536), (32,), None, "grid.y"),
    ((0,), (32,), None, "at least 1"),
])
def test_geometry_errors(grid, block, cluster, msg):
    with pytest.raises(LaunchConfigError, match=msg):
        LaunchGeometry.make(grid, block, cluster)


def test_nonportable_cluster_16():
    assert LaunchGeometry.make(16, 32, 16, nonportable_cluster=True).cluster_size == 16
