"""``ConsensusStore`` as a key-value store answers as LangGraph's reference
``InMemoryStore`` does, for any sequence of puts, deletes, gets, filtered
searches and namespace listings (hypothesis draws them)."""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

import pytest
from agentsensus.integrations.langgraph import ConsensusStore
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.memory import InMemoryStore

labels = st.sampled_from(["a", "b"])
namespaces = st.lists(labels, min_size=1, max_size=2).map(tuple)
keys = st.sampled_from(["k0", "k1", "k2"])
values = st.fixed_dictionaries(
    {
        "n": st.integers(0, 2),
        "tag": st.sampled_from(["x", "y"]),
        "inner": st.fixed_dictionaries({"m": st.integers(0, 2)}),
    }
)
# Filters on fields every value has: InMemoryStore raises on a comparison
# with a missing field (float(None)), where ConsensusStore does not match.
filters = st.one_of(
    st.none(),
    st.fixed_dictionaries({"n": st.integers(0, 2)}),
    st.fixed_dictionaries(
        {"tag": st.sampled_from(["x", "y"]), "inner": st.fixed_dictionaries({"m": st.integers(0, 2)})}
    ),
    st.builds(
        lambda op, v: {"n": {op: v}}, st.sampled_from(["$gt", "$gte", "$lt", "$lte", "$ne", "$eq"]), st.integers(0, 2)
    ),
)
puts = st.tuples(st.just("put"), namespaces, keys, values)
ops = st.one_of(
    puts,
    puts,  # twice: more items for the reads to find
    st.tuples(st.just("delete"), namespaces, keys),
    st.tuples(st.just("get"), namespaces, keys),
    st.tuples(
        st.just("search"), st.lists(labels, max_size=2).map(tuple), filters, st.integers(0, 4), st.integers(0, 3)
    ),
    st.tuples(
        st.just("list"),
        st.one_of(st.none(), st.lists(st.sampled_from(["a", "b", "*"]), min_size=1, max_size=2).map(tuple)),
        st.one_of(st.none(), st.lists(st.sampled_from(["a", "c", "*"]), min_size=1, max_size=2).map(tuple)),
        st.one_of(st.none(), st.integers(1, 3)),
    ),
)


def _run(store: Any, op: tuple[Any, ...]) -> Any:
    kind = op[0]
    if kind == "put":
        return store.put(op[1], op[2], op[3])
    if kind == "delete":
        return store.delete(op[1], op[2])
    if kind == "get":
        item = store.get(op[1], op[2])
        return None if item is None else (item.namespace, item.key, item.value)
    if kind == "search":
        _, prefix, filter, limit, offset = op
        # Both stores page in their own order (InMemoryStore: insertion,
        # ConsensusStore: most recently updated): compare what a page-through finds.
        every = store.search(prefix, filter=filter, limit=100)
        page = store.search(prefix, filter=filter, limit=limit, offset=offset)
        return (
            sorted((i.namespace, i.key, str(i.value)) for i in every),
            len(page),
            {(i.namespace, i.key) for i in page} <= {(i.namespace, i.key) for i in every},
        )
    _, prefix, suffix, depth = op
    return sorted(store.list_namespaces(prefix=prefix, suffix=suffix, max_depth=depth, limit=100))


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ops, min_size=1, max_size=20))
def test_answers_as_the_reference_store(program: list[tuple[Any, ...]]) -> None:
    tmp = tempfile.mkdtemp(prefix="lg-property-")
    try:
        with ConsensusStore(os.path.join(tmp, "s"), sync=False) as ours:
            reference = InMemoryStore()
            for op in program:
                assert _run(ours, op) == _run(reference, op), op
                # InMemoryStore keeps listing a namespace that a get or a delete
                # touched with no item in it (its defaultdict makes the entry);
                # SqliteStore and ConsensusStore list the namespaces that hold items.
                for empty in [ns for ns, items in reference._data.items() if not items]:
                    del reference._data[empty]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
