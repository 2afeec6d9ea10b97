"""The embedder a store records (the engine's ``settings`` table, key
``"embedder"``): a store created with a named embedder (``hash``,
``minilm``, ``sentence_transformers:NAME``, ``openai:MODEL``, or a built-in
embedder object, which carries its name) reopens with it when no ``embed``
is given. A store created with an unnamed callable records ``""``, and
needs ``embed`` again on every open."""

from __future__ import annotations

from typing import Any, Optional

from .. import embedders

__all__ = ["SETTING", "persisted_embed", "no_embed_message"]

SETTING = "embedder"


def persisted_embed(engine: Any, embed: Any, *, readonly: bool, created: bool, path: str) -> tuple[Any, Optional[str]]:
    """The embed function a store opens with, and the name it records
    (``None``: it records none; ``""``: an unnamed callable). A named
    ``embed`` that differs from the recorded name is refused in one line;
    one given to a store that records none is recorded (writable opens)."""
    recorded: Optional[str] = engine.setting(SETTING)
    name = embedders.name_of(embed) if embed is not None else None
    if embed is None:
        if recorded:
            return embedders.from_name(recorded), recorded
        return None, recorded
    if recorded and name is not None and name != recorded:
        raise ValueError(
            f"the store at {path} was created with embedder {recorded!r}, not {name!r}: "
            f"open it without embed (or with {recorded!r})"
        )
    if recorded is None and not readonly and (name is not None or created):
        engine.set_setting(SETTING, name or "")
        recorded = name or ""
    return embed, recorded


def no_embed_message(name: Optional[str], what: str) -> str:
    """The one-line refusal of a call that needs an embed function when the
    store has none; ``what`` says what to pass instead."""
    if name == "":
        return f"this store was created with an unnamed embed callable: pass embed= when opening it, or {what}"
    return f"this store has no embed function: {what}"
