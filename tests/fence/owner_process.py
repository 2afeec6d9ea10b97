"""An owner process for the transport tests: opens its own store, serves its
heads over the real HTTP transport on 127.0.0.1, and publishes on command.

argv: PATH OWNER KEY...; the environment variable HEADS_TOKEN, if set, is
the server's shared token.
stdin: ``publish KEY VALUE`` -> prints ``ok VERSION``; EOF ends it.
"""

from __future__ import annotations

import os
import sys

from agentsensus import Store
from agentsensus.planfence.transport import HeadsServer


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
                cmd, key, value = line.rstrip("\n").split(" ", 2)
                if cmd == "publish":
                    print(f"ok {store.fence.publish(key, owner, value)}", flush=True)


if __name__ == "__main__":
    main()
