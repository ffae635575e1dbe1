"""Texts of the forms: reading a cut call whole (its button, modal and pages) and the
inline errors a modal shows next to a field."""

from __future__ import annotations

from bot.slack.blocks import escape

# -- reading a call whole ------------------------------------------------------------

READ_ALL_LABEL = "Read all arguments"
READ_ALL_TITLE = "Full arguments"  # a modal title: at most 24 characters
CUT_CARD_TEXT = (
    ":warning: The arguments are cut above. An approval counts only from someone who has "
    f"read them whole: *{READ_ALL_LABEL}*."
)
ARGUMENTS_CHANGED_TEXT = "The arguments changed while you read them: here they are again."


def page_header_text(*, tool_name: str, page: int, pages: int, digest: str) -> str:
    return (
        f"`{escape(tool_name, 200)}` · page {page} of {pages} · arguments digest "
        f"`{escape(digest, 100)}`"
    )


def last_page_text(characters: int) -> str:
    return (
        f":white_check_mark: That is the end of the arguments ({characters:,} characters, "
        "as the card renders them)."
    )


# -- inline errors -------------------------------------------------------------------

GIVE_A_REASON = "Give a reason: it goes into the audit log."
GIVE_THE_RESULT = "Say what the call really did (the agent sees this)."
GIVE_THE_ARGUMENTS = "Give the arguments as a JSON object."
ARGUMENTS_NOT_AN_OBJECT = "The arguments must be a JSON object ({...})."


def keep_under(what: str, limit: int) -> str:
    return f"Keep the {what} under {limit} characters."


def not_json_text(problem: str, line: int, column: int) -> str:
    return f"Not valid JSON: {problem} (line {line}, column {column})."
