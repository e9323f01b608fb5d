"""Configuration: defaults, fail-loud validation naming the field, a value, tool-name patterns."""

from __future__ import annotations

import functools
import re
from typing import Any, get_type_hints

import pytest

from repeat_reminder_langchain import (
    BOOKKEEPING_TOOLS,
    ConfigError,
    ReminderConfig,
    ReminderFields,
    RepeatToolReminderWarning,
)
from repeat_reminder_langchain._config import TOOL_ERRORS, resolve_config, short_forms
from repeat_reminder_langchain._detectors import DETECTORS, Settings
from repeat_reminder_langchain._detectors.stale import Stale

from .helpers import SHIPPED, field_docs


def test_defaults() -> None:
    config = ReminderConfig()
    assert config.thresholds == (3, 5, 8)
    assert config.include == ()
    assert config.exclude == BOOKKEEPING_TOOLS
    assert config.arguments_preview_chars == 500
    assert config.message_type == "system"
    assert config.detect == ("repeat", "same_error", "recurring_error")
    assert (config.progress, config.escalate_after, config.exit_behavior) == (
        "result",
        10,
        "finish",
    )
    assert config.error_pattern == TOOL_ERRORS
    assert config.model_fields_set == set()  # what a tool declares still wins over each


def test_the_seed_profile_is_0_4_0s_defaults_and_the_fields_given_stand_over_it() -> None:
    seed = ReminderConfig(profile="seed")
    assert (seed.thresholds, seed.include, seed.exclude, seed.detect) == (
        (3, 5, 8),
        (),
        (),
        ("repeat",),
    )
    assert (seed.progress, seed.error_pattern, seed.escalate_after) == ("none", None, None)
    assert seed.model_fields_set == {"profile"}
    given = ReminderConfig(profile="seed", escalate_after=9, exclude=["think"])
    assert (given.escalate_after, given.exit_behavior, given.exclude) == (9, "end", ("think",))
    with pytest.raises(ConfigError) as caught:
        ReminderConfig(profile="strict", escalate_after=9)
    assert str(caught.value) == "profile: Input should be 'default' or 'seed'"


@pytest.mark.parametrize("profile", [["seed"], {}])
def test_a_profile_that_is_no_name_is_refused_naming_it(profile: object, tmp_path: Any) -> None:
    # It was a bare TypeError (unhashable), which named neither the field nor the file.
    with pytest.raises(ConfigError) as caught:
        ReminderConfig(profile=profile)
    assert str(caught.value) == "profile: Input should be 'default' or 'seed'"
    settings = tmp_path / "guard.toml"
    settings.write_text('profile = ["seed"]\n', encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        ReminderConfig.from_file(settings)
    assert str(caught.value) == f"{settings}: profile: Input should be 'default' or 'seed'"


@pytest.mark.parametrize(
    ("fields", "stop"),
    [
        (
            {"thresholds": [3, 5, 8, 12]},
            14,
        ),  # the default stop comes two calls after the last reminder
        ({"same_error_thresholds": [3, 11]}, 13),
        ({"thresholds": [2]}, 10),
        ({"thresholds": [2], "escalate_after": 3}, 3),  # a limit given: same_error's 3 gives way
    ],
)
def test_the_default_stop_comes_after_every_reminder_asked_for(
    fields: dict[str, Any], stop: int
) -> None:
    assert ReminderConfig(**fields).escalate_after == stop


def test_a_limit_given_below_a_detectors_thresholds_the_user_asked_for_still_fails() -> None:
    with pytest.raises(ConfigError, match="the same_error detector"):
        ReminderConfig(thresholds=[3], same_error_thresholds=[3, 5], escalate_after=4)
    with pytest.raises(ConfigError, match="the repeat detector"):
        ReminderConfig(escalate_after=5)


def test_unsorted_thresholds_are_accepted_and_sorted() -> None:
    assert ReminderConfig(thresholds=[8, 3, 5]).thresholds == (3, 5, 8)
    assert ReminderConfig(thresholds=(4,)).thresholds == (4,)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"thresholds": []}, "thresholds: must not be empty"),
        ({"thresholds": "3,5"}, "thresholds: must be a list of integers"),
        ({"thresholds": 3}, "thresholds: must be a list of integers"),
        ({"thresholds": [1, 3]}, "invalid threshold 1 — every threshold must be an integer >= 2"),
        ({"thresholds": [2.5]}, "invalid threshold 2.5"),
        ({"thresholds": [3.0]}, "invalid threshold 3.0"),
        ({"thresholds": [True, 3]}, "invalid threshold True"),
        ({"thresholds": ["3"]}, "invalid threshold '3'"),
        ({"thresholds": [3, 3]}, "thresholds: must not contain duplicates"),
        (
            {"arguments_preview_chars": 0},
            "arguments_preview_chars: must be an integer >= 1, got 0",
        ),
        ({"arguments_preview_chars": 12.5}, "must be an integer >= 1, got 12.5"),
        ({"arguments_preview_chars": "500"}, "must be an integer >= 1, got '500'"),
        ({"include": "probe"}, "include: must be a list of tool-name patterns"),
        ({"exclude": ["ok", 3]}, "exclude: every pattern must be a non-empty string, got 3"),
        ({"exclude": [""]}, "every pattern must be a non-empty string, got ''"),
        ({"message_type": "assistant"}, "message_type: Input should be 'system' or 'human'"),
        ({"repeat_every": 0}, "repeat_every: must be an integer >= 1, or None, got 0"),
        ({"ignore_arguments": ["a"]}, "ignore_arguments: must map tool-name patterns"),
        ({"ignore_arguments": {"": ["a"]}}, "every tool-name pattern must be a non-empty"),
        ({"ignore_arguments": {"x": ["options."]}}, "invalid argument pattern 'options.'"),
        (
            {"ignore_arguments": {"x": ["a..b"]}},
            "ignore_arguments: invalid argument pattern 'a..b' — every dotted segment must be "
            "non-empty (use * to match any key)",
        ),
        ({"ignore_arguments": {"x": [".x"]}}, "invalid argument pattern '.x'"),
        ({"mode": "quiet"}, "mode: Input should be 'remind' or 'observe'"),
        (
            {"exit_behavior": "error", "escalate_after": None},
            "exit_behavior: applies only with escalate_after set",
        ),
        ({"log_arguments": "yes"}, "log_arguments: must be True or False, got 'yes'"),
        ({"log_arguments": 1}, "log_arguments: must be True or False, got 1"),
    ],
)
def test_bad_values_fail_at_construction_naming_the_field(
    fields: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)) as caught:
        ReminderConfig(**fields)
    assert isinstance(caught.value, ValueError)
    text = str(caught.value)
    assert text.startswith(f"{next(iter(fields))}:")
    assert "\n" not in text and "http" not in text  # one line per problem, no URL


