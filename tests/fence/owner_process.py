"""An owner process for the transport tests: opens its own store, serves its
heads over the real HTTP transport on 127.0.0.1, and publishes on command.

argv: PATH OWNER KEY...; the environment variable HEADS_TOKEN, if set, is
the server's shared token.
stdin: ``publish KEY VALUE`` -> prints ``ok VERSION``; ``deposit ROUND
TEXT`` -> deposits TEXT as OWNER's (a judge that reads "X moved ..." as
superseding the record about X) and prints ``ok ID``; ``forget ID`` ->
prints ``ok ID``; EOF ends it.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from agentsensus import Store, Supersedes
from agentsensus.planfence.transport import HeadsServer


def moves(requests: Any) -> list[Any]:
    """A statement "X moved to ..." supersedes the record about X; anything else is new."""
    out: list[Any] = []
    for r in requests:
        who = r.statement.split()[0]
        out.append(next((Supersedes(c.id) for c in r.candidates if "moved" in r.statement and who in c.text), None))
    return out


def main() -> None:
    path, owner = sys.argv[1], sys.argv[2]
    keys = sys.argv[3:]
    token = os.environ.get("HEADS_TOKEN") or None
    with Store(path, dim=4) as store:
        for k in keys:
            store.fence.publish(k, owner, f"{k} v1")
        with HeadsServer(store, owner, host="127.0.0.1", port=0, token=token) as server:
            print(f"listening {server.url}", flush=True)
            for line in sys.stdin:
                cmd, _, rest = line.rstrip("\n").partition(" ")
                key, _, value = rest.partition(" ")
                if cmd == "publish":
                    print(f"ok {store.fence.publish(key, owner, value)}", flush=True)
                elif cmd == "deposit":  # one vector for all: every record is a candidate
                    got = store.deposit(owner, [value], [[1.0, 0.0, 0.0, 0.0]], round=int(key), judge=moves)
                    print(f"ok {got.ids[0]}", flush=True)
                elif cmd == "forget":
                    store.forget(owner, int(key))
                    print(f"ok {key}", flush=True)


if __name__ == "__main__":
    main()
