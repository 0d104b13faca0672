"""The page's model loaders refuse a file past the runtime's device memory quota before reading
it (gpulab.models.page_fetch.quota_check: the size check fetch_bytes and read_file call before
allocating), with LIMIT naming the file, its size and the quota."""

from __future__ import annotations

import pytest
from gpulab.errors import GpuLabError
from gpulab.models.page_fetch import MIB, quota_check


def test_a_file_past_the_quota_is_refused_naming_the_quota() -> None:
    check = quota_check(256 * MIB, "big.gguf")
    check(256 * MIB)  # exactly the quota: allowed
    with pytest.raises(GpuLabError) as err:
        check(256 * MIB + 1)
    assert err.value.code == "LIMIT"
    for named in ("big.gguf", "256.0 MiB", "quota of 256 MiB", "quotas.memoryBytes"):
        assert named in err.value.message, (named, err.value.message)


def test_without_a_quota_nothing_is_refused() -> None:
    quota_check(None, "any.gguf")(2**40)
