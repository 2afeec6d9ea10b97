"""What a write costs in LLM calls and tokens: agentsensus's write path with
its LLM judge (``agentsensus.judges.llm``) against mem0's
``Memory.add(infer=True)``, both on the same counting fake endpoint.

    python bench/compare.py --llm-cost [--facts 250] [--agents 10]
    python bench/llm_cost.py ...                # the same

The stream is judge_requests.py's: ``--facts`` facts, each told by one of
``--agents`` agents and restated in other words by another (2 x facts
statements, each fact's first telling first). Vectors come from the hash
embedder (no model), the same for both systems, so neither embeds through
the endpoint. The endpoint (llm_fake_endpoint.py, on 127.0.0.1) knows
which statement tells which fact: it answers the judge with the candidate
of the same fact, and mem0's extraction with the statement as the one new
memory unless an existing memory shown already tells that fact; so the
records stored show whether each system found its duplicates, and the
calls and tokens what finding them cost. Tokens are estimated as
characters / 4 for both.

agentsensus runs at its defaults (hybrid candidates, the default
``lexical_floor``, ``keep_names``), depositing one statement per ``deposit``, and as
``deposit_many`` rounds of ``--round`` statements (one per agent) and of
the whole stream. mem0 2.2 (local Qdrant, offline) adds one statement per
``add`` into one shared ``user_id`` (a per-agent ``user_id`` or
``agent_id`` would hide one agent's memories from another's restatement);
``add(infer=True)`` is one extraction call per add in mem0 2.x (its
ADD-only pipeline: no separate update call), its prompt mem0's own.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from typing import Any, Callable

import numpy as np

os.environ.setdefault("MEM0_TELEMETRY", "False")  # offline: no telemetry posts
os.environ.setdefault("OPENAI_API_KEY", "unused-offline")  # mem0 builds an OpenAI embedder it never calls here

from agentsensus import Store, judges  # noqa: E402
from agentsensus.embedders import HashEmbedder  # noqa: E402
from judge_requests import deposit_stream, make_stream  # noqa: E402
from llm_fake_endpoint import CountingEndpoint  # noqa: E402

Stream = list[tuple[str, str, int]]


def run_agentsensus(stream: Stream, vecs: np.ndarray, url: str, batch: int) -> int:
    """Deposits the stream into a new store (batch 0: one statement per
    deposit); returns the records stored."""
    judge = judges.llm("fake-model", base_url=url, api_key="fake")
    with tempfile.TemporaryDirectory() as d:
        with Store(os.path.join(d, "s"), dim=vecs.shape[1], judge=judge, sync=False) as s:
            deposit_stream(s, stream, vecs, batch)
            return int(s.stats().records)


class _HashEmbedding:
    """mem0's embedder interface over the hash embedder."""

    def __init__(self, embed: HashEmbedder) -> None:
        self.embed_fn = embed

    def embed(self, text: str, memory_action: Any = None) -> list[float]:
        return [float(x) for x in self.embed_fn([text])[0]]

    def embed_batch(self, texts: list[str], memory_action: Any = None) -> list[list[float]]:
        return [[float(x) for x in row] for row in self.embed_fn(list(texts))]


def run_mem0(stream: Stream, embed: HashEmbedder, url: str, dim: int) -> int:
    """Adds the stream one statement per ``add(infer=True)``; returns the memories stored."""
    logging.getLogger("mem0").setLevel(logging.ERROR)
    from mem0 import Memory

    with tempfile.TemporaryDirectory() as d:
        config = {
            "llm": {
                "provider": "openai",
                "config": {"model": "gpt-4o-mini", "openai_base_url": url, "api_key": "fake"},
            },
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "collection_name": "memories",
                    "path": os.path.join(d, "qdrant"),
                    "embedding_model_dims": dim,
                },
            },
            "history_db_path": os.path.join(d, "history.db"),
        }
        memory = Memory.from_config(config)
        memory.embedding_model = _HashEmbedding(embed)
        try:
            for agent, text, _ in stream:
                memory.add([{"role": "user", "content": text}], user_id="shared", metadata={"agent": agent})
            return len(memory.get_all(filters={"user_id": "shared"}, top_k=10 * len(stream))["results"])
        finally:
            memory.vector_store.client.close()  # local Qdrant locks its directory
            memory.db.close()


def main(argv: list[str] | None = None) -> int:
    """Runs every way on the same endpoint and prints the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--facts", type=int, default=250)
    ap.add_argument("--agents", type=int, default=10)
    ap.add_argument("--round", type=int, default=10, help="statements per deposit_many round (default: one per agent)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--skip-mem0", action="store_true", help="agentsensus only (mem0ai not installed)")
    args = ap.parse_args(argv)
    if args.facts < 1 or args.agents < 2 or args.round < 1:
        ap.error("--facts and --round must be at least 1, --agents at least 2")
    stream = make_stream(args.facts, args.seed, agents=args.agents)
    embed = HashEmbedder()
    vecs = np.asarray(embed([t for _, t, _ in stream]), dtype=np.float32)
    ways: dict[str, Callable[[str], int]] = {
        "agentsensus `deposit`, one statement each": lambda url: run_agentsensus(stream, vecs, url, 0),
        f"agentsensus `deposit_many`, rounds of {args.round}": lambda url: run_agentsensus(
            stream, vecs, url, args.round
        ),
        f"agentsensus `deposit_many`, all {len(stream)} at once": lambda url: run_agentsensus(
            stream, vecs, url, len(stream)
        ),
    }
    if not args.skip_mem0:
        ways["mem0 `add(infer=True)`, one statement each"] = lambda url: run_mem0(stream, embed, url, vecs.shape[1])
    rows = []
    with CountingEndpoint({t: f for _, t, f in stream}) as ep:
        for name, go in ways.items():
            ep.reset()
            t0 = time.perf_counter()
            records = go(ep.url)
            wall = time.perf_counter() - t0
            c = dict(ep.counts)
            rows.append((name, c, records, wall))
            print(f"{name}: {c}, {records} records, {wall:.1f} s", file=sys.stderr)
    n = len(stream)
    print(
        f"\nLLM cost of a write: {args.facts} facts x 2 tellings = {n} statements, {args.agents} agents, seed {args.seed};"
    )
    print("tokens estimated as characters / 4; per stored statement = per statement of the stream\n")
    base = rows[0][1]
    print(
        "| system | calls | calls / statement | prompt tokens / statement | completion tokens / statement | "
        f"records (facts: {args.facts}) | tokens x agentsensus `deposit` |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, c, records, _ in rows:
        total = c["prompt_tokens"] + c["completion_tokens"]
        ratio = total / max(base["prompt_tokens"] + base["completion_tokens"], 1)
        print(
            f"| {name} | {c['calls']:,} | {c['calls'] / n:.2f} | {c['prompt_tokens'] / n:,.0f} | "
            f"{c['completion_tokens'] / n:,.1f} | {records:,} | {ratio:.1f}x |"
        )
    unparsed = sum(c["unparsed"] for _, c, _, _ in rows)
    if unparsed:
        print(f"\nthe fake endpoint could not place {unparsed} prompts or statements (answered as new)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
