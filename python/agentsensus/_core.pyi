"""Type stub of the compiled engine module (bindings/module.cpp,
bindings/engine.hpp, bindings/fence_bindings.cpp).

The module is internal: the public API is `agentsensus.Store` and
`agentsensus.Fence`, which validate every argument before calling
here. Methods bound without ``py::arg`` names take positional arguments only.
"""

import enum
from typing import Any, Callable, Iterable, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

# Engine limits (cpp/include/agentsensus/limits.hpp, cpp/include/agentsensus/lineage.hpp).
MAX_STATEMENT_BYTES: int
MAX_STATEMENTS_PER_DEPOSIT: int
MAX_OWNER_BYTES: int
MAX_OWNERS_PER_RECORD: int
MAX_DIM: int
MAX_BATCH_KEY_BYTES: int
BATCH_DIGEST_BYTES: int
# Code points that show nothing, as inclusive (lo, hi) ranges (cpp/include/agentsensus/visible_text.hpp).
INVISIBLE_RANGES: list[tuple[int, int]]
VALUE_DIGEST_BYTES: int
MAX_KEY_BYTES: int
MAX_VALUE_BYTES: int
MAX_INPUTS: int

# float32 rows; anything else is copied (forcecast) by pybind11.
_F32 = Union[npt.NDArray[np.float32], npt.ArrayLike]
# (id, text, owners, round)
_Row = tuple[int, str, tuple[str, ...], int]
# (id, text, owners, round, score or None on expansion rows, "hit" | "edge")
_RecallRow = tuple[int, str, tuple[str, ...], int, Optional[float], str]

# (owner, round, texts, digests, vectors, targets, expected texts, kept texts)
class CommitPlan:
    """One deposit's plan for ``Engine.commit`` (cpp/include/agentsensus/rows.hpp):
    per statement its text, digest, vector row, target (0 new, > 0 a
    record, < 0 the commit's new record -target), and for a merge the text
    the policy saw (``expected``) and the text after (``kept``); for a new
    record, the record it supersedes (``supersedes``, as targets; 0 none)."""

    def __init__(
        self,
        *,
        owner: str,
        round: int,
        texts: list[str],
        digests: bytes,
        vectors: npt.NDArray[np.float32],
        targets: list[int],
        expected: list[Optional[str]],
        kept: list[Optional[str]],
        metadata: Optional[list[Optional[str]]] = None,
        scope: str = "",
        supersedes: Optional[list[int]] = None,
    ) -> None: ...
    @property
    def owner(self) -> str: ...
    @property
    def round(self) -> int: ...
    @property
    def scope(self) -> str: ...
    @property
    def texts(self) -> list[str]: ...
    @property
    def targets(self) -> list[int]: ...
    @property
    def supersedes(self) -> list[int]: ...

class Metric(enum.Enum):
    """The similarity a store compares vectors with (cpp/src/index/similarity.hpp)."""

    cos = 0
    ip = 1
    l2sq = 2

class LineageKind(enum.Enum):
    """What a lineage op writes (LineageOp::Kind in cpp/src/lineage/lineage.hpp)."""

    publish = 0
    derive = 1
    observe = 2

class StaleWhy(enum.Enum):
    """Why a frontier link is not current (cpp/src/lineage/lineage.hpp)."""

    moved = 0
    unknown = 1
    no_answer = 2
    malformed = 3

# (key, owner, recorded version, head or 0, why)
_StaleRow = tuple[str, str, int, int, StaleWhy]
# (current, stale rows, owners asked, bytes of queries and answers)
_CheckResult = tuple[bool, list[_StaleRow], int, int]
# (kind, key, owner, digest, value, version, inputs)
_LineageOp = tuple[LineageKind, str, str, bytes, bytes, int, list[tuple[str, int]]]
# The same with restore=True (import): version and kind written as given.
_RestoreOp = tuple[LineageKind, str, str, bytes, bytes, int, list[tuple[str, int]], bool]
# (id, text, owners, round, deposit, edges, text digests): a record as export
# and import move it (its vector travels in a separate float32 array)
# A said row: (n, owner, round, text, vector bytes: native float32, empty for row 0).
_SaidRow = tuple[int, str, int, str, bytes]
_DumpRow = tuple[int, str, Sequence[str], int, int, list[int], list[bytes], list[_SaidRow]]

