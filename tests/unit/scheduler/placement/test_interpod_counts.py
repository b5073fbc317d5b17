"""The counts inter-pod rules read, as members of a gang are placed, and the nodes they
refuse (`interpod_counts`, `interpod_filter`)."""

from __future__ import annotations

from muster.scheduler import EngineConfig
from muster.scheduler.cycle.board import Board
from muster.scheduler.cycle.queue import gangs_of
from muster.scheduler.placement.interplay import GangInterplay
from muster.scheduler.placement.interpod_filter import REASONS, refused_by
from muster.scheduler.rules.filters import ANTI_AFFINITY_NOT_MATCHED, SPREAD_NOT_MATCHED
from tests.unit.scheduler.builders import Obj, cluster, node
from tests.unit.scheduler.placement.test_interplay import HOSTNAME, anti, gang, spread, term

NOW = 1_798_761_600.0


def interplay_of(*objects: Obj) -> GangInterplay:
    state = cluster(*objects)
    (waiting,) = gangs_of(state, NOW)
    board = Board(state, EngineConfig())
    _, interplay = board.shapes(waiting.pending, waiting.record)
    assert interplay is not None
    return interplay


def three_nodes() -> list[Obj]:
    return [node(f"n{i}", cpu="8", labels={HOSTNAME: f"n{i}", "zone": f"z{i}"}) for i in range(3)]


def test_a_member_placed_repels_the_next_from_its_node() -> None:
    interplay = interplay_of(*three_nodes(), *gang("g", 2, anti(term("a", HOSTNAME)), app="a"))
    session = interplay.session()
    assert refused_by(session[0], interplay.counts).allowed.all()
    interplay.counts.note(session, 0, 1)
    judged = refused_by(session[0], interplay.counts)
    assert judged.allowed.tolist() == [True, False, True]
    assert REASONS[int(judged.reason_of[1])] == ANTI_AFFINITY_NOT_MATCHED


def test_the_session_is_a_copy_the_start_never_changes() -> None:
    interplay = interplay_of(*three_nodes(), *gang("g", 2, anti(term("a", HOSTNAME)), app="a"))
    interplay.counts.note(interplay.session(), 0, 1)
    assert refused_by(interplay.session()[0], interplay.counts).allowed.all()


def test_spread_counts_the_members_placed_per_domain() -> None:
    interplay = interplay_of(*three_nodes(), *gang("g", 3, spread("a"), app="a"))
    session = interplay.session()
    interplay.counts.note(session, 0, 0)
    judged = refused_by(session[0], interplay.counts)
    assert judged.allowed.tolist() == [False, True, True]
    assert REASONS[int(judged.reason_of[0])] == SPREAD_NOT_MATCHED
    lasting = refused_by(session[0], interplay.counts, lasting_only=True)
    assert lasting.allowed.all()  # spread may open again as the gang's pods land
