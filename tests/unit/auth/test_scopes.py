"""WLCG storage scopes turned into what a caller may do (WLCG Common JWT Profiles 1.1, section 2.2.1)."""

from __future__ import annotations

import pytest

from carousel.auth.errors import InvalidToken
from carousel.auth.scopes import grants_of, parse_scopes, split_scope_claim
from carousel.domain.errors import Forbidden
from carousel.domain.grants import Grants, PathScope, require_group, require_read, require_stage


def stage_grants(*scopes: str, base_path: str = "/") -> Grants:
    return grants_of(parse_scopes(scopes, base_path), ())


def test_a_scope_covers_its_path_and_below_but_not_a_longer_name() -> None:
    grants = stage_grants("storage.stage:/star/data")
    assert grants.may_stage("/star/data")
    assert grants.may_stage("/star/data/run1/a.root")
    assert not grants.may_stage("/star/database/a.root")
    assert not grants.may_stage("/star")
    assert not grants.may_stage("/other/a.root")


def test_a_trailing_slash_means_the_directory_only() -> None:
    grants = stage_grants("storage.stage:/star/data/")
    assert grants.may_stage("/star/data/a.root")
    assert not grants.may_stage("/star/data")


def test_root_covers_everything() -> None:
    assert stage_grants("storage.stage:/").may_stage("/any/thing")


def test_stage_implies_read_and_read_does_not_imply_stage() -> None:
    grants = stage_grants("storage.stage:/star/tape", "storage.read:/star/disk")
    assert grants.may_read("/star/tape/a") and grants.may_stage("/star/tape/a")
    assert grants.may_read("/star/disk/a") and not grants.may_stage("/star/disk/a")


@pytest.mark.parametrize(
    ("scope", "poll", "read", "stage"),
    [
        ("storage.stage:/star", True, True, True),
        ("storage.read:/star", True, True, False),
        ("storage.poll:/star", True, False, False),
        ("storage.create:/star", True, False, False),
        ("storage.modify:/star", True, False, False),
    ],
)
def test_which_scope_allows_which_call(scope: str, poll: bool, read: bool, stage: bool) -> None:
    # The table of docs/security.md: poll = status and archive info, read = a staged file's bytes.
    grants = stage_grants(scope)
    assert (grants.may_poll("/star/a"), grants.may_read("/star/a"), grants.may_stage("/star/a")) == (
        poll,
        read,
        stage,
    )
    assert not grants.may_poll("/other/a") and not grants.may_read("/other/a")


def test_a_poll_only_token_has_capabilities_and_is_held_to_them() -> None:
    parsed = parse_scopes(["storage.poll:/star/"])
    assert parsed.has_capabilities
    grants = grants_of(parsed, ["/star/production"], group_access=["/star/production"])
    assert grants.may_poll("/star/a") and not grants.may_stage("/star/a") and not grants.may_read("/star/a")
    assert not grants.polls_everything and grants.stage == ()
    with pytest.raises(Forbidden, match=r"storage\.read"):
        require_read(grants, "/star/a", field="path")
    assert stage_grants("storage.poll:/").polls_everything
    with pytest.raises(InvalidToken):
        parse_scopes(["storage.poll"])


def test_scope_paths_are_decoded_normalised_and_placed_in_the_base_path() -> None:
    grants = stage_grants("storage.stage://data/./run%201", base_path="/star")
    assert grants.stage == (PathScope("/star/data/run 1"),)
    assert grants.may_stage("/star/data/run 1/a.root")
    assert not grants.may_stage("/data/run 1/a.root")


@pytest.mark.parametrize(
    "scope",
    [
        "storage.stage",
        "storage.stage:",
        "storage.read:relative/path",
        "storage.stage:/a/../b",
        "storage.stage:/%ff",
    ],
)
def test_a_storage_scope_without_a_proper_path_invalidates_the_token(scope: str) -> None:
    with pytest.raises(InvalidToken):
        parse_scopes([scope])


def test_other_scopes_are_kept_and_grant_no_storage() -> None:
    parsed = parse_scopes(["openid", "carousel.admin", "compute.create"])
    assert parsed.others == {"openid", "carousel.admin", "compute.create"}
    assert not parsed.has_capabilities


def test_without_capabilities_groups_decide() -> None:
    parsed = parse_scopes(["openid"])
    allowed = grants_of(
        parsed, ["/star", "/star/production"], group_access=["/star/production"], base_path="/star"
    )
    assert allowed.may_stage("/star/a") and not allowed.may_stage("/other/a")
    nothing = grants_of(parsed, ["/star"], group_access=["/star/production"])
    assert not nothing.may_stage("/star/a") and not nothing.may_read("/star/a")


def test_capabilities_win_over_groups() -> None:
    # The profile: a token with any capability is judged on its capabilities, its groups ignored.
    grants = grants_of(
        parse_scopes(["storage.read:/"]), ["/star/production"], group_access=["/star/production"]
    )
    assert not grants.may_stage("/star/a")


def test_the_scope_claim_is_a_string_or_a_list_of_strings() -> None:
    assert split_scope_claim("a b  c") == ["a", "b", "c"]
    assert split_scope_claim(["a b", "c"]) == ["a", "b", "c"]
    assert split_scope_claim(None) == []
    with pytest.raises(InvalidToken):
        split_scope_claim({"storage.stage": "/"})


def test_require_stage_names_the_first_path_outside() -> None:
    grants = stage_grants("storage.stage:/star")
    require_stage(grants, ["/star/a", "/star/b"], field="files")
    with pytest.raises(Forbidden, match="'/other/c'") as raised:
        require_stage(grants, ["/star/a", "/other/c"], field="files")
    assert raised.value.field == "files"


def test_a_caller_limited_to_its_groups_names_only_them() -> None:
    grants = stage_grants("storage.stage:/")
    require_group(grants, ["/star", "/star/prod"], "/star/prod")
    require_group(grants, [], "default")
    with pytest.raises(Forbidden, match="'/atlas'"):
        require_group(grants, ["/star"], "/atlas")
    require_group(Grants(), [], "anything")  # the anonymous caller is not limited
