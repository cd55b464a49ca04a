"""Launch geometry and the special registers of every thread (PTX ISA 10, "Special Registers").

CTAs are numbered by their linear id in the grid (x fastest); CTAs of one cluster are kept
consecutive, rank order (%cluster_ctarank, x fastest), so that `machine.memory.SharedMemory` finds
a cluster's CTAs at `cluster * cluster_size + rank`. Threads of a CTA are numbered by their linear
%tid (x fastest); warp w holds threads 32w .. 32w+31 (the CUDA programming guide's warp rule).

Hardware-chosen values the spec leaves open are deterministic here: %smid = resident CTA index
mod %nsmid, %warpid = linear tid / 32, %clock/%clock64/%globaltimer count issued instructions
(1 instruction = 1 cycle = 1 ns).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ptxsim.errors import LaunchConfigError

WARP_SIZE = 32
NSMID = 148                 # B200 SMs (%nsmid); the spec allows any value >= the SM count
NWARPID = 64                # resident warp slots per SM on sm_100 (%nwarpid)
MAX_THREADS_PER_CTA = 1024  # CUDA C Programming Guide, compute capability 10.0
MAX_BLOCK = (1024, 1024, 64)
MAX_GRID = (2**31 - 1, 65535, 65535)
MAX_CLUSTER_PORTABLE = 8    # cudaFuncAttributeNonPortableClusterSizeAllowed lifts it to 16
MAX_CLUSTER_NONPORTABLE = 16


def _dim3(v, what: str) -> tuple[int, int, int]:
    if isinstance(v, (int, np.integer)):
        v = (int(v),)
    v = tuple(int(x) for x in v)
    if not 1 <= len(v) <= 3:
        raise LaunchConfigError(f"{what} must have 1 to 3 dimensions, got {len(v)}")
    v = v + (1,) * (3 - len(v))
    if min(v) < 1:
        raise LaunchConfigError(f"{what} {v}: every dimension must be at least 1")
    return v


@dataclass(frozen=True)
class LaunchGeometry:
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    cluster: tuple[int, int, int] = (1, 1, 1)
    explicit_cluster: bool = False

    @classmethod
    def make(cls, grid, block, cluster=None, *, nonportable_cluster: bool = False
             ) -> "LaunchGeometry":
        g, b = _dim3(grid, "grid"), _dim3(block, "block")
        c = _dim3(cluster if cluster is not None else 1, "cluster")
        for i, n in enumerate("xyz"):
            if b[i] > MAX_BLOCK[i]:
                raise LaunchConfigError(f"block.{n} = {b[i]} exceeds {MAX_BLOCK[i]}")
            if g[i] > MAX_GRID[i]:
                raise LaunchConfigError(f"grid.{n} = {g[i]} exceeds {MAX_GRID[i]}")
            if g[i] % c[i]:
                raise LaunchConfigError(f"grid.{n} = {g[i]} is not a multiple of cluster.{n} = "
                                        f"{c[i]}")
        if b[0] * b[1] * b[2] > MAX_THREADS_PER_CTA:
            raise LaunchConfigError(f"block {b} has {b[0] * b[1] * b[2]} threads; at most "
                                    f"{MAX_THREADS_PER_CTA}")
        limit = MAX_CLUSTER_NONPORTABLE if nonportable_cluster else MAX_CLUSTER_PORTABLE
        if c[0] * c[1] * c[2] > limit:
            raise LaunchConfigError(f"cluster {c} has {c[0] * c[1] * c[2]} CTAs; at most {limit}"
                                    + ("" if nonportable_cluster else
                                       " (16 with the non-portable cluster attribute)"))
        return cls(g, b, c, cluster is not None)

    # -- sizes ---------------------------------------------------------------------------------
    @property
    def threads_per_cta(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def warps_per_cta(self) -> int:
        return -(-self.threads_per_cta // WARP_SIZE)

    @property
    def n_ctas(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def cluster_size(self) -> int:
        return self.cluster[0] * self.cluster[1] * self.cluster[2]

    @property
    def n_clusters(self) -> int:
        return self.n_ctas // self.cluster_size

    # -- CTA order -----------------------------------------------------------------------------
    def ctaid(self, linear) -> np.ndarray:
        """(n, 3) %ctaid of CTA linear ids (x fastest)."""
        linear = np.asarray(linear, np.int64)
        gx, gy, _ = self.grid
        return np.stack([linear % gx, (linear // gx) % gy, linear // (gx * gy)], axis=-1)

    def cta_order(self) -> np.ndarray:
        """CTA linear ids, cluster by cluster (cluster linear id order), rank order inside."""
        cx, cy, cz = self.cluster
        nx, ny, nz = (self.grid[i] // self.cluster[i] for i in range(3))
        cl = np.arange(self.n_clusters)
        clx, cly, clz = cl % nx, (cl // nx) % ny, cl // (nx * ny)
        r = np.arange(self.cluster_size)
        rx, ry, rz = r % cx, (r // cx) % cy, r // (cx * cy)
        x = (clx[:, None] * cx + rx[None]).ravel()
        y = (cly[:, None] * cy + ry[None]).ravel()
        z = (clz[:, None] * cz + rz[None]).ravel()
        return x + self.grid[0] * (y + self.grid[1] * z)

    def waves(self, max_resident_ctas: int):
        """Successive groups of CTA linear ids to run in step: whole clusters, at most
        `max_resident_ctas` CTAs (at least one cluster)."""
        order = self.cta_order()
        per = max(1, max_resident_ctas // self.cluster_size) * self.cluster_size
        for i in range(0, order.size, per):
            yield order[i:i + per]

    # -- special registers -----------------------------------------------------------------------
    def special_registers(self, ctas, *, clock=0, gridid: int = 0, dynamic_smem: int = 0,
                          total_smem: int = 0) -> dict[str, np.ndarray]:
        """Every special register for the threads of `ctas` (linear ids), flattened as
        thread = i * threads_per_cta + linear tid, i the position of the CTA in `ctas`.
        Values are uint32 (uint64 for %clock64, %globaltimer, %gridid)."""
        ctas = np.asarray(ctas, np.int64).reshape(-1)
        T = self.threads_per_cta
        bx, by, _ = self.block
        lin = np.tile(np.arange(T, dtype=np.int64), ctas.size)
        cta = np.repeat(ctas, T)
        cid = self.ctaid(cta)
        u32 = lambda a: np.asarray(a).astype(np.uint32)  # noqa: E731
        full = lambda v: np.full(lin.shape, v, np.uint32)  # noqa: E731
        lane = lin % WARP_SIZE
        r: dict[str, np.ndarray] = {
            "%tid.x": u32(lin % bx), "%tid.y": u32((lin // bx) % by),
            "%tid.z": u32(lin // (bx * by)),
            "%laneid": u32(lane), "%warpid": u32(lin // WARP_SIZE), "%nwarpid": full(NWARPID),
            "%smid": u32(np.repeat(np.arange(ctas.size) % NSMID, T)), "%nsmid": full(NSMID),
            "%gridid": np.full(lin.shape, gridid, np.uint64),
            "%lanemask_eq": u32(np.uint64(1) << lane.astype(np.uint64)),
            "%lanemask_lt": u32((np.uint64(1) << lane.astype(np.uint64)) - np.uint64(1)),
            "%is_explicit_cluster": full(int(self.explicit_cluster)),
            "%dynamic_smem_size": full(dynamic_smem), "%total_smem_size": full(total_smem),
            "%aggr_smem_size": full(total_smem),
        }
        r["%lanemask_le"] = r["%lanemask_lt"] | r["%lanemask_eq"]
        r["%lanemask_gt"] = ~r["%lanemask_le"]
        r["%lanemask_ge"] = ~r["%lanemask_lt"]
        for i, n in enumerate("xyz"):
            c = cid[:, i]
            r[f"%ntid.{n}"] = full(self.block[i])
            r[f"%ctaid.{n}"] = u32(c)
            r[f"%nctaid.{n}"] = full(self.grid[i])
            r[f"%clusterid.{n}"] = u32(c // self.cluster[i])
            r[f"%nclusterid.{n}"] = full(self.grid[i] // self.cluster[i])
            r[f"%cluster_ctaid.{n}"] = u32(c % self.cluster[i])
            r[f"%cluster_nctaid.{n}"] = full(self.cluster[i])
        cx, cy, _ = self.cluster
        r["%cluster_ctarank"] = (r["%cluster_ctaid.x"] + cx * (r["%cluster_ctaid.y"]
                                                                + cy * r["%cluster_ctaid.z"]))
        r["%cluster_nctarank"] = full(self.cluster_size)
        clk = np.broadcast_to(np.asarray(clock, np.uint64), lin.shape)
        r["%clock64"] = clk.copy()
        r["%clock"] = (clk & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        r["%clock_hi"] = (clk >> np.uint64(32)).astype(np.uint32)
        r["%globaltimer"] = clk.copy()
        r["%globaltimer_lo"] = r["%clock"].copy()
        r["%globaltimer_hi"] = r["%clock_hi"].copy()
        for i in range(32):
            r[f"%envreg{i}"] = full(0)
        return r
