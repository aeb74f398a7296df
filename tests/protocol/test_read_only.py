"""ReadOnly: a public attribute reading ``_<name>``, typed, documented, refusing assignment."""

from __future__ import annotations

import pydoc
from typing import assert_type

import pytest

from scope_tool._read_only import ReadOnly


class Sample:
    """A plain class with one read-only attribute backed by ``_size``."""

    size: ReadOnly[int] = ReadOnly("How big it is.")

    def __init__(self, size: int) -> None:
        self._size = size


class SampleError(Exception):
    """An exception: instances have a ``__dict__`` that could shadow a non-data descriptor."""

    code: ReadOnly[str] = ReadOnly("The error's code.")

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self._code = code


def test_reading_gives_the_private_value_with_its_static_type():
    sample = Sample(3)
    assert assert_type(sample.size, int) == 3


def test_the_class_attribute_is_the_descriptor_with_its_doc():
    descriptor = Sample.size
    assert isinstance(descriptor, ReadOnly)
    assert descriptor.__doc__ == "How big it is."
    assert "How big it is." in pydoc.render_doc(Sample, renderer=pydoc.TextDoc())


def test_assigning_names_the_class_and_the_attribute():
    sample = Sample(3)
    with pytest.raises(AttributeError, match=r"^Sample\.size is read-only$"):
        sample.size = 4  # type: ignore[assignment]
    assert sample.size == 3


def test_deleting_names_the_class_and_the_attribute():
    sample = Sample(3)
    with pytest.raises(AttributeError, match=r"^Sample\.size is read-only$"):
        del sample.size
    assert sample.size == 3


def test_an_exception_instance_dict_cannot_shadow_it():
    error = SampleError("E1")
    with pytest.raises(AttributeError, match=r"^SampleError\.code is read-only$"):
        error.code = "E2"  # type: ignore[assignment]
    error.__dict__["code"] = "E2"
    assert error.code == "E1"


def test_a_subclass_reads_the_same_private_attribute():
    class Narrower(SampleError):
        pass

    error = Narrower("E3")
    assert error.code == "E3"
    with pytest.raises(AttributeError, match=r"^Narrower\.code is read-only$"):
        error.code = "E4"  # type: ignore[assignment]
