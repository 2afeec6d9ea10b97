"""The test side of owner_process.py: starts an owner in its own process,
sends it commands, and stops it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Optional

HERE = os.path.dirname(__file__)


class Owner:
    """An owner in its own process, serving its heads on 127.0.0.1 (``url``)."""

    def __init__(self, path: str, owner: str, keys: Optional[list[str]] = None, token: Optional[str] = None) -> None:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), HEADS_TOKEN=token or "")
        self.p = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "owner_process.py"), path, owner, *(keys or [])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.token = token
        line = self.p.stdout.readline()
        assert line.startswith("listening "), line
        self.url = line.split()[1]

    def say(self, command: str) -> int:
        """Sends one command line; the number its answer gives."""
        self.p.stdin.write(command + "\n")
        self.p.stdin.flush()
        return int(self.p.stdout.readline().split()[1])

    def publish(self, key: str, value: str) -> int:
        return self.say(f"publish {key} {value}")

    def stop(self) -> None:
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGCONT)  # a test may have stopped it
            self.p.stdin.close()
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
