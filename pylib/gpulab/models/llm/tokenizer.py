"""The tokenizer a GGUF file describes in its metadata, pure Python (no `regex`, no numpy).

`tokenizer.ggml.model` picks the algorithm, as llama.cpp's llama-vocab.cpp does:

- "gpt2": byte-level BPE. Text is cut by the pre-tokenizer of `tokenizer.ggml.pre` (gpt2's
  pattern; "smollm" splits every digit first; "llama-bpe" / "llama3" Llama 3's pattern), each
  piece's UTF-8 bytes are spelled in GPT-2's byte alphabet and merged by `tokenizer.ggml.merges`
  (lowest rank first, leftmost on ties).
- "llama": SentencePiece-style BPE over `tokenizer.ggml.scores`: spaces become "▁", a "▁" is
  prepended (`tokenizer.ggml.add_space_prefix`, default true), then the adjacent pair whose joined
  text is a token of the highest score is merged first (leftmost on ties); a character with no
  token falls back to its bytes' `<0xXX>` tokens (`<unk>` without them).

Control and user-defined tokens (`tokenizer.ggml.token_type` 3 and 4) in the text are matched
whole (longest first), as transformers' added tokens and llama.cpp's `parse_special` do. BOS is
prepended when `tokenizer.ggml.add_bos_token` says so (default: yes for "llama", no for "gpt2"),
EOS appended likewise (default no). The pre-tokenizer patterns are hand-written scanners of the
same alternatives (unicodedata for \\p{L} / \\p{N}, Unicode's White_Space for \\s), so the page
needs no `regex` module.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterable, Sequence

from gpulab.errors import GpuLabError

from .gguf import GGUFFile

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
WHITESPACE = frozenset(
    [*map(chr, range(0x09, 0x0E)), " ", "\x85", "\xa0", "\u1680"]
    + [chr(c) for c in range(0x2000, 0x200B)]
    + ["\u2028", "\u2029", "\u202f", "\u205f", "\u3000"]
)
SPACE_MARK = "\u2581"  # ▁

__all__ = ["Tokenizer", "read_tokenizer"]


def _bad(message: str, code: str = "VALIDATION") -> GpuLabError:
    return GpuLabError(code, f"gguf: {message}")


# -- GPT-2's byte alphabet ----------------------------------------------------------------------


def _byte_alphabet() -> dict[int, str]:
    """GPT-2's bytes_to_unicode: printable bytes as themselves, the rest shifted past 255."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1)]
    keep += range(ord("®"), ord("ÿ") + 1)
    table, n = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + n)
            n += 1
    return table


BYTE_CHAR = _byte_alphabet()
CHAR_BYTE = {c: b for b, c in BYTE_CHAR.items()}


# -- pre-tokenizers: the regex alternatives as scanners ------------------------------------------


def _letter(c: str) -> bool:
    return unicodedata.category(c)[0] == "L"


def _number(c: str) -> bool:
    return unicodedata.category(c)[0] == "N"


def _other(c: str) -> bool:
    """[^\\s\\p{L}\\p{N}]"""
    return c not in WHITESPACE and not _letter(c) and not _number(c)


def _run(text: str, i: int, test: Callable[[str], bool]) -> int:
    """The end of the run of characters passing `test` from i."""
    n = len(text)
    while i < n and test(text[i]):
        i += 1
    return i


def _contraction(text: str, i: int, fold: bool) -> int:
    if text[i] != "'":
        return i
    rest = text[i + 1 : i + 3]
    rest = rest.lower() if fold else rest
    for c in ("re", "ve", "ll", "s", "t", "m", "d"):
        if rest.startswith(c):
            return i + 1 + len(c)
    return i


def _space_then(text: str, i: int, test: Callable[[str], bool]) -> int:
    """` ?X+`: an optional U+0020, then a run of X (i when there is none)."""
    j = i + 1 if text[i] == " " else i
    end = _run(text, j, test) if j < len(text) else j
    if end > j:
        return end
    return _run(text, i, test)


def _spaces(text: str, i: int) -> int:
    """`\\s+(?!\\S)|\\s+`: a whitespace run, leaving its last character to the next piece when
    a non-space follows it (and the run is longer than one)."""
    end = _run(text, i, WHITESPACE.__contains__)
    if end == i:
        return i
    if end < len(text) and end - i > 1:
        return end - 1
    return end


