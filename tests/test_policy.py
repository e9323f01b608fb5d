"""Tool policies: what a tool declares, how it is learnt, and the rules a tool is counted by."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any, get_args

import pytest

from repeat_reminder_langchain import ConfigError, ReminderConfig
from repeat_reminder_langchain._counter import LoopCounter
from repeat_reminder_langchain._policy import (
    Rules,
    ToolPolicies,
    ToolPolicy,
    compile_paths,
    parse_tool_policy,
)

from .helpers import field_docs


def test_levels_follow_the_sorted_thresholds_and_repeat_every() -> None:
    assert [Rules((2, 4, 6)).level(n) for n in range(1, 8)] == [
        None, "gentle", None, "detailed", None, "detailed", None,
    ]  # fmt: skip
    assert [Rules((2,), repeat_every=3).level(n) for n in (2, 3, 5, 8)] == [
        "gentle", None, "detailed", "detailed",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("metadata", "idempotent"),
    [
        ({"readOnlyHint": True, "idempotentHint": True}, True),
        ({"annotations": {"readOnlyHint": True, "idempotentHint": False}}, False),
        ({"annotations": SimpleNamespace(readOnlyHint=True, idempotentHint=True)}, True),
        ({"annotations": SimpleNamespace(readOnlyHint=None), "readOnlyHint": True}, None),
    ],
)
def test_mcp_hints_are_read_under_annotations_or_at_the_top_level(
    metadata: Any, idempotent: bool | None
) -> None:
    policy = parse_tool_policy(metadata)
    assert policy is not None
    assert (policy.read_only, policy.idempotent) == (True, idempotent)


def test_metadata_that_declares_nothing_has_no_policy() -> None:
    assert parse_tool_policy(None) is None
    assert parse_tool_policy({"other": 1, "readOnlyHint": "yes"}) is None
    with pytest.raises(ValueError, match="repeat_reminder must be a mapping"):
        parse_tool_policy({"repeat_reminder": ["exclude"]})
    with pytest.raises(ValueError, match="invalid repeat_reminder policy: thresholds:"):
        parse_tool_policy({"repeat_reminder": {"thresholds": [1]}})


def test_auto_is_result_aware_only_for_read_only_tools_that_are_not_idempotent() -> None:
    config = ReminderConfig(progress="auto")

    def aware(**hints: bool) -> bool:
        rules = config.rules("read", ToolPolicy(**hints))
        return rules is not None and rules.result_aware

    assert aware(read_only=True)
    assert not aware(read_only=True, idempotent=True)  # the same result again is expected
    assert not aware(read_only=False)
    assert not aware()


@pytest.mark.parametrize(
    ("own", "result_aware"),
    [
        (ToolPolicy(progress="result"), True),
        (ToolPolicy(progress="none", read_only=True), False),
    ],
)
def test_a_tools_own_progress_wins_over_auto_even_when_set_explicitly(
    own: ToolPolicy, result_aware: bool
) -> None:
    rules = ReminderConfig(progress="auto").rules("read", own)
    assert rules is not None and rules.result_aware is result_aware


def test_a_field_set_in_the_configuration_wins_over_the_tools_own() -> None:
    own = ToolPolicy(thresholds=(4,), repeat_every=7, progress="result")
    defaults = ReminderConfig().rules("t", own)
    explicit = ReminderConfig(thresholds=[3, 5, 8], repeat_every=2, progress="none").rules("t", own)
    assert defaults == Rules((4,), 7, True)
    assert explicit == Rules((3, 5, 8), 2, False)


def test_argument_patterns_from_the_configuration_and_the_tool_both_apply() -> None:
    config = ReminderConfig(ignore_arguments={"run": ["description"]})
    rules = config.rules("run", ToolPolicy(ignore_arguments=("options.timeout",)))
    assert rules is not None
    args = {"description": "x", "cmd": "ls", "options": {"timeout": 5, "retries": 2}}
    assert rules.keyed(args) == {"cmd": "ls", "options": {"retries": 2}}
    other = {"other": {"timeout": 5}}
    assert rules.keyed(other) == other  # only that path, not every timeout


def test_dotted_paths_reach_into_objects_and_through_lists() -> None:
    (path,) = compile_paths(["steps.*_id"])
    rules = Rules((3,), ignore=(path,))
    args = {"steps": [{"run_id": 1, "name": "a"}, {"run_id": 2, "name": "a"}], "run_id": 3}
    assert rules.keyed(args) == {"steps": [{"name": "a"}, {"name": "a"}], "run_id": 3}


def test_a_tools_own_exclude_is_honoured_unless_include_decides() -> None:
    excluded = ToolPolicy(exclude=True)
    assert not ReminderConfig().tracks("poll", excluded)
    assert ReminderConfig(include=["poll"]).tracks("poll", excluded)
    assert not ReminderConfig(include=["poll"], exclude=["poll"]).tracks("poll")


def test_policies_are_learnt_by_value_so_rebuilt_or_edited_metadata_is_read_right() -> None:
    policies = ToolPolicies()
    metadata: dict[str, Any] = {"repeat_reminder": {"thresholds": [4]}}
    policies.learn("grep", metadata)
    assert policies["grep"].thresholds == (4,)
    metadata["repeat_reminder"]["thresholds"] = [6]  # edited in place
    policies.learn("grep", metadata)
    assert policies["grep"].thresholds == (6,)
    policies.learn("grep", {"repeat_reminder": {"thresholds": [6]}})  # rebuilt, same words
    assert policies["grep"].thresholds == (6,)
    policies.learn("grep", {"annotations": {"readOnlyHint": True}})  # the hints changed
    assert (policies["grep"].thresholds, policies["grep"].read_only) == (None, True)
    policies.learn("grep", None)
    assert "grep" not in policies and len(policies) == 0
    policies.learn(7, metadata)  # not a tool name
    assert list(policies) == []


@pytest.mark.parametrize(
    "gone",
    [None, {}, "not metadata", {"other": 1}, {"repeat_reminder": {"thresholds": [1]}}],
)
@pytest.mark.parametrize(
    "before",
    [
        {"repeat_reminder": {"exclude": True}},
        {"other": 1},
        {"repeat_reminder": {"thresholds": [1]}},  # read, and ignored: it breaks a rule
    ],
)
def test_a_policy_is_forgotten_when_its_metadata_no_longer_declares_one(
    before: dict[str, Any], gone: object
) -> None:
    policies = ToolPolicies()
    policies.learn("grep", before)
    policies.learn("grep", gone)
    assert "grep" not in policies
    policies.learn("grep", {"repeat_reminder": {"exclude": True}})
    assert policies["grep"].exclude


def test_metadata_that_changes_from_a_policy_that_broke_a_rule_is_read_again() -> None:
    policies = ToolPolicies()
    policies.learn("grep", {"repeat_reminder": float("nan"), "readOnlyHint": True})
    assert "grep" not in policies  # not a mapping: logged and ignored
    policies.learn("grep", {"readOnlyHint": True})
    assert policies["grep"].read_only is True


def test_a_bad_policy_is_logged_once_and_ignored(caplog: pytest.LogCaptureFixture) -> None:
    policies = ToolPolicies()
    with caplog.at_level(logging.WARNING, "repeat_reminder_langchain"):
        for _ in range(3):
            policies.learn("grep", {"repeat_reminder": {"thresholds": [1]}})
    assert "grep" not in policies
    assert [r.getMessage() for r in caplog.records] == [
        "tool 'grep': invalid repeat_reminder policy: thresholds: invalid threshold 1 — "
        "every threshold must be an integer >= 2; its policy is ignored"
    ]


def test_every_problem_of_a_bad_policy_is_told_on_one_line() -> None:
    with pytest.raises(ValueError, match=r"^invalid repeat_reminder policy: ") as caught:
        parse_tool_policy({"repeat_reminder": {"thresholds": [1], "exclude": "maybe"}})
    assert str(caught.value) == (
        "invalid repeat_reminder policy: exclude: Input should be a valid boolean, unable to "
        "interpret input; thresholds: invalid threshold 1 — every threshold must be an integer >= 2"
    )


def test_learnt_policies_stay_bounded() -> None:
    policies = ToolPolicies()
    policies.limit = 3
    sizes = set()
    for n in range(5):
        policies.learn(f"tool{n}", {"repeat_reminder": {"exclude": True}})
        sizes.add(len(policies))
    assert max(sizes) == 3
    assert policies.get("tool4") is not None and policies.get("nope") is None


def test_a_counter_resolves_a_tools_rules_once_per_policy_and_stays_bounded() -> None:
    counter = LoopCounter(ReminderConfig(profile="seed"))
    first = counter.rules("grep")
    assert counter.rules("grep") is first
    own = ToolPolicy(thresholds=(4,))
    assert counter.rules("grep", own) == Rules((4,))  # another policy: resolved again
    assert counter.rules("grep", own) is counter.rules("grep", own)
    sizes = set()
    for n in range(1100):
        counter.rules(f"tool{n}")
        sizes.add(len(counter._rules))
    assert max(sizes) == 1024
    assert counter.rules("grep") == first


def test_metadata_corrected_from_a_float_to_an_integer_is_read_again() -> None:
    # Validation rejects 4.0 and accepts 4: whether metadata changed must tell them apart too.
    policies = ToolPolicies()
    policies.learn("grep", {"repeat_reminder": {"thresholds": [4.0]}})
    assert "grep" not in policies
    policies.learn("grep", {"repeat_reminder": {"thresholds": [4]}})
    assert policies["grep"].thresholds == (4,)
    policies.learn("grep", {"repeat_reminder": {"thresholds": [4.0]}})
    assert "grep" not in policies


@pytest.mark.parametrize(
    ("field", "value"),
    [("thresholds", [1]), ("thresholds", "x"), ("repeat_every", 0), ("repeat_every", True)],
)
def test_a_tools_own_field_is_checked_by_the_rule_of_the_configurations_field(
    field: str, value: object
) -> None:
    # One rule per field: a tool's own thresholds break it as the configuration's do.
    with pytest.raises(ConfigError) as config:
        ReminderConfig(**{field: value})
    with pytest.raises(ValueError, match=r"^invalid repeat_reminder policy: ") as policy:
        parse_tool_policy({"repeat_reminder": {field: value}})
    assert str(policy.value).removeprefix("invalid repeat_reminder policy: ") == str(config.value)


def test_a_tools_own_fields_are_the_configurations_of_their_names_or_its_hints() -> None:
    hints = {"read_only", "idempotent"}
    assert set(ToolPolicy.model_fields) - hints < set(ReminderConfig.model_fields)
    progress = ToolPolicy.model_fields["progress"].annotation
    assert set(get_args(get_args(progress)[0])) < set(
        get_args(ReminderConfig.model_fields["progress"].annotation)
    )
    docs = field_docs(ToolPolicy)
    assert list(docs) == list(ToolPolicy.model_fields)
    assert "Attributes:" not in (ToolPolicy.__doc__ or "")
