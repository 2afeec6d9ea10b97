"""The LLM equivalence judge: ``judges.llm(model, base_url=None, api_key=None, ...)``.

A call's requests (one deposit's, or those of a pass of ``deposit_many``,
several deposits') go out in as few prompts as fit ``judge_budget`` tokens
(estimated as characters / 3, which over-counts English for common
tokenizers); a request too large for the budget alone is sent alone, its
lowest-ranked candidates dropped and, if need be, its texts shortened. Every
statement is shown with who reports it (``reported_by``: the deposit's owner)
and every candidate with who reported it when the store shows owners
(``Store(judge_sees_owners=True)``), so that a first-person account ("I told
Ophelia") is read from its reporter.

The model must answer with one JSON object, ``{"verdicts": [{"request": 0,
"match": 12}, ...]}``, one verdict per request, each ``match`` either
``null`` or the id of one of that request's candidates. With
``supersedes=True`` the model is also asked whether the statement is a newer
state of a candidate's subject ("Alice moved to Berlin" after "Alice lives
in Paris"): a verdict may then carry ``"supersedes": id`` (``match`` null or
left out), answered as ``Supersedes(id)``; a verdict without it still reads
as before. Anything else (not JSON, a verdict missing, an id that was not
offered, both a match and a supersession, a refusal) is a malformed answer:
it never merges or supersedes anything. The judge asks again, and after
``answer_retries`` more tries answers "no match" for that prompt's requests.

Endpoint failures never merge either. The client retries a transient failure
(a timeout, a lost connection, 408/409/425/429, any 5xx) with backoff; a
prompt the endpoint refuses as over its context (a 400 or 413 saying so) is
split in halves and each half asked again, down to a single request; any
other failure (retries spent, a bad request, a wrong key) is counted and,
with ``on_error="no_match"`` (the default), the prompt's requests are
answered "no match" (``None``), so the statements become new records.
``on_error="raise"`` raises it instead and the deposit changes nothing.

A duplicate that slips through costs one extra record; a wrong merge loses a
fact. So every doubt resolves to "no match".
"""

from __future__ import annotations

import json
import logging
import math
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any, Generator, Mapping, Optional, Sequence, Union

from ..records import JudgeRequest, Memory, Supersedes
from .client import LLMClient, Reply, endpoint_error, too_large

__all__ = [
    "LLMJudge",
    "JudgeStats",
    "MalformedAnswer",
    "llm",
    "build_messages",
    "SYSTEM_PROMPT",
    "SUPERSEDES_PROMPT",
    "parse_verdicts",
    "estimate_tokens",
    "DEFAULT_BUDGET",
]

log = logging.getLogger(__name__)

#: Tokens a judge prompt may take by default: far below any 128k context, and a batch is never one huge prompt.
DEFAULT_BUDGET = 24_000

_SAME_FACT = """\
You maintain a memory shared by many agents. Each request gives a new \
statement and candidate records already in memory. Decide, for each request, \
whether one candidate states the same fact as the statement: the same event \
or state of the world, possibly in other words or from another witness. \
Related, partly overlapping, or more or less specific facts are not the same \
fact; neither are facts that differ in who, what, where or when."""

_REPORTERS = """\
"reported_by" says who reports a text. Read first-person words from the \
reporter: "I", "me" and "my" are the reporter, "you" is whom the reporter \
addresses. "I told Ophelia" reported by Hamlet is the same fact as "Hamlet \
told me" reported by Ophelia, and not the same as "I told Ophelia" reported \
by Polonius. A candidate with several reporters was worded by one of them: \
if its meaning depends on which one, it is not a match. A candidate without \
"reported_by" has an unknown reporter."""

_ANSWER = """\
Answer with one JSON object and nothing else:
{"verdicts": [{"request": 0, "match": 12}, {"request": 1, "match": null}]}
Give exactly one verdict per request, in order. "match" is the id of the \
candidate that states the same fact, or null when none does."""

_CHANGES = """\
A statement may instead report a newer state of the same subject as one \
candidate, one that replaces it: "Alice moved to Berlin" after "Alice lives \
in Paris", a death, a changed or cancelled plan, a corrected number. The \
candidate was true but is no longer current: the statement supersedes it. \
Only the same subject is replaced. Two different people each moving are two \
facts and neither supersedes the other: "Bob moved to Rome" does not \
supersede "Alice moved to Berlin". A statement that repeats a candidate, \
adds detail to it, or is only related to it supersedes nothing. Read \
first-person words from the reporter here too."""