def gpt2_piece(text: str, i: int) -> int:
    """`'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+`"""
    for end in (
        _contraction(text, i, False),
        _space_then(text, i, _letter),
        _space_then(text, i, _number),
        _space_then(text, i, _other),
        _spaces(text, i),
    ):
        if end > i:
            return end
    return i + 1


def llama3_piece(text: str, i: int) -> int:
    """`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}
    | ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`"""
    n = len(text)
    end = _contraction(text, i, True)
    if end > i:
        return end
    c = text[i]
    j = i + 1 if (c not in "\r\n" and not _letter(c) and not _number(c) and i + 1 < n) else i
    end = _run(text, j, _letter)
    if end > j:
        return end
    end = _run(text, i, _letter)
    if end > i:
        return end
    end = _run(text, i, _number)
    if end > i:
        return min(end, i + 3)
    end = _space_then(text, i, _other)
    if end > i:
        return _run(text, end, "\r\n".__contains__)
    ws = _run(text, i, WHITESPACE.__contains__)
    last_newline = max((k + 1 for k in range(i, ws) if text[k] in "\r\n"), default=i)
    if last_newline > i:
        return last_newline
    end = _spaces(text, i)
    return end if end > i else i + 1


def _split(text: str, piece: Callable[[str, int], int]) -> list[str]:
    out, i = [], 0
    while i < len(text):
        end = piece(text, i)
        out.append(text[i:end])
        i = end
    return out


def _digits_apart(text: str) -> list[str]:
    """`\\p{N}` isolated: each digit a piece of its own, the text between kept whole."""
    out, start = [], 0
    for i, c in enumerate(text):
        if _number(c):
            if i > start:
                out.append(text[start:i])
            out.append(c)
            start = i + 1
    if start < len(text):
        out.append(text[start:])
    return out


def _gpt2(text: str) -> list[str]:
    return _split(text, gpt2_piece)


def _smollm(text: str) -> list[str]:
    return [p for part in _digits_apart(text) for p in _split(part, gpt2_piece)]


def _llama3(text: str) -> list[str]:
    return _split(text, llama3_piece)


PRE_TOKENIZERS: dict[str, Callable[[str], list[str]]] = {
    "default": _gpt2,
    "gpt2": _gpt2,
    "gpt-2": _gpt2,
    "smollm": _smollm,
    "llama-bpe": _llama3,
    "llama3": _llama3,
    "llama-v3": _llama3,
}


# -- the tokenizer -------------------------------------------------------------------------------


