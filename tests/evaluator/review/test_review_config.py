"""Reviewer identity from an authenticating proxy's header (evaluator.review.config)."""

from __future__ import annotations

from evaluator.review.config import load_review_config


def test_without_the_setting_no_header_names_anyone() -> None:
    assert load_review_config({}).identity_from({"X-Forwarded-Email": "dana@example.com"}) is None


def test_the_configured_header_names_the_reviewer_whatever_its_case() -> None:
    config = load_review_config({"EVALUATOR_IDENTITY_HEADER": "X-Forwarded-Email"})
    assert config.identity_from({"x-forwarded-email": "  dana@example.com "}) == "dana@example.com"


def test_a_request_without_the_header_has_no_reviewer() -> None:
    config = load_review_config({"EVALUATOR_IDENTITY_HEADER": "X-Forwarded-Email"})
    assert config.identity_from({"Host": "127.0.0.1"}) is None
    assert config.identity_from({"X-Forwarded-Email": "   "}) is None
