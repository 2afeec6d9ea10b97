"""Indirect speech: a witness reports what was said in a sentence of its own.

Besides quoting a speech ('Hamlet told me: "I will go to England."'), a
witness may report it ('Hamlet told me that he would go to England.'). The
reported clause is the spoken sentence with

- **pronouns shifted** to the reporter's side: the speaker's "I" becomes "he"
  or "she" (the speaker keeps "I"), "you" becomes "I"/"me" for the one
  addressed, "we" for a crowd addressed, and the addressee otherwise;
- **the tense stepped back**: will -> would, is -> was, can -> could, ...;
- **words dropped**: interjections ("O", "Alas"), forms of address
  ("my lord", a vocative name) and some fillers ("now", "indeed");
- **a clause moved**: the first comma-separated part may go last;
- **content words changed** for near synonyms from `SYNONYMS`, a table
  wider than the quotation's substitutions.

A question is reported as one ("Bernardo asked who was there."). Everything
is drawn from the random stream it is handed, scaled by the strength, so a
witness reports a speech the same way in every run.
"""

from __future__ import annotations

import random
import re
from typing import Callable

from .words import STOPWORDS

__all__ = ["SYNONYMS", "FEMALE", "indirect", "pronouns"]

#: Word -> a near synonym a witness may use when it reports a speech in its own sentence.
SYNONYMS: dict[str, str] = dict(
    pair.split("=", 1)
    for pair in re.split(
        r",\s*",
        """
    thou=you, thee=you, thy=your, thine=your, art=are, hath=has, doth=does, dost=do, ere=before, oft=often,
    wherefore=why, whither=where, hither=here, thither=there, prithee=please, anon=soon, perchance=perhaps,
    methinks=I think, 'tis=it is, hence=away, whence=from where, aught=anything, naught=nothing,
    nought=nothing, wilt=will, shalt=shall, canst=can, couldst=could, wouldst=would, ne'er=never, e'er=ever,
    o'er=over, betwixt=between, forsooth=truly, alack=alas, mine=my, ye=you, yon=that, yonder=over there,
    sirrah=fellow, wot=know, hie=hurry, fie=shame, belike=probably, haply=perhaps, marry=indeed, speak=talk,
    good=fine, look=see, fear=dread, begin=start, think=believe, sword=blade, poison=venom, grave=tomb,
    fair=lovely, sweet=dear, haste=hurry, quickly=fast, great=big, little=small, tell=say, mad=crazy,
    father=dad, mother=mum, answer=reply, enemy=foe, friend=companion, bid=ask, slain=killed, wed=married,
    king=monarch, queen=consort, lord=master, kill=slay, die=perish, night=evening, heart=soul, love=adore,
    hate=loathe, woman=lady, man=fellow, brother=sibling, son=boy, daughter=girl, wife=spouse,
    husband=spouse, come=arrive, stay=remain, see=behold, hear=listen, know=understand, find=discover,
    give=grant, take=seize, keep=hold, seek=search, send=dispatch, show=reveal, leave=depart,
    return=come back, bring=fetch, run=hurry, walk=stroll, stand=wait, sleep=slumber, dream=vision, weep=cry,
    laugh=chuckle, strange=odd, true=honest, false=untrue, honest=truthful, noble=worthy, gentle=kind,
    cruel=harsh, foul=vile, wicked=evil, brave=bold, poor=wretched, rich=wealthy, old=aged, young=youthful,
    happy=glad, sad=sorrowful, angry=furious, afraid=scared, quiet=silent, loud=noisy, dark=gloomy,
    cold=chilly, strong=mighty, weak=feeble, sick=ill, wise=clever, fool=idiot, villain=scoundrel,
    grief=sorrow, joy=delight, woe=misery, honour=honor, word=promise, letter=note, news=tidings,
    ghost=spirit, spirit=ghost, heaven=paradise, hell=underworld, earth=ground, world=earth, blood=gore,
    crown=throne, court=palace, castle=fortress, house=home, gate=door, soldier=guard, guard=sentry,
    watch=guard, duty=service, matter=business, cause=reason, reason=cause, purpose=aim, deed=act,
    crime=offence, murder=killing, revenge=vengeance, madness=lunacy, play=performance, player=actor,
    soon=shortly, again=once more, indeed=truly, truly=really, often=frequently, pray=beg, beseech=beg,
    swear=vow, promise=pledge, wish=want, fellow=man, lady=woman, master=lord, servant=attendant,
    body=corpse, head=skull, eyes=sight, hand=fist, tongue=speech, face=countenance
    """.strip(),
    )
)

