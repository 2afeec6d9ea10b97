"""``LLMClient``: one adapter to any OpenAI-compatible endpoint.

The LLM judge, the ``openai`` embedder and the simulation's LLM policy all
talk to a model through it, so they share one behaviour: a timeout on every
request, retries with exponential backoff (and the server's ``Retry-After``)
on transient failures only, and counters of calls, tokens and seconds.

The ``openai`` package (the ``llm`` extra) is imported when a client is made,
never when ``agentsensus`` is imported.
"""

from __future__ import annotations

import asyncio
import operator
import os
import random
import re
import threading
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Generator, Mapping, Optional, Sequence, TypeVar, Union

import numpy as np
import numpy.typing as npt

from ..errors import Error

if TYPE_CHECKING:  # pragma: no cover - typing only
    from openai import AsyncOpenAI, OpenAI

__all__ = ["LLMClient", "Reply", "Usage", "LLMError", "endpoint_error", "too_large"]

# HTTP statuses worth another try (and every 5xx): the request may succeed unchanged later.
_TRANSIENT_STATUS = frozenset({408, 409, 425, 429})
# How servers word "the prompt does not fit" (OpenAI, vLLM, llama.cpp, Ollama, proxies).
_TOO_LARGE = re.compile(
    r"context.{0,20}(length|window|size)|too (large|long|many tokens)|maximum.{0,30}(tokens|context|length)"
    r"|exceeds?.{0,30}(tokens|context|limit)|prompt is too",
    re.IGNORECASE,
)

T = TypeVar("T")


@dataclass(frozen=True)
class _Send:
    """A step of a request flow: send one request, ``<endpoint>.create(**args)``
    on the openai client; the flow receives ``(response, None)`` or
    ``(None, exception)``."""

    endpoint: str  # "chat.completions" or "embeddings"
    args: dict[str, Any]


@dataclass(frozen=True)
class _Sleep:
    """A step of a request flow: back off this many seconds, then resume it."""

    seconds: float


# A request as a generator: its retry logic and counters live in the flow;
# the sync and async drivers only perform the steps it yields.
_Flow = Generator[Union[_Send, _Sleep], Any, T]


class LLMError(Error):
    """A request to the model endpoint failed for good (after its retries)."""


@dataclass(frozen=True)
class Reply:
    """One chat completion: the answer's text and what it cost."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: Optional[str] = None


@dataclass(frozen=True)
class Usage:
    """Counters of one client since it was made (a snapshot).

    ``calls``: HTTP requests sent, retries included; ``retries``: of those,
    repeats after a transient failure; ``errors``: requests that failed;
    ``seconds``: wall time spent waiting for the endpoint (backoff sleeps
    excluded).
    """

    calls: int = 0
    retries: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0

    @property
    def tokens(self) -> int:
        """Prompt and completion tokens together."""
        return self.prompt_tokens + self.completion_tokens


def _is_transient(exc: BaseException) -> bool:
    import openai

    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in _TRANSIENT_STATUS or exc.status_code >= 500
    return False


def endpoint_error(exc: BaseException) -> bool:
    """True when ``exc`` came from the endpoint or the way to it (an
    `LLMError` after the retries, or any ``openai`` error), not from
    a bug of the caller."""
    if isinstance(exc, LLMError):
        return True
    try:
        import openai
    except ImportError:  # pragma: no cover - no client can have been made
        return False
    return isinstance(exc, openai.OpenAIError)


def too_large(exc: BaseException) -> bool:
    """True when the endpoint refused a request because the prompt is over
    its context (a 400 or 413 saying so): a smaller prompt may pass."""
    status = getattr(exc, "status_code", None)
    if status not in (400, 413):
        return False
    if status == 413 or getattr(exc, "code", None) == "context_length_exceeded":
        return True
    return bool(_TOO_LARGE.search(str(exc)))


def _retry_after(exc: BaseException) -> Optional[float]:
    """The server's ``Retry-After`` in seconds, when it sent a usable one."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        value = float(headers.get("retry-after", ""))
    except (TypeError, ValueError):
        return None
    return value if value >= 0 else None


