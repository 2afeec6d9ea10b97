"""A store created with a named embedder reopens with it; one created with
an unnamed callable says, in one line, that it needs ``embed`` again."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest
from agentsensus import Store, embedders
from agentsensus.integrations.mcp_server import _open, embedder_from_name


def test_built_in_embedders_carry_their_names() -> None:
    assert embedders.hash.name == "hash"
    assert embedders.HashEmbedder(16).name == "hash:16"
    assert embedders.minilm.name == "minilm"
    assert embedders.sentence_transformers("some/model").name == "sentence_transformers:some/model"
    assert embedders.name_of(lambda texts: None) is None
    for name in ("hash", "hash:16", "minilm", "sentence_transformers:some/model"):
        assert embedders.from_name(name).name == name
    with pytest.raises(ValueError, match="unknown embedder"):
        embedders.from_name("nonsense")


def test_a_store_created_with_a_named_embedder_reopens_with_it(tmp_path: Any) -> None:
    path = os.fspath(tmp_path / "s")
    with Store(path, embed=embedders.HashEmbedder(16)) as s:
        s.deposit("a", ["The ghost walks at midnight"])
    with Store(path) as s:  # no embed: the recorded one
        assert s.embedder_name == "hash:16" and s.embed is not None and s.embed.name == "hash:16"
        (m,) = s.recall("a", "the ghost walks", k=1)
        assert m.text == "The ghost walks at midnight"
        s.deposit("a", ["Horatio doubts it"])  # texts, no vectors
        assert s.stats().records == 2


def test_a_different_named_embedder_is_refused(tmp_path: Any) -> None:
    path = os.fspath(tmp_path / "s")
    Store(path, embed=embedders.HashEmbedder(16)).close()
    with pytest.raises(ValueError, match="created with embedder 'hash:16'"):
        Store(path, embed=embedders.sentence_transformers("another/model", dim=16))


def test_a_store_created_with_an_unnamed_callable_needs_embed_again(tmp_path: Any) -> None:
    path = os.fspath(tmp_path / "s")

    def embed(texts: list[str]) -> Any:  # a callable without a name
        return np.asarray(embedders.HashEmbedder(8)(texts))

    with Store(path, dim=8, embed=embed) as s:
        assert s.embedder_name == ""
    with Store(path) as s:
        assert s.embed is None
        with pytest.raises(ValueError, match="created with an unnamed embed callable: pass embed="):
            s.deposit("a", ["words"])
        with pytest.raises(TypeError, match="unnamed embed callable"):
            s.recall("a", "words")
    with Store(path, embed=embed) as s:  # given again, it works
        s.deposit("a", ["words"])


def test_a_store_created_with_vectors_only_records_no_embedder(tmp_path: Any) -> None:
    path = os.fspath(tmp_path / "s")
    with Store(path, dim=4) as s:
        assert s.embedder_name is None
    with Store(path, embed=embedders.HashEmbedder(4)) as s:  # adopted by a later writable open
        assert s.embedder_name == "hash:4"
    with Store(path) as s:
        assert s.embed is not None and s.embed.name == "hash:4"


def test_mcp_embedder_persists_with_the_store(tmp_path: Any) -> None:
    path = os.fspath(tmp_path / "s")
    judge = None
    with _open(path, embedder_from_name("hash:24"), judge, 0.75) as s:
        assert s.dim == 24
    with _open(path, None, judge, 0.75) as s:  # no --embedder: the recorded one
        assert s.embed is not None and s.embed.name == "hash:24"
    with _open(os.fspath(tmp_path / "new"), None, judge, 0.75) as s:  # a new store: hash
        assert s.embedder_name == "hash" and s.dim == 384
    old = os.fspath(tmp_path / "old")
    Store(old, dim=384).close()  # a store that records no embedder
    with _open(old, None, judge, 0.75) as s:  # served with hash, and nothing recorded
        assert s.embed is embedders.hash and s.embedder_name is None
    Store(os.fspath(tmp_path / "old8"), dim=8).close()
    with pytest.raises(ValueError, match="records no embedder and has dim 8"):
        _open(os.fspath(tmp_path / "old8"), None, judge, 0.75)
