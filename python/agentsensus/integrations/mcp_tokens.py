"""Bearer tokens of ``agentsensus mcp`` over HTTP: each binds a connection to one owner (and scope).

The table comes from ``--tokens FILE`` or the ``AGENTSENSUS_MCP_TOKENS``
environment variable, in either of two forms. Lines, ``#`` comments and
blank lines ignored::

    # token                                      owner   [scope]
    3q2+7w9... (at least 16 bytes, no spaces)    alice
    Zm9vYmFy...                                  bob     work

or JSON, a list of objects::

    [{"token": "3q2+7w9...", "owner": "alice"}, {"token": "Zm9v...", "owner": "bob", "scope": "work"}]

A token is at least `MIN_TOKEN_BYTES` bytes with no whitespace, and
appears once. A file must not be readable by other users (``chmod 600``).
A request's token is checked against every token of the table with
``hmac.compare_digest`` on SHA-256 digests, with no early exit, so the time
taken says nothing about which token, or how much of one, matched.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
from dataclasses import dataclass
from typing import Any, Optional

from .._store.scopes import check_scope
from .._store.validation import check_owner
from ..planfence.transport_auth import MIN_TOKEN_BYTES

__all__ = ["ENV_VAR", "MIN_TOKEN_BYTES", "Binding", "TokenTable", "parse_tokens", "read_tokens"]

#: The environment variable that may hold the table (same forms as the file).
ENV_VAR = "AGENTSENSUS_MCP_TOKENS"


@dataclass(frozen=True)
class Binding:
    """Whom a connection acts as: ``owner``, and with ``scope`` set, only
    that scope's records (``None``: every scope the owner deposited in)."""

    owner: str
    scope: Optional[str] = None


def _entry(token: Any, owner: Any, scope: Any, where: str) -> tuple[str, Binding]:
    if not isinstance(token, str) or not token or any(c.isspace() for c in token):
        raise ValueError(f"{where}: a token must be a non-empty text without whitespace")
    if len(token.encode("utf-8")) < MIN_TOKEN_BYTES:
        raise ValueError(
            f"{where}: a token must be at least {MIN_TOKEN_BYTES} bytes "
            "(python -c 'import secrets; print(secrets.token_urlsafe(32))' makes one)"
        )
    try:
        binding = Binding(check_owner(owner), None if scope is None else check_scope(scope))
    except (TypeError, ValueError) as e:
        raise ValueError(f"{where}: {e}") from None
    return token, binding


def parse_tokens(text: str, source: str) -> dict[str, Binding]:
    """The table in ``text`` (lines or JSON, see the module); ``source``
    names it in errors. ``ValueError`` (one line) on a malformed entry, a
    repeated token or an empty table."""
    entries: list[tuple[str, Binding]] = []
    if text.lstrip().startswith("["):
        try:
            rows = json.loads(text)
        except ValueError as e:
            raise ValueError(f"{source}: not valid JSON: {e}") from None
        if not isinstance(rows, list):
            raise ValueError(f"{source}: JSON tokens must be a list of objects")
        for i, row in enumerate(rows):
            where = f"{source}, entry {i}"
            if (
                not isinstance(row, dict)
                or set(row) - {"token", "owner", "scope"}
                or not {"token", "owner"} <= set(row)
            ):
                raise ValueError(f'{where}: each entry is an object with "token", "owner" and optionally "scope"')
            entries.append(_entry(row["token"], row["owner"], row.get("scope"), where))
    else:
        for n, line in enumerate(text.splitlines(), 1):
            words = line.split()
            if not words or words[0].startswith("#"):
                continue
            if len(words) not in (2, 3):
                raise ValueError(f"{source}, line {n}: expected 'token owner [scope]'")
            entries.append(_entry(words[0], words[1], words[2] if len(words) == 3 else None, f"{source}, line {n}"))
    if not entries:
        raise ValueError(f"{source}: no tokens")
    table: dict[str, Binding] = {}
    for token, binding in entries:
        if token in table:
            raise ValueError(f"{source}: a token appears twice")
        table[token] = binding
    return table


def read_tokens(path: str) -> dict[str, Binding]:
    """The table in the file at ``path``, which other users must not be
    able to read (``chmod 600``)."""
    try:
        mode = os.stat(path).st_mode
        with open(path, encoding="utf-8") as f:
            text = f.read(1 << 20)
    except (OSError, UnicodeDecodeError) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise ValueError(f"cannot read the token file {path}: {why}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ValueError(f"the token file {path} is open to other users (mode {stat.filemode(mode)}); chmod 600 it")
    return parse_tokens(text, path)


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


class TokenTable:
    """The ``mcp`` SDK's token verifier over a table of tokens: a valid
    token's access names its owner (``client_id``) and scope (``subject``),
    which the SDK also uses to keep one connection's session from another's."""

    def __init__(self, table: dict[str, Binding]) -> None:
        self._rows = [(_digest(t), b) for t, b in table.items()]

    def binding(self, token: str) -> Optional[Binding]:
        """The binding of ``token``, or ``None``. Compares against every
        row in constant time, with no early exit."""
        d = _digest(token)
        found: Optional[Binding] = None
        for digest, binding in self._rows:
            if hmac.compare_digest(d, digest):
                found = binding
        return found

    async def verify_token(self, token: str) -> Any:
        """The SDK's hook: an ``AccessToken`` for a valid token, else ``None`` (then 401)."""
        from mcp.server.auth.provider import AccessToken

        b = self.binding(token)
        if b is None:
            return None
        scope = None if b.scope is None else f"scope:{b.scope}"
        return AccessToken(token=token, client_id=b.owner, scopes=[], subject=scope, claims={"owner": b.owner})

    @staticmethod
    def current() -> Optional[Binding]:
        """The binding of the request being served (from the SDK's auth
        context), or ``None`` outside an authenticated request."""
        from mcp.server.auth.middleware.auth_context import get_access_token

        access = get_access_token()
        if access is None:
            return None
        scope = access.subject[len("scope:") :] if access.subject else None
        return Binding(access.client_id, scope)
