"""Helpers of the hostile-input tests: a memory-capped child process for inputs that would
allocate without bound, the fuzz lanes' example counts, the loaders' byte-level fuzz registry,
and the ONNX operators' seed models."""
