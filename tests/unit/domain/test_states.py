import pytest

from carousel.domain.errors import InvalidTransition
from carousel.domain.states import (
    FILE_TERMINAL,
    FILE_TRANSITIONS,
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


def test_a_requesters_cancel_wins_over_the_shared_state():
    assert client_state(FileState.STAGED, link_cancelled=True) is TapeRestState.CANCELLED
    assert client_state(FileState.SUBMITTED, link_cancelled=False) is TapeRestState.STARTED
    assert client_state(FileState.UNRESOLVED, link_cancelled=False) is TapeRestState.SUBMITTED
