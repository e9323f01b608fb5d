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

from ._log import LOGGER_NAME

__all__ = ["Normalise", "normalise_result", "normaliser", "with_patterns"]

Normalise = Callable[[str], str]
"""A normaliser: a result's text, with what varies without meaning set aside."""

_Search = Callable[[str], "re.Match[str] | None"]
_Sub = Callable[[str, str], str]
_Form = tuple[_Search, _Sub, str]  # a form's own search, its substitution, its placeholder

_HEX = "[0-9a-fA-F]"
_ALONE = "(?<![0-9A-Za-z])", "(?![0-9A-Za-z])"  # not part of a longer word
_ID_LABELS = "|".join(
    f"(?<={word}{between}{{id}})"
    for word in ("request", "trace", "span", "correlation")
    for between in ("", "[-_ ]")
)


def _forms(hook: str, *forms: tuple[str, str, str]) -> tuple[_Search, tuple[_Form, ...]]:
    """A search for what the forms must hold; each form's own, its substitution and placeholder."""
    return re.compile(hook).search, tuple(
        (re.compile(own).search, re.compile(pattern).sub, said) for own, pattern, said in forms
    )


_UUID = f"{_ALONE[0]}{_HEX}{{8}}-(?:{_HEX}{{4}}-){{3}}{_HEX}{{12}}{_ALONE[1]}"
# A date and time, extended form: a date alone (a flight's) is what it says.
_TIMESTAMP = (
    r"(?<!\d)\d{4}-[01]\d-[0-3]\d[T ][0-2]\d:[0-5]\d(?::[0-5]\d(?:[.,]\d+)?)?"
    r"(?:Z|[+-][0-2]\d:?[0-5]\d)?(?![\d:])"
)
_TRACEPARENT = f"{_ALONE[0]}00-[0-9a-f]{{32}}-[0-9a-f]{{16}}-[0-9a-f]{{2}}{_ALONE[1]}"  # W3C's

# Each group: a search for what its forms must hold, that starts with a literal (the engine
# skips from one to the next in C: a few ns a character), then each form's substitution, run
# only when that finds something. Scanning every text with the forms themselves (one
# alternation) costs 100 ns a character; a result with none of them, nearly every one, is
# returned as it came.
_FORMS = (
    _forms(  # what a UUID, a timestamp and a trace context hold: a dash, two hex digits, ...
        r"-[0-9a-fA-F]{2}(?:[0-9a-fA-F]{2}-|[T ]\d\d:|[0-9a-f]{14}-)",
        (f"-{_HEX}{{4}}-", _UUID, "<uuid>"),
        (r"-\d\d[T ]\d\d:", _TIMESTAMP, "<timestamp>"),
        ("-[0-9a-f]{16}-", _TRACEPARENT, "<request id>"),
    ),
    _forms(  # a timestamp in the basic form
        r"T\d{6}",
        (
            r"T\d{6}",
            rf"{_ALONE[0]}\d{{8}}T\d{{6}}(?:[.,]\d+)?(?:Z|[+-]\d{{4}})?{_ALONE[1]}",
            "<timestamp>",
        ),
    ),
    _forms("req_", ("req_", f"{_ALONE[0]}req_[0-9A-Za-z]{{8,}}{_ALONE[1]}", "<request id>")),
    # A value labelled as a request's id, in JSON, a header or a log line: the label kept. Each
    # way "id" is written is a search of its own (a class of first letters is slower).
    *(
        _forms(
            label,
            (label, rf"({label}\s*[\"']?)[0-9A-Za-z][0-9A-Za-z._:/+=-]{{5,}}", r"\1<request id>"),
        )
        for id_ in ("id", "Id", "ID")
        for label in (rf"{id_}(?i:{_ID_LABELS.format(id=id_)})[\"']?\s*[:=]",)
    ),
)
_SHORTEST = len("req_") + 8  # the shortest text a form matches
_SET_ASIDE = "<set aside>"  # what a tool's own pattern leaves in place of what it matched

logger = logging.getLogger(LOGGER_NAME)


def normalise_result(text: str) -> str:
    """The guard's normaliser: `text` with UUIDs, ISO 8601 timestamps and request ids set aside.

    Examples:
        >>> normalise_result("job 7 pending, checked at 2026-12-05T02:35:14Z")
        'job 7 pending, checked at <timestamp>'
        >>> normalise_result('{"request_id": "a1b2c3d4e5", "status": 503}')
        '{"request_id": "<request id>", "status": 503}'
    """
    if len(text) < _SHORTEST:
        return text  # "found", "ok", "[]": too short to hold any form
    for hook, forms in _FORMS:
        if hook(text):
            for own, sub, placeholder in forms:
                if own(text):
                    text = sub(placeholder, text)
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
