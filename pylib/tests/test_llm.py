"""gpulab.models.llm against transformers' LlamaForCausalLM on GGUF files written by gguf-py.

The files (gpulab.models.llm.synthetic) hold random weights under llama.cpp's names, q/k rows
permuted as llama.cpp's converter permutes them. The oracle reads the same file with gguf-py,
dequantizes with gguf.quants (the blocks' own values), undoes the permutation and runs
transformers in float32:
- prompt logits agree within float32 rounding on every native executor and weight type;
- greedy generation gives transformers' tokens while its top-two margin is clear;
- transformers' own GGUF loader reads the file to the same logits (the permutation, the names);
- a seeded sampled sequence is the same on every native lane; sampling follows softmax / top-k /
  top-p; EOS ends generation; chunking does not change the tokens;
- hostile or unsupported files are refused naming the tensor or key.
"""

from __future__ import annotations

import functools
from pathlib import Path

import gguf
import numpy as np
import pytest
from gpulab.errors import GpuLabError
from gpulab.models import llm
from gpulab.models.llm import synthetic
from gpulab.models.llm.oracle import greedy_reference, reference_logits, reference_model
from gpulab.models.llm.synthetic import ModelSpec

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def backends() -> list[str]:
    names = ["cpu-python"]
    try:
        from gpulab.native.wgpu_executor import open_executor

        open_executor(allow_software=True).dispose()
        names.append("wgpu")
    except GpuLabError:
        pass
    return names