def test_each_problem_is_one_line() -> None:
    with pytest.raises(ConfigError) as caught:
        ReminderConfig(thresholds=[], mode="quiet")
    assert str(caught.value).splitlines() == [
        "thresholds: must not be empty",
        "mode: Input should be 'remind' or 'observe'",
    ]


def test_an_unknown_field_names_the_nearest_one() -> None:
    with pytest.raises(TypeError, match="unknown ReminderConfig field 'treshold'; did you mean"):
        ReminderConfig(treshold=[3])
    with pytest.raises(TypeError, match="fields are thresholds, include"):
        resolve_config(None, {"zzz": 1})


def test_the_configuration_is_an_immutable_hashable_value() -> None:
    config = ReminderConfig(thresholds=[5, 3], ignore_arguments={"run_*": ["description"]})
    same = ReminderConfig(thresholds=[3, 5], ignore_arguments={"run_*": ["description"]})
    assert config == same and hash(config) == hash(same)
    assert {config, same} == {config}
    config.tracks("run_shell")  # a cache filled by use plays no part in equality
    assert config == same and hash(config) == hash(same)
    assert config != ReminderConfig(thresholds=[3, 5])
    # Which fields were set matters: a field set explicitly wins over a tool's own policy.
    assert ReminderConfig() != ReminderConfig(thresholds=[3, 5, 8])
    with pytest.raises(ValueError, match="frozen"):
        config.thresholds = (2,)  # type: ignore[misc]
    with pytest.raises(TypeError):
        config.ignore_arguments["run_*"] = ("x",)  # type: ignore[index]
    assert config.ignore_arguments["run_*"] == ("description",)
    assert repr(config.ignore_arguments) == "{'run_*': ('description',)}"
    assert ReminderConfig() != "a configuration"


def test_configurations_that_differ_hash_apart() -> None:
    # Hashes that tell values apart, so that configurations key dicts and sets cheaply.
    configs = [
        ReminderConfig(),
        ReminderConfig(thresholds=[3, 5, 8]),  # only which fields were set differs
        ReminderConfig(thresholds=[2]),
        ReminderConfig(mode="observe"),
        ReminderConfig(ignore_arguments={"run": ["description"]}),
        ReminderConfig(ignore_arguments={"run": ["timeout"]}),
        ReminderConfig(ignore_arguments={"grep": ["description"]}),
    ]
    assert len({hash(config) for config in configs}) == len(configs)


