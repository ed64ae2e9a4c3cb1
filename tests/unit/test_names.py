"""Group and topic names: exactly Kafka's legal set, so nothing else reaches a znode path."""

from __future__ import annotations

import pytest

from migrator.errors import UsageError
from migrator.names import MAX_NAME_LENGTH, validate_group, validate_topic

VALIDATORS = [pytest.param(validate_group, id="group"), pytest.param(validate_topic, id="topic")]


@pytest.mark.parametrize("validate", VALIDATORS)
@pytest.mark.parametrize("name", ["g", "orders", "a.b_c-D9", "...", ".x", "x" * MAX_NAME_LENGTH, "__consumer"])
def test_valid_names_are_returned_unchanged(validate, name):
    assert validate(name) is name


@pytest.mark.parametrize("validate", VALIDATORS)
@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("", "is empty"),
        (".", "reserved"),
        ("..", "reserved"),
        ("x" * (MAX_NAME_LENGTH + 1), "250 characters long; the maximum is 249"),
        ("a/b", "illegal character '/'"),
        ("a b", "illegal character ' '"),
        ("a:b", "illegal character ':'"),
        ("grüße", "illegal character 'ü'"),
        ("a\nb", "illegal character '\\n'"),
        ("a*", "illegal character '*'"),
    ],
)
def test_invalid_names_raise_one_line_usage_error(validate, name, fragment):
    with pytest.raises(UsageError) as info:
        validate(name)
    message = str(info.value)
    assert fragment in message
    assert "\n" not in message


def test_message_says_which_kind_of_name():
    with pytest.raises(UsageError, match=r"^group name"):
        validate_group("a/b")
    with pytest.raises(UsageError, match=r"^topic name"):
        validate_topic("a/b")


def test_non_string_is_refused():
    with pytest.raises(UsageError, match="must be a string"):
        validate_topic(None)  # type: ignore[arg-type]
