"""Llama-family language models from GGUF files, the same in the page and natively."""
