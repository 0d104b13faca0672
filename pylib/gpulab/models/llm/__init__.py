"""Llama-family language models from GGUF files, the same in the page and natively.

    from gpulab.models import llm
    model = llm.load("model.gguf")
    ids = model.tokenizer.encode("Once upon a time")
    print(model.tokenizer.decode(model.generate(ids, max_new_tokens=32)))

Modules: `gguf` (the bounded reader), `config` / `weights` (the model from the file),
`tokenizer` (from the file's metadata), `llama` / `step` (the graphs), `sampling` (on the
device), `session` (generation), `model` (the interface), `synthetic` (random-weight files for
tests and benchmarks). docs/llm.md has the rest.
"""

from . import gguf
from .config import Config
from .model import LLM, SERVED_MODEL_URL, load, load_async, served_model
from .tokenizer import Tokenizer

__all__ = [
    "LLM",
    "SERVED_MODEL_URL",
    "Config",
    "Tokenizer",
    "gguf",
    "load",
    "load_async",
    "served_model",
]
