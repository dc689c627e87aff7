"""N-gram prompt lookup: what it proposes when a reply copies and edits its input."""

from __future__ import annotations

import json
from pathlib import Path

from app.engine.speculation.drafters import NgramDrafter, as_tool_argument

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "agents"

# A "file" of 20 distinct tokens, as a prompt the reply will copy.
SOURCE = list(range(100, 120))


def test_the_longest_match_wins_over_the_newest():
    # [5, 6] occurs twice: first inside a long copy of the source, later by chance, followed by 9.
    written = [1, 2, 3, 4, 5, 6, 7, 8, 0, 5, 6, 9, 0, 1, 2, 3, 4, 5, 6]
    draft = NgramDrafter().propose(written, 2)
    assert draft.tokens == [7, 8]
    assert draft.match_len == 6  # 1 2 3 4 5 6, counted back past the 2-gram that found it


def test_a_reply_that_copies_its_input_gets_the_rest_of_it():
    written = SOURCE + [0] + SOURCE[:12]
    draft = NgramDrafter().propose(written, 5)
    assert draft.tokens == SOURCE[12:17]
    assert draft.match_len == 12


def test_after_an_edit_the_copy_resumes_past_the_replaced_token():
    # The reply copied 10 tokens, then wrote 900 where the source has 110 (a renamed variable).
    written = SOURCE + [0] + SOURCE[:10] + [900]
    draft = NgramDrafter().propose(written, 3)
    assert draft.tokens == SOURCE[11:14]
    assert draft.match_len == 0  # an unconfirmed guess: the controller tracks these apart


def test_a_longer_replacement_is_followed_once_the_copy_agrees_again():
    # 110 became two tokens (900, 901), then the reply went on with 111: the guess is confirmed.
    written = SOURCE + [0] + SOURCE[:10] + [900, 901, 111]
    draft = NgramDrafter().propose(written, 3)
    assert draft.tokens == SOURCE[12:15]
    assert draft.match_len == 11  # 10 copied before the edit, 1 after


def test_match_length_counts_the_copy_before_a_small_edit():
    # Well past the edit, the match since it is short, but the passage is the same one: the evidence adds up.
    written = SOURCE + [0] + SOURCE[:10] + [900] + SOURCE[11:15]
    draft = NgramDrafter().propose(written, 3)
    assert draft.tokens == SOURCE[15:18]
    assert draft.match_len == 4 + 10


def test_nothing_to_copy_proposes_nothing():
    assert NgramDrafter().propose([1, 2, 3, 4, 5], 4).tokens == []


def test_a_new_request_that_shares_only_a_prefix_is_reindexed():
    drafter = NgramDrafter()
    drafter.propose([1, 2, 3, 1, 2], 2)
    # Different text after the shared prefix: the old index must not propose the old continuation (3).
    assert drafter.propose([1, 2, 7, 1, 2], 2).tokens == [7, 1]


def test_drafts_stop_before_a_slot_that_varied_in_the_reply():
    # A reply writing records: 1 2 3 <value> 4 5 6 7. The second record's value (31) differed from the first's
    # (30) though the 3 tokens before it matched: a slot. The third record's draft stops before its value.
    prompt = [9, 9, 9]
    first, second = [1, 2, 3, 30, 4, 5, 6, 7], [1, 2, 3, 31, 4, 5, 6, 7]
    drafter = NgramDrafter()
    drafter.start_reply(len(prompt))
    written = prompt + first + second + [1]
    for end in range(len(prompt) + 1, len(written) + 1):  # the reply is generated token by token
        drafter.propose(written[:end], 8)
    assert drafter.propose(written, 8).tokens == [2, 3]
    # Prompt text is copied as it is: the same records in the prompt do not stop a draft.
    copying = NgramDrafter()
    copying.start_reply(len(prompt + first + second))
    assert copying.propose(prompt + first + second + [1], 8).tokens == [2, 3, 31, 4, 5, 6, 7, 1]


def test_a_name_changed_at_two_places_is_proposed_changed_at_the_next():
    # The prompt uses name 50 three times; the reply renames it to (60, 61) wherever it copies it.
    line = [1, 2, 3, 4, 5, 6, 7, 8]
    prompt = (
        line
        + [50, 9, 10]
        + [11, 12, 13, 14, 15, 16, 17, 18]
        + [50, 19, 20]
        + [21, 22, 23, 24, 25, 26, 27, 28]
        + [50, 29, 30]
    )
    reply = line + [60, 61, 9, 10] + [11, 12, 13, 14, 15, 16, 17, 18] + [60, 61, 19, 20] + [21, 22, 23, 24]
    drafter = NgramDrafter()
    drafter.start_reply(len(prompt))
    for end in range(len(prompt) + 1, len(prompt + reply) + 1):  # generated token by token
        drafter.propose((prompt + reply)[:end], 8)
    assert drafter.propose(prompt + reply, 8).tokens == [25, 26, 27, 28, 60, 61, 29, 30]


def _generated(drafter: NgramDrafter, prompt: list[int], reply: list[int]) -> None:
    drafter.start_reply(len(prompt))
    for end in range(len(prompt) + 1, len(prompt + reply) + 1):  # token by token, as a reply is written
        drafter.propose((prompt + reply)[:end], 8)


