"""The LLM equivalence judge: ``judges.llm(model, base_url=None, api_key=None, ...)``.

One prompt per call covers all of its requests (one deposit's, or those of a
pass of ``deposit_many``, several deposits'). The model must answer
with one JSON object, ``{"verdicts": [{"request": 0, "match": 12}, ...]}``,
one verdict per request, each ``match`` either ``null`` or the id of one of
that request's candidates. Anything else (not JSON, a verdict missing, an id
that was not offered) is a malformed answer: it never merges anything. The
judge asks again, and after ``answer_retries`` more tries answers "no match"
for every request of that deposit.

A duplicate that slips through costs one extra record; a wrong merge loses a
fact. So every doubt resolves to "no match".
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any, Generator, Mapping, Optional, Sequence, Union

from ..judges import JudgeRequest
from .client import LLMClient, LLMError, Reply

__all__ = ["LLMJudge", "JudgeStats", "MalformedAnswer", "llm", "build_messages", "parse_verdicts"]

log = logging.getLogger(__name__)

SYSTEM_PROMPT = """\
You maintain a memory shared by many agents. Each request gives a new \
statement and candidate records already in memory. Decide, for each request, \
whether one candidate states the same fact as the statement: the same event \
or state of the world, possibly in other words or from another witness. \
Related, partly overlapping, or more or less specific facts are not the same \
fact; neither are facts that differ in who, what, where or when.

Answer with one JSON object and nothing else:
{"verdicts": [{"request": 0, "match": 12}, {"request": 1, "match": null}]}
Give exactly one verdict per request, in order. "match" is the id of the \
candidate that states the same fact, or null when none does."""

_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)

# Key of one verdict: the statement and the ids it was weighed against.
_Key = tuple[str, tuple[int, ...]]

# One deposit's judging: yields a prompt's messages, receives the reply or the
# client's LLMError, returns the verdicts.
_Flow = Generator[list[dict[str, str]], Union[Reply, LLMError], list[Optional[int]]]


class MalformedAnswer(ValueError):
    """The model's answer is not a complete, valid set of verdicts."""


@dataclass(frozen=True)
class JudgeStats:
    """Counters of one judge (a snapshot).

    ``deposits``: judge calls; ``requests``: requests judged; ``cache_hits``:
    requests answered from the verdict cache; ``prompts``: prompts sent;
    ``malformed``: answers refused by validation; ``fallbacks``: requests
    answered "no match" because no valid answer came; ``merges``: verdicts
    that named a candidate.
    """

    deposits: int = 0
    requests: int = 0
    cache_hits: int = 0
    prompts: int = 0
    malformed: int = 0
    fallbacks: int = 0
    merges: int = 0


def build_messages(requests: Sequence[JudgeRequest]) -> list[dict[str, str]]:
    """The chat messages of one prompt covering ``requests``."""
    payload = {
        "requests": [
            {
                "request": i,
                "statement": r.statement,
                "candidates": [{"id": c.id, "text": c.text} for c in r.candidates],
            }
            for i, r in enumerate(requests)
        ]
    }
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": json.dumps(payload, ensure_ascii=False)},
    ]


def _strict_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_verdicts(text: str, requests: Sequence[JudgeRequest]) -> list[Optional[int]]:
    """The verdicts in ``text`` for ``requests``; ``MalformedAnswer`` unless the
    answer is one JSON object with exactly one valid verdict per request."""
    body = text.strip()
    fenced = _FENCE.match(body)  # models often fence JSON even when told not to
    if fenced:
        body = fenced.group(1)
    try:
        obj = json.loads(body)
    except json.JSONDecodeError as e:
        raise MalformedAnswer(f"not JSON: {e}") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("verdicts"), list):
        raise MalformedAnswer('expected an object with a "verdicts" list')
    verdicts: list[Any] = obj["verdicts"]
    if len(verdicts) != len(requests):
        raise MalformedAnswer(f"{len(verdicts)} verdicts for {len(requests)} requests")
    out: list[Optional[int]] = []
    for i, (v, r) in enumerate(zip(verdicts, requests)):
        if not isinstance(v, dict) or "match" not in v or v.get("request") != i or not _strict_int(v["request"]):
            raise MalformedAnswer(f'verdict {i} must be {{"request": {i}, "match": id or null}}')
        match = v["match"]
        if match is None:
            out.append(None)
        elif _strict_int(match) and any(c.id == match for c in r.candidates):
            out.append(int(match))
        else:
            raise MalformedAnswer(f"verdict {i} names {match!r}, which is not one of its candidates")
    return out


