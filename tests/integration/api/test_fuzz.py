"""Generated bodies thrown at the stage endpoints never make the service fail (no 5xx), and whatever is
refused answers problem+json."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.integration.api.conftest import SyncApi

# Any code point, lone surrogates included (JSON can carry them as \u escapes), and path-ish characters.
odd_text = st.text(
    alphabet=st.characters() | st.sampled_from(["/", ".", "\x00", "\\", '"', "%"]), max_size=40
)
segments = st.lists(st.one_of(odd_text, st.sampled_from(["", ".", "..", "a", "é"])), max_size=6)
paths = st.one_of(odd_text, segments.map(lambda parts: "/" + "/".join(parts)), st.just("/"))
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | odd_text,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(odd_text, children, max_size=4),
    max_leaves=12,
)
file_entries = st.one_of(
    st.fixed_dictionaries(
        {"path": paths},
        optional={"diskLifetime": json_values, "targetedMetadata": json_values, "other": json_values},
    ),
    json_values,
)
stage_bodies = st.one_of(
    st.fixed_dictionaries({"files": st.lists(file_entries, max_size=6)}, optional={"extra": json_values}),
    st.fixed_dictionaries({"files": json_values}),
    json_values,
)
raw_bodies = st.one_of(
    stage_bodies.map(lambda body: json.dumps(body).encode()),
    st.binary(max_size=60),
    odd_text.map(lambda text: text.encode("utf-8", "surrogatepass")),
)


def _post(api: SyncApi, url: str, body: bytes) -> None:
    response = api.post(url, content=body, headers={"Content-Type": "application/json"})
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        assert response.headers["content-type"].startswith("application/problem+json")
        problem: dict[str, Any] = response.json()
        assert problem["status"] == response.status_code
    else:
        assert response.status_code == 201


@settings(max_examples=150)
@given(body=raw_bodies)
def test_stage_never_fails(api: SyncApi, body: bytes) -> None:
    _post(api, "/api/v1/stage/", body)


@settings(max_examples=60)
@given(body=raw_bodies)
def test_native_submit_never_fails(api: SyncApi, body: bytes) -> None:
    _post(api, "/api/native/v1/requests", body.replace(b'"files"', b'"paths"'))


@settings(max_examples=60)
@given(paths=st.lists(paths, max_size=6))
def test_archive_info_never_fails(api: SyncApi, paths: list[str]) -> None:
    body = json.dumps({"paths": paths}).encode()
    response = api.post("/api/v1/archiveinfo", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 200
    assert len(response.json()) == len(paths)