class LLMClient:
    """Chat completions and embeddings over an OpenAI-compatible endpoint.

    ``base_url`` (e.g. ``http://localhost:8000/v1``) and ``api_key`` default to
    the ``openai`` client's own defaults (``OPENAI_BASE_URL``,
    ``OPENAI_API_KEY``). ``timeout`` bounds each request in seconds;
    ``retries`` is how many times a transient failure (connection error,
    timeout, 408/409/425/429, any 5xx) is retried, sleeping ``backoff * 2**n``
    seconds (at most ``max_backoff``, with jitter) in between; other errors
    (a bad request, a wrong key) raise at once. ``options`` are extra keyword
    arguments for every chat request (``seed``, ``top_p``, ...).

    A client is safe to share between threads; its async methods make an
    ``AsyncOpenAI`` per event loop.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        timeout: float = 60.0,
        retries: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        temperature: Optional[float] = 0.0,
        max_tokens: Optional[int] = None,
        options: Optional[Mapping[str, Any]] = None,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ValueError(f"model must be a non-empty str, got {model!r}")
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ValueError(f"retries must be an int >= 0, got {retries!r}")
        for name, value in (("timeout", timeout), ("backoff", backoff), ("max_backoff", max_backoff)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"{name} must be a number >= 0, got {value!r}")
        try:
            import openai  # noqa: F401  (fail here, with advice, not at the first call)
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError("the OpenAI adapter needs the openai package: pip install 'agentsensus[llm]'") from e
        self.model = model
        self.base_url = base_url
        # A local endpoint (vLLM, llama.cpp, Ollama) usually wants no key, but
        # the openai client refuses to start without one: give it a placeholder.
        if api_key is None and not os.environ.get("OPENAI_API_KEY") and base_url is not None:
            api_key = "no-key"
        self._api_key = api_key
        self.timeout = float(timeout)
        self.retries = retries
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.options = dict(options or {})
        self._lock = threading.Lock()
        self._usage = Usage()
        self._sync: Optional["OpenAI"] = None
        self._async: dict[int, tuple[asyncio.AbstractEventLoop, "AsyncOpenAI"]] = {}

    def __repr__(self) -> str:
        return f"LLMClient(model={self.model!r}, base_url={self.base_url!r})"

    # -- counters ---------------------------------------------------------------

    @property
    def usage(self) -> Usage:
        """A snapshot of the counters."""
        with self._lock:
            return self._usage

    def _count(self, **delta: Any) -> None:
        with self._lock:
            u = self._usage
            self._usage = replace(u, **{k: getattr(u, k) + v for k, v in delta.items()})

    # -- the openai clients -----------------------------------------------------

    def _client(self) -> "OpenAI":
        with self._lock:
            if self._sync is None:
                from openai import OpenAI

                # max_retries=0: the retry loop is ours, so every attempt is counted.
                self._sync = OpenAI(base_url=self.base_url, api_key=self._api_key, timeout=self.timeout, max_retries=0)
            return self._sync

    def _aclient(self) -> "AsyncOpenAI":
        # An AsyncOpenAI's connection pool belongs to the loop that first used
        # it; asyncio.run() makes a new loop each time, so keep one per loop.
        loop = asyncio.get_running_loop()
        with self._lock:
            for key, (old, _) in list(self._async.items()):
                if old.is_closed():
                    del self._async[key]
            entry = self._async.get(id(loop))
            if entry is None or entry[0] is not loop:
                from openai import AsyncOpenAI

                entry = (
                    loop,
                    AsyncOpenAI(base_url=self.base_url, api_key=self._api_key, timeout=self.timeout, max_retries=0),
                )
                self._async[id(loop)] = entry
            return entry[1]

    def close(self) -> None:
        """Closes the synchronous HTTP client (async ones close with their loop)."""
        with self._lock:
            client, self._sync = self._sync, None
        if client is not None:
            client.close()

    # -- retries ----------------------------------------------------------------

    def _delay(self, attempt: int, exc: BaseException) -> float:
        base = min(self.max_backoff, self.backoff * 2.0**attempt)
        delay = base * random.uniform(0.5, 1.0)  # jitter: many agents, one endpoint
        hint = _retry_after(exc)
        return min(self.max_backoff, max(delay, hint)) if hint is not None else delay

    def _failed(self, attempt: int, exc: Exception) -> float:
        """Counts a failed attempt; the seconds to wait before the next one,
        or raises when the error is permanent or the retries are spent."""
        self._count(errors=1)
        if not _is_transient(exc):
            raise exc
        if attempt >= self.retries:
            raise LLMError(f"{self.model} at {self.base_url or 'the default endpoint'}: {exc}") from exc
        return self._delay(attempt, exc)

    def _flow(self, endpoint: str, args: dict[str, Any], finish: Callable[[Any, float], T]) -> _Flow[T]:
        """One request with its retries: yields each attempt and each backoff,
        and returns ``finish(response, seconds)``. The wait for an attempt is
        timed across its yield, where the driver performs it."""
        attempt = 0
        while True:
            self._count(calls=1, retries=1 if attempt else 0)
            t0 = time.perf_counter()
            resp, exc = yield _Send(endpoint, args)
            seconds = time.perf_counter() - t0
            if exc is None:
                return finish(resp, seconds)
            self._count(seconds=seconds)
            yield _Sleep(self._failed(attempt, exc))
            attempt += 1

    def _run(self, flow: _Flow[T]) -> T:
        client = self._client()
        try:
            step = next(flow)
            while True:
                if isinstance(step, _Sleep):
                    time.sleep(step.seconds)
                    step = flow.send(None)
                    continue
                outcome: tuple[Any, Optional[Exception]]
                try:
                    outcome = (operator.attrgetter(step.endpoint)(client).create(**step.args), None)
                except Exception as exc:
                    outcome = (None, exc)
                step = flow.send(outcome)  # outside the except: a re-raise carries no false context
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]

    async def _arun(self, flow: _Flow[T]) -> T:
        client = self._aclient()
        try:
            step = next(flow)
            while True:
                if isinstance(step, _Sleep):
                    await asyncio.sleep(step.seconds)
                    step = flow.send(None)
                    continue
                outcome: tuple[Any, Optional[Exception]]
                try:
                    outcome = (await operator.attrgetter(step.endpoint)(client).create(**step.args), None)
                except Exception as exc:
                    outcome = (None, exc)
                step = flow.send(outcome)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]

    # -- chat -------------------------------------------------------------------

    def _chat_args(
        self, messages: Sequence[Mapping[str, str]], json_mode: bool, max_tokens: Optional[int]
    ) -> dict[str, Any]:
        args: dict[str, Any] = {"model": self.model, "messages": [dict(m) for m in messages]}
        if self.temperature is not None:
            args["temperature"] = self.temperature
        limit = max_tokens if max_tokens is not None else self.max_tokens
        if limit is not None:
            args["max_tokens"] = limit
        if json_mode:
            args["response_format"] = {"type": "json_object"}
        args.update(self.options)
        return args

    def _reply(self, resp: Any, seconds: float) -> Reply:
        usage = getattr(resp, "usage", None)
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion = int(getattr(usage, "completion_tokens", 0) or 0)
        self._count(prompt_tokens=prompt, completion_tokens=completion, seconds=seconds)
        choices = getattr(resp, "choices", None) or []
        if not choices:
            return Reply("", prompt, completion, None)
        choice = choices[0]
        text = getattr(choice.message, "content", None) or ""
        return Reply(text, prompt, completion, getattr(choice, "finish_reason", None))

    def chat(
        self, messages: Sequence[Mapping[str, str]], *, json_mode: bool = False, max_tokens: Optional[int] = None
    ) -> Reply:
        """One chat completion. ``json_mode`` asks the server for a JSON
        object (``response_format``); the caller still validates it."""
        args = self._chat_args(messages, json_mode, max_tokens)
        return self._run(self._flow("chat.completions", args, self._reply))

    async def achat(
        self, messages: Sequence[Mapping[str, str]], *, json_mode: bool = False, max_tokens: Optional[int] = None
    ) -> Reply:
        """``chat`` for asyncio."""
        args = self._chat_args(messages, json_mode, max_tokens)
        return await self._arun(self._flow("chat.completions", args, self._reply))

    @staticmethod
    def _messages(prompt: str, system: Optional[str]) -> list[dict[str, str]]:
        head = [{"role": "system", "content": system}] if system else []
        return head + [{"role": "user", "content": prompt}]

    def complete(self, prompt: str, system: Optional[str] = None) -> str:
        """The answer to one user message, after the ``system`` message when
        one is given: ``complete(prompt, system=None) -> str``, the shape the
        simulation's LLM policy takes."""
        return self.chat(self._messages(prompt, system)).text

    async def acomplete(self, prompt: str, system: Optional[str] = None) -> str:
        """``complete`` for asyncio."""
        return (await self.achat(self._messages(prompt, system))).text

    # -- embeddings -------------------------------------------------------------

    def _embed_args(self, texts: Sequence[str], dimensions: Optional[int]) -> dict[str, Any]:
        args: dict[str, Any] = {"model": self.model, "input": list(texts)}
        if dimensions is not None:
            args["dimensions"] = dimensions
        return args

    def _vectors(self, resp: Any, n: int, seconds: float) -> npt.NDArray[np.float32]:
        usage = getattr(resp, "usage", None)
        self._count(prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0), seconds=seconds)
        data = sorted(resp.data, key=lambda d: d.index)
        if len(data) != n:
            raise LLMError(f"{self.model} returned {len(data)} embeddings for {n} texts")
        return np.asarray([d.embedding for d in data], dtype=np.float32).reshape(n, -1)

    def embed(self, texts: Sequence[str], *, dimensions: Optional[int] = None) -> npt.NDArray[np.float32]:
        """Embeddings of ``texts`` in one request, float32 ``(n, dim)``."""
        n = len(texts)
        args = self._embed_args(texts, dimensions)
        return self._run(self._flow("embeddings", args, lambda resp, seconds: self._vectors(resp, n, seconds)))

    async def aembed(self, texts: Sequence[str], *, dimensions: Optional[int] = None) -> npt.NDArray[np.float32]:
        """``embed`` for asyncio."""
        n = len(texts)
        args = self._embed_args(texts, dimensions)
        return await self._arun(self._flow("embeddings", args, lambda resp, seconds: self._vectors(resp, n, seconds)))
