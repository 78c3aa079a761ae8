"""The reviewer's remembered name: what the cookie holds and how a request's cookie is read back."""

from __future__ import annotations

import re

import pytest

from dashboard.reviewer_name import COOKIE, MAX_NAME, cookie_value, name_from_cookies

HOSTILE = ["Priya", "Zoë Ó'Brien", "<img src=x onerror=alert(1)>", '"; document.cookie="x=1', "a;b=c, d",
           "</script><script>alert(1)</script>", "\u202eevil", "名前 テスト"]


@pytest.mark.parametrize("name", HOSTILE)
def test_a_name_comes_back_from_its_cookie_unchanged(name):
    assert name_from_cookies({COOKIE: cookie_value(name)}) == name


@pytest.mark.parametrize("name", HOSTILE)
def test_the_cookie_value_holds_nothing_a_script_or_cookie_header_reads_as_syntax(name):
    assert re.fullmatch(r"[A-Za-z0-9%._~-]+", cookie_value(name))


def test_no_cookie_or_a_blank_one_remembers_no_name():
    assert name_from_cookies({}) is None
    assert name_from_cookies({COOKIE: ""}) is None
    assert name_from_cookies({COOKIE: "%20%20"}) is None


def test_a_hand_made_cookie_is_read_as_one_short_line():
    assert name_from_cookies({COOKIE: "a%0Ab%09c"}) == "a b c"
    assert name_from_cookies({COOKIE: "x" * 1000}) == "x" * MAX_NAME


def test_a_cookie_that_is_not_utf8_remembers_no_name():
    assert name_from_cookies({COOKIE: "%FF%FE"}) is None
