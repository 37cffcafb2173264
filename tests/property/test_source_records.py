"""A virtual source's record is the JSON ``json.dumps`` writes for it (keys sorted, no
spaces): records are compared as text, so a record written by an older version and the same
source's record written now must be equal."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from zarrlake.model import VirtualSource


def _as_json(v: VirtualSource) -> str:
    doc: dict[str, object] = {"u": v.url, "s": v.size}
    if v.etag is not None:
        doc["e"] = v.etag
    if v.modified is not None:
        doc["m"] = v.modified
    return json.dumps(doc, separators=(",", ":"), sort_keys=True)


@given(
    st.text(),
    st.integers(min_value=0, max_value=2**63),
    st.none() | st.text(),
    st.none() | st.text(),
)
def test_a_record_is_the_json_of_the_source(url: str, size: int, etag, modified) -> None:
    v = VirtualSource(url, size, etag, modified)
    record = v.encode()
    assert record == _as_json(v)
    assert VirtualSource.decode(record) == v
