"""Request: the untrusted proposal."""

from __future__ import annotations

import dataclasses

import pytest

from scope_tool._request import Request
from scope_tool.errors import InvalidRequestError


def test_defaults_and_fields():
    request = Request(name="add")
    assert request.name == "add"
    assert request.arguments == ""
    assert Request("add", '{"a":1}').arguments == '{"a":1}'


def test_frozen_equal_by_value_and_hashable():
    request = Request(name="add", arguments="{}")
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.name = "other"  # type: ignore[misc]
    assert request == Request(name="add", arguments="{}")
    assert request != Request(name="add", arguments="{ }")
    assert len({request, Request(name="add", arguments="{}")}) == 1


def test_has_no_id_field():
    assert [field.name for field in dataclasses.fields(Request)] == ["name", "arguments"]


def test_validate_refuses_an_empty_name():
    with pytest.raises(InvalidRequestError) as caught:
        Request(name="").validate()
    assert str(caught.value) == "tool: invalid request: name must not be empty"
    assert isinstance(caught.value, ValueError)


def test_validate_accepts_any_non_empty_name_and_untrusted_arguments():
    # The request is untrusted: names and arguments are judged by the contract, not here.
    Request(name="no such tool!", arguments="not json").validate()
    Request(name="x", arguments=b"\xff").validate()


@pytest.mark.parametrize(
    ("name", "arguments"), [(None, ""), (1, ""), ("add", None), ("add", {"a": 1})]
)
def test_wrong_types_are_type_errors(name, arguments):
    with pytest.raises(TypeError, match="Request"):
        Request(name=name, arguments=arguments)
