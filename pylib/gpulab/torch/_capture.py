"""Recording one call of a compiled function into a Graph of its own, running nothing.

`Capture(name, training)` is a context manager: inside it, gpulab.torch records into a fresh
`_tape.Record` (the Graph torch.compile runs or prepares), and
- anything that needs a value now (`.item()`, `.tolist()`, `.numpy()`, printing, a Python `if`
  on a tensor: gpulab.torch's `_tape.run`) is refused by name: a compiled function is one
  graph, its values exist only after it ran;
- with training=True, `zero_grad()` (of an optimizer or a module), `loss.backward()` and
  `optimizer.step()` are counted in order, and `optimizer.step()` records its update through
  the optimizer's own `_record()` (gpulab.torch.optim) without running it: the plans come
  back in `capture.plans`;
- with training=False (torch.compile(model)), backward and step are refused;
- the `.grad` and value of the parameters that zero_grad() or backward() touch are
  remembered, and `restore()` puts them back (after a prepared recording: its gradients live in its session
  until sync(); after a refused one: nothing computed before is lost);
- with prepared=True (recording a prepared step once) `optimizer.step()` records the
  steady-state update:
  an SGD-with-momentum parameter without a momentum buffer gets a zero one for the recording
  (removed again by `restore()`; gpulab.torch.compile.FIRST_STEP says how its first step is
  fed).
The hooks are installed on gpulab.torch's classes for the duration of the `with` block (the
recording is synchronous Python) and always restored.
"""

from __future__ import annotations

import array
import math
from dataclasses import dataclass, field
from typing import Any, Self

from . import _tape
from ._refuse import Unsupported
from .nn.modules import Module
from .optim.optimizer import Optimizer
from .tensor import Tensor


@dataclass
class Plan:
    """One parameter's recorded update: its gradient's node, new["param"] and the new state
    tensors' nodes."""

    param: Tensor
    state: dict[str, Any]
    new: dict[str, Any]
    group: int
    index: int
    grad: Any


@dataclass
class Capture:
    """See the module doc. `events` lists "zero_grad", "backward", "step" as they happened."""

    name: str
    training: bool
    prepared: bool = False
    rec: _tape.Record = field(default_factory=_tape.Record)
    events: list[str] = field(default_factory=list)
    losses: list[Tensor] = field(default_factory=list)
    optimizers: list[Optimizer] = field(default_factory=list)
    plans: list[Plan] = field(default_factory=list)
    _saved: dict[str, Any] = field(default_factory=dict)
    _grads: dict[int, tuple[Tensor, tuple]] = field(default_factory=dict)
    _inserted: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    removed: dict[tuple[int, str], Tensor] = field(default_factory=dict)  # by restore()
    # prepared=True: the host random draws (torch.randn/rand/randint) in call order, each
    # (dropout draws before it, the function, its arguments, the tensor, default counters used)
    host_draws: list[tuple[int, Any, tuple, dict, Tensor, int]] = field(default_factory=list)

    def __enter__(self) -> Self:
        self._saved = {
            "record": _tape.TAPE.record,
            "run": _tape.run,
            "run_async": _tape.run_async,
            "step": Optimizer.step,
            "zero_grad": Optimizer.zero_grad,
            "module_zero_grad": Module.zero_grad,
            "backward": Tensor.backward,
        }
        _tape.TAPE.record = self.rec
        _tape.run = self._refuse_run
        _tape.run_async = self._refuse_run
        capture, saved = self, self._saved

        def step(opt: Optimizer, closure: Any = None) -> Any:
            return capture._on_step(opt, closure)

        def zero_grad(opt: Any, set_to_none: bool = True) -> None:
            capture._event("zero_grad")
            capture._remember_grads(opt)
            impl = saved["module_zero_grad" if isinstance(opt, Module) else "zero_grad"]
            impl(opt, set_to_none)

        def backward(t: Tensor, *args: Any, **kwargs: Any) -> None:
            capture._on_backward(t)
            saved["backward"](t, *args, **kwargs)

        if self.prepared:
            self._saved["random"] = _patch_random(self)
        Optimizer.step = step  # type: ignore[method-assign]
        Optimizer.zero_grad = zero_grad  # type: ignore[method-assign]
        Module.zero_grad = zero_grad  # type: ignore[method-assign]
        Tensor.backward = backward  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        saved = self._saved
        _tape.TAPE.record = saved["record"]
        _tape.run = saved["run"]
        _tape.run_async = saved["run_async"]
        Optimizer.step = saved["step"]  # type: ignore[method-assign]
        Optimizer.zero_grad = saved["zero_grad"]  # type: ignore[method-assign]
        Module.zero_grad = saved["module_zero_grad"]  # type: ignore[method-assign]
        Tensor.backward = saved["backward"]  # type: ignore[method-assign]
        for module, name, fn in saved.get("random", []):
            setattr(module, name, fn)

    def restore(self) -> None:
        """The remembered .grad values, and no inserted buffer."""
        for p, (grad, value, node, rec, version) in self._grads.values():
            p.grad, p._value, p._node, p._rec, p._version = grad, value, node, rec, version
        for state, key in self._inserted:
            self.removed[(id(state), key)] = state.pop(key)

    # -- the hooks ---------------------------------------------------------------------------

    def _remember_grads(self, owner: Any) -> None:
        if isinstance(owner, Module):
            params = list(owner.parameters())
        else:
            params = [p for group in owner.param_groups for p in group["params"]]
        self._remember(params)

    def _remember(self, params: Any) -> None:
        """The .grad and value each parameter had before this recording touched it (restore()
        puts them back: after a prepared recording, or when the recording is refused)."""
        for p in params:
            self._grads.setdefault(id(p), (p, (p.grad, p._value, p._node, p._rec, p._version)))

    def _refuse_run(self, record: Any, *args: Any, **kwargs: Any) -> Any:
        raise Unsupported(
            f"torch.compile({self.name}): a tensor's value was asked for while the compiled "
            "function was being recorded (.item(), .tolist(), .numpy(), print, or a Python "
            "`if`/`bool` on a tensor): a compiled function is one graph whose values exist "
            "only after it ran; return the tensor and read it from the result instead"
        )

    def _event(self, what: str) -> None:
        if not self.training:
            raise Unsupported(
                f"torch.compile({self.name}) records inference only, and {what}() was called "
                "inside it; compile a training step with torch.compile(step, training=True)"
            )
        self.events.append(what)

    def _on_backward(self, t: Tensor) -> None:
        self._event("backward")
        self._remember(t for t, _node in list(self.rec.leaves.values()))
        self.losses.append(t)

    def _on_step(self, opt: Optimizer, closure: Any) -> Any:
        self._event("step")
        if closure is not None:
            raise Unsupported(
                f"torch.compile({self.name}): optimizer.step(closure) is not supported inside "
                "a compiled step (call the loss and backward in the step itself)"
            )
        self.optimizers.append(opt)
        if self.prepared:
            self._inserted += steady_state(opt)
        self.plans += record_update(opt, self.rec)
        return None