class Error(Exception):
    """Base of the engine's own errors (``agentsensus.Error``)."""

class CorruptStoreError(Error):
    """The store's files break an invariant the engine relies on."""

class StoreFullError(Error):
    """The device has no space left for a commit; nothing was written."""

class StoreMovedError(Error):
    """The store's file was deleted or replaced while open; nothing was written."""

class Engine:
    """One open store: an LMDB environment and its vector index.

    One per store directory per process (a second open, under any path to
    the directory, raises `Error`). ``close`` waits for the calls in
    flight; every call after it, and every call in a process forked after
    the open, raises `Error`."""

    def __init__(
        self,
        path: str,
        dim: int,
        metric: Metric,
        metric_given: bool,
        create: bool,
        readonly: bool,
        sync: bool,
        exact_cutoff: int,
        map_size: int,
        expansion_search: int = 64,
    ) -> None: ...
    @property
    def dim(self) -> int: ...
    @property
    def metric(self) -> Metric: ...
    @property
    def closed(self) -> bool: ...
    def prepare(
        self,
        vectors: _F32,
        digests: bytes,
        k: int,
        min_similarity: float,
        /,
        scope: str = "",
        near_k: int = 0,
        near_floor: float = ...,
    ) -> tuple[
        int,
        list[int],
        list[int],
        npt.NDArray[np.uint64],
        npt.NDArray[np.float32],
        dict[int, tuple[str, tuple[str, ...], int]],
        Optional[tuple[list[int], npt.NDArray[np.int64], npt.NDArray[np.float32], list[bool]]],
    ]:
        """On a read snapshot: (journal seq, exact-duplicate record per
        statement or 0, candidate offsets, candidate ids, scores, the named
        records, near). Only records of ``scope`` ("" the default) are
        candidates. near is None unless ``near_k`` > 0: then (offsets, ids,
        scores, complete), per statement the records at or above
        ``near_floor`` that are not candidates (the search goes ``near_k``
        deeper), and whether they are all the scope has."""
    def commit(
        self,
        plans: list[CommitPlan],
        prepared_seq: int,
        min_similarity: float,
        /,
        batch: Optional[tuple[bytes, bytes]] = None,
        items: Any = None,
    ) -> tuple[bool, Any]:
        """One write transaction: ``(True, ids per deposit per statement)``,
        or ``(False, why)`` on a conflict with a concurrent commit. ``batch``
        (key, digest): recorded in the same transaction; a key recorded
        meanwhile is a conflict. A merge into a record of another scope than
        its plan's is refused."""
    def scope_of(self, id: int) -> str:
        """Record ``id``'s scope ("" the default); KeyError when absent."""
    def scopes_of(self, ids: list[int]) -> list[str]:
        """The scopes of many records ("" for absent ones too)."""
    def scope_names(self) -> list[str]:
        """Every named scope, in first-seen order."""
    def recall_memories(
        self,
        owner: str,
        scope: Optional[str],
        query: _F32,
        k: int,
        expand: bool,
        spec: bytes,
        threshold: float,
        memory_type: type,
        decode_metadata: Any,
    ) -> list[Any]:
        """Store.recall (scope None) or Store.recall_scoped, each row built
        as a ``memory_type`` (agentsensus.Memory) with its fields set and
        the metadata text read by ``decode_metadata``."""
    def batch_result(self, key: bytes) -> Optional[tuple[bytes, list[list[int]], list[list[bool]]]]:
        """(digest, ids, merged) recorded under a batch key, or None."""
    def batch_keys(
        self, after: bytes, limit: int
    ) -> list[tuple[bytes, tuple[bytes, list[list[int]], list[list[bool]]]]]:
        """Batch keys in key order after ``after``, with their results."""
    def load_batch_keys(self, rows: list[tuple[bytes, bytes, list[list[int]], list[list[bool]]]]) -> None:
        """Records (key, digest, ids, merged) rows in one transaction (an import)."""
    def prepare_vectors(self, vectors: _F32, /) -> npt.NDArray[np.float32]:
        """The vectors as the store keeps them: checked, unit length under cos."""
    def similarities(self, queries: _F32, kept: _F32, /) -> npt.NDArray[np.float32]:
        """(len(queries), len(kept)) similarities of kept vectors, as a
        commit compares them."""
    def recall(self, owner: str, query: _F32, k: int, expand: bool, /) -> list[_RecallRow]: ...
    @property
    def lexical_built(self) -> bool:
        """True when the store's lexical index is complete."""
    def build_lexical(self, progress: Optional[Any] = None) -> None:
        """Indexes every record's words; progress(done, total) as it goes."""
    def lexical_word_counts(
        self, texts: list[str], overlay: list[tuple[int, str, bool]], scope: str = ""
    ) -> tuple[float, float, list[list[tuple[bytes, int, float]]]]:
        """(records, mean length, per text [(word, count in the text, records holding it)]): the scope's
        BM25 statistics for each text's words, as the overlay leaves the scope."""
    def lexical(
        self,
        vectors: _F32,
        texts: Sequence[Union[str, bytes]],
        k: int,
        overlay: list[tuple[int, str, bool]],
        also: list[list[int]],
        scope: str = "",
        exclude: list[list[int]] = ...,
        floor: float = 0.0,
        mutual: float = 0.0,
        min_similarity: float = ...,
        only: Sequence[Optional[list[int]]] = ...,
    ) -> tuple[
        list[int],
        npt.NDArray[np.int64],
        npt.NDArray[np.float32],
        npt.NDArray[np.float32],
        list[list[float]],
        dict[int, tuple[str, tuple[str, ...], int]],
        list[float],
    ]:
        """(offsets, ids, lexical scores, similarities, also scores, records, least scores): each text's
        lexical top k less its exclude list; floor > 0 weighs each text as lexical_floor does, and mutual > 0
        (with a floor) leaves out the hits reaching its least score whose mutual coverage is below mutual;
        a committed hit less similar than min_similarity to its text's vector is left out; only (one entry
        per text, or none): a list, the ids the text's hits may be, scored without a search, or None."""
    def recall_fused(self, owner: str, query: _F32, text: str, k: int, expand: bool) -> list[tuple[_RecallRow, float]]:
        """[(row, lexical score)]: recall with the vector and lexical rankings fused."""
    def get(self, id: int, /) -> _Row: ...
    def neighbors(self, id: int, /) -> list[int]: ...
    def chain(self, id: int) -> list[int]:
        """The chain of versions ``id`` belongs to, oldest first."""
    def versions_of(self, ids: list[int]) -> list[tuple[Optional[int], Optional[int], Optional[int]]]:
        """Per id: (supersedes, superseded_by, valid_until), None for no link."""
    def owned(self, owner: str, /) -> list[int]: ...
    def forget(
        self,
        owner: str,
        id: int,
        expected_text: str,
        expected_rows: int,
        expected_last: int,
        text: str,
        vector_from: int,
        digests: list[bytes],
    ) -> bool:
        """``owner`` leaves record ``id`` by a plan of ``forget_plan``; False
        when the record changed since the plan read it (nothing written)."""
    def said(self, id: int) -> tuple[str, list[tuple[int, str, int, str]]]:
        """The record's text and its statements (n, owner, round, text)."""
    def records(self, after: int, limit: int, /) -> list[_Row]: ...
    def verify(self, digest: Optional[Callable[[str, str], bytes]] = None) -> list[str]:
        """Every broken invariant; with ``digest(text, scope)``, I19 too."""
    def repair(self, digests: list[tuple[int, bytes]], /) -> None: ...
    def check_alone(self) -> None:
        """Raises Error when another process has the store open (repair would refuse)."""
    def stats(self, scope: Optional[str] = None) -> dict[str, int]: ...
    def merges(self, after: int, limit: int, /) -> list[tuple[int, int, str, str, str, int]]:
        """(seq, survivor, kept, discarded, owner, round) after ``after``."""
    def dump(self, after: int, limit: int) -> tuple[list[_DumpRow], npt.NDArray[np.float32]]:
        """Records after ``after`` with everything a copy needs, and their
        stored vectors (one row each)."""
    def load(
        self,
        owners: list[str],
        rows: list[_DumpRow],
        vectors: _F32,
        merges: list[tuple[int, int, str, str, str, int]],
        counters: Optional[tuple[int, int, int]],
        scopes: Optional[list[str]] = None,
        supersedes: Optional[list[int]] = None,
    ) -> None:
        """Import: one write transaction of rows with their ids (ascending,
        after every existing one), merges with their seqs, and optionally the
        (next_id, next_merge, deposits) counters, each row's scope and the
        record it supersedes (0 none)."""
    def counters(self) -> tuple[int, int, int]:
        """(next_id, next_merge, deposits)."""
    def owner_names(self) -> list[str]:
        """Every owner name the store has seen, in first-seen order."""
    def checkpoint(self) -> int:
        """Catches the index up and saves it with that journal seq (returned)."""
    def close(self) -> None: ...

