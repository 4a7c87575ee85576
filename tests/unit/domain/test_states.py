import pytest

from carousel.domain.errors import InvalidTransition
from carousel.domain.states import (
    FILE_ACTIVE,
    FILE_IN_FLIGHT,
    FILE_MOVES,
    FILE_TAPE_WORK,
    FILE_TERMINAL,
    FILE_TRANSITIONS,
    FILE_WAITING,
    FileMove,
    FileState,
    TapeRestState,
    check_file_transition,
    client_state,
)


def test_every_state_has_a_row_in_the_transition_table():
    assert set(FILE_TRANSITIONS) == set(FileState)


def test_allowed_transition_passes_and_forbidden_one_raises():
    check_file_transition(FileState.QUEUED, FileState.CLAIMED)
    with pytest.raises(InvalidTransition):
        check_file_transition(FileState.QUEUED, FileState.STAGED)


def test_terminal_states_only_lead_back_to_the_queue():
    for state in FILE_TERMINAL:
        assert FILE_TRANSITIONS[state] <= {FileState.QUEUED, FileState.UNRESOLVED}


def test_a_move_the_table_does_not_allow_cannot_be_defined():
    FileMove(FILE_IN_FLIGHT, FileState.STAGED)
    with pytest.raises(InvalidTransition, match="QUEUED cannot become STAGED"):
        FileMove(frozenset({FileState.QUEUED, FileState.SUBMITTED}), FileState.STAGED)


def test_the_moves_the_code_makes_are_exactly_the_table():
    made = {(source, move.target) for move in FILE_MOVES for source in move.sources}
    allowed = {(old, new) for old, targets in FILE_TRANSITIONS.items() for new in targets}
    assert made == allowed  # no move outside the table, no allowed change nothing makes


def test_the_state_sets_split_the_states_as_their_names_say():
    assert set(FileState) == FILE_ACTIVE | FILE_TERMINAL and not FILE_ACTIVE & FILE_TERMINAL
    assert FILE_WAITING | FILE_IN_FLIGHT == FILE_ACTIVE and not FILE_WAITING & FILE_IN_FLIGHT
    assert FILE_ACTIVE - {FileState.UNRESOLVED} == FILE_TAPE_WORK


def test_a_requesters_cancel_wins_over_the_shared_state():
    assert client_state(FileState.STAGED, link_cancelled=True) is TapeRestState.CANCELLED
    assert client_state(FileState.SUBMITTED, link_cancelled=False) is TapeRestState.STARTED
    assert client_state(FileState.UNRESOLVED, link_cancelled=False) is TapeRestState.SUBMITTED
