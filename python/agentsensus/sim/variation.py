"""How witnesses word the same event differently: seeded, with a strength.

Four kinds of variation, each drawn from a random stream keyed by the run's
seed, the event and the witness (so a witness words an event the same way in
every run and on every backend, whatever else happens):

- **perspective and frame**: which of several frames a witness uses
  ('Hamlet told me: "..."', '"...," Hamlet said.', 'I heard Hamlet say: ...'),
  and whether it quotes a speech or reports it in indirect speech
  ('Hamlet told me that he would ...', `paraphrase`);
- **clauses left out**: a listener forgets a statement of a long speech, or
  the last comma-separated part of a sentence;
- **words substituted and reordered**: an archaic form or a content word
  becomes a modern or near synonym; two comma-separated parts swap;
- **a wrong or missing name**: now and then a witness names the wrong person
  present, or says "someone".

``strength`` scales every probability: 0 gives each perspective its first
frame and every witness the exact words (quoted), 1 is the most varied.
``timestamps`` makes accounts say when it happened ("In scene 6, ...");
off by default, so a reader has only what was said and done. At the
default, 0.5, the frames vary and 30% of the statements of speeches are
reported in indirect speech (Hamlet; 60% at 1). Two accounts of one fact
read back to the same core (`wording.read`) in 97% of Hamlet's pairs
at 0, 43% at 0.5 and 34% at 1.
"""

from __future__ import annotations

import random
import re
import zlib
from typing import Sequence

__all__ = ["Variation", "SUBSTITUTES"]

#: Word -> what a witness may say instead (archaic -> modern, near synonyms).
SUBSTITUTES: dict[str, str] = {
    "thou": "you",
    "thee": "you",
    "thy": "your",
    "thine": "your",
    "art": "are",
    "hath": "has",
    "doth": "does",
    "dost": "do",
    "'tis": "it is",
    "ere": "before",
    "oft": "often",
    "nay": "no",
    "ay": "yes",
    "wherefore": "why",
    "whither": "where",
    "hither": "here",
    "thither": "there",
    "prithee": "please",
    "anon": "soon",
    "perchance": "perhaps",
    "methinks": "I think",
    "speak": "talk",
    "good": "fine",
    "look": "see",
    "fear": "dread",
    "begin": "start",
    "think": "believe",
    "sword": "blade",
    "poison": "venom",
    "grave": "tomb",
    "fair": "lovely",
    "sweet": "dear",
    "haste": "hurry",
    "quickly": "fast",
    "great": "big",
    "little": "small",
    "tell": "say",
    "mad": "crazy",
    "father": "dad",
    "mother": "mum",
    "answer": "reply",
    "enemy": "foe",
    "friend": "companion",
    "bid": "ask",
    "slain": "killed",
    "wed": "married",
}
_WORD = re.compile(r"[A-Za-z']+")


class Variation:
    """Seeded variation of wording; see the module docstring."""

    def __init__(self, strength: float = 0.5, seed: int = 0, *, timestamps: bool = False) -> None:
        if not 0.0 <= float(strength) <= 1.0:
            raise ValueError(f"variation strength must be in [0, 1], got {strength!r}")
        self.strength = float(strength)
        self.seed = int(seed)
        # Whether accounts say when it happened ("In scene 6, ..."): off, a reader has only the words.
        self.timestamps = bool(timestamps)
        # Accounts are a pure function of (event, witness, seed, strength):
        # every backend's run of the same source reuses them.
        self.memo: dict[tuple[object, str], list[tuple[str, int]]] = {}

    def __repr__(self) -> str:
        return f"Variation(strength={self.strength}, seed={self.seed}, timestamps={self.timestamps})"

    def rng(self, *key: object) -> random.Random:
        """The random stream of one (event, witness, ...) key: independent of call order."""
        return random.Random(zlib.crc32(repr((self.seed, *key)).encode("utf-8")))

    def chance(self, rng: random.Random, p: float) -> bool:
        """True with probability ``p * strength`` (never at strength 0)."""
        return self.strength > 0 and rng.random() < p * self.strength

    def pick(self, rng: random.Random, options: Sequence[str]) -> str:
        """A frame: the first at strength 0, else one drawn (the first twice as likely)."""
        if self.strength == 0 or len(options) == 1:
            return options[0]
        weights = [2.0] + [self.strength] * (len(options) - 1)
        return rng.choices(list(options), weights)[0]

    def name(self, rng: random.Random, who: str, others: Sequence[str]) -> str:
        """``who``, or now and then someone else present, or "someone"."""
        wrong = [o for o in others if o != who]
        if wrong and self.chance(rng, 0.08):
            return rng.choice(wrong)
        if self.chance(rng, 0.08):
            return "someone"
        return who

    def words(self, rng: random.Random, text: str, *, drop: bool = True) -> str:
        """``text`` in a witness's own words: substitutions, maybe a part
        left out (``drop``) or two parts swapped. Never empty when ``text`` has a word."""
        parts = [p.strip() for p in text.split(",")]
        if drop and len(parts) >= 2 and len(_WORD.findall(parts[-1])) >= 2 and self.chance(rng, 0.4):
            parts = parts[:-1]
            text = ", ".join(parts).rstrip(" ,;:") + "."
        elif len(parts) >= 2 and all(_WORD.search(p) for p in parts[:2]) and self.chance(rng, 0.25):
            a, b = parts[0], parts[1].rstrip(".!?;:")
            tail = parts[1][len(b) :] if len(parts) == 2 else ""
            rest = parts[2:]
            text = ", ".join([_upper_first(b), _lower_first(a)] + rest) + tail
        out = []
        pos = 0
        for m in _WORD.finditer(text):
            w = m.group(0)
            sub = SUBSTITUTES.get(w.lower())
            out.append(text[pos : m.start()])
            if sub is not None and self.chance(rng, 0.7):
                out.append(_upper_first(sub) if w[0].isupper() else sub)
            else:
                out.append(w)
            pos = m.end()
        out.append(text[pos:])
        varied = "".join(out).strip()
        return varied if _WORD.search(varied) else text


def _upper_first(s: str) -> str:
    return s[:1].upper() + s[1:]


def _lower_first(s: str) -> str:
    # The sentence's first word loses its capital when it is a common word;
    # "I" and anything that may be a name keep theirs.
    first = s.split(" ", 1)[0].strip(",;:!?.").lower()
    return s[:1].lower() + s[1:] if first in _COMMON_OPENERS or first in SUBSTITUTES else s


_COMMON_OPENERS = frozenset(
    "the a an and but or so then now what who how why where when this that these those there here "
    "my our your his her their its it he she we they you thou o oh ay nay yes no good well come go "
    "let is are was were be do did have had will shall would should can could may might must".split()
)
