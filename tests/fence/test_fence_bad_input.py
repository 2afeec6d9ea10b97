"""Bad input gets a clear error and writes nothing."""

from __future__ import annotations

import pytest
from agentsensus.planfence.fence import UnknownKeyError


@pytest.fixture
def f(store):
    f = store.fence
    f.publish("req", "alice", "r1")
    f.derive("plan", "dave", "p1", {"req": 1})
    return f


def _snapshot(f):
    return {k: (f.owner(k), f.head(k)) for k in f.keys()}


@pytest.mark.parametrize(
    "call, exc, words",
    [
        (lambda f: f.publish("", "alice", "x"), ValueError, "key"),
        (lambda f: f.publish("   ", "alice", "x"), ValueError, "key"),
        (lambda f: f.publish(3, "alice", "x"), TypeError, "key must be a str"),
        (lambda f: f.publish("k", "", "x"), ValueError, "owner"),
        (lambda f: f.publish("k", None, "x"), TypeError, "owner must be a str"),
        (lambda f: f.publish("k", "alice", 12), TypeError, "value must be bytes or str"),
        (lambda f: f.publish("k", "alice", "\ud800"), ValueError, "Unicode"),
        (lambda f: f.publish("k" * 2000, "alice", "x"), ValueError, "limit"),
        (lambda f: f.derive("p2", "dave", "x", {"nope": 1}), UnknownKeyError, "'nope' of 'p2' does not exist"),
        (lambda f: f.derive("p2", "dave", "x", {"req": 7}), UnknownKeyError, "no version 7"),
        (lambda f: f.derive("p2", "dave", "x", {"req": 0}), ValueError, "at least 1"),
        (lambda f: f.derive("p2", "dave", "x", {"req": True}), TypeError, "must be an int"),
        (lambda f: f.derive("p2", "dave", "x", {}), ValueError, "empty"),
        (lambda f: f.derive("p2", "dave", "x", [("req", 1)]), TypeError, "mapping"),
        (lambda f: f.derive("p2", "dave", "x", {"": 1}), ValueError, "inputs key"),
        (lambda f: f.frontier("nope"), KeyError, "nope"),
        (lambda f: f.check("nope"), KeyError, "nope"),
        (lambda f: f.check("plan", scope="req"), TypeError, "scope"),
        (lambda f: f.check("plan", heads=42), TypeError, "heads"),
        (lambda f: f.guard("plan", replan=None), TypeError, "replan"),
        (lambda f: f.value("req", 9), KeyError, "no version 9"),
        (lambda f: f.observe("req", "alice", 1, "different"), ValueError, "other content"),
        (lambda f: f.observe("req", "bob", 5, "x"), ValueError, "owned by 'alice'"),
    ],
)
def test_bad_input_is_refused_and_nothing_is_written(f, call, exc, words):
    before = _snapshot(f)
    with pytest.raises(exc, match=words):
        call(f)
    assert _snapshot(f) == before


def test_unknown_input_is_both_a_keyerror_and_a_valueerror(f):
    with pytest.raises(KeyError):
        f.derive("p2", "dave", "x", {"nope": 1})
    with pytest.raises(ValueError):
        f.derive("p2", "dave", "x", {"nope": 1})
