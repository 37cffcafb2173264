"""The content hashes a repo may record: each is the standard function (digests of the empty
input pinned), any buffer hashes as its bytes, and an unknown name is refused."""

from __future__ import annotations

import numpy as np
import pytest

from zarrlake.errors import InvalidInputError
from zarrlake.model.hashing import CONTENT_HASHES, DEFAULT_CONTENT_HASH, chunk_hasher

EMPTY = {
    "blake3": "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262",
    "sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
}


def test_the_functions_are_blake3_and_sha256_and_new_repos_take_blake3() -> None:
    assert sorted(CONTENT_HASHES) == sorted(EMPTY)
    assert DEFAULT_CONTENT_HASH == "blake3"
    for name, digest in EMPTY.items():
        assert chunk_hasher(name)(b"").hex() == digest


@pytest.mark.parametrize("name", sorted(EMPTY))
def test_a_view_hashes_as_its_bytes(name: str) -> None:
    data = np.arange(1000, dtype="f4")
    hasher = chunk_hasher(name)
    h = hasher(data.tobytes())
    assert hasher(memoryview(data)) == hasher(bytearray(data.tobytes())) == h
    assert hasher.matches(memoryview(data), h)
    assert not hasher.matches(data.tobytes()[:-1], h)


@pytest.mark.parametrize("name", ["md5", "SHA256", "blake2b", ""])
def test_an_unknown_content_hash_is_refused(name: str) -> None:
    with pytest.raises(InvalidInputError, match=f"unknown content hash {name!r}"):
        chunk_hasher(name)
