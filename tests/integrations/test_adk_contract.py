"""ADK's memory-service contract, as ADK's own tests of its
``InMemoryMemoryService`` check it, run against ADK's service and against
``ConsensusMemoryService`` alike.

ADK's test module (google/adk-python,
``tests/unittests/memory/test_in_memory_memory_service.py``) is not in
google-adk's sdist on PyPI, so it cannot be fetched at test time as
``upstream.py`` fetches LangGraph's and autogen-core's suites. Each of its
cases is re-expressed here under its own name, with texts of our own and
the same inputs and expectations; where it reads ``InMemoryMemoryService``'s
private ``_session_events``, the same fact is read through
``search_memory``. Every case runs on ADK's own service too, so a case
asserts what ADK does, not what the adapter happens to do. The cases
that do not apply to the adapter, and why, are in ``NOT_APPLICABLE`` and
tests/integrations/README.md ("ADK's memory-service tests").
"""

from __future__ import annotations

import asyncio
import threading
import unicodedata
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from agentsensus.integrations.adk import ConsensusMemoryService
from google.adk.events.event import Event
from google.adk.memory.base_memory_service import BaseMemoryService
from google.adk.memory.in_memory_memory_service import InMemoryMemoryService
from google.adk.sessions.session import Session
from google.genai import types

APP, USER, OTHER = "contract-app", "contract-user", "other-user"
Make = Callable[[], BaseMemoryService]

# (case, parameter id or "") -> why the adapter's answer differs from ADK's in-memory service.
_UNSPACED = (
    "a word inside a run of an unspaced script (Japanese, Chinese): ADK's service matches substrings and splits "
    "Latin from non-Latin letters; the store's lexical index and the hash embedder take the whole run as one word"
)
NOT_APPLICABLE = {
    ("test_search_memory_non_latin", "ja-substring"): _UNSPACED,
    ("test_search_memory_non_latin", "zh-substring"): _UNSPACED,
    ("test_search_memory_non_latin", "latin-in-ja"): _UNSPACED,
    ("test_search_memory_non_latin", "latin-in-ja-lower"): _UNSPACED,
    ("test_search_memory_non_latin", "latin-in-zh"): _UNSPACED,
    ("test_search_memory_non_latin", "ja-after-latin"): _UNSPACED,
    ("test_search_memory_non_latin", "nfd-latin-in-ja"): _UNSPACED,
    ("test_search_memory_non_latin", "nfd-latin-in-ja-lower"): _UNSPACED,
    ("test_search_memory_non_latin", "nfd-katakana"): _UNSPACED,
    ("test_search_memory_ranks_by_number_of_matching_words", ""): "ranks by how many query words a memory holds; "
    "the adapter fuses the vector and the BM25 ranks (test_adk_memory.py checks its order)",
    ("test_search_memory_returns_at_most_ten_memories", ""): "asserts that memories matching equally keep the "
    "order they were added in; the adapter's equal BM25 scores are ordered by the vector rank",
}


def _services(case: str, param: str = "", slow_adk: bool = False) -> list[Any]:
    """ADK's service always; the adapter unless the case does not apply to it."""
    suffix = f"-{param}" if param else ""
    marks = [pytest.mark.slow] if slow_adk else []
    out = [pytest.param("adk", id=f"adk{suffix}", marks=marks)]
    if (case, param) not in NOT_APPLICABLE:
        out.append(pytest.param("consensus", id=f"consensus{suffix}"))
    return out


@pytest.fixture
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Make]:
    """Builds the service under test: the one adaptation of the cases."""
    opened: list[ConsensusMemoryService] = []

    def build() -> BaseMemoryService:
        if request.param == "adk":
            return InMemoryMemoryService()
        svc = ConsensusMemoryService(tmp_path / f"memory-{len(opened)}", sync=False)
        opened.append(svc)
        return svc

    yield build
    for svc in opened:
        svc.close()


