"""A fake OpenAI-compatible server for the tests: a real HTTP process.

Run ``python fake_openai.py``: it binds 127.0.0.1 on a free port, prints
``PORT <n>`` and serves until killed. It implements

- ``POST /v1/chat/completions``: a judge prompt (the user message is JSON with
  ``requests``) is answered by a toy model that calls two texts the same fact
  when they have the same set of words, ignoring case, punctuation, order and
  the articles, and, when the system prompt asks for "supersedes", says a
  statement with the word "moved" supersedes a candidate that is not the same
  fact and starts with the same word; any other prompt gets a "say" action for
  the simulation.
- ``POST /v1/embeddings``: deterministic hashed bag-of-words vectors
  (``dimensions`` or 32 of them), as floats or base64 like the real API.

and, for the tests to steer it:

- ``POST /_script`` ``{"actions": [...]}``: each action is used up by the next
  API request, in order: ``{"content": "..."}`` (answer this text),
  ``{"status": 503, "headers": {...}}`` (fail), ``{"delay": 2.0}`` (sleep,
  then answer normally);
- ``POST /_faults`` ``{"max_prompt_chars": N, "fail_rate": r, "malformed_rate": r,
  "refusal_rate": r, "seed": s}`` (or the same as ``--max-prompt-chars N``,
  ``--fail-rate r``, ... on the command line): a chat prompt of more than N
  characters (all messages) gets a 400 "maximum context length"; of the
  others, a seeded draw fails a share with 503, answers a share with
  malformed JSON and a share with a refusal. ``/_reset`` clears the faults.
- ``GET /_log``: every API request body received; ``POST /_reset``.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import re
import struct
import sys
import threading
import time
import urllib.request
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_WORD = re.compile(r"\w+")
_ARTICLES = {"the", "a", "an"}

_lock = threading.Lock()
_script: list[dict[str, Any]] = []
_log: list[dict[str, Any]] = []
_faults: dict[str, Any] = {}
_rng = random.Random(0)

REFUSAL = "I'm sorry, but I can't help with that."
MALFORMED = '{"verdicts": [{"request": 0, "match":'
TOO_LARGE = (
    "This model's maximum context length is {limit} characters. However, your messages resulted in {n} "
    "characters. Please reduce the length of the messages."
)


def set_faults(faults: dict[str, Any]) -> None:
    """Replaces the fault settings (and reseeds the draws); callers hold ``_lock``."""
    _faults.clear()
    _faults.update({k: v for k, v in faults.items() if v is not None})
    _rng.seed(int(_faults.get("seed", 0)))


def fault(body: dict[str, Any]) -> dict[str, Any]:
    """The scripted-like action the fault settings give this chat request ({} for none); holds ``_lock``."""
    limit = _faults.get("max_prompt_chars")
    chars = sum(len(m.get("content") or "") for m in body.get("messages", []))
    if limit is not None and chars > int(limit):
        msg = TOO_LARGE.format(limit=limit, n=chars)
        return {"status": 400, "message": msg, "type": "invalid_request_error", "code": "context_length_exceeded"}
    draw = _rng.random()
    for key, action in (
        ("fail_rate", {"status": 503}),
        ("malformed_rate", {"content": MALFORMED}),
        ("refusal_rate", {"content": REFUSAL}),
    ):
        rate = float(_faults.get(key, 0.0))
        if draw < rate:
            return action
        draw -= rate
    return {}


def fact_key(text: str) -> frozenset[str]:
    """What the toy model compares: the set of words, minus articles."""
    return frozenset(w for w in _WORD.findall(text.casefold()) if w not in _ARTICLES)


def moved_from(statement: str, candidates: list[dict[str, Any]]) -> Any:
    """The toy model's supersession: the first candidate a "moved" statement replaces (same first word), or None."""
    words = _WORD.findall(statement.casefold())
    if "moved" not in words:
        return None
    return next((c["id"] for c in candidates if _WORD.findall(c["text"].casefold())[:1] == words[:1]), None)


def judge_answer(payload: dict[str, Any], supersedes: bool = False) -> str:
    verdicts = []
    for req in payload["requests"]:
        key = fact_key(req["statement"])
        match = next((c["id"] for c in req["candidates"] if fact_key(c["text"]) == key), None)
        verdict = {"request": req["request"], "match": match}
        if supersedes:
            verdict["supersedes"] = None if match is not None else moved_from(req["statement"], req["candidates"])
        verdicts.append(verdict)
    return json.dumps({"verdicts": verdicts})


def chat_answer(body: dict[str, Any]) -> str:
    last = body["messages"][-1]["content"]
    try:
        payload = json.loads(last)
    except ValueError:
        payload = None
    if isinstance(payload, dict) and "requests" in payload:
        system = body["messages"][0].get("content") or ""
        return judge_answer(payload, supersedes='"supersedes"' in system)
    m = next((re.match(r"You are ([^,.]+)[,.]", x.get("content") or "") for x in body["messages"]), None)
    who = m.group(1) if m else "Someone"
    return json.dumps({"action": "say", "text": f"{who} says the fake model is listening."})