def test_repeat_every_of_one_is_the_documented_minimum() -> None:
    assert ReminderConfig(repeat_every=1).repeat_every == 1


def test_resolving_takes_a_configuration_or_fields_not_both() -> None:
    config = ReminderConfig(thresholds=[2])
    assert resolve_config(config, {}) is config
    assert resolve_config(None, {"thresholds": [4]}).thresholds == (4,)
    with pytest.raises(TypeError) as both:
        resolve_config(config, {"thresholds": [3]})
    assert str(both.value) == "pass either a ReminderConfig or its fields as keywords, not both"
    with pytest.raises(TypeError) as other:
        resolve_config({"thresholds": [3]}, {})  # type: ignore[arg-type]
    assert str(other.value) == "config must be a ReminderConfig, got dict"


@pytest.mark.parametrize(
    ("include", "exclude", "tracked", "untracked"),
    [
        ([], [], ["probe", "anything"], []),
        (["pro*"], [], ["probe", "pro", "pro_x"], ["other", "aprobe"]),
        ([], ["todo_*"], ["probe", "todo"], ["todo_write", "todo_"]),
        ([], ["pr.be"], ["probe", "prxbe"], ["pr.be"]),
        (
            [],
            ["a?c", "x+y", "(z)", "[q]", "b|c", "^d$"],
            ["abc", "xxy", "z", "q", "b"],
            ["a?c", "x+y", "(z)", "[q]", "b|c", "^d$"],
        ),
        (["*_read", "grep"], ["secret_*"], ["file_read", "grep"], ["secret_read", "grep2", "Grep"]),
        (["mcp_*"], [], ["mcp_"], ["probe"]),
        (["a*b*c"], [], ["abc", "a__b__c", "a\nb\nc"], ["ab", "acb"]),
    ],
)
def test_patterns_match_whole_names_with_star_as_the_only_wildcard(
    include: list[str], exclude: list[str], tracked: list[str], untracked: list[str]
) -> None:
    config = ReminderConfig(include=include, exclude=exclude)
    assert [name for name in tracked if not config.tracks(name)] == []
    assert [name for name in untracked if config.tracks(name)] == []


def test_exclude_wins_over_include() -> None:
    config = ReminderConfig(include=["*"], exclude=["probe"])
    assert not config.tracks("probe")
    assert config.tracks("other")