def event(tag: str, text: str | None, author: str = "user", at: float = 1000.0) -> Event:
    content = None if text is None else types.Content(parts=[types.Part(text=text)])
    return Event(id=f"ev-{tag}", invocation_id=f"inv-{tag}", author=author, timestamp=at, content=content)


def session(sid: str, *events: Event, user: str = USER, app: str = APP) -> Session:
    return Session(app_name=app, user_id=user, id=sid, last_update_time=1.0, events=list(events))


# Two sessions of one user and one of another, as ADK's module has them.
FIRST = session(
    "first",
    event("1a", "The harbour ferry leaves at dawn."),
    event("1b", None),  # no content: not a memory
    event("1c", "Yes, the harbour ferry to the island is early!", author="model"),
)
SECOND = session("second", event("2a", "I keep bees in the garden."))
SECRET = session("secret", event("3a", "The vault password is hidden."), user=OTHER)


def texts(response: Any) -> list[str]:
    return [m.content.parts[0].text for m in response.memories]


def search(svc: BaseMemoryService, query: str, user: str = USER, app: str = APP) -> Any:
    return asyncio.run(svc.search_memory(app_name=app, user_id=user, query=query))


@pytest.mark.parametrize("make", _services("test_add_session_to_memory"), indirect=True)
def test_add_session_to_memory(make: Make) -> None:
    svc = make()
    asyncio.run(svc.add_session_to_memory(FIRST))
    assert sorted(texts(search(svc, "harbour ferry"))) == [
        "The harbour ferry leaves at dawn.",
        "Yes, the harbour ferry to the island is early!",
    ]


@pytest.mark.parametrize("make", _services("test_add_events_to_memory_with_explicit_events"), indirect=True)
def test_add_events_to_memory_with_explicit_events(make: Make) -> None:
    svc = make()
    asyncio.run(svc.add_events_to_memory(app_name=APP, user_id=USER, session_id="first", events=[FIRST.events[0]]))
    assert texts(search(svc, "harbour ferry")) == ["The harbour ferry leaves at dawn."]


@pytest.mark.parametrize(
    "make", _services("test_add_events_to_memory_without_session_id_uses_default_bucket"), indirect=True
)
def test_add_events_to_memory_without_session_id_uses_default_bucket(make: Make) -> None:
    svc = make()
    asyncio.run(svc.add_events_to_memory(app_name=APP, user_id=USER, events=[FIRST.events[0]]))
    assert texts(search(svc, "harbour ferry")) == ["The harbour ferry leaves at dawn."]


@pytest.mark.parametrize("make", _services("test_add_events_to_memory_alias_is_supported"), indirect=True)
def test_add_events_to_memory_alias_is_supported(make: Make) -> None:
    svc = make()
    asyncio.run(svc.add_events_to_memory(app_name=APP, user_id=USER, session_id="first", events=FIRST.events[:1]))
    assert [m.author for m in search(svc, "dawn").memories] == ["user"]


@pytest.mark.parametrize("make", _services("test_add_events_to_memory_appends_without_replacing"), indirect=True)
def test_add_events_to_memory_appends_without_replacing(make: Make) -> None:
    svc = make()
    asyncio.run(svc.add_session_to_memory(FIRST))
    extra = event("1d", "A lighthouse stands on the island.", at=1001.0)
    asyncio.run(svc.add_events_to_memory(app_name=APP, user_id=USER, session_id="first", events=[extra]))
    assert len(texts(search(svc, "harbour ferry"))) == 2
    assert texts(search(svc, "lighthouse")) == ["A lighthouse stands on the island."]


@pytest.mark.parametrize("make", _services("test_add_events_to_memory_deduplicates_event_ids"), indirect=True)
def test_add_events_to_memory_deduplicates_event_ids(make: Make) -> None:
    svc = make()
    asyncio.run(svc.add_session_to_memory(FIRST))
    again = event("1a", "Rewritten words under an old id.", at=1002.0)
    asyncio.run(svc.add_events_to_memory(app_name=APP, user_id=USER, session_id="first", events=[again]))
    assert search(svc, "Rewritten words").memories == []
    assert texts(search(svc, "dawn")) == ["The harbour ferry leaves at dawn."]