def test_a_name_replaced_once_is_proposed_replaced_at_the_next_place():
    # The reply renamed 50 to (60, 61) at its first place: the next copy of 50 is proposed renamed, so a rename,
    # a JSON key or a replaced call costs one refused draft, not two.
    line = [1, 2, 3, 4, 5, 6, 7, 8]
    prompt = line + [50, 9, 10] + [11, 12, 13, 14, 15, 16, 17, 18] + [50, 19, 20]
    reply = line + [60, 61, 9, 10] + [11, 12, 13, 14, 15, 16, 17, 18]
    once = NgramDrafter()
    _generated(once, prompt, reply)
    assert once.propose(prompt + reply, 3).tokens == [60, 61, 19]


def test_an_insertion_made_once_is_not_assumed_to_repeat():
    # The reply inserted (70, 71) before 40 at one place (a type hint before a comma): each one differs, so the
    # next 40 is proposed as the prompt has it.
    line = [1, 2, 3, 4, 5, 6, 7, 8]
    prompt = line + [40, 9, 10] + [11, 12, 13, 14, 15, 16, 17, 18] + [40, 19, 20]
    reply = line + [70, 71, 40, 9, 10] + [11, 12, 13, 14, 15, 16, 17, 18]
    once = NgramDrafter()
    _generated(once, prompt, reply)
    assert once.propose(prompt + reply, 3).tokens == [40, 19, 20]


def test_a_copy_stops_before_the_end_of_the_users_turn():
    # The prompt: a file (SOURCE), then the template's end-of-turn (999, a control token) and the assistant
    # header. A reply copying the file must not be offered the end-of-turn marker, nor the file's last token,
    # which was split up against that marker and is split differently when the reply goes on with more text.
    END_OF_TURN = 999
    prompt = [0] + SOURCE + [END_OF_TURN, 7, 8]
    drafter = NgramDrafter(is_control=lambda token: token == END_OF_TURN)
    drafter.start_reply(len(prompt))
    assert drafter.propose(prompt + SOURCE[:12], 20).tokens == SOURCE[12:19]
    # Without knowing which tokens are control tokens the draft runs on into the template.
    assert NgramDrafter().propose(prompt + SOURCE[:12], 20).tokens[:10] == SOURCE[12:] + [END_OF_TURN, 7]


def test_a_fixed_length_mode_drafts_only_on_as_much_evidence_as_ngram_simple():
    drafter = NgramDrafter()
    drafter.min_match = NgramDrafter.FIXED_MIN_MATCH
    assert drafter.propose(SOURCE + [0] + SOURCE[:6], 4).tokens == []  # 6 tokens may be a coincidence
    assert drafter.propose(SOURCE + [0] + SOURCE[:12], 4).tokens == SOURCE[12:16]


# A tool call's arguments are a JSON string: the file the agent read is copied into it escaped. Tokens of the file's
# two lines, and of the same text inside a JSON string, where the newline between them is written as `\` `n`.
NEWLINE, BACKSLASH, LETTER_N, QUOTE = 10, 92, 110, 34
LINES = list(range(200, 212)) + [NEWLINE] + list(range(300, 312))
ESCAPED = list(range(200, 212)) + [BACKSLASH, LETTER_N] + list(range(300, 312))


def escaped_copy(prompt):
    return ESCAPED if prompt[-len(LINES) :] == LINES else []


def test_inside_a_json_string_the_escaped_copy_of_the_prompt_is_proposed():
    # The reply is writing `"old_string": "` and the file's first line, then the escaped newline.
    prompt = [1, 2] + LINES
    reply = [QUOTE] + LINES[:12] + [BACKSLASH, LETTER_N] + [300, 301]
    drafter = NgramDrafter(escape=escaped_copy)
    drafter.start_reply(len(prompt))
    draft = drafter.propose(prompt + reply, 5)
    assert draft.tokens == [302, 303, 304, 305, 306]
    assert draft.source == "ngram" and draft.match_len > 12


def test_outside_json_the_prompt_itself_is_still_copied():
    prompt = [1, 2] + LINES
    reply = LINES[:15]  # a raw copy: the newline as the prompt has it
    drafter = NgramDrafter(escape=escaped_copy)
    drafter.start_reply(len(prompt))
    assert drafter.propose(prompt + reply, 3).tokens == LINES[15:18]


def _recorded_read_and_edit() -> tuple[str, dict]:
    """Claude Code's Read result (lines numbered "N\\t") and the Edit call that followed it, as recorded."""
    body = json.loads((FIXTURES / "claude_code_session" / "04.json").read_text())
    body = body.get("body", body)
    blocks = [b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]]
    read = next(b["content"] for b in blocks if b.get("type") == "tool_result")
    edit = next(b["input"] for b in blocks if b.get("type") == "tool_use" and "old_string" in b["input"])
    return read, edit


def test_an_edit_s_argument_is_found_whole_in_the_copy_of_a_numbered_read():
    # The model copies a file it read into an Edit's old_string without the Read's line numbers: the copy the lookup
    # searches must hold that argument as the call writes it, or the match would break at every line's start.
    read, edit = _recorded_read_and_edit()
    assert read.startswith("1\t")
    argument = json.dumps(edit["old_string"], ensure_ascii=False)[1:-1]
    assert argument in as_tool_argument(read)
    lines = "\n".join(line.split("\t", 1)[1] for line in read.splitlines()[:2])
    assert json.dumps(lines)[1:-1] in as_tool_argument(read)  # two lines together, across the number between them


def test_numbered_lines_with_an_arrow_lose_their_numbers_too():
    read = "     1→def add(a, b):\n     2→    return a + b\n"
    assert as_tool_argument(read) == "def add(a, b):\\n    return a + b\\n"
    assert as_tool_argument('say "1\tx"') == 'say \\"1\\tx\\"'  # a number not at a line's start is text
