"""Group ids: every legal Kafka group id that is also a legal znode name. Topics: exactly Kafka's legal set."""

from __future__ import annotations

import pytest

from migrator.errors import UsageError
from migrator.names import MAX_NAME_LENGTH, validate_group, validate_topic

VALIDATORS = [pytest.param(validate_group, id="group"), pytest.param(validate_topic, id="topic")]


@pytest.mark.parametrize("validate", VALIDATORS)
@pytest.mark.parametrize("name", ["g", "orders", "a.b_c-D9", "...", ".x", "x" * MAX_NAME_LENGTH, "__consumer"])
def test_valid_names_are_returned_unchanged(validate, name):
    assert validate(name) is name


@pytest.mark.parametrize("name", ["team:orders", "ops@eu", "my group", "grüße", "a*b", "x" * 1000, "日本"])
def test_group_ids_kafka_and_zookeeper_accept_are_accepted(name):
    assert validate_group(name) is name


@pytest.mark.parametrize("validate", VALIDATORS)
@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("", "is empty"),
        (".", "reserved"),
        ("..", "reserved"),
        ("a/b", "illegal character '/'"),
        ("a\nb", "illegal character '\\n'"),
        ("a\x00b", "illegal character '\\x00'"),
    ],
)
def test_invalid_names_raise_one_line_usage_error(validate, name, fragment):
    with pytest.raises(UsageError) as info:
        validate(name)
    message = str(info.value)
    assert fragment in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("x" * (MAX_NAME_LENGTH + 1), "250 characters long; the maximum is 249"),
        ("a b", "illegal character ' '"),
        ("a:b", "illegal character ':'"),
        ("grüße", "illegal character 'ü'"),
        ("a*", "illegal character '*'"),
    ],
)
def test_topics_keep_the_brokers_rule(name, fragment):
    with pytest.raises(UsageError, match=fragment):
        validate_topic(name)


def test_group_refuses_what_zookeeper_refuses_in_a_node_name():
    for bad in ("a\u007fb", "a\ud800b", "a\ufff5b"):
        with pytest.raises(UsageError, match="illegal character"):
            validate_group(bad)


def test_message_says_which_kind_of_name():
    with pytest.raises(UsageError, match=r"^group name"):
        validate_group("a/b")
    with pytest.raises(UsageError, match=r"^topic name"):
        validate_topic("a/b")


def test_non_string_is_refused():
    with pytest.raises(UsageError, match="must be a string"):
        validate_topic(None)  # type: ignore[arg-type]
