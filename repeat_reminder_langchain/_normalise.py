"""Results compared as a person would: what varies from call to call without meaning, set aside.

A status read twice a minute apart says "checked at 2026-12-05T02:35:14Z" and then "...02:36:14Z";
a failure names a new request id each time. Compared byte for byte, every such result is new,
so a stale loop passes for progress. Before a result is compared (`stale`, `same_error`,
`recurring_error`, `cycle`, `same_output`, `progress="result"`) its text goes through the
guard's normaliser, which sets each of these aside, a placeholder in its place:

* a UUID, of any version (`123e4567-e89b-12d3-a456-426614174000`), as `<uuid>`;
* an ISO 8601 date and time (`2026-12-05T02:35:14.120Z`, `2026-12-05 02:35`, `20261205T023514Z`),
  as `<timestamp>` (a date alone is left: a flight's date is what it says);
* a request id: a token the way providers write one (`req_…`), a W3C `traceparent`, or the
  value of a request, trace, span or correlation id (`"request_id": "…"`, `X-Request-ID: …`),
  as `<request id>`.

A tool declares patterns of its own (`ToolPolicy.normalise_results`); a user passes a function
(`ReminderConfig.normalise_results`). What is shown (a reminder's error, an output) is the
result as it came; only what is compared is normalised.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence

from ._reminder import LOGGER_NAME

__all__ = ["Normalise", "normalise_result", "normaliser", "with_patterns"]

Normalise = Callable[[str], str]
"""A normaliser: a result's text, with what varies without meaning set aside."""

_HEX = "[0-9a-fA-F]"
_ALNUM = "[0-9A-Za-z]"
# One alternation, compiled once, each form a named group. Scanning with it costs some 100 ns a
# character, so a text is first searched for what each form must hold, by searches that each
# start with a literal (the engine skips to it in C): a text with none of them (nearly every
# result) costs a few ns a character.
_DASHED = re.compile(r"-(?:[0-9a-fA-F]{4}-|\d\d[T ]\d\d:|[0-9a-f]{16}-)").search  # UUID, date
_BASIC = re.compile(r"T\d{6}").search  # a timestamp in the basic form
# An id's label, in the three cases it is written in (a class of first letters is slower).
_LABELS = tuple(re.compile(rf"{id_}[\"']?\s*[:=]").search for id_ in ("id", "Id", "ID"))
_DEFAULT = re.compile(
    "|".join(
        (
            rf"(?P<uuid>(?<!{_ALNUM}){_HEX}{{8}}-(?:{_HEX}{{4}}-){{3}}{_HEX}{{12}}(?!{_ALNUM}))",
            # Date and time, extended or basic form; the zone and fraction optional.
            r"(?P<timestamp>(?<!\d)\d{4}-[01]\d-[0-3]\d[T ][0-2]\d:[0-5]\d"
            r"(?::[0-5]\d(?:[.,]\d+)?)?(?:Z|[+-][0-2]\d:?[0-5]\d)?(?![\d:])"
            r"|(?<![0-9A-Za-z])\d{8}T\d{6}(?:[.,]\d+)?(?:Z|[+-]\d{4})?(?![0-9A-Za-z]))",
            # OpenAI's, Anthropic's, Stripe's request ids; W3C trace context.
            rf"(?P<token>(?<!{_ALNUM})(?:req_{_ALNUM}{{8,}}"
            r"|00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2})(?![0-9A-Za-z]))",
            # A value labelled as a request's id, in JSON, a header or a log line: the label kept.
            r"(?P<label>(?i:(?<![A-Za-z])(?:request|trace|span|correlation)[-_ ]?id)"
            r"[\"']?\s*[:=]\s*[\"']?)(?P<value>[0-9A-Za-z][0-9A-Za-z._:/+=-]{5,})",
        )
    )
)
_PLACEHOLDERS = {
    "uuid": "<uuid>",
    "timestamp": "<timestamp>",
    "token": "<request id>",
    "value": "<request id>",
}
_SET_ASIDE = "<set aside>"  # what a tool's own pattern leaves in place of what it matched

logger = logging.getLogger(LOGGER_NAME)


def _placeholder(match: re.Match[str]) -> str:
    kind = match.lastgroup or ""
    return (match["label"] if kind == "value" else "") + _PLACEHOLDERS[kind]


def normalise_result(text: str) -> str:
    """The guard's normaliser: `text` with UUIDs, ISO 8601 timestamps and request ids set aside.

    Examples:
        >>> normalise_result("job 7 pending, checked at 2026-12-05T02:35:14Z")
        'job 7 pending, checked at <timestamp>'
        >>> normalise_result('{"request_id": "a1b2c3d4e5", "status": 503}')
        '{"request_id": "<request id>", "status": 503}'
    """
    label, capital, upper = _LABELS
    if (
        _DASHED(text)
        or _BASIC(text)
        or "req_" in text
        or label(text)
        or capital(text)
        or upper(text)
    ):
        return _DEFAULT.sub(_placeholder, text)
    return text


def with_patterns(normalise: Normalise | None, patterns: Sequence[str]) -> Normalise | None:
    """`normalise`, then each match of a tool's own `patterns` set aside (compiled here, once)."""
    if not patterns:
        return normalise
    own = re.compile("|".join(f"(?:{pattern})" for pattern in patterns)).sub
    if normalise is None:
        return lambda text: own(_SET_ASIDE, text)
    return lambda text: own(_SET_ASIDE, normalise(text))


def normaliser(setting: bool | Normalise) -> Normalise | None:
    """`ReminderConfig.normalise_results` as a normaliser: the guard's, the user's, or None.

    The user's function was tried when the configuration was built; one that fails at run time
    (raises, or returns no text) leaves that result as it is, with a warning logged: the guard
    never fails a run.
    """
    if setting is True:
        return normalise_result
    if setting is False:
        return None
    own = setting

    def guarded(text: str) -> str:
        try:
            normalised = own(text)
        except Exception as error:
            logger.warning("normalise_results failed (%r); the result is compared as it is", error)
            return text
        if not isinstance(normalised, str):
            logger.warning(
                "normalise_results returned %s, not text; the result is compared as it is",
                type(normalised).__name__,
            )
            return text
        return normalised

    return guarded