_ANSWER_CHANGES = """\
Answer with one JSON object and nothing else:
{"verdicts": [{"request": 0, "match": 12, "supersedes": null}, \
{"request": 1, "match": null, "supersedes": 7}, \
{"request": 2, "match": null, "supersedes": null}]}
Give exactly one verdict per request, in order. "match" is the id of the \
candidate that states the same fact, or null when none does. "supersedes" is \
the id of the candidate the statement replaces with a newer state of the same \
subject, or null when it replaces none. At most one of the two is an id; when \
in doubt, answer null."""

#: The system prompt of ``llm(...)``: the same fact or not.
SYSTEM_PROMPT = "\n\n".join([_SAME_FACT, _REPORTERS, _ANSWER])
#: The system prompt of ``llm(..., supersedes=True)``: also whether the statement supersedes a candidate.
SUPERSEDES_PROMPT = "\n\n".join([_SAME_FACT, _REPORTERS, _CHANGES, _ANSWER_CHANGES])

_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)
# The user message is '{"requests": [' + entries joined by ', ' + ']}'.
_WRAPPER = len('{"requests": []}')
# A text shortened to fit the budget ends so.
_CUT = " [...]"

# Key of one verdict: the reporter, the statement, and the candidates (ids and owner sets) it was weighed against.
_Key = tuple[str, str, tuple[tuple[int, tuple[str, ...]], ...]]

# One answer: merge into that id, a new record (None), or a new record that supersedes that id.
Verdict = Union[int, None, Supersedes]

# One prompt's exchange: the flow yields a prompt's messages and receives the
# reply, or the endpoint's exception.
_Answer = Union[Reply, Exception]
_Flow = Generator[list[dict[str, str]], _Answer, list[Verdict]]


class MalformedAnswer(ValueError):
    """The model's answer is not a complete, valid set of verdicts."""


