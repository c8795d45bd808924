"""The base of kseg's accumulators: objects a scan or a replay fills in as it goes (a segment's
scan, a partition's report, a stats timeline, a repair's manifest), so not values (values are
``typing.NamedTuple``s). Two accumulators compare equal when they are of the same class and
every slot holds the same thing, as the dataclasses they were did: the tests that run one input
through the Python core and the compiled kernel compare the results whole."""

from __future__ import annotations


class Accumulator:
    __slots__ = ()
    __hash__ = None  # type: ignore[assignment]  # mutable: unhashable, as a dataclass with eq

    def _fields(self) -> tuple:
        return tuple(getattr(self, name, None) for name in self.__slots__)

    def __eq__(self, other: object):
        if other.__class__ is self.__class__:
            return self._fields() == other._fields()  # type: ignore[attr-defined]
        return NotImplemented

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name, None)!r}" for name in self.__slots__)
        return f"{type(self).__qualname__}({shown})"
