"""A pure-Python BERT WordPiece tokenizer reading a Hugging Face `tokenizer.json` (Pyodide-safe).

It follows the `tokenizers` package's pipeline for BERT (its ids are compared with ours on the
test sentences, pylib/tests/test_minilm.py):
1. added tokens (`[CLS]`, `[MASK]`, ... with `normalized: false`) written in the text are kept
   whole, as the library's added-vocabulary split does;
2. BertNormalizer: clean text (drop NUL, U+FFFD and control characters, every whitespace to a
   space), spaces around CJK ideographs, accent stripping (NFD, then drop the nonspacing marks,
   Mn; on when `strip_accents` is null and lowercase is on), lower-casing;
3. BertPreTokenizer: split on whitespace, each punctuation character its own word (ASCII
   punctuation and the Unicode P* categories);
4. WordPiece: greedy longest match first, continuation pieces prefixed `##`; a word longer than
   `max_input_chars_per_word` or with no full segmentation is `[UNK]`;
5. `[CLS] ... [SEP]`, truncated to `max_length` (256: sentence-transformers' max_seq_length for
   this model), token type 0, and `batch()` pads to the longest with `[PAD]` and mask 0.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpulab.errors import GpuLabError
from gpulab.models import untrusted_json

# Rust's char::is_whitespace (the White_Space property), which the library's split uses.
WHITESPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B920, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)


def _is_cjk(c: str) -> bool:
    cp = ord(c)
    return any(lo <= cp <= hi for lo, hi in CJK_RANGES)


def _is_control(c: str) -> bool:
    return c not in "\t\n\r" and unicodedata.category(c).startswith("C")


def _is_bert_whitespace(c: str) -> bool:
    """The normaliser's whitespace: tab, newline, carriage return, space and category Zs."""
    return c in " \t\n\r" or unicodedata.category(c) == "Zs"


def _is_punctuation(c: str) -> bool:
    return (c.isascii() and not c.isalnum() and 33 <= ord(c) <= 126) or unicodedata.category(
        c
    ).startswith("P")


def _bad(why: str) -> GpuLabError:
    return GpuLabError("VALIDATION", f"tokenizer.json: {why}")


def _check_spec(spec: Any) -> None:
    """The fields the tokenizer reads, of the types it reads them as (a file someone else
    made is refused by what is wrong with it, not by the TypeError it would cause)."""
    if not isinstance(spec, dict):
        raise _bad("is not a JSON object")
    model = spec.get("model")
    if not isinstance(model, dict) or model.get("type") != "WordPiece":
        kind = model.get("type") if isinstance(model, dict) else None
        raise _bad(f"the model is not a WordPiece model with a vocab (type {kind!r:.40})")
    vocab = model.get("vocab")
    if not isinstance(vocab, dict) or not vocab:
        raise _bad("the model's vocab is not a non-empty object")
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in vocab.values()):
        raise _bad("a vocab id is not a non-negative integer")
    for key, kind in (("continuing_subword_prefix", str), ("unk_token", str)):
        if key in model and not isinstance(model[key], kind):
            raise _bad(f"the model's {key!r} is not a string")
    chars = model.get("max_input_chars_per_word", 100)
    if isinstance(chars, bool) or not isinstance(chars, int) or chars < 0:
        raise _bad("the model's 'max_input_chars_per_word' is not a non-negative integer")
    norm = spec.get("normalizer")
    if norm is not None and not isinstance(norm, dict):
        raise _bad("the normalizer is not an object")
    added = spec.get("added_tokens", [])
    if not isinstance(added, list) or not all(
        isinstance(t, dict) and isinstance(t.get("content"), str) for t in added
    ):
        raise _bad("added_tokens is not a list of objects with a string 'content'")


@dataclass
class Encoding:
    """One sentence's token ids (with [CLS]/[SEP]) and its attention mask."""

    ids: list[int]
    mask: list[int]


