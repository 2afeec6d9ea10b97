"""A full device raises StoreFullError ("no space left on the device") and
loses nothing: every acknowledged write is there after reopening, the store
verifies, and writes go on once space is freed.

The store lives on a 4 MiB tmpfs mounted in a private mount namespace of a
child process (``unshare -m``; ``-r`` too when not root), so the mount
never outlives the test. A machine where neither works fails the test,
saying so: it is never skipped."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

_SCENARIO = r"""
import json, os, subprocess, sys
import numpy as np
from agentsensus import Error, Store, StoreFullError

mnt = sys.argv[1]
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt], check=True)
filler = os.path.join(mnt, "filler")
with open(filler, "wb") as f:
    f.write(os.urandom(512 << 10))  # freed at the end to make room again

def vec(i):
    v = np.random.default_rng(i).standard_normal(16).astype(np.float32)
    return v / np.linalg.norm(v)

out = {"errors": []}
path = os.path.join(mnt, "s")
s = Store(path, dim=16)
acked = {}
for i in range(100000):  # bounded: 4 MiB holds a few thousand of these
    text = f"statement {i} " + "x" * 400
    try:
        acked[s.deposit(f"o{i % 3}", [text], vec(i)).ids[0]] = text
    except StoreFullError as e:
        out["errors"].append(["deposit", type(e).__name__, str(e), isinstance(e, Error), text])
        break
try:
    s.deposit_many([("o9", [f"batch {j} " + "y" * 400], vec(10**6 + j)) for j in range(50)])
except StoreFullError as e:
    out["errors"].append(["deposit_many", type(e).__name__, str(e), True, ""])
s.close()

s = Store(path)  # reopened on the still-full device
got = {m.id: m.text for m in s.records()}
out["acked"] = len(acked)
out["kept_all"] = got == acked
out["verify"] = s.verify()
os.remove(filler)
out["after_free"] = s.deposit("o1", ["room again " + "z" * 400], vec(-1 % 2**32)).ids
out["verify_after"] = s.verify()
s.close()
print(json.dumps(out))
"""


def _namespace_prefix() -> list[str]:
    if shutil.which("unshare") is None:
        pytest.fail("test_disk_full needs unshare(1) to mount a small tmpfs in a private namespace")
    return ["unshare", "-m"] if os.geteuid() == 0 else ["unshare", "-r", "-m"]


@pytest.mark.slow
def test_a_full_device_raises_store_full_and_loses_nothing(tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = subprocess.run(
        [*_namespace_prefix(), sys.executable, "-c", _SCENARIO, str(mnt)], capture_output=True, text=True, timeout=300
    )
    if r.returncode != 0 and "mount" in r.stderr and "permission" in r.stderr.lower():
        pytest.fail(f"cannot mount a tmpfs here (needed to fill a device): {r.stderr[-500:]}")
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.splitlines()[-1])
    (op, kind, message, is_error, _), (op2, kind2, message2, _, _) = out["errors"]
    assert (op, kind, is_error, op2, kind2) == ("deposit", "StoreFullError", True, "deposit_many", "StoreFullError")
    assert "no space left on the device" in message and "nothing was written" in message2
    assert "\n" not in message
    assert out["acked"] > 100 and out["kept_all"] and out["verify"] == []
    assert len(out["after_free"]) == 1 and out["verify_after"] == []


def test_store_full_error_is_exported_where_errors_are():
    import agentsensus
    import agentsensus.errors

    assert agentsensus.StoreFullError is agentsensus.errors.StoreFullError
    assert issubclass(agentsensus.StoreFullError, agentsensus.Error)
    assert "StoreFullError" in agentsensus.__all__ and "StoreFullError" in agentsensus.errors.__all__
