"""A Parquet lake of a store or of captures: decoded once in the Spark tasks, then queried with SQL.

Spark's Python data sources hand every row to the JVM, which converts it (about as costly
as decoding it); here each task decodes its split with the same columnar walk and writes
Parquet itself through ``pyarrow.fs``, so Spark's own vectorised Parquet reader does the
queries. The tables are listed in :mod:`.tables`; ``_manifest.json`` names every part.
"""

from __future__ import annotations

from .export import DEFAULT_SPLIT, ExportOptions, ExportResult, export_pcaps, export_store, run_in_process, spark_runner
from .read import Lake
from .store import LakeDir, LakeError
from .tables import PCAP_TABLES, STORE_TABLES, TABLES

__all__ = [
    "DEFAULT_SPLIT",
    "PCAP_TABLES",
    "STORE_TABLES",
    "TABLES",
    "ExportOptions",
    "ExportResult",
    "Lake",
    "LakeDir",
    "LakeError",
    "export_pcaps",
    "export_store",
    "run_in_process",
    "spark_runner",
]
