"""``agentsensus import``: a JSON Lines export (see `agentsensus.io.export`)
read back into a new store that is the same store: the same record ids,
texts, owners, rounds, vectors, edges, text digests, merge log, counters and
Planfence lineage.

The store is built in a temporary directory beside the target and renamed
into place only when everything loaded and the result verified clean with
the export's own stats, so a bad line, a crash or Ctrl-C leaves no store at
the target.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import shutil
import tempfile
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, Union

import numpy as np

from .. import _core
from .._store.normalize import text_digest
from .._store.record_meta import check_metadata
from .._store.scopes import check_scope
from .._store.validation import INT64_MAX, MAX_NESTING, MAX_TIME_US, check_json_value, check_owner
from ..errors import Error
from ..planfence.fence import value_digest
from .batch_keys_io import BatchKeyLoader
from .export import FORMAT
from .items_io import ItemLoader
from .leftovers import PREFIX, hold, release, remove_abandoned_imports

if TYPE_CHECKING:
    from ..store import Store

__all__ = ["Imported", "import_jsonl"]

_KINDS = _core.LineageKind.__members__  # export writes each kind's name
_LINEAGE_BATCH = 1024


@dataclass(frozen=True)
class Imported:
    """What an import wrote."""

    records: int = 0
    merges: int = 0
    keys: int = 0
    versions: int = 0


class _Bad(ValueError):
    pass


def _get(row: dict[str, Any], name: str, kind: Union[type, tuple[type, ...]]) -> Any:
    if name not in row:
        raise _Bad(f"has no {name!r}")
    v = row[name]
    if isinstance(v, bool) and kind is not bool or not isinstance(v, kind):
        raise _Bad(f"{name!r} is {type(v).__name__}, not the expected type")
    return v


def _uint(row: dict[str, Any], name: str, top: int = INT64_MAX) -> int:
    v: int = _get(row, name, int)
    if v < 0:
        raise _Bad(f"{name!r} is negative")
    if v > top:
        raise _Bad(f"{name!r} is {v}, above the limit of {top}")
    return v


def _time(row: dict[str, Any], name: str) -> int:
    """Microseconds since the epoch, within what a datetime can show."""
    return _uint(row, name, MAX_TIME_US)


def _owner(name: Any, what: str) -> str:
    """An owner name as a deposit would take it (validation.check_owner),
    and already in that form: import never renames an owner."""
    try:
        checked = check_owner(name, what)
    except (TypeError, ValueError) as e:
        raise _Bad(str(e)) from None
    if checked != name:
        raise _Bad(f"{what} {name!r} is not in Unicode NFC form (the store's owner names are)")
    return checked


def _b64(row: dict[str, Any], name: str) -> bytes:
    try:
        return base64.b64decode(_get(row, name, str), validate=True)
    except binascii.Error as e:
        raise _Bad(f"{name!r} is not base64: {e}") from None


def _hex(v: Any, what: str) -> bytes:
    if not isinstance(v, str):
        raise _Bad(f"{what} is not a hex string")
    try:
        return bytes.fromhex(v)
    except ValueError:
        raise _Bad(f"{what} is not hex") from None


class _Loader:
    """Streams the lines into an open store, one engine batch at a time."""

    def __init__(
        self, store: "Store", header: dict[str, Any], batch: int, progress: Optional[Callable[[int, int], None]]
    ) -> None:
        self.store = store
        self.engine, self.lineage = store._handles()
        self.dim = store.dim
        self.batch = batch
        self.progress = progress
        self.total = int(header["stats"].get("records", 0)) if isinstance(header.get("stats"), dict) else 0
        agents = header.get("agents", [])
        if not isinstance(agents, list) or not all(isinstance(a, str) for a in agents):
            raise _Bad("'agents' must be a list of owner names")
        self.agents: list[str] = [_owner(a, "an owner") for a in agents]
        counters = _get(header, "counters", dict)
        self.counters = (_uint(counters, "next_id"), _uint(counters, "next_merge"), _uint(counters, "deposits"))
        self.format: int = header["format"]
        self.rows: list[tuple[Any, ...]] = []
        self.scopes: list[str] = []  # per row, its scope ("" the default; format 4 names others)
        self.supersedes: list[int] = []  # per row, the record it superseded (0 none; format 5)
        self.vectors: list[np.ndarray] = []
        self.merges: list[tuple[Any, ...]] = []
        self.meta: list[tuple[Any, ...]] = []  # (id, created, updated, [(owner, json)]) of the batch's records
        # (lower, higher) listed by lower, not yet by higher -> the line of lower
        self.pending_edges: dict[tuple[int, int], int] = {}
        self.keys: dict[str, tuple[str, int, list[dict[str, Any]]]] = {}
        self.counts = {"record": 0, "merge": 0}
        self.first_line: Optional[int] = None  # of the lines in the unflushed batch
        self.line = 1
        self.last_id = self.last_seq = 0
        # Digests no text of their record's line explains yet, by record:
        # the merge lines (after every record) may still explain them.
        self.unexplained: dict[int, tuple[int, str, set[bytes]]] = {}  # id -> (line, scope, digests)

    def _flush(self) -> None:
        if not self.rows and not self.merges:
            return
        vectors = np.stack(self.vectors) if self.vectors else np.zeros((0, self.dim), np.float32)
        try:
            self.engine.load(
                self.agents, self.rows, vectors, self.merges, None, scopes=self.scopes, supersedes=self.supersedes
            )
            if self.meta:
                self.engine.load_meta(self.meta)  # after its records, which it names
        except (ValueError, KeyError) as e:
            raise ValueError(f"lines {self.first_line}-{self.line}: {e}") from None
        self.agents = []
        self.first_line = None
        self.counts["record"] += len(self.rows)
        self.counts["merge"] += len(self.merges)
        self.rows, self.vectors, self.merges, self.meta, self.scopes, self.supersedes = [], [], [], [], [], []
        if self.progress:
            self.progress(self.counts["record"], self.total)

    def record(self, row: dict[str, Any]) -> None:
        rid = _uint(row, "id")
        if rid <= self.last_id:
            raise _Bad(f"record {rid} comes after record {self.last_id}: ids must ascend")
        self.last_id = rid
        owners = _get(row, "owners", list)
        edges = _get(row, "edges", list)
        digests = [_hex(d, "a digest") for d in _get(row, "digests", list)]
        if not all(isinstance(o, str) for o in owners):
            raise _Bad("'owners' must be a list of names")
        for o in owners:
            _owner(o, "an owner")
        if not all(isinstance(e, int) and not isinstance(e, bool) and e > 0 for e in edges):
            raise _Bad("'edges' must be a list of record ids")
        raw = _b64(row, "vector")
        if len(raw) != 4 * self.dim:
            raise _Bad(f"'vector' holds {len(raw)} bytes, not {4 * self.dim} (dim {self.dim}, float32)")
        for e in edges:
            if e > rid:
                self.pending_edges[(rid, e)] = self.line
            elif (e, rid) in self.pending_edges:
                del self.pending_edges[(e, rid)]
            else:
                raise _Bad(f"record {rid} lists an edge to record {e}, which does not list it back")
        said = []
        said_rows = row.get("said", []) if self.format >= 3 else []
        if not isinstance(said_rows, list):
            raise _Bad("'said' must be a list of objects")
        for st in said_rows:
            if not isinstance(st, dict):
                raise _Bad("'said' must be a list of objects")
            vec = b""
            if "vector" in st:
                vec = _b64(st, "vector")
                if len(vec) != 4 * self.dim:
                    raise _Bad(f"a 'said' vector holds {len(vec)} bytes, not {4 * self.dim}")
                vec = np.frombuffer(vec, dtype="<f4").astype(np.float32).tobytes()
            said.append(
                (_uint(st, "n"), _get(st, "owner", str), _uint(st, "round", 0xFFFFFFFF), _get(st, "text", str), vec)
            )
        scope = _get(row, "scope", str) if "scope" in row else ""
        if scope:
            try:
                check_scope(scope)
            except (TypeError, ValueError) as e:
                raise _Bad(str(e)) from None
        text = _get(row, "text", str)
        self._check_digests(rid, scope, digests, [text, *(st[3] for st in said)])
        prev = _uint(row, "supersedes") if "supersedes" in row else 0
        if prev and prev >= rid:
            raise _Bad(f"record {rid} supersedes record {prev}, which is not older")
        self.scopes.append(scope)
        self.supersedes.append(prev)
        self.rows.append(
            (rid, text, owners, _uint(row, "round", 0xFFFFFFFF), _uint(row, "deposit"), edges, digests, said)
        )
        self.vectors.append(np.frombuffer(raw, dtype="<f4").astype(np.float32))
        meta = _record_meta(row, rid, owners)
        if meta is not None:
            self.meta.append(meta)
        if len(self.rows) >= self.batch:
            self._flush()

    def _check_digests(self, rid: int, scope: str, digests: list[bytes], texts: list[str]) -> None:
        """A digest must be one of the record's texts' (recomputed with the
        store's normalization): one of another text would merge every later
        deposit of that text into this record. Those the line does not
        explain wait for the merge lines."""
        for d in digests:
            if len(d) != 16:
                raise _Bad(f"a digest holds {len(d)} bytes, not 16")
        left = set(digests) - {text_digest(t, scope) for t in texts if t}
        if left:
            self.unexplained[rid] = (self.line, scope, left)

    def merge(self, row: dict[str, Any]) -> None:
        seq = _uint(row, "seq")
        if seq <= self.last_seq:
            raise _Bad(f"merge {seq} comes after merge {self.last_seq}: seqs must ascend")
        self.last_seq = seq
        survivor, kept, discarded = _uint(row, "survivor"), _get(row, "kept", str), _get(row, "discarded", str)
        waiting = self.unexplained.get(survivor)
        if waiting is not None:
            line, scope, left = waiting
            left -= {text_digest(kept, scope), text_digest(discarded, scope)}
            if not left:
                del self.unexplained[survivor]
        self.merges.append((seq, survivor, kept, discarded, _get(row, "owner", str), _uint(row, "round", 0xFFFFFFFF)))
        if len(self.merges) >= self.batch:
            self._flush()

    def key(self, row: dict[str, Any]) -> None:
        key = _get(row, "key", str)
        if key in self.keys:
            raise _Bad(f"key {key!r} appears twice")
        versions = _get(row, "versions", list)
        if not all(isinstance(v, dict) for v in versions):
            raise _Bad("'versions' must be a list of objects")
        self.keys[key] = (_owner(_get(row, "owner", str), "the key's owner"), _uint(row, "head"), versions)

    def _lineage_ops(self) -> list[tuple[Any, ...]]:
        """Every version as a restore op, inputs before the versions derived
        from them (Kahn's order over the input links)."""
        ops: dict[tuple[str, int], tuple[Any, ...]] = {}
        waits: dict[tuple[str, int], int] = {}
        dependents: dict[tuple[str, int], list[tuple[str, int]]] = {}
        for key, (owner, _head, versions) in self.keys.items():
            for v in versions:
                version = _uint(v, "version")
                kind = _get(v, "kind", str)
                if kind not in _KINDS:
                    raise _Bad(f"key {key!r} version {version}: kind {kind!r} is not publish, derive or observe")
                value = _b64(v, "value_b64")
                digest = _hex(_get(v, "digest", str), "a digest")
                if digest != value_digest(value):
                    raise _Bad(f"key {key!r} version {version}: the digest does not match the value")
                inputs = []
                for pair in v.get("inputs", []) if kind == "derive" else []:
                    if (
                        not isinstance(pair, list)
                        or len(pair) != 2
                        or not isinstance(pair[0], str)
                        or not isinstance(pair[1], int)
                        or isinstance(pair[1], bool)
                    ):
                        raise _Bad(f"key {key!r} version {version}: an input must be [key, version]")
                    inputs.append((pair[0], pair[1]))
                node = (key, version)
                if node in ops:
                    raise _Bad(f"key {key!r} has version {version} twice")
                ops[node] = (_KINDS[kind], key, owner, digest, value, version, inputs, True)
                waits[node] = len(inputs)
                for dep in inputs:
                    dependents.setdefault(dep, []).append(node)
        for dep in dependents:
            if dep not in ops:
                raise _Bad(f"an input names version {dep[1]} of {dep[0]!r}, which the export does not hold")
        ready = [n for n, w in waits.items() if w == 0]
        order: list[tuple[Any, ...]] = []
        while ready:
            node = ready.pop()
            order.append(ops[node])
            for d in dependents.get(node, []):
                waits[d] -= 1
                if waits[d] == 0:
                    ready.append(d)
        if len(order) != len(ops):
            raise _Bad("the lineage's input links form a cycle")
        return order

    def finish(self) -> Imported:
        self._flush()
        if self.unexplained:
            rid, (line, _scope, left) = min(self.unexplained.items())
            raise _Bad(
                f"line {line}: record {rid} carries text digest {min(left).hex()}, which is the digest of none "
                f"of its texts (its text, statements or merge log): refused, or deposits of that other text would "
                f"merge into record {rid}"
            )
        if self.pending_edges:
            lo, hi = min(self.pending_edges)
            raise _Bad(
                f"line {self.pending_edges[(lo, hi)]}: record {lo} lists an edge to record {hi}, "
                "which is not in the export or does not list it back"
            )
        try:
            self.engine.load(self.agents, [], np.zeros((0, self.dim), np.float32), [], self.counters)
        except (ValueError, KeyError) as e:
            raise _Bad(f"in the store line's counters: {e}") from None
        order = self._lineage_ops()
        for i in range(0, len(order), _LINEAGE_BATCH):
            try:
                self.lineage.apply(order[i : i + _LINEAGE_BATCH], True)
            except (ValueError, KeyError, Error) as e:
                raise _Bad(f"in the lineage: {e}") from None
        for key, (owner, head, _versions) in self.keys.items():
            got = tuple(self.lineage.info(key))
            if got != (owner, head):
                raise _Bad(f"key {key!r}: owner and head are {got} after import, the export says {(owner, head)}")
        return Imported(self.counts["record"], self.counts["merge"], len(self.keys), len(order))


def _record_meta(row: dict[str, Any], rid: int, owners: list[str]) -> Optional[tuple[Any, ...]]:
    """A record line's times and metadata as load_meta takes them; None when it has neither."""
    has_times = "created_at" in row or "updated_at" in row
    created = _time(row, "created_at") if has_times else None
    updated = _time(row, "updated_at") if has_times else None
    per_owner = row.get("metadata", {})
    if not isinstance(per_owner, dict):
        raise _Bad("'metadata' must be an object of owner -> metadata object")
    pairs = []
    for owner, value in sorted(per_owner.items()):
        if owner not in owners:
            raise _Bad(f"'metadata' names {owner!r}, who does not own record {rid}")
        try:
            pairs.append((owner, check_metadata(value, f"the metadata of {owner!r}")))
        except (TypeError, ValueError) as e:
            raise _Bad(str(e)) from None
    if not has_times and not pairs:
        return None
    return (rid, created, updated, pairs)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number (an export holds finite numbers only)")


def _parse(n: int, line: str) -> dict[str, Any]:
    """One line as an object with a "type"; every hostile shape (nesting
    past MAX_NESTING, an integer outside int64, NaN or inf, a number too
    long to read) is a ``ValueError`` naming the line."""
    try:
        row = json.loads(line, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise ValueError(f"line {n}: not JSON: {e}") from None
    except RecursionError:
        raise ValueError(f"line {n}: nested deeper than {MAX_NESTING} levels") from None
    except ValueError as e:  # NaN/inf, or an integer past Python's digit limit
        raise ValueError(f"line {n}: {e}") from None
    if not isinstance(row, dict) or not isinstance(row.get("type"), str):
        raise ValueError(f'line {n}: not an object with a "type"')
    # An item's value is the caller's JSON, as deep and wide as its store took it.
    shape = {k: v for k, v in row.items() if k != "value"} if row["type"] == "item" else row
    try:
        check_json_value(shape, "the line")
    except (TypeError, ValueError) as e:
        raise ValueError(f"line {n}: {e}") from None
    return row


def _load(lines: Iterable[str], tmp: str, batch: int, progress: Optional[Callable[[int, int], None]]) -> Imported:
    from ..store import Store

    it = iter(enumerate(lines, 1))
    first = next(it, None)
    if first is None:
        raise ValueError('the export is empty (line 1 must be the "store" line)')
    header = _parse(*first)
    if header["type"] != "store":
        raise ValueError('line 1: the first line must be the "store" line')
    fmt = header.get("format")
    if fmt not in (2, 3, 4, FORMAT) or isinstance(fmt, bool):
        raise ValueError(
            f"line 1: export format {fmt!r}; this version imports formats 2, 3, 4 and {FORMAT} "
            f"(format 1 has no vectors: export the store again with this version)"
        )
    try:
        dim, metric = _uint(header, "dim"), _get(header, "metric", str)
        try:
            made = Store(tmp, dim=dim, metric=metric, judge=None)
        except ValueError as e:  # a dim or metric the engine refuses is the header's fault
            raise _Bad(str(e)) from None
        with made as store:
            loader = _Loader(store, header, batch, progress)
            phase = 0  # records, then merges, then keys
            items = ItemLoader()  # item lines, loaded after everything else (io/items_io.py)
            batch_keys = BatchKeyLoader()  # batch lines, likewise (io/batch_keys_io.py)
            for n, line in it:
                if not line.strip():
                    continue
                loader.line = n
                row = _parse(n, line)
                if row["type"] == "item":
                    items.add(n, row)
                    continue
                if row["type"] == "batch":
                    batch_keys.add(n, row)
                    continue
                kind = (
                    ("record", "merge", "key").index(row["type"]) if row["type"] in ("record", "merge", "key") else -1
                )
                if kind < 0:
                    raise ValueError(f"line {n}: unknown type {row['type']!r}")
                if kind < phase:
                    raise ValueError(
                        f"line {n}: a {row['type']} line after the {('record', 'merge', 'key')[phase]} lines"
                    )
                if kind < 2 and loader.first_line is None:
                    loader.first_line = n
                phase = kind
                try:
                    (loader.record, loader.merge, loader.key)[kind](row)
                except _Bad as e:
                    raise ValueError(f"line {n}: {e}") from None
            try:
                result = loader.finish()
            except _Bad as e:
                raise ValueError(str(e)) from None
            items.finish(store)
            batch_keys.finish(store)
            embedder = header.get("embedder")
            if embedder is not None:
                if not isinstance(embedder, str):
                    raise ValueError("line 1: 'embedder' must be a str")
                store._handles().engine.set_setting("embedder", embedder)
        # Reopened from disk: what a user will open must verify clean and say
        # what the export said.
        with Store(tmp, create=False) as store:
            problems = store.verify()
            if problems:
                raise ValueError("the imported store does not verify: " + "; ".join(problems[:5]))
            want = header.get("stats")
            got = asdict(store.stats())
            if isinstance(want, dict) and want != got:
                raise ValueError(f"the imported store's stats {got} differ from the export's {want}")
        return result
    except _Bad as e:
        raise ValueError(f"line 1: {e}") from None


def import_jsonl(
    lines: Iterable[str],
    path: Union[str, "os.PathLike[str]"],
    *,
    batch: int = 4096,
    progress: Optional[Callable[[int, int], None]] = None,
) -> Imported:
    """Builds a new store at ``path`` from the lines of an export (a text
    file or any iterable of lines) and returns the counts.

    ``path`` must not exist, or be an empty directory. ``batch`` records go
    into one write transaction; ``progress(records_done, records_total)`` is
    called after each. A malformed line raises ``ValueError`` naming it, and
    nothing is left at ``path``.
    """
    target = os.fspath(path)
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch must be a positive int, got {batch!r}")
    if os.path.exists(target) and (not os.path.isdir(target) or os.listdir(target)):
        raise FileExistsError(f"{target} exists and is not empty: import writes a new store")
    parent = os.path.dirname(os.path.abspath(target))
    remove_abandoned_imports(target)
    tmp = tempfile.mkdtemp(prefix=os.path.basename(os.path.abspath(target)) + PREFIX, dir=parent)
    lock = hold(tmp)  # in use until closed: see io/leftovers.py
    try:
        result = _load(lines, tmp, batch, progress)
        if os.path.isdir(target):
            os.rmdir(target)
        release(tmp)
        os.rename(tmp, target)
        fd = os.open(parent, os.O_RDONLY)  # the rename itself survives a crash
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        return result
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        os.close(lock)
