"""AckedRanges and LedgerList: the pure position bookkeeping under cursors."""

from __future__ import annotations

from managed_ledger.ledger_list import LedgerInfo, LedgerList
from managed_ledger.position import Position
from managed_ledger.ranges import AckedRanges


def test_acks_merge_into_ranges() -> None:
    acked = AckedRanges()
    for entry in (5, 7, 6, 1, 2, 9):
        assert acked.add(Position(3, entry))
    assert not acked.add(Position(3, 6))
    assert list(acked.ranges()) == [(3, 1, 2), (3, 5, 7), (3, 9, 9)]
    assert len(acked) == 6 and acked.range_count == 3
    assert Position(3, 6) in acked and Position(3, 8) not in acked
    assert acked.range_end(Position(3, 5)) == 7
    assert acked.next_start_after(Position(3, 3)) == 5
    assert acked.next_start_after(Position(3, 9)) is None


def test_remove_through_trims_and_counts() -> None:
    acked = AckedRanges()
    for position in [Position(1, 0), Position(1, 1), Position(2, 3), Position(2, 4), Position(2, 8)]:
        acked.add(position)
    acked.remove_through(Position(2, 3))
    assert list(acked.ranges()) == [(2, 4, 4), (2, 8, 8)]
    assert len(acked) == 2
    restored = AckedRanges.from_ranges(list(acked.ranges()))
    assert list(restored.ranges()) == list(acked.ranges()) and len(restored) == 2


def test_many_in_order_acks_stay_one_range() -> None:
    acked = AckedRanges()
    for entry in range(1, 100_000):
        acked.add(Position(1, entry))
    assert acked.range_count == 1 and len(acked) == 99_999


def test_ledger_list_positions_skip_missing_and_empty_ledgers() -> None:
    ledgers = LedgerList([LedgerInfo(2, 3), LedgerInfo(5, 0), LedgerInfo(7, 2), LedgerInfo(9, 0)])
    assert ledgers.first_position() == Position(2, 0)
    assert ledgers.next_position(Position(2, 2)) == Position(7, 0)
    assert ledgers.next_position(Position(4, -1)) == Position(7, 0)
    assert ledgers.next_position(Position(7, 1)) == Position(9, 0)
    assert ledgers.normalize(Position(1, 5)) == Position(2, 0)
    assert ledgers.last_confirmed() == Position(7, 1)
    assert ledgers.count_between(Position(2, 0), Position(7, 1)) == 4
    assert ledgers.count_between(Position(3, -1), Position(7, 0)) == 1
    assert ledgers.position_at(3) == Position(7, 0)
    assert LedgerList([LedgerInfo(4, 0)]).last_confirmed() == Position(4, -1)
    assert LedgerList([LedgerInfo(4, 0)]).first_position() == Position(4, 0)