class Tokenizer:
    """encode(text) -> ids and decode(ids) -> text for one vocabulary."""

    def __init__(
        self,
        model: str,
        tokens: Sequence[str],
        token_types: Sequence[int],
        scores: Sequence[float] | None,
        merges: Sequence[str] | None,
        pre: str,
        bos_id: int | None,
        eos_id: int | None,
        unk_id: int | None,
        add_bos: bool,
        add_eos: bool,
        add_space_prefix: bool,
    ) -> None:
        self.model = model
        self.tokens = list(tokens)
        self.token_types = list(token_types)
        self.ids = {t: i for i, t in reversed(list(enumerate(self.tokens)))}
        self.scores = list(scores) if scores is not None else None
        self.bos_id, self.eos_id, self.unk_id = bos_id, eos_id, unk_id
        self.add_bos, self.add_eos = add_bos, add_eos
        self.add_space_prefix = add_space_prefix
        self.pre = pre
        self._ranks = {}
        if merges is not None:
            for rank, merge in enumerate(merges):
                left, sep, right = merge.partition(" ")
                if not sep:
                    raise _bad(f"tokenizer.ggml.merges[{rank}] {merge!r} is not two tokens")
                self._ranks.setdefault((left, right), rank)
        specials = [
            t
            for t, kind in zip(self.tokens, self.token_types)
            if kind in (CONTROL, USER_DEFINED) and t
        ]
        self._specials = sorted(set(specials), key=len, reverse=True)
        self._byte_ids = {}
        if model == "llama":
            for b in range(256):
                tok = f"<0x{b:02X}>"
                if tok in self.ids:
                    self._byte_ids[b] = self.ids[tok]

    @property
    def vocab_size(self) -> int:
        return len(self.tokens)

    # -- encode --------------------------------------------------------------------------

    def encode(
        self, text: str, add_special_tokens: bool = True, parse_special: bool = True
    ) -> list[int]:
        """Token ids of text: BOS / EOS as the file says (add_special_tokens), control and
        user-defined tokens in the text matched whole (parse_special)."""
        if not isinstance(text, str):
            raise GpuLabError("VALIDATION", f"encode takes a str, got {type(text).__name__}")
        ids: list[int] = []
        if add_special_tokens and self.add_bos and self.bos_id is not None:
            ids.append(self.bos_id)
        first = True
        for fragment, special in self._fragments(text, parse_special):
            if special:
                ids.append(self.ids[fragment])
            else:
                ids.extend(self._encode_text(fragment, first))
            first = False
        if add_special_tokens and self.add_eos and self.eos_id is not None:
            ids.append(self.eos_id)
        return ids

    def _fragments(self, text: str, parse_special: bool) -> Iterable[tuple[str, bool]]:
        if not parse_special or not self._specials:
            if text:
                yield text, False
            return
        start = i = 0
        while i < len(text):
            hit = next((s for s in self._specials if text.startswith(s, i)), None)
            if hit is None:
                i += 1
                continue
            if i > start:
                yield text[start:i], False
            yield hit, True
            i += len(hit)
            start = i
        if start < len(text):
            yield text[start:], False

    def _encode_text(self, text: str, first: bool) -> list[int]:
        if self.model == "gpt2":
            split = PRE_TOKENIZERS[self.pre]
            out: list[int] = []
            for piece in split(text):
                word = "".join(BYTE_CHAR[b] for b in piece.encode("utf-8"))
                out.extend(self._bpe_ids(word))
            return out
        if self.add_space_prefix and first:
            text = " " + text
        return self._spm(text.replace(" ", SPACE_MARK))

    def _bpe_ids(self, word: str) -> list[int]:
        """GPT-2 BPE of one pre-token: merge the adjacent pair of lowest rank until none."""
        symbols = list(word)
        while len(symbols) > 1:
            best, at = None, -1
            for k in range(len(symbols) - 1):
                rank = self._ranks.get((symbols[k], symbols[k + 1]))
                if rank is not None and (best is None or rank < best):
                    best, at = rank, k
            if best is None:
                break
            symbols[at : at + 2] = [symbols[at] + symbols[at + 1]]
        out = []
        for s in symbols:
            if s in self.ids:
                out.append(self.ids[s])
            else:  # a symbol with no token: its characters (each byte has one)
                out.extend(self.ids[c] for c in s if c in self.ids)
        return out

    def _spm(self, text: str) -> list[int]:
        """SentencePiece BPE by score: merge the highest-scoring adjacent pair whose joined
        text is a token (leftmost on ties), then byte fallback for what has no token."""
        scores = self.scores or [0.0] * len(self.tokens)
        symbols = list(text)
        while len(symbols) > 1:
            best, at = None, -1
            for k in range(len(symbols) - 1):
                tok = self.ids.get(symbols[k] + symbols[k + 1])
                if tok is not None and (best is None or scores[tok] > best):
                    best, at = scores[tok], k
            if best is None:
                break
            symbols[at : at + 2] = [symbols[at] + symbols[at + 1]]
        out = []
        for s in symbols:
            tok = self.ids.get(s)
            if tok is not None:
                out.append(tok)
                continue
            for b in s.encode("utf-8"):
                byte = self._byte_ids.get(b, self.unk_id)
                if byte is not None:
                    out.append(byte)
        return out

    # -- decode --------------------------------------------------------------------------

    def token_bytes(self, token_id: int, skip_special: bool = True) -> bytes:
        """The bytes a token stands for (b"" for a control token when skip_special)."""
        if not 0 <= token_id < len(self.tokens):
            raise GpuLabError(
                "VALIDATION",
                f"token id {token_id} is out of range (vocabulary of {len(self.tokens)})",
            )
        kind = self.token_types[token_id] if token_id < len(self.token_types) else NORMAL
        text = self.tokens[token_id]
        if kind == CONTROL:
            return b"" if skip_special else text.encode("utf-8", "surrogateescape")
        if self.model == "gpt2":
            if kind == USER_DEFINED:
                return text.encode("utf-8", "surrogateescape")
            return bytes(CHAR_BYTE.get(c, 63) for c in text)  # 63: "?" for a foreign char
        if kind == BYTE and len(text) == 6 and text.startswith("<0x"):
            return bytes([int(text[3:5], 16)])
        return text.replace(SPACE_MARK, " ").encode("utf-8", "surrogateescape")

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = True) -> str:
        """The text of ids (invalid UTF-8 as U+FFFD); a SentencePiece vocabulary's prefix space
        is dropped, as transformers' decoder drops it."""
        raw = b"".join(self.token_bytes(int(i), skip_special_tokens) for i in ids)
        text = raw.decode("utf-8", "replace")
        if self.model == "llama" and self.add_space_prefix and text.startswith(" "):
            text = text[1:]
        return text

    def stream(self, skip_special_tokens: bool = True) -> TokenStream:
        """A decoder fed one token at a time that emits only complete characters."""
        return TokenStream(self, skip_special_tokens)