class LLMJudge:
    """An equivalence judge backed by a chat model (see the module docstring).

    Call it as ``judge(requests)`` (``Store.deposit``) or ``await
    judge.ajudge(requests)`` (``Store.adeposit(..., judge=judge.ajudge)``);
    both share the cache and the counters. ``client`` is the
    :class:`LLMClient` (its ``usage`` has calls, tokens and seconds).

    ``answer_retries``: how many more times a malformed answer is asked for
    again. ``on_error``: what a deposit gets when the endpoint stays
    unreachable after the client's retries: ``"no_match"`` (the default: the
    statements become new records, nothing is lost) or ``"raise"`` (the
    deposit fails and the store is unchanged). Permanent errors (a wrong key,
    an unknown model) always raise. ``cache_size``: verdicts remembered, keyed
    by statement and candidate ids (0 turns the cache off).
    """

    def __init__(
        self,
        client: LLMClient,
        *,
        answer_retries: int = 2,
        on_error: str = "no_match",
        cache_size: int = 65536,
        json_mode: bool = True,
        max_tokens: Optional[int] = None,
    ) -> None:
        if isinstance(answer_retries, bool) or not isinstance(answer_retries, int) or answer_retries < 0:
            raise ValueError(f"answer_retries must be an int >= 0, got {answer_retries!r}")
        if on_error not in ("no_match", "raise"):
            raise ValueError(f"on_error must be 'no_match' or 'raise', got {on_error!r}")
        if isinstance(cache_size, bool) or not isinstance(cache_size, int) or cache_size < 0:
            raise ValueError(f"cache_size must be an int >= 0, got {cache_size!r}")
        self.client = client
        self.answer_retries = answer_retries
        self.on_error = on_error
        self.cache_size = cache_size
        self.json_mode = json_mode
        self.max_tokens = max_tokens
        self._cache: OrderedDict[_Key, Optional[int]] = OrderedDict()
        self._lock = threading.Lock()
        self._stats = JudgeStats()
        self.__name__ = f"llm({client.model})"

    def __repr__(self) -> str:
        return f"LLMJudge({self.client!r})"

    @property
    def stats(self) -> JudgeStats:
        """A snapshot of the judge's counters."""
        with self._lock:
            return self._stats

    def counters(self) -> dict[str, Any]:
        """The judge's and its client's counters in one flat dict (calls,
        tokens, seconds, cache hits, malformed answers, ...)."""
        u = self.client.usage
        out: dict[str, Any] = dict(vars(self.stats))
        out.update(vars(u))
        out["tokens"] = u.tokens
        return out

    def clear_cache(self) -> None:
        """Forgets every cached verdict."""
        with self._lock:
            self._cache.clear()

    def _count(self, **delta: int) -> None:
        with self._lock:
            s = self._stats
            self._stats = replace(s, **{k: getattr(s, k) + v for k, v in delta.items()})

    # -- the cache --------------------------------------------------------------

    @staticmethod
    def _key(r: JudgeRequest) -> Optional[_Key]:
        ids = tuple(sorted(c.id for c in r.candidates))
        # Negative ids are provisional (staged in a deposit_many batch) and are
        # reused by later batches for other records: never cache them.
        if any(i < 0 for i in ids):
            return None
        return (r.statement, ids)

    def _lookup(self, requests: Sequence[JudgeRequest]) -> tuple[list[Optional[int]], list[int]]:
        """Cached verdicts, and the positions still to ask the model about."""
        verdicts: list[Optional[int]] = [None] * len(requests)
        todo: list[int] = []
        with self._lock:
            for i, r in enumerate(requests):
                key = self._key(r) if self.cache_size else None
                if key is not None and key in self._cache:
                    self._cache.move_to_end(key)
                    verdicts[i] = self._cache[key]
                else:
                    todo.append(i)
        self._count(deposits=1, requests=len(requests), cache_hits=len(requests) - len(todo))
        return verdicts, todo

    def _remember(self, requests: Sequence[JudgeRequest], verdicts: Sequence[Optional[int]]) -> None:
        if not self.cache_size:
            return
        with self._lock:
            for r, v in zip(requests, verdicts):
                key = self._key(r)
                if key is not None:
                    self._cache[key] = v
                    self._cache.move_to_end(key)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)

    # -- one deposit ------------------------------------------------------------

    def _check(self, reply: Reply, asked: Sequence[JudgeRequest], attempt: int) -> Optional[list[Optional[int]]]:
        """The validated verdicts, or None when the answer is malformed."""
        try:
            verdicts = parse_verdicts(reply.text, asked)
        except MalformedAnswer as e:
            self._count(malformed=1)
            log.warning(
                "%s: malformed answer (try %d of %d): %s", self.__name__, attempt + 1, self.answer_retries + 1, e
            )
            return None
        self._remember(asked, verdicts)
        self._count(merges=sum(v is not None for v in verdicts))
        return verdicts

    def _give_up(self, asked: Sequence[JudgeRequest], error: Optional[LLMError]) -> list[Optional[int]]:
        if error is not None and self.on_error == "raise":
            raise error
        self._count(fallbacks=len(asked))
        return [None] * len(asked)

    def _merge(
        self, verdicts: list[Optional[int]], todo: Sequence[int], answers: Sequence[Optional[int]]
    ) -> list[Optional[int]]:
        for i, v in zip(todo, answers):
            verdicts[i] = v
        return verdicts

    def _flow(self, requests: list[JudgeRequest]) -> _Flow:
        """One deposit's judging as a generator: it yields each prompt's
        messages and receives the reply (or the client's ``LLMError``), so
        that the sync and async entry points share it."""
        verdicts, todo = self._lookup(requests)
        if not todo:
            return verdicts
        asked = [requests[i] for i in todo]
        messages = build_messages(asked)
        for attempt in range(self.answer_retries + 1):
            self._count(prompts=1)
            reply = yield messages
            if isinstance(reply, LLMError):
                return self._merge(verdicts, todo, self._give_up(asked, reply))
            answers = self._check(reply, asked, attempt)
            if answers is not None:
                return self._merge(verdicts, todo, answers)
        return self._merge(verdicts, todo, self._give_up(asked, None))

    def __call__(self, requests: list[JudgeRequest]) -> list[Optional[int]]:
        """The verdicts for one deposit's requests (one prompt at most, plus
        retries of a malformed answer)."""
        flow = self._flow(requests)
        try:
            messages = next(flow)
            while True:
                reply: Union[Reply, LLMError]
                try:
                    reply = self.client.chat(messages, json_mode=self.json_mode, max_tokens=self.max_tokens)
                except LLMError as e:
                    reply = e
                messages = flow.send(reply)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]

    async def ajudge(self, requests: list[JudgeRequest]) -> list[Optional[int]]:
        """``judge(requests)`` for asyncio: pass ``judge=j.ajudge`` to
        ``Store.adeposit``."""
        flow = self._flow(requests)
        try:
            messages = next(flow)
            while True:
                reply: Union[Reply, LLMError]
                try:
                    reply = await self.client.achat(messages, json_mode=self.json_mode, max_tokens=self.max_tokens)
                except LLMError as e:
                    reply = e
                messages = flow.send(reply)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]


