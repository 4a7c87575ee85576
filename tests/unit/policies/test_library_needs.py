"""What a policy declares of its library (`library_needs`), as the replay reads it."""

import pytest

from carousel.domain.errors import ConfigError
from carousel.domain.library_needs import HsmDiscipline, HsmReadOrder, LibraryNeeds
from carousel.domain.planning import Plan, Snapshot
from policies.base import library_needs_of
from policies.registry import build_policy


class Plain:
    name = "plain"

    def plan(self, snapshot: Snapshot) -> Plan:
        return Plan()


class Misdeclared(Plain):
    name = "misdeclared"
    library_needs = ("fifo", 30)  # not LibraryNeeds


def test_a_policy_that_declares_nothing_gets_the_default():
    assert library_needs_of(Plain()) == LibraryNeeds(
        HsmDiscipline.TAPE_ORDERED, queue_depth={}, read_order=HsmReadOrder.POSITION
    )


def test_a_declaration_of_another_type_is_refused_naming_the_policy():
    with pytest.raises(ConfigError, match="policy 'misdeclared': library_needs is a tuple"):
        library_needs_of(Misdeclared())


def test_star2006_declares_its_depth_option_and_fair_share_passes_the_declaration_on():
    options = {"depth": {"default": 12}}
    alone = library_needs_of(build_policy("star2006", options))
    shared = library_needs_of(build_policy("star2006", {**options, "fair_share": {"weights": {"a": 2}}}))
    assert alone == shared == LibraryNeeds(HsmDiscipline.FIFO, queue_depth={"default": 12})