#: Names and titles of women in the plays: the pronoun a reporter uses for them.
FEMALE = frozenset(
    """gertrude ophelia queen lady juliet nurse desdemona emilia bianca cordelia goneril regan portia calpurnia
    cleopatra octavia charmian iras rosalind celia phebe audrey viola olivia maria hermia helena hippolyta titania
    miranda beatrice hero margaret ursula katherina katharina isabella mariana hermione perdita paulina imogen lavinia
    tamora cressida helen volumnia virgilia constance blanche elinor anne elizabeth duchess witch mistress princess
    countess hecate juno ceres iris jessica nerissa julia silvia lucetta adriana luciana marina thaisa dionyza
    diana mopsa dorcas""".split()
)

_TOKEN = re.compile(r"[A-Za-z][A-Za-z'-]*|[^A-Za-z]+")  # "to-night" is one word
_INTERJECTIONS = frozenset("o oh ah alas ay nay well lo fie pish tush hark hush marry".split())
_FILLERS = frozenset("now indeed even still too pray prithee then sure".split())
_ADDRESS = re.compile(
    r"\b(?:(?:my|good|sweet|dear|most|noble|gracious)\s+)*(?:lord|lady|liege|sir|madam|master|mistress|friend|"
    r"friends|gentlemen|masters|sirs|fellow|boy|girl|cousin|coz|son|father|mother)\b",
    re.IGNORECASE,
)
_NAME = re.compile(r"^(?:[A-Z][a-z']+)(?: [A-Z][a-z']+){0,2}$")
_WH = frozenset("who whom whose what why where when how which".split())
_AUX = frozenset(
    "is are art am was were do does doth dost did will wilt shall shalt can canst have has hath hast".split()
)
#: Present -> past, for the tense a report steps back to.
_BACK = {
    "am": "was",
    "is": "was",
    "art": "was",
    "are": "were",
    "'tis": "it was",
    "will": "would",
    "wilt": "would",
    "shall": "would",
    "shalt": "would",
    "can": "could",
    "canst": "could",
    "may": "might",
    "mayst": "might",
    "have": "had",
    "has": "had",
    "hath": "had",
    "hast": "had",
    "do": "did",
    "does": "did",
    "doth": "did",
    "dost": "did",
}
_PLURAL_SUBJECTS = frozenset("we they you ye".split())
_FIRST = {"i": 0, "me": 1, "my": 2, "mine": 3, "myself": 4}
_FIRST_PLURAL = {"we": 0, "us": 1, "our": 2, "ours": 3, "ourselves": 4}
_SECOND = {
    "you": 0,
    "thou": 0,
    "ye": 0,
    "thee": 1,
    "your": 2,
    "thy": 2,
    "thine": 3,
    "yours": 3,
    "yourself": 4,
    "thyself": 4,
    "yourselves": 4,
}
_MODALS = frozenset("would should could might must may mayst will shall can did".split())
_SUBJECTS = frozenset("i you thou ye we he she it they".split())
_CONJ = re.compile(r"^(?:and|but|or|for|so|yet)\s+", re.IGNORECASE)
#: Verbs a speech opens with when it bids someone do something: reported as 'told me to ...'.
_ORDERS = frozenset(
    """speak look go come stay give take tell let hold stand follow remember hear mark swear get bring see
    make leave run fetch call set break lay put keep sit rest away farewell fare bid pray answer show seek
    find send help forgive love kill strike draw beware""".split()
)
#: Capitalised words a reported clause may open with that are no name.
_LOWER_OK = frozenset("the a an this that these those there here it he she they we you his her their".split())


def pronouns(who: str | None, many: bool = False) -> tuple[str, str, str, str, str]:
    """(subject, object, possessive, possessive alone, reflexive) for ``who``:
    ``"I"`` for the reporter, ``"we"`` (``many``) for the reporter among others, a name's he or she, or they."""
    if who == "I":
        return ("we", "us", "our", "ours", "ourselves") if many else ("I", "me", "my", "mine", "myself")
    if many or who is None:
        return ("they", "them", "their", "theirs", "themselves")
    if any(part.casefold() in FEMALE for part in who.split()):
        return ("she", "her", "her", "hers", "herself")
    return ("he", "him", "his", "his", "himself")


def indirect(
    sentence: str,
    rng: random.Random,
    chance: Callable[[random.Random, float], bool],
    *,
    speaker: str,
    addressee: str | None,
    many: bool = False,
) -> tuple[str, str]:
    """``sentence`` as a reported clause, and its kind: ``"that"`` (a
    statement), ``"to"`` (an order: 'told me to ...') or ``"ask"`` (a question).

    ``speaker`` is who said it (``"I"`` when the reporter did), ``addressee``
    who it was said to (``"I"`` when the reporter was, ``None`` for no one in
    particular) and ``many`` whether that was a crowd. ``chance(rng, p)``
    draws the optional changes (dropped words, a moved clause, synonyms).
    Never empty when ``sentence`` has a word.
    """
    text = sentence.strip()
    question = text.rstrip(" '\"").endswith("?")
    pieces = [p for p in re.split(r"(?<=[?!.])\s+", text) if re.search(r"[A-Za-z]", p)] or [text]
    clauses = [_clause(p, rng, chance, speaker, addressee, many) for p in pieces]
    clause = " and ".join(c for c in clauses if c) or text
    if not re.search(r"[A-Za-z]", clause):
        return text, "that"
    head = clause.split(" ", 1)[0].casefold()
    if question:
        return (clause if head in _WH or head == "whether" else "whether " + clause), "ask"
    if head in _ORDERS:
        return clause, "to"
    return clause, "that"


