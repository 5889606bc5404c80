"""Tool call ids rewritten for another provider give the text Pi sends (values taken from Pi 1.6.0)."""

from __future__ import annotations

from providers.llm.tool_ids import for_anthropic, for_openai_completions, short_hash

LONG = "call_abcdefghijklmnopqrstuvwxyz0123456789|fc_" + "x" * 60 + "+/="


def test_short_hash_is_pis() -> None:
    assert short_hash("") == "k4n83c7h0j2b"
    assert short_hash("abc") == "y0biex7f9bbh"
    assert short_hash("é→😀x") == "1suz0cm12q1pez"  # counted in UTF-16 units


def test_anthropic_ids_keep_safe_characters_and_count_utf16_units() -> None:
    assert for_anthropic("call_1|fc_68a+item/==") == "call_1_fc_68a_item___"
    assert for_anthropic("call😀é|x") == "call____x"  # a character beyond the BMP is two units
    assert for_anthropic("a" * 70) == "a" * 64


def test_openai_ids_of_the_responses_api_keep_both_parts_within_forty() -> None:
    assert for_openai_completions("call_1|fc_68a+item/==", "fake") == "call_1_fc_68a_item___"
    assert for_openai_completions("call_1|", "fake") == "call_1"
    assert for_openai_completions(LONG, "fake") == "call_abcdefghijklmnopqrstuvwxyz_172rm31h"


def test_other_openai_ids_are_cut_only_for_openai_itself() -> None:
    assert for_openai_completions("c" * 45, "openai") == "c" * 40
    assert for_openai_completions("c" * 45, "fake") == "c" * 45
