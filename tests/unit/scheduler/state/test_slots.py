from muster.scheduler.state.slots import Slots, copied_sets


def test_the_lowest_free_row_is_reused_first_and_a_copy_goes_its_own_way() -> None:
    slots = Slots()
    assert [slots.take() for _ in range(3)] == [0, 1, 2]
    slots.give_back(2)
    slots.give_back(0)
    twin = slots.copy()
    assert slots.take() == 0 and slots.take() == 2 and slots.take() == 3
    assert twin.take() == 0 and twin.size == 3


def test_copied_sets_share_no_member_dict() -> None:
    index = {"g": {"a": None}}
    twin = copied_sets(index)
    twin["g"]["b"] = None
    assert index == {"g": {"a": None}}