@pytest.mark.parametrize("make", _services("test_add_session_with_no_events_to_memory"), indirect=True)
def test_add_session_with_no_events_to_memory(make: Make) -> None:
    svc = make()
    asyncio.run(svc.add_session_to_memory(session("empty")))
    assert search(svc, "anything").memories == []


@pytest.mark.parametrize("make", _services("test_search_memory_simple_match"), indirect=True)
def test_search_memory_simple_match(make: Make) -> None:
    svc = make()
    asyncio.run(svc.add_session_to_memory(FIRST))
    asyncio.run(svc.add_session_to_memory(SECOND))
    found = search(svc, "bees")
    assert texts(found) == ["I keep bees in the garden."]
    assert found.memories[0].author == "user"


@pytest.mark.parametrize("make", _services("test_search_memory_case_insensitive_match"), indirect=True)
def test_search_memory_case_insensitive_match(make: Make) -> None:
    svc = make()
    asyncio.run(svc.add_session_to_memory(FIRST))
    assert texts(search(svc, "ISLAND")) == ["Yes, the harbour ferry to the island is early!"]


@pytest.mark.parametrize("make", _services("test_search_memory_multiple_matches"), indirect=True)
def test_search_memory_multiple_matches(make: Make) -> None:
    svc = make()
    asyncio.run(svc.add_session_to_memory(FIRST))
    assert len(search(svc, "What about the ferry?").memories) == 2


@pytest.mark.parametrize("make", _services("test_search_memory_no_match"), indirect=True)
def test_search_memory_no_match(make: Make) -> None:
    svc = make()
    asyncio.run(svc.add_session_to_memory(FIRST))
    assert search(svc, "nonexistent").memories == []


@pytest.mark.parametrize("make", _services("test_search_memory_is_scoped_by_user"), indirect=True)
def test_search_memory_is_scoped_by_user(make: Make) -> None:
    svc = make()
    asyncio.run(svc.add_session_to_memory(FIRST))
    asyncio.run(svc.add_session_to_memory(SECRET))
    assert search(svc, "vault password").memories == []
    assert texts(search(svc, "vault password", user=OTHER)) == ["The vault password is hidden."]


@pytest.mark.parametrize(
    "make", _services("test_search_memory_does_not_collide_on_slash_in_identifiers"), indirect=True
)
def test_search_memory_does_not_collide_on_slash_in_identifiers(make: Make) -> None:
    svc = make()
    slashed = session("slashed", event("s", "The vault password is hidden."), user="user", app="app/other-user")
    asyncio.run(svc.add_session_to_memory(slashed))
    assert search(svc, "vault password", user="other-user/user", app="app").memories == []


_NFD = lambda s: unicodedata.normalize("NFD", s)  # noqa: E731
# (id, text of the memory, query, how many memories it finds): the scripts
# and the cases of ADK's module, with texts of our own.
NON_LATIN = [
    ("ja-substring", "彼の名前は花子です", "花子", 1),
    ("ja-no-match", "彼の名前は花子です", "雨天", 0),
    ("zh-substring", "他喜欢深度学习", "深度学习", 1),
    ("zh-no-match", "他喜欢深度学习", "天气预报", 0),
    ("ko-token", "그의 이름은 지훈입니다", "지훈입니다", 1),
    ("cyrillic-token", "Его зовут Дмитрий", "Дмитрий", 1),
    ("mixed-non-latin", "花子 lives in Oslo", "花子", 1),
    ("mixed-latin", "花子 lives in Oslo", "Oslo", 1),
    ("latin-in-ja", "彼はRustでCLIを書いています", "Rust", 1),
    ("latin-in-ja-lower", "彼はRustでCLIを書いています", "cli", 1),
    ("latin-in-zh", "他用Rust写程序", "rust", 1),
    ("ja-after-latin", "彼はRustでCLIを書いています", "書いて", 1),
    ("latin-in-ja-no-match", "彼はRustでCLIを書いています", "Java", 0),
    ("partial-word", "He writes tools in Rust.", "ust", 0),
    ("partial-word-in-ja", "彼はRustでCLIを書いています", "ust", 0),
    ("nfd-latin-in-ja", _NFD("彼はNaïveでCLIを書いています"), "Naïve", 1),
    ("nfd-latin-in-ja-lower", _NFD("彼はNaïveでCLIを書いています"), "naïve", 1),
    ("nfd-latin-in-ja-no-match", _NFD("彼はNaïveでCLIを書いています"), "Perl", 0),
    ("nfd-text", _NFD("Lunch at the Crêperie"), "Crêperie", 1),
    ("nfd-query", "Lunch at the Crêperie", _NFD("Crêperie"), 1),
    ("nfd-katakana", _NFD("データベースを設計する"), "データベース", 1),
    ("nfd-hangul", _NFD("그의 이름은 지훈입니다"), "지훈입니다", 1),
]


