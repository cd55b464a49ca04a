"""The launch as a timeline: Chrome-trace / Perfetto JSON ("Trace Event Format": a
`traceEvents` list of complete "X", instant "i" and metadata "M" events), written by
`ptxsim run --trace out.json` / `launch(trace=...)`.

Time is the scheduler step (one step = one instruction executed for every thread at one pc;
shown as 1 µs). One process per traced CTA; in it one track per warp (spans of running and of
waiting, named by the instruction that waits) and one per asynchronous unit (TMA / bulk copies,
tcgen05.mma, tcgen05.cp, tcgen05.ld / st, cp.async), each operation a span from its issue to its
completion, plus mbarrier phase flips as instants. Only the CTAs in `ctas` are traced (default:
the first two of the launch), so a large grid gives a small file.
"""
from __future__ import annotations

import json

import numpy as np

from ptxsim.machine.grid import WARP_SIZE

UNIT_TIDS = {"tma": 1000, "mma": 1001, "cp": 1002, "ldst": 1003, "cp.async": 1004,
             "bulk": 1005}
UNIT_NAMES = {"tma": "TMA (cp.async.bulk.tensor)", "mma": "tcgen05.mma", "cp": "tcgen05.cp / shift",
              "ldst": "tcgen05.ld / st", "cp.async": "cp.async", "bulk": "cp.async.bulk"}


class Tracer:
    def __init__(self, path=None, ctas=(0, 1)):
        self.path = path
        self.ctas = set(int(c) for c in ctas)
        self.events: list[dict] = []
        self._named: set = set()
        self._state: dict = {}          # (cta, warp) -> (status, start step, label)

    # -- helpers ----------------------------------------------------------------------------
    def _pid(self, ws, cta_pos: int) -> int | None:
        g = int(ws.wave.ctas[cta_pos])
        return g if g in self.ctas else None

    def _name(self, pid: int, tid: int | None, ws) -> None:
        if (pid, None) not in self._named:
            self._named.add((pid, None))
            ctaid = tuple(int(x) for x in ws.wave.launch.geometry.ctaid(pid))
            self.events.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                                "args": {"name": f"CTA {ctaid}"}})
        if tid is not None and (pid, tid) not in self._named:
            self._named.add((pid, tid))
            name = next((v for k, v in UNIT_NAMES.items() if UNIT_TIDS[k] == tid), None) or \
                f"warp {tid}"
            self.events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                                "args": {"name": name}})

    # -- warps ------------------------------------------------------------------------------
    def step(self, ws, pc: int, idx) -> None:
        """After one scheduler step: warp tracks follow their threads' status."""
        wave = ws.wave
        now = wave.launch.steps
        for cta_pos in range(wave.n_ctas):
            pid = self._pid(ws, cta_pos)
            if pid is None:
                continue
            base = cta_pos * wave.P
            st = wave.status[base:base + wave.P].reshape(-1, WARP_SIZE)
            for w in range(wave.wpc):
                s = int(st[w].min())            # 0 run, 1 blocked, 2 exited (any lane running)
                key = (pid, w)
                old = self._state.get(key)
                if old is None or old[0] != s:
                    if old is not None:
                        self._span(pid, w, old[2], old[1], now, ws)
                    t = base + w * WARP_SIZE
                    label = "run"
                    if s == 1:
                        p = int(wave.pc[t])
                        label = f"wait line {wave.program.line(p)}: {wave.program.text(p)}"
                    self._state[key] = (s, now, label)

    def _span(self, pid, tid, name, start, end, ws) -> None:
        if name is None or end <= start or name == "exited":
            return
        self._name(pid, tid, ws)
        self.events.append({"name": name, "cat": "warp", "ph": "X", "ts": int(start),
                            "dur": int(end - start), "pid": pid, "tid": tid})

    # -- asynchronous operations ---------------------------------------------------------------
    def issue(self, ws, rec) -> None:
        pass

    def complete(self, ws, rec) -> None:
        pid = self._pid(ws, rec.cta)
        if pid is None:
            return
        tid = UNIT_TIDS.get(rec.unit)
        if tid is None:
            return
        self._name(pid, tid, ws)
        prog = ws.wave.program
        self.events.append({"name": f"{rec.kind} (line {prog.line(rec.pc)})", "cat": rec.unit,
                            "ph": "X", "ts": int(rec.issue_step),
                            "dur": max(1, int(rec.done_step - rec.issue_step)), "pid": pid,
                            "tid": tid, "args": {"line": prog.line(rec.pc),
                                                 "instruction": prog.text(rec.pc),
                                                 "issuer_warp": (rec.t % ws.wave.P) // WARP_SIZE,
                                                 **getattr(rec, "trace_args", {})}})

    def phase(self, ws, key, phase: int) -> None:
        pid = self._pid(ws, key[0])
        if pid is None:
            return
        self._name(pid, 999, ws)
        self.events.append({"name": f"mbarrier {key[1]:#x} phase {phase} complete",
                            "cat": "mbarrier", "ph": "i", "s": "t",
                            "ts": int(ws.wave.launch.steps), "pid": pid, "tid": 999})

    def wave_end(self, ws) -> None:
        now = ws.wave.launch.steps
        for (pid, w), (s, start, label) in list(self._state.items()):
            self._span(pid, w, label if s != 2 else None, start, now, ws)
        self._state.clear()

    def document(self) -> dict:
        evs = list(self.events)
        for pid, tid in sorted(k for k in self._named if k[1] == 999):
            evs.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": 999,
                        "args": {"name": "mbarrier phases"}})
        return {"traceEvents": evs, "displayTimeUnit": "ns",
                "otherData": {"time_unit": "scheduler step (shown as 1 us)",
                              "producer": "ptxsim sanitizer"}}

    def write(self, path=None) -> None:
        path = path or self.path
        if path is None:
            return
        with open(path, "w") as f:
            json.dump(self.document(), f)


def validate_trace(doc) -> None:
    """Check a document against the Trace Event Format as Perfetto reads it (JSON object with a
    `traceEvents` list; each event a dict with a string name, a phase in X / i / M / B / E /
    C, integer-or-float ts (µs) for non-metadata events, pid / tid, dur >= 0 for X); raises
    ValueError naming the first bad event."""
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise ValueError("a trace is a JSON object with a 'traceEvents' list")
    for i, e in enumerate(doc["traceEvents"]):
        if not isinstance(e, dict) or not isinstance(e.get("name"), str):
            raise ValueError(f"event {i}: not an object with a string 'name'")
        ph = e.get("ph")
        if ph not in ("X", "i", "I", "M", "B", "E", "C"):
            raise ValueError(f"event {i}: phase {ph!r} is not one of X i M B E C")
        for k in ("pid", "tid"):
            if not isinstance(e.get(k), (int, np.integer)):
                raise ValueError(f"event {i}: '{k}' must be an integer")
        if ph == "M":
            if not isinstance(e.get("args"), dict) or "name" not in e["args"]:
                raise ValueError(f"event {i}: metadata needs args.name")
            continue
        if not isinstance(e.get("ts"), (int, float)) or e["ts"] < 0:
            raise ValueError(f"event {i}: 'ts' must be a non-negative number")
        if ph == "X" and (not isinstance(e.get("dur"), (int, float)) or e["dur"] < 0):
            raise ValueError(f"event {i}: a complete event needs 'dur' >= 0")
        if "args" in e and not isinstance(e["args"], dict):
            raise ValueError(f"event {i}: 'args' must be an object")
