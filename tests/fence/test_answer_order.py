"""An owner answers a head query whatever order its keys come in: the wire
format allows any order (only its size assumes sorted keys), and a query
from another implementation need not be sorted."""

from __future__ import annotations

from agentsensus import Store


def _varint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _query(entries: list[tuple[str, int]]) -> bytes:
    # heads_codec.hpp, without front coding: shared prefix 0 for every key.
    q = bytearray([1]) + _varint(len(entries))
    for key, recorded in entries:
        b = key.encode()
        q += _varint(0) + _varint(len(b)) + b + _varint(recorded)
    return bytes(q)


def _heads(answer: bytes) -> list[int]:
    assert answer[0] == 1
    out, v, shift = [], 0, 0
    for c in answer[2:]:  # every count here fits one varint byte
        v |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            out.append(v >> 1)
            v, shift = 0, 0
    assert len(out) == answer[1]
    return out


def test_unsorted_and_repeated_keys_are_answered_like_sorted_ones(store: Store) -> None:
    f = store.fence
    for k in ("a", "b", "m", "z"):
        f.publish(k, "o", "v")
    f.publish("m", "o", "v2")
    f.publish("n", "other", "v")
    asked = ["z", "a", "m", "b", "b", "nope", "a", "n", "z"]
    heads = _heads(f.answer("o", _query([(k, 1) for k in asked])))
    expect = {"a": 1, "b": 1, "m": 2, "z": 1, "nope": 0, "n": 0}  # n is another owner's
    assert heads == [expect[k] for k in asked]
    assert _heads(f.answer("o", _query([(k, 1) for k in sorted(asked)]))) == [expect[k] for k in sorted(asked)]