def _clause(
    text: str,
    rng: random.Random,
    chance: Callable[[random.Random, float], bool],
    speaker: str,
    addressee: str | None,
    many: bool,
) -> str:
    """One sentence of a speech, reported (see `indirect`)."""
    question = text.rstrip(" '\"").endswith("?")
    text = text.rstrip(" .!?;:'\"-")
    parts = [p.strip() for p in re.split(r"\s*[,;:]\s*|\s+--\s+", text) if p.strip()]
    kept = []
    for p in parts:
        bare = p.strip(" !?.").casefold()
        # Forms of address and lone interjections say nothing of what was said.
        if bare in _INTERJECTIONS or _ADDRESS.fullmatch(p.strip(" !?.")) or (len(parts) > 1 and _NAME.match(p)):
            continue
        kept.append(p)
    parts = kept or parts
    opens_with_order = bool(parts) and parts[0].split(" ", 1)[0].casefold() in _ORDERS
    if len(parts) >= 2 and not question and not opens_with_order and chance(rng, 0.35):
        parts = parts[1:] + parts[:1]
        parts[0] = _CONJ.sub("", parts[0]) or parts[0]
    text = ", ".join(parts)
    words = text.split(" ")
    if words[0].casefold() in _INTERJECTIONS and len(words) > 2:
        text = " ".join(words[1:])
    tokens = _TOKEN.findall(text)
    if question:
        tokens = _inverted(tokens)
    me = pronouns(speaker)
    you = pronouns(addressee, many)
    out: list[str] = []
    prev = ""
    for tok in tokens:
        low = tok.casefold()
        if not tok[0].isalpha():
            out.append(tok)
            continue
        word = tok
        if low in _FIRST and speaker != "I":
            word = me[_FIRST[low]]
        elif low in _FIRST_PLURAL and speaker != "I":
            word = ("they", "them", "their", "theirs", "themselves")[_FIRST_PLURAL[low]]
        elif low in _SECOND:
            slot = _SECOND[low]
            if low == "you" and not _subject_position(prev, out):
                slot = 1
            word = you[slot]
        elif low in _BACK and prev.casefold() not in _MODALS:
            word = _BACK[low]
            if word == "was" and prev.casefold() in _PLURAL_SUBJECTS:
                word = "were"
        elif low in _FILLERS and chance(rng, 0.5):
            word = ""
        elif low in SYNONYMS and chance(rng, 0.8):
            word = SYNONYMS[low]
        elif tok[0].isupper() and low in STOPWORDS and low != "i":
            word = low  # a verse line's capital, mid-sentence in a report
        if word == "":
            if out and out[-1].isspace():
                out.pop()
            continue
        out.append(word)
        prev = word
    clause = re.sub(r"\s+", " ", "".join(out)).strip(" ,")
    clause = re.sub(r"\s+([,.;:!?])", r"\1", clause).rstrip(" .!?;:,")
    if not re.search(r"[A-Za-z]", clause):
        return ""
    head = clause.split(" ", 1)[0]
    if head != "I" and (not _NAME.match(head) or head.casefold() in _LOWER_OK | _WH | _AUX | _MODALS | _ORDERS):
        clause = clause[:1].lower() + clause[1:]
    if question and head.casefold() not in _WH:
        clause = "whether " + clause
    return clause


def _inverted(tokens: list[str]) -> list[str]:
    """'Will you go' -> 'you will go', 'why did you laugh' -> 'why you did laugh': a question's order, as a statement."""
    words = [i for i, t in enumerate(tokens) if t[0].isalpha()]
    first = 1 if words and tokens[words[0]].casefold() in _WH else 0
    if len(words) >= first + 2 and tokens[words[first]].casefold() in _AUX | _MODALS:
        a, b = words[first], words[first + 1]
        if tokens[b].casefold() in _SUBJECTS or _NAME.match(tokens[b]):
            tokens = list(tokens)
            tokens[a], tokens[b] = tokens[b], tokens[a].casefold()
    return tokens


def _subject_position(prev: str, out: list[str]) -> bool:
    """Whether a "you" is a subject: at the start of a clause, after a conjunction or an inverted verb."""
    before = "".join(out).rstrip()
    return (
        not before
        or before.endswith((",", ";", ":"))
        or prev.casefold() in ("and", "but", "or", "if", "that", "when", "where", "why", "how", "what")
    )