def llm(
    model: str,
    base_url: Optional[str] = None,
    api_key: Optional[str] = None,
    *,
    timeout: float = 60.0,
    retries: int = 3,
    backoff: float = 0.5,
    max_backoff: float = 8.0,
    answer_retries: int = 2,
    on_error: str = "no_match",
    cache_size: int = 65536,
    json_mode: bool = True,
    temperature: Optional[float] = 0.0,
    max_tokens: Optional[int] = None,
    options: Optional[Mapping[str, Any]] = None,
) -> LLMJudge:
    """An equivalence judge on any OpenAI-compatible chat endpoint.

    ``timeout`` (seconds per request), ``retries``, ``backoff`` and
    ``max_backoff`` govern transport failures (see :class:`LLMClient`);
    ``answer_retries``, ``on_error`` and ``cache_size`` the answers (see
    :class:`LLMJudge`). ``json_mode=False`` for servers that reject
    ``response_format``; ``options`` go to every request (``seed``, ...).
    """
    client = LLMClient(
        model,
        base_url=base_url,
        api_key=api_key,
        timeout=timeout,
        retries=retries,
        backoff=backoff,
        max_backoff=max_backoff,
        temperature=temperature,
        max_tokens=max_tokens,
        options=options,
    )
    return LLMJudge(
        client,
        answer_retries=answer_retries,
        on_error=on_error,
        cache_size=cache_size,
        json_mode=json_mode,
    )
