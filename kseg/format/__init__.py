"""The format core: bytes <-> structures for every on-disk Kafka structure. Knows no paths.

Import the modules you need (``kseg.format.batch``, ``kseg.format.log``, ...); this package
imports nothing itself so that each command loads only what it uses.
"""
