"""``embedders.openai`` against the fake server's ``/v1/embeddings``."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest
from agentsensus import Store, embedders
from fake_openai import FakeOpenAI


def test_vectors_in_order_with_dim_and_counters(fake: FakeOpenAI) -> None:
    e = embedders.openai("fake-embed", base_url=fake.url, batch_size=2)
    texts = ["the ghost", "a king", "the queen", "Elsinore"]
    assert e.dim == 32  # unknown model: one probe request
    v = e(texts)
    assert v.shape == (4, 32) and v.dtype == np.float32 and v.flags["C_CONTIGUOUS"]
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(e(texts[2:]), v[2:])  # deterministic, and in input order
    bodies = fake.log("/v1/embeddings")
    assert [b["input"] for b in bodies[1:3]] == [texts[:2], texts[2:]]  # batches of batch_size
    assert all(b["encoding_format"] == "base64" for b in bodies)
    u = e.client.usage
    assert u.calls == 4 and u.prompt_tokens > 0 and u.seconds > 0
    assert e([]).shape == (0, 32)
    with pytest.raises(TypeError):
        e("one string")  # type: ignore[arg-type]


def test_dimensions_are_asked_of_the_api(fake: FakeOpenAI) -> None:
    e = embedders.openai("fake-embed", base_url=fake.url, dimensions=16)
    assert e.dim == 16 and fake.log("/v1/embeddings") == []  # known without a request
    assert e(["x y"]).shape == (1, 16)
    assert fake.log("/v1/embeddings")[0]["dimensions"] == 16
    assert embedders.openai("text-embedding-3-small", base_url=fake.url).dim == 1536


def test_a_transient_failure_is_retried(fake: FakeOpenAI) -> None:
    e = embedders.openai("fake-embed", base_url=fake.url, dimensions=8, backoff=0.01)
    fake.script({"status": 503})
    assert e(["hello"]).shape == (1, 8)
    assert (e.client.usage.errors, e.client.usage.retries) == (1, 1)


def test_a_store_embeds_through_it(fake: FakeOpenAI, tmp_path: Any) -> None:
    e = embedders.openai("fake-embed", base_url=fake.url, dimensions=24)
    with Store(os.fspath(tmp_path / "s"), embed=e) as s:
        assert s.dim == 24
        s.deposit("Hamlet", ["The ghost walks on the platform", "Horatio doubts the tale"])
        hits = s.recall("Hamlet", "ghost on the platform", k=1, expand=False)
        assert [m.text for m in hits] == ["The ghost walks on the platform"]
