"""Bases for kseg's small data classes: equality, hash and repr over ``__slots__``, written once.

``@dataclass`` compiles three to six methods per class from generated source each time a module
is imported: for the 22 classes every ``kseg verify`` loaded that was ~17 ms of a ~120 ms start
(BENCHMARKS.md, "Start-up"). These classes instead write their ``__init__`` by hand and take the
rest from here, with dataclass semantics: ``==`` compares the fields of two instances of the
same class, frozen instances hash by their fields and refuse assignment
(``dataclasses.FrozenInstanceError``), mutable ones are unhashable, and the repr is
``Name(field=value, ...)``. The fields are ``__slots__``, in declaration order.
"""

from __future__ import annotations

_set = object.__setattr__


class Value:
    """A mutable data class (unhashable, as a dataclass with eq=True)."""

    __slots__ = ()
    __hash__ = None  # type: ignore[assignment]

    def _fields(self) -> tuple:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object):
        if other.__class__ is self.__class__:
            return self._fields() == other._fields()  # type: ignore[attr-defined]
        return NotImplemented

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__qualname__}({shown})"

    def as_dict(self) -> dict:
        """The fields by name (``dataclasses.asdict`` for these classes; not recursive)."""
        return {name: getattr(self, name) for name in self.__slots__}

    def replaced(self, **changes: object):
        """A new instance with ``changes`` (``dataclasses.replace``)."""
        return type(self)(**{**self.as_dict(), **changes})


class FrozenValue(Value):
    """An immutable data class: set its fields in ``__init__`` with ``init(self, name, value)``."""

    __slots__ = ()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __setattr__(self, name: str, value: object) -> None:
        from dataclasses import FrozenInstanceError  # (not imported at start-up: only a bug)

        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot delete field {name!r}")

    # pickle and copy restore slots with setattr: through object's, as dataclasses does
    def __getstate__(self) -> tuple:
        return self._fields()

    def __setstate__(self, state: tuple) -> None:
        for name, value in zip(self.__slots__, state, strict=True):
            _set(self, name, value)


init = _set  # FrozenValue.__init__'s way to set a field: object.__setattr__
