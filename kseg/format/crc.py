"""The two checksums of the log: CRC-32C for v2 batches and producer snapshots, CRC-32 for legacy."""

from __future__ import annotations

import zlib


def _load_crc32c():
    """The crc32c package's C function, without its __init__ (which spends ~40 ms of every
    kseg start-up reading package metadata for a version string)."""
    try:
        import glob
        import importlib.machinery
        import importlib.util
        import os

        spec = importlib.util.find_spec("crc32c")  # locates the package, does not run it
        for base in spec.submodule_search_locations or ():
            for path in glob.glob(
                os.path.join(base, "_crc32c*" + importlib.machinery.EXTENSION_SUFFIXES[0])
            ):
                loader = importlib.machinery.ExtensionFileLoader("crc32c._crc32c", path)
                mod_spec = importlib.util.spec_from_loader("crc32c._crc32c", loader)
                module = importlib.util.module_from_spec(mod_spec)
                loader.exec_module(module)
                return module.crc32c
    except Exception:  # noqa: BLE001 - any surprise: fall back to the ordinary import
        pass
    from crc32c import crc32c as fn

    return fn


_crc32c = _load_crc32c()


def crc32c(data) -> int:
    """CRC-32C (Castagnoli) of a bytes-like object; memoryview slices are not copied."""
    return _crc32c(data)


def crc32(data) -> int:
    """CRC-32 (zlib/IEEE) as legacy messages use it."""
    return zlib.crc32(data) & 0xFFFFFFFF
