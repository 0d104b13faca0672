"""A prepared graph on the wgpu executor: buffers, uploads, and the recorded step.

At prepare the plan's buffers are taken from the pool, uploads written, and every dispatch is
recorded once as (pipeline, bind group, workgroups), with all params packed into one uniform
buffer. WebGPU command buffers are single-use, so "replay" re-encodes that recorded list: no
planning, pipeline lookup, bind-group creation or param packing happens per run.

`run(steps, read_ids)` encodes every session step: copy that step's feeds from a staging buffer
(all steps' feeds are written up front, straight from the caller's arrays), the recorded
dispatches, then the carries; the last step's requested values are copied into one read-back
buffer before its carries (an output that is a carried input reads the value that step used).
Each step is submitted once encoded (STEPS_PER_SUBMIT), so the GPU runs it while the host
encodes the next; one map per run.

Every dtype is 32-bit words on the device (bool widened to u32 0/1: gpulab.dtypes.device_words),
so int32/uint32/bool inputs pass through bit for bit; read-backs become numpy arrays of each
node's dtype (from_device_words).

Carries cost no copies when they pair up (each carried output's buffer is written by a dispatch
and belongs to one carry only, the usual training state): the dispatches are recorded twice,
the second time with each carried input's buffer and its output's buffer swapped, and steps
alternate between the two recordings ("ping-pong"), so each step reads the state where the
previous one wrote it. Otherwise every carry is a buffer copy after the step.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ..dtypes import device_words, from_device_words
from ..errors import GpuLabError
from ..protocol import CheckedGraph, label
from ..values import index_error
from .deadline import deadline_s, map_within
from .planner import Plan, pack_params
from .student import budget_message, student_pipeline

# Steps encoded per queue submission in a multi-step run. Encoding a step costs the host about
# as long as the GPU takes to run it (the MLP step on the H200: ~125 us of encoding, ~200 us of
# dispatches), so submitting each step as soon as it is encoded lets the two overlap instead of
# adding up; the read-back is still one map after the last step. A software adapter runs the
# "GPU" on the same cores that encode, so there all steps go in one submission (the executor's
# steps_per_submit is 0: on lavapipe per-step submission was 2x slower).
STEPS_PER_SUBMIT = 1

# Host-side switches of a run, each an executor hook so one process measures both arms
# (bench/gpu_timestamps.py --ab); the defaults are what is measured to win.
# - hooks["encode"]: "wgpu-py" (the wgpu-py methods) or "raw": the pass's hot loop of
#   set_pipeline / set_bind_group / dispatch_workgroups called straight on wgpu-native's C
#   functions (wgpu-py's `lib`), skipping wgpu-py's per-call Python (an offsets array and the
#   error-capture wrapper per call). Encoding errors still surface: wgpu records them in the
#   pass and reports them at encoder.finish(), which goes through wgpu-py.
# - hooks["wait"]: "thread" (map_sync: wgpu-py's poll thread runs the map callback and wakes
#   this one) or "direct": wgpuBufferMapAsync called here without waking wgpu-py's poll
#   thread, and this thread polls until its callback ran (program._map_direct).
# - hooks["pre_encode"]: True encodes the next single step's command buffer while this run
#   waits for its read-back (the host is idle then), so the next run only writes its feeds
#   and submits; used when it fits (program._PreEncoded.fits), else encoded as usual.
# Measured on the H200 (docs/benchmarks.md, call B, interleaved): "raw" 542 / 606 vs 642 / 674
# us for a 1-step run, 225 / 249 vs 282 / 304 us per step at 8 steps. Measured there and
# removed for losing in every run (docs/benchmarks.md): a step split into two submissions,
# polling wgpu-py's map from this thread (10 ms stalls at 8 steps per submission), and the
# inputs uploaded through one buffer mapped at creation.
ENCODE = "raw"
# - hooks["map_mode"]: "READ" or "READ_NOSYNC". wgpu-py's map_async for READ first submits an
#   empty command buffer (a workaround for wgpu-native issue 305: data written through a
#   mapping, mapped_at_creation, reads back as zeros without a submission in between); our
#   read-back buffer is only ever written by copies in submitted command buffers, so that
#   extra encoder + finish + submit per run is skipped ("READ_NOSYNC", wgpu-py's internal mode).
MAP_MODE = "READ_NOSYNC"
# pre_encode + "direct" won the H200's interleaved A/B at 342a9d8 (40 rounds, twice, us per step
# median / min): 1 step 278 / 199 and 343 / 197 against the defaults then 493 / 385 and 526 / 426;
# 8 steps 175 / 140 and 215 / 143 against 209 / 177 and 267 / 178 (docs/benchmarks.md).
PRE_ENCODE = True
WAIT = "direct"


class WgpuProgram:
    """See the module docstring. Not thread-safe (one run at a time, like a session)."""

    def __init__(
        self,
        executor: Any,
        checked: CheckedGraph,
        plan: Plan,
        feeds: list[int],
        carry: dict[int, int],
        keep: list[int],
    ) -> None:
        self._ex = executor
        self._checked = checked
        self.plan = plan
        self._student = any(s["kernel"] == "wgsl" for s in plan["steps"])  # deadline.py
        self._buffer_of = {v["node"]: v["buffer"] for v in plan["values"]}
        self._sizes = [4 * b["elements"] for b in plan["buffers"]]
        # Inputs no output depends on have no plan buffer: feeding them changes nothing (as on
        # cpu-python), but a carried one holds state download() may read, so it gets one here.
        self._extra_inputs = [i for i in carry if i not in self._buffer_of]
        for node_id in self._extra_inputs:
            self._buffer_of[node_id] = len(self._sizes)
            self._sizes.append(4 * _element_count(self._input_node(node_id).shape))
        self._feeds = [self._feed_entry(i) for i in feeds if i in self._buffer_of]
        self._keep = set(keep) | set(carry.values())
        self._carry = carry
        self._buffers: list[Any] = []
        self._uniform: Any = None
        self._scratch: list[Any] = []  # pooled carry scratch buffers
        self._flags: dict[int, Any] = {}  # student node -> its loop-budget flag (wgsl_budget.py)
        # the dispatches as (pipeline, bind group, workgroups): [plain] or [plain, swapped]
        self._recorded: list[list[tuple[Any, Any, list[int]]]] = []
        self._raw: list[list[tuple[Any, ...]]] = []  # the same as C handles (ENCODE)
        self._swap: dict[int, int] = {}  # plan buffer -> its ping-pong partner
        # per recording: the (buffer, bytes) of students' results, cleared before each step
        self._student_clears: list[list[tuple[Any, int]]] = []
        # pooled value buffers nothing writes at prepare, cleared before the first step (_allocate)
        self._pending_clears: list[tuple[Any, int]] = []
        self._carried_inputs: set[int] = set()  # plan buffers of carried inputs (swap keys)
        self._parity = 0  # 1: the next step runs the swapped recording
        self._staging: Any = None
        self._pre: _PreEncoded | None = None  # the next single step, encoded (PRE_ENCODE)
        self._readback: Any = None
        self._steps_run = 0
        self._disposed = False
        try:
            with executor.guard("prepare"):
                self._allocate()
                self._upload()
                self._reset_checks()
                self._swap = self._plan_swap()
                self._record()
                self._carry_copies = [] if self._swap else self._plan_carries()
        except BaseException:
            self.dispose()
            raise

    # -- prepare --------------------------------------------------------------------------

    def _input_node(self, node_id: int) -> Any:
        node = self._checked.by_id.get(node_id)
        if node is None or node.op != "input":
            raise GpuLabError("VALIDATION", f"{node_id} is not an input node of the graph", node_id)
        return node

    def _feed_entry(self, node_id: int) -> tuple[int, int, int]:
        self._input_node(node_id)
        buffer_id = self._buffer_of[node_id]
        return node_id, buffer_id, self._sizes[buffer_id]

    def _allocate(self) -> None:
        """The value buffers. WebGPU's rule, made the pool's: every buffer a program can read
        starts zeroed. wgpu zeroes a new buffer; one that came back from the pool still holds
        its last program's values (a student's kernel that writes nothing read a disposed
        session's data), so those nothing writes at prepare are cleared at the start of the
        first step encoded: in the run's own submission, before any dispatch reads them."""
        reused = []
        for buffer_id, size in enumerate(self._sizes):
            buffer, again = self._ex.acquire_reused(size)
            self._buffers.append(buffer)
            if again:
                reused.append(buffer_id)
        # written before anything reads them: uploads, the check words, and the feeds (copied
        # in before each step: a clear in the step would wipe the first step's feed)
        written = {up["buffer"] for up in self.plan["uploads"]}
        written |= {b["id"] for b in self.plan["buffers"] if b["kind"] == "check"}
        written |= {buffer_id for _, buffer_id, _ in self._feeds}
        written |= {
            self._buffer_of[i]
            for i in self._extra_inputs
            if self._checked.by_id[i].data is not None
        }
        self._pending_clears = [
            (self._buffers[b], self._sizes[b]) for b in reused if b not in written
        ]

    @property
    def device_bytes(self) -> int:
        """Bytes of the value buffers this program holds (the plan cache bounds them)."""
        return sum(self._sizes)

    def refresh(self, checked: CheckedGraph) -> None:
        """Reuse this one-shot program for a graph of the same structure (plan_cache): only
        the input data is written again; plan, buffers, params and bind groups stay."""
        self._check_alive()
        self._checked = checked
        self._pre = None
        with self._ex.guard("prepare"):
            self._upload(data_only=True)

    def _upload(self, data_only: bool = False) -> None:
        """Input data and `full` values by queue.write_buffer (a `full` not again on a refresh:
        its value is an attr). Staging all data in one MAP_WRITE buffer instead was slower on
        the H200 (prepare 0.93 vs 0.80 ms median, interleaved, docs/benchmarks.md)."""
        import numpy as np

        queue = self._ex.device.queue
        extra = [
            {"buffer": self._buffer_of[i], "node": i}
            for i in self._extra_inputs
            if self._checked.by_id[i].data is not None
        ]
        writes: list[tuple[Any, Any]] = []
        for up in self.plan["uploads"] + extra:
            node = self._checked.by_id[up["node"]]
            if node.op != "full":
                data: Any = device_words(node.data, node.dtype)  # 4-byte dtypes: no copy
            elif data_only:
                continue
            else:
                data = np.full(
                    self._sizes[up["buffer"]] // 4, node.attrs["value"], dtype=np.float32
                )
            writes.append((self._buffers[up["buffer"]], data))
        for buffer, data in writes:
            queue.write_buffer(buffer, 0, data)

    def _record(self) -> None:

        device = self._ex.device
        align = int(device.limits.get("min-uniform-buffer-offset-alignment", 256))
        packed = [pack_params(step["params"]) for step in self.plan["steps"]]
        offsets, total = [], 0
        for chunk in packed:
            offsets.append(total)
            total += -(-len(chunk) // align) * align
        if not packed:
            return
        uniform = self._uniform = self._ex.acquire(total, "uniform")
        blob = bytearray(total)
        for off, chunk in zip(offsets, packed):
            blob[off : off + len(chunk)] = chunk
        device.queue.write_buffer(uniform, 0, bytes(blob))
        for swapped in [False, True] if self._swap else [False]:
            recorded = []
            for step, off, chunk in zip(self.plan["steps"], offsets, packed):
                pipeline, layout, first, at, flag = self._pipeline(step)
                entries = (
                    []
                    if at is None
                    else [
                        {
                            "binding": at,
                            "resource": {"buffer": uniform, "offset": off, "size": len(chunk)},
                        }
                    ]
                )
                if flag is not None:
                    entries.append(
                        {
                            "binding": flag,
                            "resource": {"buffer": self._budget_flag(step), "offset": 0, "size": 4},
                        }
                    )
                for i, buffer_id in enumerate(step["bindings"]):
                    physical = self._swap.get(buffer_id, buffer_id) if swapped else buffer_id
                    entries.append(
                        {
                            "binding": i + first,
                            "resource": {
                                "buffer": self._buffers[physical],
                                "offset": 0,
                                "size": self._sizes[buffer_id],
                            },
                        }
                    )
                group = device.create_bind_group(layout=layout, entries=entries)
                recorded.append((pipeline, group, step["dispatch"]))
            self._recorded.append(recorded)
            self._student_clears.append(self._results_of_students(swapped))
            # the C handles for hooks["encode"] == "raw" (the objects above keep them alive)
            self._raw.append([(p._internal, g._internal, *d) for p, g, d in recorded])

    def _results_of_students(self, swapped: bool) -> list[tuple[Any, int]]:
        """The result buffers of the students' steps in one recording. A student's kernel may
        write only some of its results, or nothing: each step clears them first, so what it
        does not write reads zeros, never a parked program's last run or the session's last
        step (N session steps equal N chained executes). Our kernels write every element."""
        clears = []
        for step in self.plan["steps"]:
            if step["kernel"] != "wgsl":
                continue
            for buffer_id in step["bindings"][-step.get("writes", 1) :]:
                physical = self._swap.get(buffer_id, buffer_id) if swapped else buffer_id
                clears.append((self._buffers[physical], self._sizes[buffer_id]))
        return clears

    def _pipeline(self, step: dict[str, Any]) -> tuple[Any, Any, int, int | None, int | None]:
        """(pipeline, layout, first storage binding, uniform binding or None, loop-budget flag
        binding or None): our kernels take the uniform at 0 and storage from 1; a student's
        "wgsl" step (student.py) storage from 0, then its params uniform if it has params, then
        the loop budget's flag if its source has a loop."""
        if step["kernel"] == "wgsl":
            node = next(n for n in self._checked.nodes if n.id == step["node"])
            pipeline, layout, first, at, flag = student_pipeline(self._ex, node)
            return pipeline, layout, first, at if node.attrs["params"] else None, flag
        pipeline = self._ex.pipeline(step["kernel"], step["overrides"], step["entry"])
        return pipeline, pipeline.get_bind_group_layout(0), 1, 0, None

    def _budget_flag(self, step: dict[str, Any]) -> Any:
        """The loop-budget flag word of a student's step (wgsl_budget.py), zeroed once: a run
        that sets it fails and poisons the session, so it is never reset."""
        import numpy as np

        flags = self._flags
        if step["node"] not in flags:
            buffer = self._ex.acquire(16)
            self._ex.device.queue.write_buffer(buffer, 0, np.zeros(4, dtype=np.uint32))
            flags[step["node"]] = buffer
            self._scratch.append(buffer)  # released with the program's scratch buffers
        return flags[step["node"]]

    def _read_budget_flags(self) -> None:
        """BACKEND naming the loop budget when a student's loop passed it during this run."""
        import numpy as np
        import wgpu

        flags = self._flags
        if not flags:
            return
        size = 4 * len(flags)
        with self._ex.guard("run (loop budget)"):
            readback = self._ex.acquire(max(16, size), "readback")
            try:
                encoder = self._ex.device.create_command_encoder()
                for i, buffer in enumerate(flags.values()):
                    encoder.copy_buffer_to_buffer(buffer, 0, readback, 4 * i, 4)
                self._ex.submit([encoder.finish()])
                readback.map_sync(wgpu.MapMode.READ, 0, size)
                words = np.frombuffer(readback.read_mapped(0, size), dtype=np.uint32).copy()
                readback.unmap()
            finally:
                self._ex.release(readback, "readback")
        for node_id, word in zip(flags, words):
            if int(word):
                raise GpuLabError("BACKEND", budget_message(node_id), node_id)

    def _plan_swap(self) -> dict[int, int]:
        """The ping-pong pairs {input buffer: output buffer, and back}, or {} when the carries
        do not pair up: a buffer in two carries, a fed input, an output no dispatch writes
        (an input carried into an input), or buffers of different sizes."""
        written = {
            b for step in self.plan["steps"] for b in step["bindings"][-step.get("writes", 1) :]
        }
        fed = {buffer_id for _, buffer_id, _ in self._feeds}
        swap: dict[int, int] = {}
        for input_id, output_id in self._carry.items():
            dst = self._buffer_of.get(input_id)
            src = self._buffer_of.get(output_id)
            if dst is None or src is None or src == dst:
                continue  # unknown ids fail in _plan_carries; src == dst needs nothing
            if (
                dst in swap
                or src in swap
                or dst in fed
                or src not in written
                or self._sizes[dst] != self._sizes[src]
            ):
                return {}
            swap[dst], swap[src] = src, dst
            self._carried_inputs.add(dst)
        if swap:
            self._plan_carries()  # the same checks of the carry ids as the copy path
        return swap

    @property
    def carry_mode(self) -> str:
        """How carries are applied: "ping-pong" (swapped recordings), "copies" or "none"."""
        if self._swap:
            return "ping-pong"
        return "copies" if self._carry_copies else "none"

    def _physical(self, buffer_id: int, used: bool = False) -> int:
        """Where a plan buffer's current value is: after a swapped step the pairs trade
        places. A carried input holds the next step's input (read with the next parity); every
        other buffer holds what the last step wrote (the previous parity). used: a carried
        input's value as the last step read it (a run's read-back of an output that is a
        carried input: that step's value, as on the copy path and the cpu executors)."""
        partner = self._swap.get(buffer_id)
        if partner is None:
            return buffer_id
        next_input = buffer_id in self._carried_inputs and not used
        parity = self._parity if next_input else 1 - self._parity
        return partner if parity else buffer_id

    def _plan_carries(self) -> list[tuple[Any, Any, int]]:
        """(source, destination, bytes) copies that apply every carry at once: a source that is
        also a destination is first copied to scratch, so no carry reads an updated value."""
        pairs = []
        for input_id, output_id in self._carry.items():
            dst = self._buffer_of.get(input_id)
            src = self._buffer_of.get(output_id)
            if dst is None or src is None:
                raise GpuLabError(
                    "VALIDATION",
                    f"carry {input_id} <- {output_id}: both must be nodes the outputs depend on",
                    input_id,
                )
            if src != dst:
                pairs.append((src, dst))
        destinations = {dst for _, dst in pairs}
        first, then = [], []
        for src, dst in pairs:
            size = self._sizes[dst]
            if src in destinations:
                scratch = self._ex.acquire(size)
                self._scratch.append(scratch)
                first.append((self._buffers[src], scratch, size))
                then.append((scratch, self._buffers[dst], size))
            else:
                then.append((self._buffers[src], self._buffers[dst], size))
        return first + then

    # -- run ------------------------------------------------------------------------------

    def run(self, steps: list[Mapping[int, Any]], read_ids: Iterable[int]) -> dict[int, Any]:
        """Run the steps, a submission every STEPS_PER_SUBMIT steps (hooks["steps_per_submit"];
        0: all in one) and one read-back; {id: array of its dtype} of read_ids after the last.
        A single-step run with PRE_ENCODE submits the command buffer the previous run encoded
        while it waited (when it fits: same reads, staging, read-back buffer and parity)."""
        self._check_alive()
        steps = list(steps) or [{}]
        read = list(dict.fromkeys(read_ids))
        arrays = [self._feed_arrays(step) for step in steps]
        # sessions only: a one-shot program (execute) runs once, its next step would be waste
        session = bool(self._feeds or self._carry or self._keep)
        pre_encode = (
            session and len(steps) == 1 and bool(self._ex.hooks.get("pre_encode", PRE_ENCODE))
        )
        with self._ex.guard("run"):
            self._write_feeds(arrays, None)
            pre, self._pre = self._pre, None
            if pre_encode and pre is not None and pre.fits(self, read):
                command, layout = pre.command, pre.layout
                self._parity = pre.parity_after
                counters = self._ex.counters
                counters["pre_encoded"] = counters.get("pre_encoded", 0) + 1
            else:
                command, layout = self._encode_run(len(steps), read)
            self._ex.submit([command])
            if pre_encode:  # the next step's commands, encoded while the GPU runs this one
                self._pre = self._pre_encode(read)
            values = self._map_reads(layout)
        self._read_budget_flags()
        if self.plan.get("checks"):
            self._read_checks()
        self._steps_run += len(steps)
        return values

    def _encode_run(self, count: int, read: list[int]) -> tuple[Any, list[tuple[int, int, int]]]:
        """Encode `count` steps and the read-back copies; earlier submissions go on the way
        (steps_per_submit); returns the last command buffer and the read layout."""
        encoder = self._ex.device.create_command_encoder()
        layout: list[tuple[int, int, int]] = []
        every = int(self._ex.hooks.get("steps_per_submit", self._ex.steps_per_submit))
        for index in range(count):
            self._encode_step(encoder, index)
            if index == count - 1:  # read before this step's carries move them
                layout = self._encode_reads(encoder, read, used=True)
            self._encode_carries(encoder)
            if every and index < count - 1 and (index + 1) % every == 0:
                # the GPU starts on these steps while the next ones are encoded
                self._ex.submit([encoder.finish()])
                encoder = self._ex.device.create_command_encoder()
        return encoder.finish(), layout

    def _pre_encode(self, read: list[int]) -> _PreEncoded | None:
        """The next single step's command buffer (this run's feeds layout, the next parity),
        or None when encoding fails (the next run then encodes, and reports, as usual)."""
        before = self._parity
        try:
            command, layout = self._encode_run(1, read)
        except Exception:  # noqa: BLE001 - a failed guess costs nothing; the next run retries
            return None
        finally:
            after, self._parity = self._parity, before
        return _PreEncoded(command, layout, tuple(read), self, before, after)

    def _check_buffer(self) -> tuple[Any, int]:
        """The v4 index ops' check buffer (planner_index.py) and its size in bytes."""
        buffer_id = next(b["id"] for b in self.plan["buffers"] if b["kind"] == "check")
        return self._buffers[self._physical(buffer_id)], self._sizes[buffer_id]

    def _reset_checks(self) -> None:
        """Every check word to 0xffffffff ("no index out of range")."""
        import numpy as np

        if any(b["kind"] == "check" for b in self.plan["buffers"]):
            buffer, size = self._check_buffer()
            self._ex.device.queue.write_buffer(
                buffer, 0, np.full(size // 4, 0xFFFFFFFF, dtype=np.uint32)
            )

    def _read_checks(self) -> None:
        """The index ops' words (kernels/wgsl/index.wgsl): each the smallest position in idx
        of an index out of range during this run. Any such is BACKEND naming the node and the
        position (the session is then poisoned: STATE); the words are reset after."""
        import numpy as np
        import wgpu

        buffer, size = self._check_buffer()
        with self._ex.guard("run (index checks)"):
            readback = self._ex.acquire(size, "readback")
            try:
                encoder = self._ex.device.create_command_encoder()
                encoder.copy_buffer_to_buffer(buffer, 0, readback, 0, size)
                self._ex.submit([encoder.finish()])
                readback.map_sync(wgpu.MapMode.READ, 0, size)
                words = np.frombuffer(readback.read_mapped(0, size), dtype=np.uint32).copy()
                readback.unmap()
            finally:
                self._ex.release(readback, "readback")
            self._reset_checks()
        for check in self.plan["checks"]:
            if int(words[check["word"]]) != 0xFFFFFFFF:
                node = self._checked.by_id[check["node"]]
                raise index_error(
                    "BACKEND",
                    node,
                    self._checked.by_id[node.operands[0]].shape,
                    int(words[check["word"]]),
                )

    def max_steps_per_run(self) -> int | None:
        """How many steps' feeds fit the one staging buffer of a run (the device's
        max-buffer-size), or None when there are no feeds; Session splits longer runs so a
        valid request never fails on the staging buffer."""
        per_step = sum(size for _, _, size in self._feeds)
        if per_step == 0:
            return None
        limit = int(
            self._ex.hooks.get("max_buffer_size")
            or self._ex.device.limits.get("max-buffer-size", 256 * 1024 * 1024)
        )
        return max(1, limit // per_step)

    def _feed_arrays(self, step: Mapping[int, Any]) -> list[Any]:
        out = []
        for node_id, _, size in self._feeds:
            node = self._checked.by_id[node_id]
            if node_id not in step:
                raise GpuLabError(
                    "VALIDATION", f"{label(node.id, node.op)}: no value fed for this step", node_id
                )
            words = device_words(step[node_id], node.dtype)
            if words.nbytes != size:
                raise GpuLabError(
                    "VALIDATION",
                    f"{label(node.id, node.op)}: fed "
                    f"{words.nbytes // 4} values, expected {size // 4}",
                    node_id,
                )
            out.append(words)
        return out

    def _write_feeds(self, arrays: list[list[Any]], encoder: Any) -> None:
        """All steps' feeds into one staging buffer (one write per array, no element loops)."""
        self._step_feed_copies: list[list[tuple[int, Any, int]]] = []
        per_step = sum(size for _, _, size in self._feeds)
        if per_step == 0:
            self._step_feed_copies = [[] for _ in arrays]
            return
        staging = self._staging_buffer(per_step * len(arrays))
        queue = self._ex.device.queue
        offset = 0
        for step_arrays in arrays:
            copies = []
            for (_, buffer_id, size), arr in zip(self._feeds, step_arrays):
                queue.write_buffer(staging, offset, arr)
                copies.append((offset, self._buffers[buffer_id], size))
                offset += size
            self._step_feed_copies.append(copies)

    def _staging_buffer(self, nbytes: int) -> Any:
        if self._staging is None or self._staging.size < nbytes:
            self._pre = None  # it copies from the old buffer
            if self._staging is not None:
                self._ex.release(self._staging, "staging")
            self._staging = self._ex.acquire(nbytes, "staging")
        return self._staging

    def _encode_step(self, encoder: Any, index: int) -> None:
        """Encode step `index` (its feed copies, its pass) into `encoder`."""
        for offset, dst, size in self._step_feed_copies[index]:
            encoder.copy_buffer_to_buffer(self._staging, offset, dst, 0, size)
        clears, self._pending_clears = self._pending_clears, []
        if self._student_clears:
            clears += self._student_clears[self._parity]
        for buffer, size in clears:
            encoder.clear_buffer(buffer, 0, size)
        if self._recorded:
            raw = self._ex.hooks.get("encode", ENCODE) == "raw" and _raw_calls() is not None
            compute = encoder.begin_compute_pass()
            if raw:
                _encode_raw(compute, self._raw[self._parity])
            else:
                _encode_wgpu_py(compute, self._recorded[self._parity])
            compute.end()
        if self._swap:
            self._parity = 1 - self._parity

    def _encode_carries(self, encoder: Any) -> None:
        for src, dst, size in self._carry_copies:
            encoder.copy_buffer_to_buffer(src, 0, dst, 0, size)

    def _read(self, encoder: Any, read: list[int]) -> dict[int, Any]:
        """Copy the read ids' buffers into one read-back buffer, submit, map once."""
        return self._finish_reads(encoder, self._encode_reads(encoder, read))

    def _encode_reads(
        self, encoder: Any, read: list[int], used: bool = False
    ) -> list[tuple[int, int, int]]:
        """Copy the read ids' buffers into the read-back buffer: [(id, buffer, offset)]
        (used: right after a run's last step, see _physical)."""
        layout, total = [], 0
        for node_id in read:
            buffer_id = self._buffer_id(node_id)
            layout.append((node_id, buffer_id, total))
            total += self._sizes[buffer_id]
        readback = self._readback_buffer(total) if read else None
        for _, buffer_id, offset in layout:
            encoder.copy_buffer_to_buffer(
                self._buffers[self._physical(buffer_id, used)],
                0,
                readback,
                offset,
                self._sizes[buffer_id],
            )
        return layout

    def _finish_reads(self, encoder: Any, layout: list[tuple[int, int, int]]) -> dict[int, Any]:
        """Submit, map the read-back buffer once, and split it into arrays of each dtype."""
        self._ex.submit([encoder.finish()])
        return self._map_reads(layout)

    def _map_reads(self, layout: list[tuple[int, int, int]]) -> dict[int, Any]:
        """Map the read-back buffer once (after the submission that fills it), split it."""
        if not layout:
            return {}
        _, last_buffer, last_offset = layout[-1]
        nbytes = last_offset + self._sizes[last_buffer]
        # from_device_words copies each value out of the mapped range, so the range is read
        # in place (one copy of the outputs, not two) and unmapped after
        with self._mapped_readback(nbytes) as raw:
            return {
                node_id: from_device_words(
                    raw, self._checked.by_id[node_id].dtype, self._sizes[buffer_id] // 4, offset
                ).reshape(self._shape(node_id))
                for node_id, buffer_id, offset in layout
            }

    def _readback_buffer(self, nbytes: int) -> Any:
        """The program's MAP_READ buffer, grown to the largest read-back seen."""
        if self._readback is None or self._readback.size < nbytes:
            self._pre = None  # it copies into the old buffer
            if self._readback is not None:
                self._ex.release(self._readback, "readback")
            self._readback = self._ex.acquire(nbytes, "readback")
        return self._readback

    @contextlib.contextmanager
    def _mapped_readback(self, nbytes: int) -> Iterator[memoryview]:
        """The read-back buffer's first nbytes, mapped, valid inside the block only."""
        import wgpu

        # the per-submission deadline (deadline.py): past it the device is destroyed
        seconds = deadline_s(self._ex.hooks, self._student)
        wait = self._ex.hooks.get("wait", WAIT)
        if seconds is None and wait == "direct" and _direct_ok():
            _map_direct(self._ex.device, self._readback)
        else:
            # READ_NOSYNC (MAP_MODE): the read-back is written by our copies only
            # under a deadline (students' kernels) the tested READ path: there wgpu-py's empty
            # submission is what waits out a runaway shader before the next graph's map
            # (e2e/test_student_wgsl.py's deadline test fails with READ_NOSYNC)
            read = seconds is not None or self._ex.hooks.get("map_mode", MAP_MODE) == "READ"
            mode = wgpu.MapMode.READ if read else "READ_NOSYNC"
            map_within(self._readback, mode, self._readback.size, seconds, self._ex.expire)
        try:
            yield self._readback.read_mapped(0, nbytes, copy=False)
        finally:
            self._readback.unmap()
        self._ex.counters["readbacks"] += 1

    def _buffer_id(self, node_id: int) -> int:
        buffer_id = self._buffer_of.get(node_id)
        if buffer_id is None:
            raise GpuLabError(
                "VALIDATION",
                f"node {node_id} is not computed by this program (no output depends on it)",
                node_id,
            )
        return buffer_id

    def _shape(self, node_id: int) -> tuple[int, ...]:
        return tuple(self._checked.by_id[node_id].shape)

    # -- download / dispose ---------------------------------------------------------------

    def download(self, node_id: int) -> Any:
        """Current value of a carried input or a kept output (an array of its dtype)."""
        self._check_alive()
        if node_id not in self._keep and node_id not in self._carry:
            raise GpuLabError("VALIDATION", f"node {node_id} is neither carried nor kept", node_id)
        if self._steps_run == 0 and node_id not in self._carry:
            raise GpuLabError(
                "VALIDATION", f"node {node_id} has no value yet: run a step first", node_id
            )
        self._pre = None  # its read-back may grow the buffer the next step copies into
        with self._ex.guard("download"):
            encoder = self._ex.device.create_command_encoder()
            return self._read(encoder, [node_id])[node_id]

    def dispose(self) -> None:
        """Return buffers to the pool, free the rest. Always works; idempotent."""
        if self._disposed:
            return
        self._disposed = True
        self._pre = None
        for buf in self._buffers + self._scratch:
            self._ex.release(buf)
        for buf, kind in (
            (self._uniform, "uniform"),
            (self._staging, "staging"),
            (self._readback, "readback"),
        ):
            if buf is not None:
                self._ex.release(buf, kind)
        self._buffers, self._scratch, self._recorded, self._raw = [], [], [], []
        self._student_clears = []
        self._uniform = self._staging = self._readback = None

    def _check_alive(self) -> None:
        if self._disposed:
            raise GpuLabError("DISPOSED", "this wgpu program was disposed")


def _element_count(shape: Any) -> int:
    count = 1
    for d in shape:
        count *= int(d)
    return count


def _encode_wgpu_py(compute: Any, recorded: list[tuple[Any, Any, list[int]]]) -> None:
    current = None
    for pipeline, group, (x, y, z) in recorded:
        if pipeline is not current:  # each wgpu-py call costs microseconds of Python
            compute.set_pipeline(pipeline)
            current = pipeline
        compute.set_bind_group(0, group)
        compute.dispatch_workgroups(x, y, z)


@functools.cache
def _raw_calls() -> tuple[Any, Any, Any, Any] | None:
    """(set_pipeline, set_bind_group, dispatch, NULL) from wgpu-py's cffi `lib` (internal API,
    measured with wgpu-py 0.32), or None where it is not there: then the wgpu-py methods."""
    try:
        from wgpu.backends.wgpu_native._api import ffi, lib

        return (
            lib.wgpuComputePassEncoderSetPipeline,
            lib.wgpuComputePassEncoderSetBindGroup,
            lib.wgpuComputePassEncoderDispatchWorkgroups,
            ffi.NULL,
        )
    except (ImportError, AttributeError):
        return None


def _encode_raw(compute: Any, raw: list[tuple[Any, ...]]) -> None:
    """The same calls on wgpu-native's C functions (ENCODE): no dynamic offsets (NULL)."""
    calls = _raw_calls()
    assert calls is not None  # _encode_step checked
    set_pipeline, set_group, dispatch, null = calls
    handle, current = compute._internal, None
    for pipeline, group, x, y, z in raw:
        if pipeline != current:
            set_pipeline(handle, pipeline)
            current = pipeline
        set_group(handle, 0, group, 0, null)
        dispatch(handle, x, y, z)


class _PreEncoded:
    """A single step's command buffer encoded ahead (PRE_ENCODE), with what it assumed."""

    def __init__(
        self,
        command: Any,
        layout: list[tuple[int, int, int]],
        read: tuple[int, ...],
        program: WgpuProgram,
        parity_before: int,
        parity_after: int,
    ) -> None:
        self.command, self.layout, self.read = command, layout, read
        self.staging, self.readback = program._staging, program._readback
        self.parity_before, self.parity_after = parity_before, parity_after

    def fits(self, program: WgpuProgram, read: list[int]) -> bool:
        return (
            self.read == tuple(read)
            and self.staging is program._staging
            and self.readback is program._readback
            and self.parity_before == program._parity
        )


def _direct_ok() -> bool:
    """WAIT "direct" sets private fields of wgpu-py's buffer (as its map_async does in 0.32, the
    version it was written and measured against); any other version takes the public map."""
    import wgpu

    return wgpu.__version__.startswith("0.32.")


def _map_direct(device: Any, buffer: Any) -> None:
    """Map `buffer` for reading with wgpu-native's calls from this thread only (WAIT "direct"):
    no poll token for wgpu-py's poll thread, this thread's blocking polls run the callback.
    Sets the wgpu-py buffer's map state as its map_async does (private fields of wgpu-py 0.32),
    so read_mapped and unmap work as usual."""
    import wgpu
    from wgpu import enums
    from wgpu.backends.wgpu_native._api import ffi, lib, libf, new_struct

    done: list[int] = []

    @ffi.callback("void(WGPUMapAsyncStatus, WGPUStringView, void *, void *)")
    def mapped(status: int, _message: Any, _user1: Any, _user2: Any) -> None:
        done.append(status)

    info = new_struct(
        "WGPUBufferMapCallbackInfo", mode=lib.WGPUCallbackMode_AllowProcessEvents, callback=mapped
    )
    buffer._map_state = enums.BufferMapState.pending
    libf.wgpuBufferMapAsync(buffer._internal, lib.WGPUMapMode_Read, 0, buffer.size, info)
    for _ in range(10_000):  # each poll waits for the queue; more than one is rare
        if done:
            break
        libf.wgpuDevicePoll(device._internal, True, ffi.NULL)
    if not done:
        buffer._map_state = enums.BufferMapState.unmapped
        raise RuntimeError("the read-back map never completed (device lost?)")
    if done[0] != lib.WGPUMapAsyncStatus_Success:
        buffer._map_state = enums.BufferMapState.unmapped
        raise RuntimeError(f"Could not map buffer (status {done[0]}).")
    buffer._map_state = enums.BufferMapState.mapped
    buffer._mapped_status = 0, buffer.size, wgpu.MapMode.READ
    buffer._mapped_memoryviews = []
