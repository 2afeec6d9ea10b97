"""The local cluster keeps Ray's token authentication on: this driver holds
the token, and a driver with another token is refused."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import ray
from agentsensus.ray import RemoteStore, StoreActor

pytestmark = pytest.mark.slow  # a Ray cluster

_OTHER_DRIVER = textwrap.dedent(
    """
    import sys, ray
    try:
        ray.init(address=sys.argv[1], _node_ip_address="127.0.0.1", logging_level="ERROR")
    except Exception as e:
        print("refused", type(e).__name__)
        sys.exit(0)
    print("connected")
    """
)


def test_the_cluster_requires_its_token(cluster, tmp_path) -> None:
    from ray._raylet import AuthenticationMode, get_authentication_mode

    assert get_authentication_mode() == AuthenticationMode.TOKEN
    s = RemoteStore(StoreActor.remote(os.fspath(tmp_path / "s"), dim=4))  # this driver's calls pass
    assert s.stats().records == 0
    s.shutdown()
    env = dict(os.environ, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN="0" * 64)
    r = subprocess.run(
        [sys.executable, "-c", _OTHER_DRIVER, cluster.address], env=env, capture_output=True, text=True, timeout=120
    )
    assert r.stdout.split()[:1] == ["refused"], (r.stdout, r.stderr[-2000:])
    assert ray.is_initialized()
