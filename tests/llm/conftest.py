"""The fake OpenAI-compatible server, started once per session as a real
process on 127.0.0.1, and reset before every test that uses it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest
from fake_openai import FakeOpenAI

SERVER = Path(__file__).with_name("fake_openai.py")


@pytest.fixture(scope="session")
def fake_server() -> Iterator[FakeOpenAI]:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, str(SERVER)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("PORT "), f"the fake server did not start: {line!r}"
        yield FakeOpenAI(int(line.split()[1]))
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def fake(fake_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> FakeOpenAI:
    fake_server.reset()
    # No real key may leak into a request to the fake server.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return fake_server
