"""A counting fake of an OpenAI-compatible chat endpoint on 127.0.0.1 that
answers from a ground-truth map of which statement tells which fact, for
bench/llm_cost.py.

It serves ``POST /v1/chat/completions`` in a thread of the calling process
and answers two kinds of prompt as a careful model would:

- agentsensus's equivalence judge (``agentsensus.judges.llm``): the last
  message is JSON with ``requests``; each verdict names the candidate that
  tells the statement's fact, or null;
- mem0's fact extraction (``Memory.add(infer=True)``, mem0 2.x: one call
  per add, its system prompt the "Memory Extractor" one): the statement of
  "## New Messages" is returned as the one memory to add,
  ``{"memory": [{"id": "0", "text": ..., "attributed_to": "user"}]}``,
  unless a memory of "## Existing Memories" already tells the same fact,
  when it answers ``{"memory": []}`` (mem0's own example of a duplicate).

Every call is counted with its prompt and completion tokens, estimated as
characters / 4 over the messages' contents and the answer (the same
estimate for every caller; no tokenizer is installed here).
"""

from __future__ import annotations

import json
import math
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional

MEM0_SYSTEM_MARK = "Memory Extractor"
_SECTION = re.compile(r"^## (.+)$", re.M)


def tokens(text: str) -> int:
    """The token estimate used for every prompt and answer: characters / 4."""
    return math.ceil(len(text) / 4)


def _sections(prompt: str) -> dict[str, str]:
    """mem0's user prompt split by its "## Title" headings."""
    marks = list(_SECTION.finditer(prompt))
    return {
        m.group(1).strip(): prompt[m.end() : marks[i + 1].start() if i + 1 < len(marks) else len(prompt)].strip()
        for i, m in enumerate(marks)
    }


class CountingEndpoint:
    """The fake endpoint: ``with CountingEndpoint(fact_of) as ep: ep.url``;
    ``ep.counts`` holds calls and tokens since the last ``reset()``."""

    def __init__(self, fact_of: dict[str, int]) -> None:
        self.fact_of = fact_of
        self.lock = threading.Lock()
        self.counts = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "unparsed": 0}
        self.server: Optional[ThreadingHTTPServer] = None
        self.thread: Optional[threading.Thread] = None
        self.url = ""

    def reset(self) -> None:
        """Zeroes the counts."""
        with self.lock:
            for key in self.counts:
                self.counts[key] = 0

    def __enter__(self) -> "CountingEndpoint":
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                self._send(200, endpoint.complete(body))

            def _send(self, status: int, obj: Any) -> None:
                data = json.dumps(obj).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        return self

    def __exit__(self, *exc: Any) -> None:
        assert self.server is not None and self.thread is not None
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)

    # -- answers --------------------------------------------------------------

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """One chat completion: the answer, counted."""
        messages = body.get("messages", [])
        contents = [m.get("content") or "" for m in messages]
        system = next((c for m, c in zip(messages, contents) if m.get("role") == "system"), "")
        last = contents[-1] if contents else ""
        if MEM0_SYSTEM_MARK in system:
            text = self.extraction(last)
        else:
            text = self.verdicts(last)
        prompt, completion = sum(tokens(c) for c in contents), tokens(text)
        with self.lock:
            self.counts["calls"] += 1
            self.counts["prompt_tokens"] += prompt
            self.counts["completion_tokens"] += completion
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        }

    def verdicts(self, last: str) -> str:
        """The judge's answer: per request, the candidate of the same fact."""
        try:
            requests = json.loads(last)["requests"]
        except (ValueError, KeyError, TypeError):
            with self.lock:
                self.counts["unparsed"] += 1
            return json.dumps({"verdicts": []})
        out = []
        for r in requests:
            want = self.fact_of.get(r["statement"])
            match = next(
                (c["id"] for c in r["candidates"] if want is not None and self.fact_of.get(c["text"]) == want), None
            )
            out.append({"request": r["request"], "match": match})
        return json.dumps({"verdicts": out})

    def extraction(self, prompt: str) -> str:
        """mem0's extraction answer: the new statement, unless an existing
        memory tells its fact already."""
        parts = _sections(prompt)
        new = [
            line[len("user: ") :] for line in parts.get("New Messages", "").splitlines() if line.startswith("user: ")
        ]
        try:
            existing = [m["text"] for m in json.loads(parts.get("Existing Memories", "[]") or "[]")]
        except (ValueError, KeyError, TypeError):
            existing = []
        known = {self.fact_of.get(t) for t in existing} - {None}
        memories = []
        for text in new:
            fact = self.fact_of.get(text)
            if fact is None:
                with self.lock:
                    self.counts["unparsed"] += 1
            if fact is None or fact not in known:
                memories.append({"id": str(len(memories)), "text": text, "attributed_to": "user"})
        return json.dumps({"memory": memories})
