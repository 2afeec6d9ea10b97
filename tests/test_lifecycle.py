"""Opening, closing, reopening: persistence and the dim/metric contract."""

from __future__ import annotations

import os
import subprocess
import sys

import agentsensus
import numpy as np
import pytest
from agentsensus import Store
from helpers import DIM, unit


def test_create_needs_dim(store_path):
    with pytest.raises(ValueError, match="dim is required"):
        Store(store_path)
    assert not os.path.exists(store_path), "a refused create wrote files"
    # nothing is left behind that would make a later open think it exists
    with Store(store_path, dim=DIM) as s:
        assert s.dim == DIM


def test_dim_from_embed(store_path):
    from agentsensus.embedders import HashEmbedder

    with Store(store_path, embed=HashEmbedder(32)) as s:
        assert s.dim == 32


def test_persistence_across_reopen(store_path):
    with Store(store_path, dim=DIM) as s:
        d = s.deposit("alice", ["The king is dead.", "Hamlet saw a ghost."], np.stack([unit(1), unit(2)]))
        s.deposit("bob", ["the king is DEAD."], unit(1)[None])
    with Store(store_path) as s:
        assert s.dim == DIM and s.metric == "cos"
        m = s.get(d.ids[0])
        assert m.text == "The king is dead."
        assert m.owners == frozenset({"alice", "bob"})
        assert s.neighbors(d.ids[0]) == [d.ids[1]]
        st = s.stats()
        assert (st.records, st.deposits, st.merges, st.shared, st.agents) == (2, 2, 1, 1, 2)
        hits = s.recall("bob", unit(1), k=1)
        assert [h.id for h in hits] == [d.ids[0]]


def test_reopen_with_other_dim_names_both(store_path):
    Store(store_path, dim=DIM).close()
    with pytest.raises(ValueError) as e:
        Store(store_path, dim=DIM * 2)
    assert str(DIM) in str(e.value) and str(DIM * 2) in str(e.value)


def test_reopen_with_other_metric_names_both(store_path):
    Store(store_path, dim=DIM, metric="ip").close()
    with pytest.raises(ValueError) as e:
        Store(store_path, metric="cos")
    assert "'ip'" in str(e.value) and "'cos'" in str(e.value)
    # the default metric does not count as asking for one
    with Store(store_path) as s:
        assert s.metric == "ip"


def test_bad_metric(store_path):
    with pytest.raises(ValueError, match="metric"):
        Store(store_path, dim=DIM, metric="hamming")


def test_close_twice_and_closed_errors(store_path):
    s = Store(store_path, dim=DIM)
    s.close()
    s.close()
    assert s.closed
    for call in (
        lambda: s.deposit("a", ["x"], unit(1)[None]),
        lambda: s.recall("a", unit(1)),
        lambda: s.get(1),
        lambda: s.stats(),
        lambda: s.owned("a"),
        lambda: s.forget("a", 1),
        lambda: list(s.merges()),
    ):
        with pytest.raises(agentsensus.Error, match="closed"):
            call()


def test_one_open_per_process(store_path):
    with Store(store_path, dim=DIM):
        with pytest.raises(agentsensus.Error, match="already open"):
            Store(store_path)
    Store(store_path).close()  # released on close


def test_create_false(tmp_path):
    with pytest.raises(FileNotFoundError):
        Store(tmp_path / "absent", dim=DIM, create=False)
    assert not (tmp_path / "absent").exists()


def test_readonly_refuses_writes(store_path):
    with Store(store_path, dim=DIM) as s:
        s.deposit("a", ["x"], unit(1)[None])
    with Store(store_path, readonly=True) as s:
        assert s.stats().records == 1
        assert s.recall("a", unit(1))[0].text == "x"
        with pytest.raises(agentsensus.Error, match="read-only"):
            s.deposit("a", ["y"], unit(2)[None])
        with pytest.raises(agentsensus.Error, match="read-only"):
            s.forget("a", 1)


def test_index_rebuilt_when_file_lost(store_path):
    with Store(store_path, dim=DIM) as s:
        for i in range(50):
            s.deposit("a", [f"fact {i}"], unit(i)[None])
    os.remove(os.path.join(store_path, "index.usearch"))
    with Store(store_path, dim=DIM, exact_cutoff=0) as s:
        assert s.verify() == []  # the index holds exactly the records' vectors
        assert [m.text for m in s.recall("a", unit(7), k=1)] == ["fact 7"]


def test_index_of_another_store_is_not_served(tmp_path):
    a, b = os.fspath(tmp_path / "a"), os.fspath(tmp_path / "b")
    with Store(a, dim=DIM) as s:
        for i in range(20):
            s.deposit("x", [f"a{i}"], unit(i)[None])
    with Store(b, dim=DIM) as s:
        for i in range(20):
            s.deposit("x", [f"b{i}"], unit(100 + i)[None])
    os.replace(os.path.join(a, "index.usearch"), os.path.join(b, "index.usearch"))
    with Store(b, dim=DIM, exact_cutoff=0) as s:
        assert s.verify() == []
        assert s.recall("x", unit(105), k=1)[0].text == "b5"


@pytest.mark.slow
def test_index_caught_up_after_unclean_exit(store_path):
    # A process that dies without close leaves an old index file; the next
    # open catches it up from the journal.
    with Store(store_path, dim=DIM) as s:
        s.deposit("a", ["first"], unit(1)[None])
    code = f"""
import os, sys, numpy as np
sys.path[:0] = {sys.path!r}
from agentsensus import Store
from helpers import unit
s = Store({store_path!r})
for i in range(2, 30):
    s.deposit("a", [f"fact {{i}}"], unit(i)[None])
os._exit(0)
"""
    subprocess.run([sys.executable, "-c", code], check=True, cwd=os.path.dirname(__file__))
    with Store(store_path, exact_cutoff=0) as s:
        assert s.verify() == []
        assert s.stats().records == 29
        assert s.recall("a", unit(17), k=1)[0].text == "fact 17"


def test_map_grows_instead_of_failing(store_path):
    with Store(store_path, dim=DIM, map_size=1 << 20) as s:
        big = "x" * 60_000
        for i in range(60):  # about 3.6 MB into a 1 MiB map
            s.deposit("a", [f"{i} {big}"], unit(i)[None])
        assert s.stats().records == 60
    with Store(store_path) as s:
        assert s.stats().records == 60
