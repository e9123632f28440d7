"""The runner and the CLI: bundle writer, pack/unpack, example builder, ``audit`` command."""

from audit._archive import PackResult, pack, unpack
from audit._store import BundleWriter, write_atomically

__all__ = ["BundleWriter", "PackResult", "pack", "unpack", "write_atomically"]