@pytest.mark.parametrize(
    ("make", "text", "query", "count"),
    [
        pytest.param(*s.values, t, q, n, id=s.id)
        for pid, t, q, n in NON_LATIN
        for s in _services("test_search_memory_non_latin", pid)
    ],
    indirect=["make"],
)
def test_search_memory_non_latin(make: Make, text: str, query: str, count: int) -> None:
    svc = make()
    asyncio.run(svc.add_session_to_memory(session("i18n", event("i18n", text))))
    assert len(search(svc, query).memories) == count


@pytest.mark.parametrize("make", _services("test_search_memory_ranks_by_number_of_matching_words"), indirect=True)
def test_search_memory_ranks_by_number_of_matching_words(make: Make) -> None:
    svc = make()
    notes = [event("r1", "The build is green."), event("r2", "Green."), event("r3", "The build pipeline is green.")]
    asyncio.run(svc.add_session_to_memory(session("ranked", *notes)))
    assert texts(search(svc, "build pipeline green")) == [
        "The build pipeline is green.",
        "The build is green.",
        "Green.",
    ]


@pytest.mark.parametrize("make", _services("test_search_memory_returns_at_most_ten_memories"), indirect=True)
def test_search_memory_returns_at_most_ten_memories(make: Make) -> None:
    svc = make()
    notes = [event(f"n{i}", f"memo {i} about travel") for i in range(20)]
    notes.append(event("best", "the budget memo about travel"))
    asyncio.run(svc.add_session_to_memory(session("many", *notes)))
    assert texts(search(svc, "travel budget memo")) == ["the budget memo about travel"] + [
        f"memo {i} about travel" for i in range(9)
    ]