@pytest.fixture(autouse=True)
def _software(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPULAB_ALLOW_SOFTWARE", "1")


@functools.cache
def model_file(tmp: str, spec: ModelSpec) -> Path:
    path = Path(tmp) / f"m{abs(hash(spec))}.gguf"
    synthetic.write_llama_gguf(path, spec)
    return path


@pytest.fixture(scope="module")
def tmpdir_module(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("llm"))


PROMPT = [5, 77, 130, 9, 200, 41, 3, 88]

SPECS = {
    "f32": ModelSpec(),
    "f16-untied": ModelSpec(weight_type="F16", tied=False, seed=1),
    "q8_0": ModelSpec(weight_type="Q8_0", seed=2),
    "q4_0-embd-q8_0": ModelSpec(weight_type="Q4_0", embd_type="Q8_0", seed=3, n_head_kv=4),
    # an untied output of N(0, 1 / n_embd) rows: logits of scale ~1, so sampling has choices
    # (the tied N(0, 1) embeddings give logits so peaked that any temperature is greedy)
    "q8_0-sampling": ModelSpec(weight_type="Q8_0", tied=False, seed=5),
    "q4_k-q6_k": ModelSpec(
        n_embd=256, n_head=4, n_head_kv=1, n_ff=256, weight_type="Q4_K", embd_type="Q6_K", seed=4
    ),
}


def close_logits(got: np.ndarray, want: np.ndarray) -> None:
    """Within float32 rounding of a few layers: 2e-4 of the logits' scale."""
    scale = float(np.abs(want).max())
    err = float(np.abs(np.asarray(got, np.float64) - want).max())
    assert err <= 2e-4 * scale, f"max |error| {err:.3g} for logits of scale {scale:.3g}"


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("name", list(SPECS))
def test_prompt_logits_match_transformers(tmpdir_module, name: str, backend: str) -> None:
    path = model_file(tmpdir_module, SPECS[name])
    model = llm.load(path)
    got = model.logits(PROMPT, backend=backend)
    assert np.asarray(got).shape == (len(PROMPT), model.config.vocab_size)
    close_logits(got, reference_logits(reference_model(path), PROMPT))


def test_transformers_own_gguf_loader_agrees(tmpdir_module) -> None:
    """transformers' GGUF reader (its config, dequantize and un-permutation of q/k) on our
    file: load_gguf_checkpoint, the function from_pretrained(gguf_file=) calls (without
    `accelerate`, which from_pretrained wants and the lock does not hold)."""
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

    path = str(model_file(tmpdir_module, SPECS["q8_0"]))
    config = {k: v for k, v in load_gguf_checkpoint(path)["config"].items() if k != "model_type"}
    theirs = transformers.LlamaForCausalLM(transformers.LlamaConfig(**config)).eval()
    tensors = load_gguf_checkpoint(path, return_tensors=True, model_to_load=theirs)["tensors"]
    state = {k: torch.as_tensor(np.asarray(v)) for k, v in tensors.items()}
    missing, unexpected = theirs.load_state_dict(state, strict=False)
    assert not unexpected and set(missing) <= {"lm_head.weight"}, (missing, unexpected)
    close_logits(
        llm.load(path).logits(PROMPT, backend="cpu-python"), reference_logits(theirs, PROMPT)
    )


@pytest.mark.slow  # over ~10 s of CPU: make test, not test-fast
@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("name", ["f32", "q4_0-embd-q8_0"])
def test_greedy_generation_matches_transformers(tmpdir_module, name: str, backend: str) -> None:
    path = model_file(tmpdir_module, SPECS[name])
    model = llm.load(path)
    want, margins = greedy_reference(reference_model(path), PROMPT, 16)
    streamed: list[int] = []
    got = model.generate(PROMPT, max_new_tokens=16, backend=backend, on_token=streamed.append)
    assert streamed == got
    clear = next((i for i, m in enumerate(margins) if m < 1e-3), len(margins))
    assert clear >= 8, f"the reference's margins are not clear enough to test: {margins}"
    assert got[:clear] == want[:clear]
    if model.tokenizer.eos_id not in got:
        assert len(got) == 16


@pytest.mark.parametrize("chunk", [1, 3, 64])
def test_tokens_per_submission_does_not_change_the_tokens(tmpdir_module, chunk: int) -> None:
    model = llm.load(model_file(tmpdir_module, SPECS["f32"]))
    free = model.generate(PROMPT, max_new_tokens=12, backend="cpu-python")
    fixed = model.generate(
        PROMPT, max_new_tokens=12, backend="cpu-python", tokens_per_submission=chunk
    )
    assert fixed == free


@pytest.mark.parametrize(
    "sampling",
    [
        {"temperature": 0.9},
        {"temperature": 1.3, "top_k": 5},
        {"temperature": 0.8, "top_p": 0.9},
        {"temperature": 1.0, "top_k": 8, "top_p": 0.7},
    ],
)
@pytest.mark.slow  # over ~10 s of CPU: make test, not test-fast
def test_a_seeded_sample_is_the_same_on_every_native_lane(tmpdir_module, sampling) -> None:
    model = llm.load(model_file(tmpdir_module, SPECS["q8_0-sampling"]))
    runs = {
        b: model.generate(PROMPT, max_new_tokens=12, seed=7, backend=b, **sampling)
        for b in backends()
    }
    first = next(iter(runs.values()))
    assert all(r == first for r in runs.values()), runs
    again = model.generate(PROMPT, max_new_tokens=12, seed=7, backend="cpu-python", **sampling)
    other = model.generate(PROMPT, max_new_tokens=12, seed=8, backend="cpu-python", **sampling)
    assert again == first and other != first
    assert len(set(first)) > 3, f"the sample is not random enough to compare: {first}"
    if "top_k" in sampling:  # every token is one of the top_k of its step (the reference's)
        ref = reference_model(model_file(tmpdir_module, SPECS["q8_0-sampling"]))
        seq = list(PROMPT)
        for t in first:
            logits = reference_logits(ref, seq)[-1]
            assert t in np.argsort(-logits)[: sampling["top_k"]]
            seq.append(t)


def test_eos_ends_the_generation(tmpdir_module) -> None:
    model = llm.load(model_file(tmpdir_module, SPECS["f32"]))
    full = model.generate(PROMPT, max_new_tokens=10, backend="cpu-python")
    model.tokenizer.eos_id = full[3]  # as if the 4th new token were EOS
    try:
        cut = model.generate(PROMPT, max_new_tokens=10, backend="cpu-python")
    finally:
        model.tokenizer.eos_id = 0
    assert cut == full[: full.index(full[3]) + 1]


DRAWS = 2000


@pytest.mark.slow  # over ~10 s of CPU: make test, not test-fast
def test_the_sampler_draws_from_the_softmax() -> None:
    """The device sampler alone: DRAWS draws of fixed logits through a session (one counter per
    step) follow softmax(logits / T); top_k keeps the k best, top_p the nucleus."""
    from gpulab.graph import Graph
    from gpulab.models.llm import sampling

    logits = [2.0, 1.0, 0.5, 0.0, -1.0, 3.0, 1.5, -2.0]
    probs = np.exp(np.array(logits) / 0.7)
    probs /= probs.sum()

    def draws(key: tuple, top_p: float) -> np.ndarray:
        g = Graph()
        counter = g.input([1], name="counter", dtype="uint32")
        inv = g.tensor([1 / 0.7])
        x = g.tensor(logits, shape=[1, 8])
        inputs = sampling.SamplerInputs(counter, inv, g.tensor([top_p]))
        seen = g.tensor([0.0] * 8)
        tok = sampling.sample(g, x, key, inputs)
        hits = seen + g.tensor(list(range(8)), dtype="int32").eq(tok).cast("float32")
        s = g.prepare(feeds=[counter], carry={seen: hits}, backend="cpu-python", hits=hits)
        try:
            steps = [
                {"counter": np.array([sampling.counter_for(3, p)], np.uint32)} for p in range(DRAWS)
            ]
            return np.asarray(s.run_steps(steps)["outputs"]["hits"]["array"])
        finally:
            s.dispose()

    full = draws(("basic",), 1.0)
    expected = probs * DRAWS
    chi2 = float(((full - expected) ** 2 / expected).sum())
    assert chi2 < 30, (full, expected)  # 7 degrees of freedom: p ~ 1e-4 at 30
    top2 = draws(("top", 2), 1.0)
    assert set(np.flatnonzero(top2)) == {0, 5}
    nucleus = draws(("top", 8), 0.5)  # p(5) ~ 0.54 alone reaches 0.5
    assert set(np.flatnonzero(nucleus)) == {5}


def test_context_past_the_model_is_a_limit(tmpdir_module) -> None:
    model = llm.load(model_file(tmpdir_module, SPECS["f32"]))
    with pytest.raises(GpuLabError) as err:
        model.generate(PROMPT, max_new_tokens=300, backend="cpu-python")
    assert err.value.code == "LIMIT" and "context is 256" in err.value.message
    with pytest.raises(GpuLabError, match="top_k 65 is past"):
        model.generate(PROMPT, temperature=1.0, top_k=65)
    with pytest.raises(GpuLabError, match=r"ids\[1\] = 9999 is out of range"):
        model.logits([1, 9999])


def test_unsupported_and_broken_files_are_refused_by_name(tmp_path) -> None:
    good = tmp_path / "good.gguf"
    synthetic.write_llama_gguf(good, ModelSpec(n_layer=1))
    info = llm.gguf.read(good.read_bytes()).info("blk.0.ffn_up.weight")
    assert info.shape == (128, 64)  # [n_ff, n_embd], as the graph takes it
    # a Q5_K tensor: refused naming it (the reader lists it; the model has no kernel for it)
    bad = _retype(
        tmp_path / "q5k.gguf",
        ModelSpec(n_layer=1, n_embd=256, n_ff=256, n_head=4),
        "blk.0.ffn_up.weight",
        gguf.GGMLQuantizationType.Q5_K,
    )
    with pytest.raises(GpuLabError) as err:
        llm.load(bad)
    assert err.value.code == "UNSUPPORTED" and "'blk.0.ffn_up.weight' is Q5_K" in err.value.message


def _retype(path: Path, spec: ModelSpec, name: str, qtype: object) -> Path:
    """The synthetic file with one tensor rewritten as random blocks of another type."""
    synthetic.write_llama_gguf(path, spec)
    reader = gguf.GGUFReader(str(path))
    w = gguf.GGUFWriter(str(path) + ".tmp", "llama")
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        value = field.contents()
        vtype = field.types[0]
        if vtype == gguf.GGUFValueType.ARRAY:
            w.add_key_value(key, value, vtype, sub_type=field.types[-1])
        else:
            w.add_key_value(key, value, vtype)
    rng = np.random.default_rng(0)
    for t in reader.tensors:
        shape = [int(x) for x in reversed(t.shape)]
        if t.name == name:
            per, nbytes = gguf.GGML_QUANT_SIZES[qtype]
            raw = rng.integers(0, 256, (shape[0], shape[1] // per * nbytes), dtype=np.uint8)
            w.add_tensor(t.name, raw, raw_dtype=qtype)
        else:
            w.add_tensor(
                t.name,
                np.asarray(t.data).reshape(-1).view(np.uint8).reshape(shape[0], -1)
                if t.tensor_type not in (0, 1)
                else np.asarray(t.data).reshape(shape),
                raw_dtype=None if t.tensor_type in (0, 1) else t.tensor_type,
            )
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    Path(str(path) + ".tmp").replace(path)
    return path


def _rewrite(
    src: Path,
    dst: Path,
    arch: str = "llama",
    fields: dict[str, object] | None = None,
    drop: tuple[str, ...] = (),
    add: dict[str, np.ndarray] | None = None,
) -> Path:
    """src rewritten by gguf-py's writer: metadata values replaced (`fields`, same types),
    tensors dropped or added (float32)."""
    reader = gguf.GGUFReader(str(src))
    w = gguf.GGUFWriter(str(dst), arch)
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        value = (fields or {}).get(key, field.contents())
        vtype = field.types[0]
        if vtype == gguf.GGUFValueType.ARRAY:
            w.add_key_value(key, value, vtype, sub_type=field.types[-1])
        else:
            w.add_key_value(key, value, vtype)
    for t in reader.tensors:
        if t.name not in drop:
            shape = [int(x) for x in reversed(t.shape)]
            w.add_tensor(t.name, np.asarray(t.data).reshape(shape))
    for name, values in (add or {}).items():
        w.add_tensor(name, values)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return dst


@pytest.mark.parametrize(
    ("edit", "code", "message"),
    [
        ({"drop": ("blk.0.ffn_down.weight",)}, "VALIDATION", "'blk.0.ffn_down.weight' is missing"),
        (
            {"add": {"blk.0.attn_q.bias": np.zeros(64, np.float32)}},
            "UNSUPPORTED",
            "'blk.0.attn_q.bias' has no place in the llama graph",
        ),
        (
            {"fields": {"llama.feed_forward_length": 96}},
            "VALIDATION",
            "'blk.0.ffn_gate.weight' has shape [128, 64], expected [96, 64]",
        ),
        (
            {"fields": {"llama.attention.head_count_kv": 3}},
            "VALIDATION",
            "head_count' (4) is not a multiple of head_count_kv (3)",
        ),
        ({"arch": "qwen2"}, "UNSUPPORTED", "architecture 'qwen2' is not built"),
        (
            {"fields": {"tokenizer.ggml.model": "bert"}},
            "UNSUPPORTED",
            "'tokenizer.ggml.model' is 'bert'",
        ),
    ],
)
def test_a_file_the_graph_cannot_compute_is_refused_naming_the_field(
    tmp_path: Path, edit: dict, code: str, message: str
) -> None:
    """Model-level refusals at load (the reader's own are test_gguf's): a missing tensor, a
    tensor with no place, a shape unlike the metadata's, bad head counts, another architecture,
    another tokenizer -- each names the tensor or key."""
    good = tmp_path / "good.gguf"
    synthetic.write_llama_gguf(good, ModelSpec(n_layer=1))
    bad = _rewrite(good, tmp_path / "bad.gguf", **edit)
    with pytest.raises(GpuLabError) as err:
        llm.load(bad)
    assert err.value.code == code and message in err.value.message, err.value.message
