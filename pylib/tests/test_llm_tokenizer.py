"""The tokenizer a GGUF file describes (gpulab.models.llm.tokenizer) against the `tokenizers`
library's, built from the same vocabulary:

- "gpt2" byte-level BPE: transformers' GGUF converter for the gpt2 and llama-bpe pre-tokenizers;
  for SmolLM2's "smollm" (which that converter does not know) the pipeline of SmolLM2's
  tokenizer.json built with `tokenizers` directly (digits isolated, then GPT-2's byte level);
- "llama" SentencePiece-style BPE over scores: transformers' GGUF converter (merges recovered
  from the scores, byte fallback);
- the same ids on texts with digits, contractions, whitespace runs, newlines, punctuation,
  accents, CJK, emoji (byte fallback) and special tokens; decode gives the text back; streamed
  decoding gives the same text token by token.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from gpulab.errors import GpuLabError
from gpulab.models import llm
from gpulab.models.llm import synthetic
from gpulab.models.llm.synthetic import ModelSpec

transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Once upon a time there was a little language model",
    "  leading spaces, trailing spaces   ",
    "numbers 3.14159 and 2718 and 1234567",
    "it's, they're, we've, I'll, she'd, I'M, DON'T",
    "lines\nand\n\nmore lines\r\n\ttabs\t\there",
    "Zürich, café, naïve and 東京 are words too",
    "emoji 🦙🚀 and symbols ∑ ≠ ∞",
    "punctuation!!! ... ??? (brackets) [and] {braces} <tags>",
    "",
    " ",
    "a",
]
SPECIAL_TEXTS = [
    "<|im_start|>user\nhello<|im_end|>",
    "text<|endoftext|>more text",
]


@functools.cache
def gguf_file(tmp: str, spec: ModelSpec) -> Path:
    path = Path(tmp) / f"tok{abs(hash(spec))}.gguf"
    synthetic.write_llama_gguf(path, spec)
    return path


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("llm_tok"))


def small(tokenizer: str, pre: str = "smollm") -> ModelSpec:
    return ModelSpec(
        n_layer=1,
        n_embd=32,
        n_head=2,
        n_head_kv=1,
        n_ff=32,
        tokenizer=tokenizer,
        pre=pre,
        merges=300,
    )


def transformers_tokenizer(path: Path):
    return transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)


def smollm_tokenizer(model: llm.LLM):
    """SmolLM2's tokenizer.json pipeline over the file's vocabulary and merges."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    tk = model.tokenizer
    vocab = {t: i for i, t in enumerate(tk.tokens)}
    merges = [tuple(m.split(" ")) for m in model.file.array("tokenizer.ggml.merges", ("string",))]
    ref = Tokenizer(models.BPE(vocab, merges))
    ref.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )
    ref.decoder = decoders.ByteLevel()
    ref.add_special_tokens([AddedToken(t, special=True) for t in synthetic.SPECIALS])
    return ref


def reference_ids(ref, text: str) -> list[int]:
    if isinstance(ref, tokenizers.Tokenizer):
        return ref.encode(text, add_special_tokens=False).ids
    return ref.encode(text, add_special_tokens=True)


@pytest.mark.parametrize("pre", ["smollm", "gpt2", "llama-bpe"])
def test_byte_level_bpe_matches_tokenizers(tmp: str, pre: str) -> None:
    path = gguf_file(tmp, small("gpt2", pre))
    model = llm.load(path)
    ref = smollm_tokenizer(model) if pre == "smollm" else transformers_tokenizer(path)
    for text in TEXTS + SPECIAL_TEXTS:
        want = reference_ids(ref, text)
        assert model.tokenizer.encode(text) == want, text
        assert model.tokenizer.decode(want, skip_special_tokens=False) == text, text
    merged = model.tokenizer.encode(TEXTS[1])
    assert len(merged) < len(TEXTS[1].encode()), "the merges were not applied"


def test_sentencepiece_bpe_matches_transformers(tmp: str) -> None:
    """transformers' LlamaTokenizer from the file, and the same with llama.cpp's prefix space:
    llama.cpp (llm_tokenizer_spm) always prepends one, where the Metaspace pre-tokenizer skips
    it for text that already starts with a space -- transformers' own phi3 builder swaps in the
    always-prepend normalizer for that reason."""
    from tokenizers import normalizers

    path = gguf_file(tmp, small("llama"))
    model = llm.load(path)
    metaspace = transformers_tokenizer(path)
    always = transformers_tokenizer(path)
    always.backend_tokenizer.normalizer = normalizers.Sequence(
        [normalizers.Prepend(prepend="\u2581"), normalizers.Replace(pattern=" ", content="\u2581")]
    )
    always.backend_tokenizer.pre_tokenizer = None
    tk = model.tokenizer
    assert tk.add_bos and tk.bos_id == 1 and tk.eos_id == 2
    for text in TEXTS:
        want = always.encode(text, add_special_tokens=True)
        assert tk.encode(text) == want, (text, [tk.tokens[i] for i in want])
        if not text.startswith(" "):
            assert metaspace.encode(text, add_special_tokens=True) == want, text
        assert tk.decode(want) == always.decode(want, skip_special_tokens=True), text
    fallback = tk.encode("🦙", add_special_tokens=False)
    assert [tk.tokens[i] for i in fallback][-4:] == ["<0xF0>", "<0x9F>", "<0xA6>", "<0x99>"]


@pytest.mark.parametrize("kind", ["gpt2", "llama"])
def test_streamed_decode_is_the_whole_decode(tmp: str, kind: str) -> None:
    model = llm.load(gguf_file(tmp, small(kind)))
    tk = model.tokenizer
    for text in TEXTS:
        ids = tk.encode(text, add_special_tokens=False)
        stream = tk.stream()
        pieces = [stream.push(i) for i in ids] + [stream.flush()]
        assert "".join(pieces) == tk.decode(ids), text
        assert all("\ufffd" not in p for p in pieces), pieces


def test_bad_ids_and_text_are_refused(tmp: str) -> None:
    tk = llm.load(gguf_file(tmp, small("gpt2"))).tokenizer
    with pytest.raises(GpuLabError, match="token id 99999 is out of range"):
        tk.decode([1, 99999])
    with pytest.raises(GpuLabError, match="encode takes a str"):
        tk.encode(b"bytes")  # type: ignore[arg-type]