def record_update(opt: Optimizer, rec: _tape.Record) -> list[Plan]:
    """optimizer.step()'s update recorded in `rec` (the current record), running nothing:
    gpulab.torch's own `Optimizer._record`, each plan located in the parameter groups."""
    assert _tape.current() is rec
    where = {
        id(p): (gi, pi) for gi, g in enumerate(opt.param_groups) for pi, p in enumerate(g["params"])
    }
    _rec, plans = opt._record()
    return [Plan(p, state, new, *where[id(p)], p.grad._node) for p, state, new in plans]


def steady_state(opt: Optimizer) -> list[tuple[dict[str, Any], str]]:
    """A zero momentum buffer for each SGD-with-momentum parameter that has a gradient and no
    buffer yet, so the recording is the step every later step is (see the module doc)."""
    from .optim.sgd import SGD

    if not isinstance(opt, SGD):
        return []
    inserted = []
    for group in opt.param_groups:
        if group["momentum"] == 0:
            continue
        for p in group["params"]:
            state = opt.state[p]
            if p.grad is not None and "momentum_buffer" not in state:
                zeros = array.array("f", bytes(4 * math.prod(p.shape)))
                state["momentum_buffer"] = Tensor._leaf_of(zeros, p.shape, p.dtype)
                inserted.append((state, "momentum_buffer"))
    return inserted


RANDOM = ("randn", "rand", "randint")  # gpulab.torch.creation's host draws (the *_like call them)


def _patch_random(capture: Capture) -> list[tuple[Any, str, Any]]:
    """Record each host random draw of a prepared recording (see Capture.host_draws): the
    function in gpulab.torch.creation and its name in the gpulab.torch package."""
    import sys

    from . import _random, creation

    package = sys.modules[__package__]
    saved = []
    for name in RANDOM:
        fn = getattr(creation, name)

        def wrapped(*args: Any, _fn: Any = fn, **kwargs: Any) -> Any:
            gen = _random.default_generator
            before = gen.counter
            t = _fn(*args, **kwargs)
            used = (gen.counter - before) & 0xFFFFFFFF
            capture.host_draws.append((len(capture.rec.draws), _fn, args, kwargs, t, used))
            return t

        for module in (creation, package):
            if getattr(module, name, None) is fn:
                saved.append((module, name, fn))
                setattr(module, name, wrapped)
    return saved