# ADK's own service searches every event it holds: about a minute here on ADK's service.
@pytest.mark.parametrize(
    "make", _services("test_search_memory_is_thread_safe_against_concurrent_writes", slow_adk=True), indirect=True
)
def test_search_memory_is_thread_safe_against_concurrent_writes(make: Make) -> None:
    """Writers and readers in threads, each with its own event loop: no error."""
    svc = make()

    def one(tag: str) -> Session:
        return session(f"s-{tag}", event(tag, f"fact about {tag}"))

    for i in range(50):
        asyncio.run(svc.add_session_to_memory(one(f"seed-{i}")))
    errors: list[BaseException] = []
    stop = threading.Event()
    start = threading.Barrier(3)

    def loop(work: Callable[[int], Any]) -> None:
        runner = asyncio.new_event_loop()
        start.wait()
        try:
            for i in range(500):
                if stop.is_set():
                    return
                runner.run_until_complete(work(i))
        except Exception as e:  # noqa: BLE001 - any error is the failure this case looks for
            errors.append(e)
            stop.set()
        finally:
            runner.close()

    threads = [
        threading.Thread(target=loop, args=(lambda i: svc.add_session_to_memory(one(f"writer-{i}")),)),
        threading.Thread(target=loop, args=(lambda i: svc.search_memory(app_name=APP, user_id=USER, query="fact"),)),
        threading.Thread(target=loop, args=(lambda i: svc.search_memory(app_name=APP, user_id=USER, query="fact"),)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not errors, errors[0]


def _ingest(svc: BaseMemoryService, s: Session, whole: bool) -> None:
    if whole:
        asyncio.run(svc.add_session_to_memory(s))
    else:
        asyncio.run(svc.add_events_to_memory(app_name=s.app_name, user_id=s.user_id, session_id=s.id, events=s.events))


@pytest.mark.parametrize("whole", [True, False], ids=["session", "events"])
@pytest.mark.parametrize(
    "make", _services("test_ingested_memories_do_not_follow_caller_event_mutations"), indirect=True
)
def test_ingested_memories_do_not_follow_caller_event_mutations(make: Make, whole: bool) -> None:
    svc = make()
    e = event("tea", "I drink rooibos tea.")
    _ingest(svc, session("tea", e), whole)
    e.author = "someone-else"
    assert e.content is not None and e.content.parts
    e.content.parts[0].text = "I drink espresso."
    found = search(svc, "rooibos")
    assert texts(found) == ["I drink rooibos tea."]
    assert found.memories[0].author == "user"


@pytest.mark.parametrize("whole", [True, False], ids=["session", "events"])
@pytest.mark.parametrize(
    "make", _services("test_retrieved_memories_do_not_mutate_storage_or_session_history"), indirect=True
)
def test_retrieved_memories_do_not_mutate_storage_or_session_history(make: Make, whole: bool) -> None:
    svc = make()
    s = session("tea", event("tea", "I drink rooibos tea."))
    _ingest(svc, s, whole)
    first = search(svc, "rooibos")
    first.memories[0].content.parts.clear()
    assert texts(search(svc, "rooibos")) == ["I drink rooibos tea."]
    assert s.events[0].content is not None and s.events[0].content.parts
    assert s.events[0].content.parts[0].text == "I drink rooibos tea."


# Not in ADK's module as fetched: ADK 2.13's InMemoryMemoryService.delete_memory
# behaviour (a deleted event stays deleted when its session is added again),
# checked on both services the same way.


@pytest.mark.parametrize("whole", [True, False], ids=["session", "events"])
@pytest.mark.parametrize("make", _services("test_delete_memory_stays_deleted_on_a_readd"), indirect=True)
def test_delete_memory_stays_deleted_on_a_readd(make: Make, whole: bool) -> None:
    svc = make()
    _ingest(svc, FIRST, whole)
    dawn = search(svc, "dawn")
    assert texts(dawn) == ["The harbour ferry leaves at dawn."]
    asyncio.run(svc.delete_memory(app_name=APP, user_id=USER, memory_id=dawn.memories[0].id))
    assert search(svc, "dawn").memories == []
    _ingest(svc, FIRST, whole)
    assert search(svc, "dawn").memories == []
    assert texts(search(svc, "island")) == ["Yes, the harbour ferry to the island is early!"]


@pytest.mark.parametrize("make", _services("test_delete_memory_of_an_unknown_id_does_nothing"), indirect=True)
def test_delete_memory_of_an_unknown_id_does_nothing(make: Make) -> None:
    svc = make()
    asyncio.run(svc.add_session_to_memory(FIRST))
    for unknown in (None, "", "no-such-memory", "999999"):
        asyncio.run(svc.delete_memory(app_name=APP, user_id=USER, memory_id=unknown))
    assert len(search(svc, "harbour ferry").memories) == 2


def test_not_applicable_names_cases_of_this_module_and_the_readme() -> None:
    """Every left-out case is a case here, with its parameter, and
    tests/integrations/README.md names it."""
    readme = (Path(__file__).parent / "README.md").read_text()
    ids = {pid for pid, *_ in NON_LATIN}
    for case, param in NOT_APPLICABLE:
        assert case in globals(), case
        assert param == "" or param in ids, param
        assert f"`{case}`" in readme, case
