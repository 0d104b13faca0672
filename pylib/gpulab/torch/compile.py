"""torch.compile of the subset (docs/torch.md "torch.compile").

- `torch.compile(model)(x)` records the forward pass into one graph and returns a pending
  result (gpulab.torch._pending.Pending): `.submit(callback, on_error=None)` (the seed's
  extension: browser completion is asynchronous), `.result()` (natively; in the page where JSPI
  works) and `await`. Natively it ran before the call returned.
- `torch.compile(step, training=True)` captures one training step: exactly one `zero_grad()`,
  one scalar `loss.backward()` and one `optimizer.step()`, in that order (anything else is
  refused by name). Called directly, the step is recorded afresh and run as one graph:
  parameters and optimizer state (read from `optimizer.state`) are uploaded and the updated
  ones read back every call, as an eager step does.
- `compiled.prepare(x, target)` records the step once and keeps weights, gradients and optimizer
  state resident in a prepared session (gpulab sessions: carried inputs for parameters and
  state, resident gradients): `step(callback, x, target)`, `steps(callback, batches)` (at most
  64 in one submission), `sync(callback)` (writes parameters, gradients and `optimizer.state`
  back), `dispose()`. What the host computes per step is fed per step: the batch, the
  optimizer's scalars (learning rate, bias corrections: `Record.scalars`), each dropout
  call's counter (`Record.draws`) and each host random draw (torch.randn/rand/randint inside
  the step, drawn again), from the generator at call time, so a prepared session consumes the
  random stream exactly as the same eager steps do. While a session is live,
  compiled calls and eager `optimizer.step()` on its parameters are refused by name.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Self

from ..errors import GpuLabError
from ..host import in_pyodide
from . import _random, _tape
from ._capture import Capture, Plan
from ._pending import After, Download, Execute, Pending, Prepare, Steps
from ._refuse import Unsupported
from .creation import tensor as make_tensor
from .tensor import Tensor

__all__ = ["MAX_STEPS", "CompiledModel", "CompiledStep", "PreparedStep", "compile"]

MAX_STEPS = 64  # steps in one `steps` submission (the seed's figure)
# id(parameter) -> (a weak reference to it, the live prepared session holding it); the weak
# reference tells a live parameter from a new object that reuses a collected one's id
LIVE: dict[int, tuple[weakref.ref, str]] = {}
# A scalar the steady-state step records but the optimizer's first step does not compute:
# SGD's first momentum step is buf = g, recorded (gpulab.torch._capture.steady_state) as
# buf * momentum + g * (1 - dampening) on a zero buffer with (1 - dampening) fed as 1: 0 *
# momentum + g * 1 is g, bit for bit.
FIRST_STEP = {"one_minus_dampening": 1.0}
_SCALAR_KEY = re.compile(r"g(\d+)\.p(\d+)\.(\w+)$")


def compile(
    model: Any = None,
    *,
    training: bool = False,
    fullgraph: bool = False,
    dynamic: Any = None,
    backend: Any = None,
    mode: Any = None,
    options: Any = None,
    disable: bool = False,
) -> Any:
    """torch.compile: a CompiledModel (inference) or, with training=True, a CompiledStep.
    `fullgraph`, `dynamic` and `mode` are accepted (a compiled function is always one graph
    of static shapes); a `backend` other than gpulab, `options` are refused by name."""
    if backend not in (None, "gpulab", "inductor"):
        raise Unsupported(
            f"torch.compile(backend={backend!r}): the subset compiles to GPU Lab "
            "graphs only (backend=None or 'gpulab')"
        )
    if options:
        raise Unsupported("torch.compile(options=...): the subset takes no backend options")
    if model is None:
        return lambda fn: compile(fn, training=training, backend=backend, disable=disable)
    if disable:
        return model
    return CompiledStep(model) if training else CompiledModel(model)


def _name(fn: Any) -> str:
    return getattr(fn, "__name__", None) or type(fn).__name__


# -- what a compiled function returns -----------------------------------------------------------


class Returned:
    """The structure a compiled function returned: its tensors recorded in `rec` become graph
    outputs r0, r1, ...; on the way back they are rebuilt as tensors holding the values."""

    def __init__(self, value: Any, rec: _tape.Record) -> None:
        self.value = value
        self.rec = rec
        self.outputs: dict[str, Any] = {}
        self._slots: dict[int, str] = {}
        self._walk(value)

    def _walk(self, v: Any) -> None:
        if isinstance(v, Tensor):
            if v._rec is self.rec and v._node is not None and id(v) not in self._slots:
                name = f"r{len(self.outputs)}"
                self.outputs[name] = v._node
                self._slots[id(v)] = name
        elif isinstance(v, (list, tuple)):
            for item in v:
                self._walk(item)
        elif isinstance(v, dict):
            for item in v.values():
                self._walk(item)

    def rebuild(self, outputs: dict[str, Any]) -> Any:
        return self._rebuild(self.value, outputs)

    def _rebuild(self, v: Any, outputs: dict[str, Any]) -> Any:
        if isinstance(v, Tensor):
            name = self._slots.get(id(v))
            return (
                v if name is None else Tensor._leaf_of(_tape._flat(outputs[name]), v.shape, v.dtype)
            )
        if isinstance(v, tuple):
            return (
                type(v)(*(self._rebuild(i, outputs) for i in v))
                if hasattr(v, "_fields")
                else tuple(self._rebuild(i, outputs) for i in v)
            )
        if isinstance(v, list):
            return [self._rebuild(i, outputs) for i in v]
        if isinstance(v, dict):
            return {k: self._rebuild(i, outputs) for k, i in v.items()}
        return v


# -- live sessions ------------------------------------------------------------------------------


def _param_label(plan: Plan) -> str:
    return f"parameter {plan.index} of group {plan.group} (shape {list(plan.param.shape)})"


def _refuse_live(what: str, leaves: Iterable[Tensor]) -> None:
    for t in leaves:
        ref, holder = LIVE.get(id(t), (None, None))
        if ref is not None and ref() is t:
            raise Unsupported(
                f"{what}: a parameter of shape {list(t.shape)} is resident in a live prepared "
                f"session ({holder}); call sync() to write it back and dispose() before "
                "running it another way"
            )


def _record_leaves(rec: _tape.Record) -> list[Tensor]:
    return [t for t, _node in list(rec.leaves.values()) + list(rec.plain.values())]


# -- torch.compile(model) -----------------------------------------------------------------------


class CompiledModel:
    """torch.compile(model): calling it records model(*args) and returns a Pending result."""

    def __init__(self, model: Any) -> None:
        self._orig_mod = model
        self._label = f"torch.compile({_name(model)})"

    def __getattr__(self, name: str) -> Any:
        return getattr(self._orig_mod, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Pending:
        with Capture(_name(self._orig_mod), training=False) as cap:
            ret = self._orig_mod(*args, **kwargs)
        _refuse_live(self._label, _record_leaves(cap.rec))
        returned = Returned(ret, cap.rec)
        if not returned.outputs:
            return Pending.ready(ret, self._label)
        graph = cap.rec.graph._graph_dict(returned.outputs)

        def flow() -> Iterator[Any]:
            result = yield Execute(graph, _tape.get_backend())
            return returned.rebuild(result["outputs"])

        return Pending(flow(), self._label)


# -- torch.compile(step, training=True) --------------------------------------------------------


class CompiledStep:
    """torch.compile(step, training=True): call it (one graph per call) or prepare it."""

    def __init__(self, step: Any) -> None:
        self._step = step
        self.name = _name(step)
        self._label = f"torch.compile({self.name}, training=True)"
        self._inflight: Pending | None = None

    def capture(
        self, args: tuple, kwargs: dict[str, Any], prepared: bool = False
    ) -> tuple[Capture, Any]:
        """Record one call of the step (nothing runs) and check it is one training step.
        `prepared`: record the steady-state step and leave .grad and optimizer.state as they
        were (Capture's doc)."""
        cap = Capture(self.name, training=True, prepared=prepared)
        try:
            with cap:
                ret = self._step(*args, **kwargs)
            self._check(cap)
        except BaseException:
            cap.restore()  # a refused step leaves the parameters' .grad as they were
            raise
        if prepared:
            cap.restore()
        return cap, ret

    def _check(self, cap: Capture) -> None:
        for what, shown in (
            ("zero_grad", "zero_grad()"),
            ("backward", "loss.backward()"),
            ("step", "optimizer.step()"),
        ):
            count = cap.events.count(what)
            if count != 1:
                raise Unsupported(
                    f"{self._label} captures one training step: exactly one zero_grad(), one "
                    f"loss.backward() and one optimizer.step(); {self.name} called {shown} "
                    f"{count} times"
                )
        if cap.events != ["zero_grad", "backward", "step"]:
            raise Unsupported(
                f"{self._label}: the step must call zero_grad(), loss.backward(), "
                f"optimizer.step() in that order; {self.name} called "
                + ", ".join(f"{e}()" for e in cap.events)
            )
        loss = cap.losses[0]
        if loss.numel() != 1:
            raise Unsupported(
                f"{self._label}: backward() of a scalar loss only; {self.name} "
                f"called it on a tensor of shape {list(loss.shape)}"
            )
        if not cap.plans:
            raise Unsupported(
                f"{self._label}: optimizer.step() found no parameter with a "
                "gradient (does the loss depend on the optimizer's parameters?)"
            )
        for plan in cap.plans:
            p = plan.param
            stale = [v for (key, v) in _leaf_versions(cap.rec, p) if v != p._version]
            if stale:
                raise Unsupported(
                    f"{self._label}: {_param_label(plan)} was changed in place inside the "
                    "step by an eager operation; a compiled step changes parameters only "
                    "through optimizer.step()"
                )

    def __call__(self, *args: Any, **kwargs: Any) -> Pending:
        """One step as one graph: parameters and state uploaded, updated ones read back."""
        if self._inflight is not None and not self._inflight.done:
            raise Unsupported(
                f"{self._label}: the previous call has not finished; call the next step from "
                "its callback (or await it): each call starts from the parameters it wrote"
            )
        cap, ret = self.capture(args, kwargs)
        _refuse_live(self._label, [p.param for p in cap.plans] + _record_leaves(cap.rec))
        returned = Returned(ret, cap.rec)
        outputs = dict(returned.outputs)
        wanted = []
        for i, plan in enumerate(cap.plans):
            for key, node in plan.new.items():
                outputs[f"u{i}.{key}"] = node
                wanted.append((plan, key, f"u{i}.{key}"))
            outputs[f"grad{i}"] = plan.grad
        graph = cap.rec.graph._graph_dict(outputs)
        optimizer = cap.optimizers[0]

        def flow() -> Iterator[Any]:
            result = yield Execute(graph, _tape.get_backend())
            out = result["outputs"]
            values = [_tape._flat(out[name]) for _plan, _key, name in wanted]
            optimizer._commit([(pl.param, pl.state, pl.new) for pl in cap.plans], values)
            for i, plan in enumerate(cap.plans):
                p = plan.param
                p.grad = Tensor._leaf_of(_tape._flat(out[f"grad{i}"]), p.shape, p.dtype)
            return returned.rebuild(out)

        self._inflight = Pending(flow(), self._label)
        return self._inflight

    def prepare(self, *args: Any, **kwargs: Any) -> PreparedStep:
        """Record the step once from an example call (x, target) and keep its state resident."""
        return PreparedStep(self, args, kwargs)


def _leaf_versions(rec: _tape.Record, p: Tensor) -> list[tuple[Any, int]]:
    return [(key, key[1]) for table in (rec.leaves, rec.plain) for key in table if key[0] == id(p)]


# -- prepared sessions --------------------------------------------------------------------------


class PreparedStep:
    """A training step recorded once, its state resident on the device (see the module doc)."""

    def __init__(self, compiled: CompiledStep, args: tuple, kwargs: dict[str, Any]) -> None:
        self.compiled = compiled
        self._label = f"torch.compile({compiled.name}, training=True).prepare(...)"
        self._session: Any = None
        self._tail: Pending | None = None
        self._closed = False
        self._steps_run = 0
        self._record(args, kwargs)
        self._open()

    # -- recording ---------------------------------------------------------------------------

    def _record(self, args: tuple, kwargs: dict[str, Any]) -> None:
        if kwargs:
            raise Unsupported(
                f"{self._label}: give the example batch positionally (prepare(x, target))"
            )
        gen = _random.default_generator
        before = gen.get_state()
        try:
            cap, ret = self.compiled.capture(args, {}, prepared=True)
        finally:
            drawn = gen.get_state()
            gen.set_state(before)  # recording consumes no random numbers; each step does
        _refuse_live(self._label, [p.param for p in cap.plans])
        self._check_draws(cap, before, drawn)
        self.seed = before[0]
        self.optimizer = cap.optimizers[0]
        self.plans = cap.plans
        self.rec = cap.rec
        self._returned = Returned(ret, cap.rec)
        self._examples = list(args)
        self._build(cap)

    def _check_draws(self, cap: Capture, before: tuple, after: tuple) -> None:
        """The default generator's counters the recording used are exactly its dropout calls'
        and its recorded host draws' (torch.randn/rand/randint), in that interleaving: each
        step replays them in the same order (`_feeds`)."""
        counter, ok = before[1], True
        host = iter(cap.host_draws)
        pending = next(host, None)
        for i, (_node, value) in enumerate([*cap.rec.draws, (None, None)]):
            while pending is not None and pending[0] == i:
                counter = (counter + pending[5]) & 0xFFFFFFFF
                pending = next(host, None)
            if value is not None:
                ok = ok and value == counter
                counter = (counter + 1) & 0xFFFFFFFF
        if not ok or counter != after[1]:
            raise Unsupported(
                f"{self._label}: a random draw inside the step that is neither a dropout of "
                "torch's default generator nor torch.rand/randn/randint called through the "
                "torch module (a function imported by name before prepare(), or a module's "
                "init): its values would be frozen into the prepared graph; draw them outside "
                "the step and pass them in, or call the compiled step directly"
            )

    def _build(self, cap: Capture) -> None:
        rec = cap.rec
        feeds: dict[int, Any] = {}  # node id -> how to get its value each step
        self._arg_nodes: list[tuple[int, Any]] = []
        for i, a in enumerate(self._examples):
            if (
                isinstance(a, Tensor)
                and a._rec is rec
                and a._node is not None
                and a._node.op == "input"
            ):
                self._arg_nodes.append((i, a._node))
                feeds[a._node.id] = a._node
        self._scalar_nodes = [(node, _scalar_key(key)) for node, key, _v in rec.scalars]
        self._draw_nodes = [node for node, _value in rec.draws]
        # host draws: replayed each step in their place among the dropout counters; the drawn
        # tensor's input node (if the graph uses it) is fed the new values
        self._host_draws = []
        for position, fn, args, kwargs, t, _used in cap.host_draws:
            node = t._node if t._rec is rec and t._node is not None else None
            if node is not None and node.op == "input":
                feeds[node.id] = node
            self._host_draws.append((position, fn, args, kwargs, node))
        carry: dict[Any, Any] = {}
        self._param_inputs: list[tuple[Plan, Any]] = []
        self._state_inputs: list[tuple[Plan, str, Any]] = []
        for plan in cap.plans:
            for (pid, _version), (_t, node) in list(rec.leaves.items()) + list(rec.plain.items()):
                if pid == id(plan.param):
                    carry[node] = plan.new["param"]
                    self._param_inputs.append((plan, node))
            for key, new in plan.new.items():
                if key == "param":
                    continue
                t = plan.state.get(key, cap.removed.get((id(plan.state), key)))
                if not (isinstance(t, Tensor) and t._rec is rec and t._node is not None):
                    raise Unsupported(
                        f"{self._label}: optimizer state {key!r} of "
                        f"{_param_label(plan)} did not enter the step's graph"
                    )
                carry[t._node] = new
                self._state_inputs.append((plan, key, t._node))
        resident = [plan.grad for plan in cap.plans]
        fed = [
            n for n in (*feeds.values(), *(n for n, _k in self._scalar_nodes), *self._draw_nodes)
        ]
        outputs = dict(self._returned.outputs)
        graph, options = rec.graph._session_request(fed, carry, resident, outputs)
        fed_ids = {n.id for n in fed}
        for node in graph["nodes"]:
            if node["id"] in fed_ids:
                node.pop("data", None)  # given every step: an input without data
        self._graph, self._options = graph, options
        self._grad_names = list(zip(cap.plans, options["resident"], strict=True))
        self._shadow = {id(plan): dict(plan.state) for plan in cap.plans}

    def _open(self) -> None:
        for plan in self.plans:
            LIVE[id(plan.param)] = (weakref.ref(plan.param), self._label)
        optimizer, label = self.optimizer, self._label

        def refused_step(closure: Any = None) -> Any:
            raise Unsupported(
                f"optimizer.step(): its parameters are resident in a live prepared session "
                f"({label}); call sync() to write them back and dispose() before an eager "
                "step"
            )

        self._saved_step = optimizer.__dict__.get("step")
        optimizer.step = refused_step

    # -- per-step feeds ----------------------------------------------------------------------

    def _feeds(self, args: tuple) -> dict[int, Any]:
        """One step's feeds: the batch, this step's optimizer scalars and dropout counters
        (the generator advances now, as the eager step would)."""
        if len(args) != len(self._examples):
            raise Unsupported(
                f"{self._label}: the step was prepared with "
                f"{len(self._examples)} arguments; got {len(args)}"
            )
        feeds: dict[int, Any] = {}
        for i, node in self._arg_nodes:
            feeds[node.id] = _batch_values(args[i], self._examples[i], i, self._label)
        values = self._scalar_values()
        for node, key in self._scalar_nodes:
            feeds[node.id] = [values[key]]
        gen = _random.default_generator
        if self._draw_nodes and gen.seed != self.seed:
            raise Unsupported(
                f"{self._label}: torch.manual_seed changed the seed since the "
                "step was prepared (its dropout seed is part of the graph); "
                "prepare it again"
            )
        host = iter(self._host_draws)
        pending = next(host, None)
        for i in range(len(self._draw_nodes) + 1):
            while pending is not None and pending[0] == i:  # a host draw, drawn again now
                _position, fn, fargs, fkwargs, node = pending
                drawn = fn(*fargs, **fkwargs)
                if node is not None:
                    feeds[node.id] = drawn._values()
                pending = next(host, None)
            if i < len(self._draw_nodes):
                feeds[self._draw_nodes[i].id] = [gen.next_counter()]
        self._advance_shadow()
        return feeds

    def _scalar_values(self) -> dict[tuple[int, int, str], float]:
        out: dict[tuple[int, int, str], float] = {}
        for plan in self.plans:
            group = self.optimizer.param_groups[plan.group]
            computed = self.optimizer._scalars(group, self._shadow[id(plan)])
            for name, value in computed.items():
                out[(plan.group, plan.index, name)] = value
        for _node, key in self._scalar_nodes:
            if key not in out:
                if key[2] not in FIRST_STEP:
                    raise Unsupported(
                        f"{self._label}: the optimizer no longer computes "
                        f"{key[2]!r}: its settings changed the step; prepare "
                        "it again"
                    )
                out[key] = FIRST_STEP[key[2]]
        recorded = {key for _node, key in self._scalar_nodes}
        extra = sorted(k[2] for k in out if k not in recorded)
        if extra:
            raise Unsupported(
                f"{self._label}: the optimizer now computes {extra} that the "
                "prepared step does not have: its settings changed; prepare again"
            )
        return out

    def _advance_shadow(self) -> None:
        for plan in self.plans:
            shadow = self._shadow[id(plan)]
            for key in plan.new:
                if key != "param":
                    shadow.setdefault(key, True)  # present from now on (held on the device)
            self.optimizer._advance(shadow)

    # -- the session's operations ------------------------------------------------------------

    def _enqueue(
        self, make: Callable[[], Iterator[Any]], what: str, callback: Any, on_error: Any
    ) -> Pending:
        after = self._tail

        def flow() -> Iterator[Any]:
            if after is not None:
                yield After(after)
            return (yield from make())

        pending = Pending(flow(), f"{self._label}.{what}")
        self._tail = pending
        if callback is not None or on_error is not None:
            pending.submit(callback or _ignore, on_error)
        return pending

    def _check_open(self, what: str) -> None:
        if self._closed:
            raise GpuLabError("DISPOSED", f"{self._label}.{what}: the prepared step was disposed")

    def _session_flow(self) -> Iterator[Any]:
        if self._session is None:
            self._session = yield Prepare(self._graph, self._options, _tape.get_backend())
        return self._session

    def step(self, callback: Any, *batch: Any, on_error: Any = None) -> Pending:
        """One step on (x, target): callback(the step's return value, e.g. the loss)."""
        self._check_open("step")
        feeds = [self._feeds(batch)]
        return self._enqueue(lambda: self._run_flow(feeds), "step", callback, on_error)

    def steps(self, callback: Any, batches: Iterable[Any], on_error: Any = None) -> Pending:
        """Up to 64 steps in one submission; callback(the last step's return value)."""
        self._check_open("steps")
        listed = list(batches)
        if not listed:
            raise GpuLabError("VALIDATION", f"{self._label}.steps: no batches given")
        if len(listed) > MAX_STEPS:
            raise GpuLabError(
                "LIMIT",
                f"{self._label}.steps: {len(listed)} batches, past "
                f"{MAX_STEPS} per submission (split them)",
            )
        feeds = [self._feeds(tuple(b)) for b in listed]
        return self._enqueue(lambda: self._run_flow(feeds), "steps", callback, on_error)

    def _run_flow(self, feeds: list[dict[int, Any]]) -> Iterator[Any]:
        session = yield from self._session_flow()
        result = yield Steps(session, feeds)
        self._steps_run += len(feeds)
        return self._returned.rebuild(result["outputs"])

    def sync(self, callback: Any = None, on_error: Any = None) -> Pending:
        """Write parameters, gradients and optimizer.state back (after every step before)."""
        self._check_open("sync")
        return self._enqueue(self._sync_flow, "sync", callback, on_error)

    def _sync_flow(self) -> Iterator[Any]:
        if self._session is None:
            return None  # no step ran: the model and optimizer.state are current
        session = self._session
        params = {}
        for plan, node in self._param_inputs:
            params[id(plan)] = (plan, (yield Download(session, node.id)))
        states = []
        for plan, key, node in self._state_inputs:
            states.append((plan, key, (yield Download(session, node.id))))
        grads = []
        for plan, name in self._grad_names:
            grads.append((plan, (yield Download(session, name))))
        for plan, entry in params.values():
            p = plan.param
            p._value, p._node, p._rec = _tape._flat(entry), None, None
            p._version += 1
        for plan, key, entry in states:
            plan.state[key] = Tensor._leaf_of(
                _tape._flat(entry), plan.param.shape, plan.param.dtype
            )
        for plan in self.plans:  # host-side state (Adam's step count) from the shadow
            for key, value in self._shadow[id(plan)].items():
                if isinstance(value, Tensor) and key not in plan.new:
                    plan.state[key] = value
        for plan, entry in grads:
            p = plan.param
            p.grad = Tensor._leaf_of(_tape._flat(entry), p.shape, p.dtype)
        return None

    def dispose(self) -> Pending:
        """Free the session (after the operations called before); later calls refuse."""
        if self._closed:
            return Pending.ready(None, f"{self._label}.dispose")
        self._closed = True
        for plan in self.plans:
            ref, _holder = LIVE.get(id(plan.param), (None, None))
            if ref is not None and ref() is plan.param:
                del LIVE[id(plan.param)]
        if self._saved_step is None:
            self.optimizer.__dict__.pop("step", None)
        else:
            self.optimizer.step = self._saved_step

        def flow() -> Iterator[Any]:
            if self._session is not None:
                self._session.dispose()
            return None
            yield

        pending = self._enqueue(flow, "dispose", None, None)
        if in_pyodide():
            pending.submit(_ignore, _ignore)
        return pending

    @property
    def steps_run(self) -> int:
        return self._steps_run

    @property
    def backend(self) -> str | None:
        return getattr(self._session, "backend", None)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.dispose()


def _ignore(_value: Any) -> None:
    return None


def _scalar_key(key: str) -> tuple[int, int, str]:
    m = _SCALAR_KEY.match(key)
    if m is None:
        raise Unsupported(f"a host scalar keyed {key!r} (expected g<group>.p<param>.<name>)")
    return int(m.group(1)), int(m.group(2)), m.group(3)


def _batch_values(value: Any, example: Any, index: int, label: str) -> Any:
    """A batch argument as the flat values of the example's dtype, shape checked."""
    t = value if isinstance(value, Tensor) else make_tensor(value, dtype=example.dtype)
    if tuple(t.shape) != tuple(example.shape):
        raise Unsupported(
            f"{label}: argument {index} has shape {list(t.shape)}, the prepared "
            f"step was recorded for {list(example.shape)} (shapes are static: "
            "prepare another step for another batch size)"
        )
    if t.dtype.device != example.dtype.device:
        raise Unsupported(
            f"{label}: argument {index} is {t.dtype}, the prepared step was "
            f"recorded for {example.dtype}"
        )
    return t._values()