def embedding(text: str, dim: int) -> list[float]:
    v = [0.0] * dim
    for w in _WORD.findall(text.casefold()) or [text]:
        h = zlib.crc32(w.encode("utf-8"))
        v[h % dim] += 1.0 if (h >> 31) & 1 else -1.0
    norm = sum(x * x for x in v) ** 0.5 or 1.0
    return [x / norm for x in v]


def words(text: str) -> int:
    return len(_WORD.findall(text))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes: with Nagle's algorithm each answer waited ~40 ms for a delayed ACK.
    disable_nagle_algorithm = True

    def log_message(self, *args: Any) -> None:  # quiet: the tests read /_log
        pass

    def _send(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(obj).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client timed out and left

    def _body(self) -> dict[str, Any]:
        n = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(n) or b"{}")

    def do_GET(self) -> None:
        if self.path == "/_log":
            with _lock:
                self._send(200, list(_log))
        else:
            self._send(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        body = self._body()
        if self.path == "/_script":
            with _lock:
                _script.extend(body["actions"])
            self._send(200, {"ok": True})
            return
        if self.path == "/_reset":
            with _lock:
                _script.clear()
                _log.clear()
                set_faults({})
            self._send(200, {"ok": True})
            return
        if self.path == "/_faults":
            with _lock:
                set_faults(body)
            self._send(200, {"ok": True})
            return
        if self.path not in ("/v1/chat/completions", "/v1/embeddings"):
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        with _lock:
            _log.append({"path": self.path, "body": body})
            action = _script.pop(0) if _script else {}
            if not action and self.path == "/v1/chat/completions":
                action = fault(body)
        if "delay" in action:
            time.sleep(float(action["delay"]))
        if "status" in action:
            err = {
                "error": {
                    "message": action.get("message", "scripted failure"),
                    "type": action.get("type", "server_error"),
                    "code": action.get("code"),
                }
            }
            self._send(int(action["status"]), err, action.get("headers"))
            return
        if self.path == "/v1/embeddings":
            self._embeddings(body)
        else:
            self._chat(body, action.get("content"))

    def _chat(self, body: dict[str, Any], content: str | None) -> None:
        text = content if content is not None else chat_answer(body)
        prompt = sum(words(m.get("content") or "") for m in body["messages"])
        self._send(
            200,
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": words(text),
                    "total_tokens": prompt + words(text),
                },
            },
        )

    def _embeddings(self, body: dict[str, Any]) -> None:
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        dim = int(body.get("dimensions") or 32)
        data = []
        for i, t in enumerate(texts):
            vec = embedding(t, dim)
            enc: Any = vec
            if body.get("encoding_format") == "base64":
                enc = base64.b64encode(struct.pack(f"<{dim}f", *vec)).decode("ascii")
            data.append({"object": "embedding", "index": i, "embedding": enc})
        tokens = sum(words(t) for t in texts)
        self._send(
            200,
            {
                "object": "list",
                "data": data,
                "model": body["model"],
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            },
        )


class FakeOpenAI:
    """The tests' handle on a running server: its URL and control endpoints."""

    def __init__(self, port: int) -> None:
        self.root = f"http://127.0.0.1:{port}"
        self.url = self.root + "/v1"

    def _post(self, path: str, obj: Any) -> Any:
        req = urllib.request.Request(self.root + path, json.dumps(obj).encode(), {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.load(resp)

    def script(self, *actions: dict[str, Any]) -> None:
        """Queue actions for the next API requests (see fake_openai.py)."""
        self._post("/_script", {"actions": list(actions)})

    def reset(self) -> None:
        self._post("/_reset", {})

    def faults(self, **settings: Any) -> None:
        """Sets the server's faults (see fake_openai.py): ``max_prompt_chars``, ``fail_rate``, ..."""
        self._post("/_faults", settings)

    def log(self, path: str = "/v1/chat/completions") -> list[dict[str, Any]]:
        """The bodies of the API requests received on ``path``."""
        with urllib.request.urlopen(self.root + "/_log", timeout=10) as resp:
            return [e["body"] for e in json.load(resp) if e["path"] == path]


def main() -> None:
    p = argparse.ArgumentParser(description="A fake OpenAI-compatible server on 127.0.0.1.")
    p.add_argument("--max-prompt-chars", type=int, default=None)
    p.add_argument("--fail-rate", type=float, default=None)
    p.add_argument("--malformed-rate", type=float, default=None)
    p.add_argument("--refusal-rate", type=float, default=None)
    p.add_argument("--seed", type=int, default=0)
    set_faults({k: v for k, v in vars(p.parse_args()).items()})
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