class TokenStream:
    """Incremental decode: `push(id)` returns the text that became complete (a character
    split over several byte tokens waits for its last byte)."""

    def __init__(self, tokenizer: Tokenizer, skip_special: bool) -> None:
        self._tk = tokenizer
        self._skip = skip_special
        self._pending = b""
        self._started = False

    def push(self, token_id: int) -> str:
        self._pending += self._tk.token_bytes(int(token_id), self._skip)
        text, self._pending = _complete_utf8(self._pending)
        if text and not self._started:
            self._started = True
            if self._tk.model == "llama" and self._tk.add_space_prefix and text.startswith(" "):
                text = text[1:]
        return text

    def flush(self) -> str:
        rest, self._pending = self._pending, b""
        return rest.decode("utf-8", "replace")


def _complete_utf8(data: bytes) -> tuple[str, bytes]:
    """(the text of data's complete characters, the trailing bytes of an unfinished one)."""
    cut = len(data)
    for back in range(1, min(4, len(data)) + 1):
        b = data[-back]
        if b & 0xC0 == 0x80:  # a continuation byte: look further back
            continue
        need = 2 if b >> 5 == 6 else 3 if b >> 4 == 14 else 4 if b >> 3 == 30 else 1
        if need > back:
            cut = len(data) - back
        break
    return data[:cut].decode("utf-8", "replace"), data[cut:]


def read_tokenizer(f: GGUFFile) -> Tokenizer:
    """The tokenizer of a GGUF file's `tokenizer.ggml.*` metadata."""
    model = f.string("tokenizer.ggml.model")
    if model not in ("gpt2", "llama"):
        raise _bad(
            f"key 'tokenizer.ggml.model' is {model!r}: gpt2 (byte-level BPE) and llama "
            "(SentencePiece BPE) are read",
            "UNSUPPORTED",
        )
    tokens = f.array("tokenizer.ggml.tokens", ("string",))
    if not tokens:
        raise _bad("key 'tokenizer.ggml.tokens' is missing or empty")
    types = f.array("tokenizer.ggml.token_type", ("int32", "uint32", "int8", "uint8"))
    types = list(types) if types is not None else [NORMAL] * len(tokens)
    scores = f.array("tokenizer.ggml.scores", ("float32", "float64"))
    merges = f.array("tokenizer.ggml.merges", ("string",))
    for key, values in (("token_type", types), ("scores", scores)):
        if values is not None and len(values) != len(tokens):
            raise _bad(
                f"key 'tokenizer.ggml.{key}' has {len(values)} entries for {len(tokens)} tokens"
            )
    pre = f.string("tokenizer.ggml.pre", "default") if model == "gpt2" else "default"
    if model == "gpt2":
        if merges is None:
            raise _bad("key 'tokenizer.ggml.merges' is missing (a gpt2 vocabulary needs them)")
        if pre not in PRE_TOKENIZERS:
            raise _bad(
                f"key 'tokenizer.ggml.pre' is {pre!r}: the pre-tokenizers read are "
                f"{', '.join(sorted(PRE_TOKENIZERS))}",
                "UNSUPPORTED",
            )

    def token_id(key: str) -> int | None:
        if key not in f:
            return None
        value = f.integer(key)
        if not 0 <= value < len(tokens):
            raise _bad(f"key {key!r} is {value}, not a token id (vocabulary of {len(tokens)})")
        return value

    def flag(key: str, default: bool) -> bool:
        field = f.fields.get(key)
        if field is None:
            return default
        if field.type != "bool":
            raise _bad(f"key {key!r} is a {field.type}, expected a bool")
        return bool(field.value)

    return Tokenizer(
        model=model,
        tokens=tokens,
        token_types=types,
        scores=scores,
        merges=merges,
        pre=pre,
        bos_id=token_id("tokenizer.ggml.bos_token_id"),
        eos_id=token_id("tokenizer.ggml.eos_token_id"),
        unk_id=token_id("tokenizer.ggml.unknown_token_id"),
        add_bos=flag("tokenizer.ggml.add_bos_token", model == "llama"),
        add_eos=flag("tokenizer.ggml.add_eos_token", False),
        add_space_prefix=flag("tokenizer.ggml.add_space_prefix", True),
    )
