"""The sentence-support detector behind unsupported_claim (issue 30): words, numbers, sentences."""

from __future__ import annotations

import pytest

from evaluator.core.support import closest, context_keys, judge, key, reason, sentences, tokens
from evaluator.rules.model import ClaimSupport

PARAMS = ClaimSupport(min_words=3, max_unsupported=0.3, prefix=5, numbers=True,
                      stop_words=("the", "was", "of", "a", "and", "had", "its"))
CONTEXT = context_keys(["Poseidon grossed $ 181,674,817 at the worldwide box office on a budget of $ 160 million ."],
                       PARAMS.prefix)


def test_words_are_lower_case_runs_of_letters_and_digits() -> None:
    assert tokens("The Film's budget: $160 million!") == ["the", "film", "s", "budget", "160", "million"]


def test_digit_groups_are_one_number() -> None:
    assert tokens("$181,674,817 and 1,000") == ["181674817", "and", "1000"]


def test_a_comma_between_words_still_separates_them() -> None:
    assert tokens("3, 4 and red,blue") == ["3", "4", "and", "red", "blue"]


def test_a_word_is_compared_by_its_first_characters() -> None:
    assert key("grossed", 5) == key("grosses", 5) == "gross"


def test_a_number_is_compared_whole() -> None:
    assert key("1605", 2) == "1605"


def test_sentences_end_at_a_stop_before_white_space_or_at_a_line_break() -> None:
    answer = "It cost $3.5 million. Really? Yes!\nDone"
    assert [answer[s:e] for s, e in sentences(answer)] == ["It cost $3.5 million.", "Really?", "Yes!", "Done"]


def test_a_closing_quote_after_the_stop_stays_with_its_sentence() -> None:
    answer = 'He said "go." Then left.'
    assert [answer[s:e] for s, e in sentences(answer)] == ['He said "go."', "Then left."]


def test_blank_sentences_are_left_out() -> None:
    assert sentences("  \n\n  ") == []


def test_a_sentence_the_context_holds_is_supported() -> None:
    [sentence] = judge("Poseidon grossed $181,674,817 worldwide on a budget of $160 million.", CONTEXT, PARAMS)
    assert not sentence.unsupported and sentence.score == 1.0


def test_a_sentence_of_words_the_context_lacks_is_unsupported_with_its_score() -> None:
    [sentence] = judge("Critics praised the stunning visual effects of Poseidon.", CONTEXT, PARAMS)
    assert sentence.unsupported
    assert sentence.missing == ("critics", "praised", "stunning", "visual", "effects")
    assert sentence.score == pytest.approx(1 / 6)


def test_a_share_of_missing_words_below_the_threshold_is_supported() -> None:
    [sentence] = judge("Poseidon grossed worldwide box office millions, critics said.", CONTEXT, PARAMS)
    assert sentence.missing == ("critics", "said") and sentence.n_words == 8  # 0.25 < 0.3
    assert not sentence.unsupported


def test_a_number_the_context_lacks_makes_its_sentence_unsupported() -> None:
    [sentence] = judge("Poseidon had a budget of $170 million.", CONTEXT, PARAMS)
    assert sentence.unsupported and sentence.missing_numbers == ("170",) and sentence.score == 0.0


def test_numbers_are_not_judged_when_the_rules_say_so() -> None:
    params = ClaimSupport(3, 0.3, 5, False, PARAMS.stop_words)
    [sentence] = judge("Poseidon had a budget of $170 million.", CONTEXT, params)
    assert not sentence.unsupported


def test_a_sentence_with_fewer_content_words_than_min_words_is_judged_by_numbers_only() -> None:
    [sentence] = judge("Critics agreed.", CONTEXT, PARAMS)
    assert sentence.n_words == 2 and not sentence.unsupported


def test_stop_words_and_short_words_are_not_content_words() -> None:
    [sentence] = judge("The budget of a film was at 160.", CONTEXT, PARAMS)
    assert sentence.n_words == 3  # budget, film, 160 ('the', 'of', 'a', 'was': stop words; 'at': short)


def test_first_only_stops_at_the_first_unsupported_sentence() -> None:
    answer = "Poseidon grossed $181,674,817. It had a budget of $170 million. Critics hated its plot."
    assert [s.start for s in judge(answer, CONTEXT, PARAMS, first_only=True)] == [answer.index("It had")]


def test_the_reason_names_the_missing_number_first() -> None:
    [sentence] = judge("Critics said Poseidon had a budget of $170 million.", CONTEXT, PARAMS)
    assert reason(sentence) == "not in the retrieved context: number '170'"


def test_the_reason_names_the_missing_words_and_how_many_more() -> None:
    [sentence] = judge("Critics praised the stunning visual effects and acting of Poseidon.", CONTEXT, PARAMS)
    assert reason(sentence) == ("6 of 7 content words not in the retrieved context: 'critics', 'praised', "
                                "'stunning', 'visual', 'effects' and 1 more")


def test_the_closest_context_sentence_holds_most_of_the_claims_words() -> None:
    passages = ["It opened in 2006. Poseidon grossed $181,674,817 at the box office.",
                "Poseidon was directed by Wolfgang Petersen."]
    near = closest("Poseidon grossed $200 million at the box office.", passages, PARAMS)
    assert near is not None and near.item == 0
    assert passages[0][near.start:near.end] == "Poseidon grossed $181,674,817 at the box office."
    assert near.share == pytest.approx(4 / 6)  # poseidon, grossed, box, office of 6 content words


def test_the_earliest_of_equally_close_sentences_is_taken() -> None:
    near = closest("Poseidon sank.", ["A ship: Poseidon.", "Poseidon again."], PARAMS)
    assert near is not None and (near.item, near.start) == (0, 0)


def test_no_sentence_is_closest_when_none_shares_a_word() -> None:
    assert closest("Critics praised the effects.", ["Poseidon grossed $181,674,817."], PARAMS) is None
