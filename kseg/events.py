"""The objects commands produce: plain dicts (JSON is their items), built by the library and
shown by kseg.render in the chosen format."""

from __future__ import annotations


class Event(dict):
    """An event that also knows what it is ``about`` (a partition dir, the quarantine a restore
    read): text names it where the object carries no name of its own; JSON never shows it."""

    __slots__ = ("about",)

    def __init__(self, items=(), about: object = None, **kw) -> None:
        super().__init__(items, **kw)
        self.about = about

    def copy(self) -> Event:
        return Event(self, self.about)
