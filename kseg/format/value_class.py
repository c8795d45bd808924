"""What remains of kseg's hand-written value base: only ``kseg.dump.dump.DumpOptions`` uses it.

kseg's value classes are ``typing.NamedTuple``s (the house's one idiom: cheap to define at
import, unlike ``@dataclass``, which compiles its methods from generated source each time a
module is imported). ``DumpOptions`` lives in a module being restructured apart from that
change and converts with it; delete this module then (nothing else imports it).

``FrozenValue`` gives a class that writes its ``__init__`` by hand the semantics of a frozen
``@dataclass(slots=True)``: ``==`` compares the fields of two instances of the same class,
instances hash by their fields and refuse assignment (``dataclasses.FrozenInstanceError``), and
the repr is ``Name(field=value, ...)``. The fields are ``__slots__``, in declaration order.
"""

from __future__ import annotations

_set = object.__setattr__


class FrozenValue:
    """An immutable data class: set its fields in ``__init__`` with ``init(self, name, value)``."""

    __slots__ = ()

    def _fields(self) -> tuple:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object):
        if other.__class__ is self.__class__:
            return self._fields() == other._fields()  # type: ignore[attr-defined]
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__qualname__}({shown})"

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