def test_the_ignored_arguments_read_as_a_mapping_and_dump_as_json() -> None:
    config = ReminderConfig(ignore_arguments={"run_*": ["description", "timeout*"]})
    assert len(config.ignore_arguments) == 1
    assert dict(config.ignore_arguments) == {"run_*": ("description", "timeout*")}
    dumped = config.model_dump(mode="json")
    assert dumped["ignore_arguments"] == {"run_*": ["description", "timeout*"]}
    assert ReminderConfig(**{k: v for k, v in dumped.items() if k in config.model_fields_set})


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"detect": ["stale", "stale"]}, "detect: must not name a detector twice"),
        ({"detect": []}, "detect: must be a non-empty list of detector names"),
        ({"error_pattern": ""}, "error_pattern: must be a non-empty regular expression or None"),
        ({"error_pattern": 3}, "error_pattern: must be a non-empty regular expression or None"),
        ({"not_user": 3}, "not_user: must be a regular expression, a function of a message"),
        ({"not_user": ""}, "not_user: must be a regular expression, a function of a message"),
        ({"not_user": "("}, "not_user: invalid regular expression"),
    ],
)
def test_detector_fields_fail_loud(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ReminderConfig(**fields)
    assert ReminderConfig(error_pattern=None).error_pattern is None


def test_what_is_not_the_user_is_a_pattern_or_a_function_and_the_config_stays_a_value() -> None:
    def harness(text: str) -> bool:
        return text.startswith("Please")

    by_pattern = ReminderConfig(not_user="^Please")
    by_function = ReminderConfig(not_user=harness)
    assert by_pattern == ReminderConfig(not_user="^Please")
    assert hash(by_function) == hash(ReminderConfig(not_user=harness))
    assert by_pattern.model_dump(mode="json")["not_user"] == "^Please"
    dumped = by_function.model_dump(mode="json")["not_user"]
    assert dumped.startswith("<function ") and "harness" in dumped
    # A function with no name of its own (a partial) is named by what it shows of itself.
    by_partial = ReminderConfig(not_user=functools.partial(re.match, "Please"))
    assert by_partial.model_dump(mode="json")["not_user"] == f"<function {by_partial.not_user!r}>"
    assert ReminderConfig().model_dump(mode="json")["not_user"] is None


def test_a_function_that_cannot_take_the_message_is_refused_where_the_guard_is_built() -> None:
    # Called with each user-role message, it failed on every one at run time: logged, and the
    # guard counted nothing more.
    def both(text: str, message: Any) -> bool:
        return False

    unnamed = functools.partial(both)  # no name of its own: named by what it shows of itself
    for function, takes in (
        (unnamed, f"{unnamed!r} takes (text, message)"),
        (lambda: True, "<lambda> takes ()"),
        (both, "both takes (text, message)"),
    ):
        with pytest.raises(ConfigError) as caught:
            ReminderConfig(not_user=function)
        said = f"not_user: a function must take one argument, the message or its text; {takes}"
        assert str(caught.value) == said
    # One argument, with others it need not be given, or a builtin without a signature to read.
    assert ReminderConfig(not_user=lambda text, strict=True: False).not_user is not None
    assert ReminderConfig(not_user=str.isupper).not_user is str.isupper
    assert ReminderConfig(not_user=bool).not_user is bool  # no signature: taken at its word


@pytest.mark.parametrize(
    ("fields", "way"),
    [
        # LangChain's own limits stand alone, so a first try often meets a threshold: the
        # line says which thresholds keep the reminders before the stop, or which limit does.
        ({"escalate_after": 5}, "pass thresholds=[3] (reminders before the stop) or "),
        ({"escalate_after": 8}, "pass thresholds=[3, 5] (reminders before the stop) or "),
        ({"escalate_after": 3}, "pass "),  # no threshold below 3: only the limit can move
        (
            {"escalate_after": 5, "detect": ["repeat", "stale"], "stale_thresholds": [4, 6]},
            "pass thresholds=[3] and stale_thresholds=[4] (reminders before the stop) or ",
        ),
    ],
)
def test_an_escalation_below_a_threshold_is_refused_with_the_way_out(
    fields: dict[str, Any], way: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        ReminderConfig(**fields)
    assert str(caught.value) == (
        "escalate_after: must be greater than every threshold of the repeat detector (the last "
        f"is 8), got {fields['escalate_after']}; {way}escalate_after \u2265 9"
    )
    assert ReminderConfig(**fields | {"escalate_after": 9}).escalate_after == 9  # the way out


def test_the_faces_keywords_are_exactly_the_configurations_fields() -> None:
    # The handler, node and middleware type their **fields with ReminderFields: a field added
    # to one and not the other would be refused, or untyped, at the call site.
    typed = set(ReminderFields.__annotations__)
    assert set(ReminderConfig.model_fields) <= typed
    # Beside them, the short forms of the shipped detectors' thresholds, each the registry's. A
    # detector added later is typed through `detectors`; its short form works at run time.
    shipped = {short for short, name in short_forms().items() if name in SHIPPED}
    assert typed - set(ReminderConfig.model_fields) == shipped


def test_a_detectors_short_form_is_accepted_without_being_typed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(DETECTORS, "again", type("Again", (Stale,), {"name": "again"}))
    assert "again_thresholds" not in ReminderFields.__annotations__
    config = ReminderConfig(detect=["again"], again_thresholds=[4])
    assert config.detectors == {"again": {"thresholds": (4,)}}
    assert config.again_thresholds == (4,)  # type: ignore[attr-defined]


def test_the_faces_keywords_are_typed_as_the_fields() -> None:
    # ReminderFields is written out for the type checker: its types are held to the model's,
    # a short form's to `thresholds`' (each detector's own are tuples, read the same way).
    typed = get_type_hints(ReminderFields)
    for name, field in ReminderConfig.model_fields.items():
        assert typed[name] == field.annotation, name
    for name in typed.keys() - ReminderConfig.model_fields.keys():
        assert typed[name] == ReminderConfig.model_fields["thresholds"].annotation, name


def test_every_field_is_documented_once_where_it_is_declared() -> None:
    # The reference renders the string below each field's declaration: the class's docstring
    # lists none of them, so there is no second list to keep in step.
    docs = field_docs(ReminderConfig)
    assert list(docs) == list(ReminderConfig.model_fields)
    assert all(doc.strip() for doc in docs.values())
    assert "Attributes:" not in (ReminderConfig.__doc__ or "")


def test_every_field_has_one_line_of_help_and_the_least_value_its_validator_takes() -> None:
    # The command line's options are made from these: a field without its line would show none.
    for name, field in ReminderConfig.model_fields.items():
        assert field.description, name
        assert "\n" not in field.description, name
    # A count's `ge` is what its option says it takes: its validator holds to the same.
    bounded = {
        name: bound.ge
        for name, field in ReminderConfig.model_fields.items()
        for bound in field.metadata
        if hasattr(bound, "ge")
    }
    assert bounded == {"arguments_preview_chars": 1, "repeat_every": 1, "escalate_after": 2}
    for name, least in bounded.items():
        with pytest.raises(ConfigError, match=rf"^{name}: must be an integer >= {least}\b"):
            ReminderConfig(**{name: least - 1})
    assert ReminderConfig(arguments_preview_chars=1, repeat_every=1).repeat_every == 1


def test_a_detectors_settings_reach_it_by_its_name_or_by_the_short_form() -> None:
    long = ReminderConfig(detect=["stale"], detectors={"stale": {"thresholds": [5, 4]}})
    short = ReminderConfig(detect=["stale"], stale_thresholds=[4, 5])
    for config in (long, short):
        assert config.detector_thresholds("stale") == (4, 5)
        assert config.detector_settings("stale") == Settings(thresholds=(4, 5))
        assert config.stale_thresholds == (4, 5)  # the short form reads what it takes
        assert config == long  # one configuration, however it was said
    # Other settings make another configuration: no two guards set apart only by them share one.
    assert long != ReminderConfig(detect=["stale"], detectors={"stale": {"thresholds": [4, 6]}})
    assert ReminderConfig(words={"*": {"gentle": "a"}}) != ReminderConfig(
        words={"*": {"gentle": "b"}}
    )
    assert ReminderConfig(detect=["stale"]).detector_settings("stale") == Settings()
    assert ReminderConfig(thresholds=[2]).detector_thresholds("repeat") == (2,)
    # The mapping is frozen and dumps as plain JSON, so the configuration stays a value.
    assert hash(long) == hash(
        ReminderConfig(detect=["stale"], detectors={"stale": {"thresholds": [4, 5]}})
    )
    assert long.model_dump(mode="json")["detectors"] == {"stale": {"thresholds": [4, 5]}}
    with pytest.raises(TypeError):
        long.detectors["stale"]["thresholds"] = (9,)  # type: ignore[index]


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        (
            {"stale_thresholds": [4], "detectors": {"stale": {"thresholds": [4]}}},
            "stale_thresholds and detectors.stale.thresholds: give one, not both",
        ),
        (
            {"detectors": {"stael": {}}},
            "detectors: unknown detector 'stael'; did you mean 'stale'?",
        ),
        ({"detectors": ["stale"]}, "detectors: must map detector names to their settings"),
        ({"detectors": {"stale": [3]}}, "detectors: stale: must map settings to values, got [3]"),
        (  # the short form adds nothing to settings that are no mapping: they are refused as given
            {"detectors": {"stale": [3]}, "stale_thresholds": [4]},
            "detectors: stale: must map settings to values, got [3]",
        ),
        (
            {"detectors": {"stale": {"treshold": [3]}}},
            "detectors: stale: unknown setting 'treshold'; did you mean 'thresholds'?",
        ),
        (
            {"detectors": {"repeat": {"thresholds": [3]}}},
            "detectors: repeat: unknown setting 'thresholds'; it takes none: its thresholds are "
            "thresholds, and each tool's own",
        ),
        (
            {"detectors": {"cycle": {"thresholds": []}}},
            "detectors: cycle.thresholds: must not be empty",
        ),
    ],
)
def test_a_detectors_settings_fail_loud(fields: dict[str, Any], problem: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(problem)):
        ReminderConfig(detect=["repeat", "stale", "cycle"], **fields)


def test_every_problem_of_the_fields_and_their_short_forms_is_said_on_a_line_of_its_own() -> None:
    # One short form's problem hides neither the next one's nor a field's: all fixed at once.
    with pytest.raises(ConfigError) as caught:
        ReminderConfig(
            thresholds=[1],
            stale_thresholds=[4],
            same_error_thresholds=[1],
            recurring_error_thresholds="3",
            detectors={"stale": {"thresholds": [3]}},
        )
    assert str(caught.value).splitlines() == [
        "thresholds: invalid threshold 1 \u2014 every threshold must be an integer >= 2",
        "stale_thresholds and detectors.stale.thresholds: give one, not both",
        "same_error_thresholds: invalid threshold 1 \u2014 every threshold must be an integer >= 2",
        "recurring_error_thresholds: must be a list of integers, got '3'",
    ]


def test_settings_for_a_detector_not_detected_warn() -> None:
    with pytest.warns(RepeatToolReminderWarning, match="settings for stale, which is not detected"):
        ReminderConfig(detectors={"stale": {"thresholds": [4]}})
