"""registry.CHECK / registry.FLAG: one particular check or flag named through the registry."""

from __future__ import annotations

import pytest

from evaluator.core.registry import CHECK, FLAG, check_names, flag_names


def test_every_registered_check_and_flag_reads_as_its_name() -> None:
    assert [getattr(CHECK, name) for name in check_names()] == list(check_names())
    assert [getattr(FLAG, name) for name in flag_names()] == list(flag_names())


def test_an_unregistered_name_fails_naming_what_is_registered() -> None:
    with pytest.raises(AttributeError, match=r"no check named 'no_such_check' is registered \(known: routing_check"):
        _ = CHECK.no_such_check


def test_a_flag_is_not_a_check() -> None:
    with pytest.raises(AttributeError, match="no check named 'refusal_detected'"):
        _ = CHECK.refusal_detected


def test_names_follow_a_registration_and_its_removal() -> None:
    from evaluator.core.registry import REGISTRY
    from evaluator.core.types import CHECK_NAMES

    before = tuple(CHECK_NAMES)
    REGISTRY.check("zz_registered_late", order=10**6)(lambda ctx: None)
    try:
        assert tuple(CHECK_NAMES) == (*before, "zz_registered_late")
        assert check_names()[-1] == "zz_registered_late"
    finally:
        REGISTRY.unregister("check", "zz_registered_late")
    assert tuple(CHECK_NAMES) == before