class _TooLarge(Exception):
    """The endpoint refused a prompt as over its context (``error``)."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


@dataclass(frozen=True)
class JudgeStats:
    """Counters of one judge (a snapshot).

    ``deposits``: judge calls; ``requests``: requests judged; ``cache_hits``:
    requests answered from the verdict cache; ``prompts``: prompts sent;
    ``malformed``: answers refused by validation; ``fallbacks``: requests
    answered "no match" because no valid answer came; ``merges``: verdicts
    that named a candidate as the same fact; ``supersedes``: verdicts that
    named a candidate as superseded (``supersedes=True``); ``failures``: prompts that failed at the endpoint
    for good (their requests fell back); ``splits``: prompts split because
    the endpoint refused them as too large; ``truncated``: requests sent with
    candidates dropped or texts shortened to fit the budget.
    """

    deposits: int = 0
    requests: int = 0
    cache_hits: int = 0
    prompts: int = 0
    malformed: int = 0
    fallbacks: int = 0
    merges: int = 0
    supersedes: int = 0
    failures: int = 0
    splits: int = 0
    truncated: int = 0


def estimate_tokens(chars: int) -> int:
    """A conservative token count for ``chars`` characters of prompt (chars / 3)."""
    return math.ceil(chars / 3)


def _reporters(c: Memory) -> Optional[Union[str, list[str]]]:
    owners = sorted(c.owners)
    if not owners:
        return None  # the store does not show owners: unknown
    return owners[0] if len(owners) == 1 else owners


def _entry(i: int, r: JudgeRequest) -> dict[str, Any]:
    candidates = []
    for c in r.candidates:
        who = _reporters(c)
        candidates.append(
            {"id": c.id, "text": c.text} if who is None else {"id": c.id, "reported_by": who, "text": c.text}
        )
    return {"request": i, "reported_by": r.owner, "statement": r.statement, "candidates": candidates}


def build_messages(requests: Sequence[JudgeRequest], supersedes: bool = False) -> list[dict[str, str]]:
    """The chat messages of one prompt covering ``requests`` (asking also
    for supersessions when ``supersedes``)."""
    payload = {"requests": [_entry(i, r) for i, r in enumerate(requests)]}
    return [
        {"role": "system", "content": SUPERSEDES_PROMPT if supersedes else SYSTEM_PROMPT},
        {"role": "user", "content": json.dumps(payload, ensure_ascii=False)},
    ]


def _chars(messages: Sequence[Mapping[str, str]]) -> int:
    return sum(len(m["content"]) for m in messages)


def _strict_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _candidate_id(value: Any, r: JudgeRequest) -> bool:
    return _strict_int(value) and any(c.id == value for c in r.candidates)


def parse_verdicts(text: str, requests: Sequence[JudgeRequest], supersedes: bool = False) -> list[Verdict]:
    """The verdicts in ``text`` for ``requests``; ``MalformedAnswer`` unless the
    answer is one JSON object with exactly one valid verdict per request.

    With ``supersedes``, a verdict's ``"supersedes"`` (an id of its
    candidates, or null; ``"match"`` may then be left out) is read as
    `Supersedes`; without it, that key is ignored, as before it existed."""
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
    out: list[Verdict] = []
    for i, (v, r) in enumerate(zip(verdicts, requests)):
        has_key = isinstance(v, dict) and ("match" in v or (supersedes and "supersedes" in v))
        if not has_key or v.get("request") != i or not _strict_int(v["request"]):
            raise MalformedAnswer(f'verdict {i} must be {{"request": {i}, "match": id or null}}')
        match = v.get("match")
        newer = v.get("supersedes") if supersedes else None
        for value in (match, newer):
            if value is not None and not _candidate_id(value, r):
                raise MalformedAnswer(f"verdict {i} names {value!r}, which is not one of its candidates")
        if match is not None and newer is not None:
            raise MalformedAnswer(f"verdict {i} names both a match and a superseded candidate")
        out.append(int(match) if match is not None else Supersedes(int(newer)) if newer is not None else None)
    return out


class LLMJudge:
    """An equivalence judge backed by a chat model (see the module docstring).

    Call it as ``judge(requests)`` (``Store.deposit``) or ``await
    judge.ajudge(requests)`` (``Store.adeposit(..., judge=judge.ajudge)``);
    both share the cache and the counters. ``client`` is the
    `LLMClient` (its ``usage`` has calls, tokens and seconds).

    ``judge_budget``: the tokens one prompt may take (estimated as characters
    / 3); a call whose requests need more is split into several prompts, each
    within it. ``answer_retries``: how many more times a malformed answer is
    asked for again. ``on_error``: what a prompt's requests get when the
    endpoint fails for good (a transient failure after the client's retries,
    a bad request, a wrong key, an unknown model): ``"no_match"`` (the
    default: ``None`` for each, the statements become new records, nothing
    is lost; the failure is logged and counted in ``stats.failures``) or
    ``"raise"`` (the deposit fails and the store is unchanged). A prompt
    refused as over the endpoint's context is split in halves whatever
    ``on_error`` says; a single request refused so falls back to ``None``.
    ``cache_size``: verdicts remembered, keyed by the reporter, the statement
    and the candidates' ids and owner sets (0 turns the cache off).
    ``supersedes``: also ask whether a statement supersedes a candidate (see
    `llm`); off, the prompt is the same-fact question alone.
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
        judge_budget: int = DEFAULT_BUDGET,
        supersedes: bool = False,
    ) -> None:
        if isinstance(answer_retries, bool) or not isinstance(answer_retries, int) or answer_retries < 0:
            raise ValueError(f"answer_retries must be an int >= 0, got {answer_retries!r}")
        if on_error not in ("no_match", "raise"):
            raise ValueError(f"on_error must be 'no_match' or 'raise', got {on_error!r}")
        if isinstance(cache_size, bool) or not isinstance(cache_size, int) or cache_size < 0:
            raise ValueError(f"cache_size must be an int >= 0, got {cache_size!r}")
        if isinstance(judge_budget, bool) or not isinstance(judge_budget, int) or judge_budget < 1:
            raise ValueError(f"judge_budget must be an int >= 1 (tokens), got {judge_budget!r}")
        if not isinstance(supersedes, bool):
            raise ValueError(f"supersedes must be True or False, got {supersedes!r}")
        self.client = client
        self.answer_retries = answer_retries
        self.on_error = on_error
        self.cache_size = cache_size
        self.json_mode = json_mode
        self.max_tokens = max_tokens
        self.judge_budget = judge_budget
        self.supersedes = supersedes
        self.prompt = SUPERSEDES_PROMPT if supersedes else SYSTEM_PROMPT
        self._cache: OrderedDict[_Key, Verdict] = OrderedDict()
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
        errors, tokens, seconds, cache hits, malformed answers, fallbacks, ...)."""
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
        cands = tuple(sorted((c.id, tuple(sorted(c.owners))) for c in r.candidates))
        # Negative ids are provisional (staged in a deposit_many batch) and are
        # reused by later batches for other records: never cache them.
        if any(i < 0 for i, _ in cands):
            return None
        # Who reports it is part of the question: "I told Ophelia" differs with the reporter.
        return (r.owner, r.statement, cands)

    def _lookup(self, requests: Sequence[JudgeRequest]) -> tuple[list[Verdict], list[int]]:
        """Cached verdicts, and the positions still to ask the model about."""
        verdicts: list[Verdict] = [None] * len(requests)
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

    def _remember(self, requests: Sequence[JudgeRequest], verdicts: Sequence[Verdict]) -> None:
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

    # -- the budget -------------------------------------------------------------

    def _room(self) -> int:
        """Characters of request entries a prompt may carry within the budget."""
        return self.judge_budget * 3 - len(self.prompt) - _WRAPPER

    def _fit(self, r: JudgeRequest) -> Optional[JudgeRequest]:
        """``r`` made to fit the budget alone (``r`` itself when it does):
        the lowest-ranked candidates dropped, then the texts shortened; None
        when not even that fits."""
        room = self._room()

        def size(x: JudgeRequest) -> int:
            return len(json.dumps(_entry(0, x), ensure_ascii=False))

        if size(r) <= room:
            return r
        cands = list(r.candidates)
        while len(cands) > 1 and size(JudgeRequest(r.statement, r.owner, cands)) > room:
            cands.pop()  # candidates come best first
        fitted = JudgeRequest(r.statement, r.owner, cands)
        for _ in range(4):  # escapes make the size a little more than the characters cut
            over = size(fitted) - room
            if over <= 0 or not cands:
                break
            # Shorten the statement and the one candidate left by the same share.
            cut = math.ceil(over / 2) + len(_CUT)
            text, cand = fitted.statement.removesuffix(_CUT), fitted.candidates[0]
            kept = cand.text.removesuffix(_CUT)
            if cut >= len(text) or cut >= len(kept):
                break
            short = replace(cand, text=kept[: len(kept) - cut] + _CUT)
            fitted = JudgeRequest(text[: len(text) - cut] + _CUT, r.owner, [short])
        return fitted if size(fitted) <= room else None

    def _chunks(self, asked: Sequence[JudgeRequest]) -> list[list[JudgeRequest]]:
        """``asked`` in consecutive prompts within the budget (a request too
        large alone is fitted and sent alone, or left out when nothing fits)."""
        room = self._room()
        chunks: list[list[JudgeRequest]] = []
        chunk: list[JudgeRequest] = []
        used = 0
        for n, r in enumerate(asked):
            # Numbered as in the whole call: at least as many digits as in any prompt.
            size = len(json.dumps(_entry(n, r), ensure_ascii=False)) + 2  # the ", " between entries
            if chunk and used + size > room:
                chunks.append(chunk)
                chunk, used = [], 0
            chunk.append(r)
            used += size
        if chunk:
            chunks.append(chunk)
        return chunks

    # -- one call ---------------------------------------------------------------

    def _check(self, reply: Reply, asked: Sequence[JudgeRequest], attempt: int) -> Optional[list[Verdict]]:
        """The validated verdicts, or None when the answer is malformed."""
        try:
            verdicts = parse_verdicts(reply.text, asked, self.supersedes)
        except MalformedAnswer as e:
            self._count(malformed=1)
            log.warning(
                "%s: malformed answer (try %d of %d): %s", self.__name__, attempt + 1, self.answer_retries + 1, e
            )
            return None
        newer = sum(isinstance(v, Supersedes) for v in verdicts)
        self._count(merges=sum(v is not None for v in verdicts) - newer, supersedes=newer)
        return verdicts

    def _give_up(self, n: int, error: Optional[Exception]) -> list[Verdict]:
        if error is not None:
            self._count(failures=1)
            if self.on_error == "raise":
                raise error
            log.warning("%s: the endpoint failed, %d requests fall back to no match: %s", self.__name__, n, error)
        self._count(fallbacks=n)
        return [None] * n

    def _ask(self, asked: list[JudgeRequest], remember: bool = True) -> _Flow:
        """One prompt and its retries of a malformed answer; raises
        ``_TooLarge`` when the endpoint refuses the prompt as too large."""
        messages = build_messages(asked, self.supersedes)
        for attempt in range(self.answer_retries + 1):
            self._count(prompts=1)
            reply = yield messages
            if isinstance(reply, Exception):
                if too_large(reply):
                    raise _TooLarge(reply)
                return self._give_up(len(asked), reply)
            answers = self._check(reply, asked, attempt)
            if answers is not None:
                if remember:
                    self._remember(asked, answers)
                return answers
        return self._give_up(len(asked), None)

    def _judged(self, asked: list[JudgeRequest]) -> _Flow:
        """Verdicts for ``asked`` within the budget: a prompt the endpoint
        refuses as too large is split in halves, down to one request."""
        remember = True
        if len(asked) == 1:
            fitted = self._fit(asked[0])
            if fitted is None:
                log.warning("%s: a request does not fit judge_budget=%d tokens", self.__name__, self.judge_budget)
                self._count(truncated=1, fallbacks=1)
                return [None]
            if fitted is not asked[0]:
                self._count(truncated=1)
                asked, remember = [fitted], False  # only part of the question is asked: not cached
        chunks = self._chunks(asked)
        if len(chunks) > 1:
            out: list[Verdict] = []
            for chunk in chunks:
                out += yield from self._judged(chunk)
            return out
        try:
            return (yield from self._ask(asked, remember))
        except _TooLarge as refused:
            if len(asked) == 1:
                return self._give_up(1, refused.error)
        self._count(splits=1)
        half = len(asked) // 2
        first = yield from self._judged(asked[:half])
        return first + (yield from self._judged(asked[half:]))

    def _flow(self, requests: list[JudgeRequest]) -> _Flow:
        """One call's judging as a generator: it yields each prompt's
        messages and receives the reply (or the endpoint's exception), so
        that the sync and async entry points share it."""
        verdicts, todo = self._lookup(requests)
        if not todo:
            return verdicts
        asked = [requests[i] for i in todo]
        answers = yield from self._judged(asked)
        for i, v in zip(todo, answers):
            verdicts[i] = v
        return verdicts

    def __call__(self, requests: list[JudgeRequest]) -> list[Verdict]:
        """The verdicts for one call's requests (as few prompts as fit the
        budget, plus retries of a malformed answer)."""
        flow = self._flow(requests)
        try:
            messages = next(flow)
            while True:
                reply: _Answer
                try:
                    reply = self.client.chat(messages, json_mode=self.json_mode, max_tokens=self.max_tokens)
                except Exception as e:
                    if not endpoint_error(e):
                        raise
                    reply = e
                messages = flow.send(reply)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]

    async def ajudge(self, requests: list[JudgeRequest]) -> list[Verdict]:
        """``judge(requests)`` for asyncio: pass ``judge=j.ajudge`` to
        ``Store.adeposit``."""
        flow = self._flow(requests)
        try:
            messages = next(flow)
            while True:
                reply: _Answer
                try:
                    reply = await self.client.achat(messages, json_mode=self.json_mode, max_tokens=self.max_tokens)
                except Exception as e:
                    if not endpoint_error(e):
                        raise
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
    judge_budget: int = DEFAULT_BUDGET,
    supersedes: bool = False,
) -> LLMJudge:
    """An equivalence judge on any OpenAI-compatible chat endpoint.

    ``timeout`` (seconds per request), ``retries``, ``backoff`` and
    ``max_backoff`` govern transport failures (see `LLMClient`);
    ``answer_retries``, ``on_error``, ``cache_size`` and ``judge_budget``
    (tokens per prompt) the answers (see `LLMJudge`). ``json_mode=False`` for servers that reject
    ``response_format``; ``options`` go to every request (``seed``, ...).

    ``supersedes=True`` also asks, per statement, whether it is a newer state
    of a candidate's subject (a move, a death, a changed plan, a corrected
    number; never another person's like change) and answers
    ``Supersedes(id)`` for those: the statement becomes a new record after
    ``id``'s chain, and the depositing owner's ``recall`` stops showing the
    older one. It is off by default because turning it on changes the system
    prompt (`SUPERSEDES_PROMPT` instead of `SYSTEM_PROMPT`, about 900
    characters more per prompt) and so the verdicts, the prompt sizes and the
    costs that existing users have measured and rely on, and because a
    supersession takes a record out of an owner's current recall, which a
    user should choose. Off, the prompt and the answers are exactly as before.
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
        judge_budget=judge_budget,
        supersedes=supersedes,
    )