def recall_keep_gil_ns(ns: int) -> int:
    """Sets how short a recall's engine work must have been (the last time,
    for that store and owner) for the next one to keep the GIL; 0: every
    recall releases it. Returns the previous value (default 30,000)."""

def memory_from(memory_type: type, values: tuple[Any, ...]) -> Any:
    """A ``memory_type`` (``records.Memory``) of its field values in
    declaration order, made as recall makes its answers; a class whose
    fields are not slots is a ``TypeError``."""

def recall_nogil_ns() -> int:
    """Nanoseconds this thread has spent in ``Engine.recall_memories``'
    engine work with the GIL released (a bench's split of a recall)."""

def compact(path: str) -> tuple[int, int]:
    """Rewrites a closed store's data.mdb without free pages; returns
    (bytes before, bytes after)."""

def check_pages(path: str, deep: bool = True) -> list[str]:
    """Structural problems of path/data.mdb, read without LMDB's map; ``[]``
    when sound."""

class PreparedCheck:
    """A Planfence check split for a transport: the head queries per owner."""

    def groups(self) -> list[tuple[str, bytes, list[tuple[str, int, bytes]]]]:
        """(owner, encoded query, links as (key, version, digest)) per owner."""
    def __len__(self) -> int: ...

class Lineage:
    """Planfence lineage tables of one store's environment."""

    def __init__(self, engine: Engine) -> None: ...
    def apply(self, ops: Sequence[Union[_LineageOp, _RestoreOp]], commit: bool) -> list[int]: ...
    def info(self, key: str) -> tuple[str, int]:
        """(owner, head version); ``KeyError`` when unknown."""
    def value(self, key: str, version: int) -> bytes:
        """The value of ``version`` (0: the head)."""
    def keys(self) -> list[str]: ...
    def versions(self, key: str) -> list[tuple[int, LineageKind, bytes, bytes, list[tuple[str, int]]]]:
        """(version, kind, digest, value, inputs) of every recorded version."""
    def verify(self) -> list[str]:
        """Every broken lineage invariant, in plain words."""
    def frontier(self, key: str, scope: Optional[Iterable[str]]) -> list[tuple[str, str, int, bytes, bool]]:
        """(key, owner, version, digest, derived) links reachable from the head."""
    def prepare(self, key: str, scope: Optional[Iterable[str]]) -> PreparedCheck: ...
    def prepare_all(self) -> PreparedCheck: ...
    def answer(self, owner: str, query: bytes) -> bytes: ...
    def finish(self, prepared: PreparedCheck, answers: list[Optional[bytes]]) -> _CheckResult: ...
    def check_local(self, key: str, scope: Optional[Iterable[str]]) -> _CheckResult: ...
    @staticmethod
    def encode_answer(heads: list[tuple[int, bool]]) -> bytes: ...
    @staticmethod
    def encode_query(entries: list[tuple[str, int]]) -> bytes: ...
    @staticmethod
    def decode_query(query: bytes) -> list[tuple[str, int]]:
        """(key, recorded version) of each entry; ValueError when malformed."""
    @staticmethod
    def decode_answer(answer: bytes, expected: int) -> list[tuple[int, bool]]:
        """(head, same) of each of ``expected`` entries; ValueError when malformed."""