class WordPiece:
    """The tokenizer of one tokenizer.json (as a dict, or read with `from_file`)."""

    def __init__(self, spec: dict[str, Any], max_length: int = 256) -> None:
        _check_spec(spec)
        model = spec["model"]
        norm = spec.get("normalizer") or {}
        self.vocab: dict[str, int] = model["vocab"]
        self.prefix: str = model.get("continuing_subword_prefix", "##")
        self.max_chars: int = int(model.get("max_input_chars_per_word", 100))
        self.lowercase = bool(norm.get("lowercase", True))
        accents = norm.get("strip_accents")
        self.strip_accents = self.lowercase if accents is None else bool(accents)
        self.clean_text = bool(norm.get("clean_text", True))
        self.chinese = bool(norm.get("handle_chinese_chars", True))
        self.added = sorted(
            (t["content"] for t in spec.get("added_tokens", []) if t["content"] in self.vocab),
            key=len,
            reverse=True,
        )
        self.unk, self.cls, self.sep, self.pad = (
            self._special(model.get("unk_token", "[UNK]")),
            self._special("[CLS]"),
            self._special("[SEP]"),
            self._special("[PAD]"),
        )
        if max_length < 2:
            raise GpuLabError("VALIDATION", f"max_length must be at least 2, got {max_length}")
        self.max_length = max_length

    @classmethod
    def from_file(cls, path: str | Path, max_length: int = 256) -> WordPiece:
        return cls(
            untrusted_json.loads(Path(path).read_bytes(), str(path), "WordPiece"), max_length
        )

    def _special(self, token: str) -> int:
        if token not in self.vocab:
            raise GpuLabError("VALIDATION", f"tokenizer.json: the vocab has no {token!r}")
        return self.vocab[token]

    # -- pipeline ------------------------------------------------------------------------

    def normalize(self, text: str) -> str:
        if self.clean_text:
            text = "".join(
                " " if _is_bert_whitespace(c) else c
                for c in text
                if c not in "\x00\ufffd" and not _is_control(c)
            )
        if self.chinese:
            text = "".join(f" {c} " if _is_cjk(c) else c for c in text)
        if self.strip_accents:
            text = "".join(
                c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn"
            )
        return text.lower() if self.lowercase else text

    def pre_tokenize(self, text: str) -> list[str]:
        words: list[str] = []
        current: list[str] = []
        for c in text:
            if c in WHITESPACE or _is_punctuation(c):
                if current:
                    words.append("".join(current))
                    current = []
                if c not in WHITESPACE:
                    words.append(c)
            else:
                current.append(c)
        if current:
            words.append("".join(current))
        return words

    def word_ids(self, word: str) -> list[int]:
        """WordPiece of one word: greedy longest match first, or [UNK]."""
        if len(word) > self.max_chars:
            return [self.unk]
        ids, start = [], 0
        while start < len(word):
            end, found = len(word), None
            while start < end:
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                if piece in self.vocab:
                    found = self.vocab[piece]
                    break
                end -= 1
            if found is None:
                return [self.unk]
            ids.append(found)
            start = end
        return ids

    def tokens(self, text: str) -> list[int]:
        """The ids of `text` without [CLS]/[SEP] and without truncation."""
        ids: list[int] = []
        for part, special in self._split_added(text):
            if special:
                ids.append(self.vocab[part])
                continue
            for word in self.pre_tokenize(self.normalize(part)):
                ids.extend(self.word_ids(word))
        return ids

    def _split_added(self, text: str) -> list[tuple[str, bool]]:
        """The text cut around the added tokens written in it (kept whole, not normalised)."""
        parts: list[tuple[str, bool]] = []
        i = start = 0
        while i < len(text):
            hit = (
                next((t for t in self.added if text.startswith(t, i)), None)
                if text[i] == "["
                else None
            )
            if hit is None:
                i += 1
                continue
            if i > start:
                parts.append((text[start:i], False))
            parts.append((hit, True))
            i = start = i + len(hit)
        if start < len(text):
            parts.append((text[start:], False))
        return parts

    def encode(self, text: str) -> Encoding:
        if not isinstance(text, str):
            raise GpuLabError("VALIDATION", f"a sentence must be a str, got {type(text).__name__}")
        ids = [self.cls, *self.tokens(text)[: self.max_length - 2], self.sep]
        return Encoding(ids, [1] * len(ids))

    def batch(
        self, texts: list[str], length: int | None = None
    ) -> tuple[list[int], list[int], int]:
        """Flat row-major ids and mask of the sentences padded to `length` (default: the
        longest), and that length."""
        encs = [self.encode(t) for t in texts]
        width = max(len(e.ids) for e in encs) if length is None else length
        ids: list[int] = []
        mask: list[int] = []
        for e in encs:
            if len(e.ids) > width:
                raise GpuLabError(
                    "VALIDATION",
                    f"a sentence has {len(e.ids)} tokens, more than the padded length {width}",
                )
            pad = width - len(e.ids)
            ids += e.ids + [self.pad] * pad
            mask += e.mask + [0] * pad
        return ids, mask, width
