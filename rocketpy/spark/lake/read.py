"""Reading a lake: the parts its manifest names, as Spark DataFrames or Arrow datasets.

Only the manifest's parts are read (never a directory listing): a part of a killed task
attempt or of an export that did not commit is invisible.
"""

from __future__ import annotations

from typing import Any

from .._columns import arrow_schema, ddl
from .store import LakeDir, LakeError
from .tables import TABLES


class Lake:
    """A committed lake at ``root`` (a path, a URI, or a path inside ``filesystem``)."""

    def __init__(self, root: str | LakeDir, filesystem: Any = None) -> None:
        self.dir = root if isinstance(root, LakeDir) else LakeDir(root, filesystem)
        self.manifest = self.dir.manifest()
        self._frames: dict[tuple[int, str], Any] = {}

    def tables(self) -> list[str]:
        """The tables the lake holds, in the order :data:`TABLES` lists them."""
        have = self.manifest.get("tables", {})
        return [t for t in TABLES if t in have]

    def _table(self, name: str) -> dict[str, Any]:
        try:
            return self.manifest["tables"][name]
        except KeyError:
            raise LakeError(
                f"the lake at {self.dir.root} has no table {name!r} (it has {', '.join(self.tables())})"
            ) from None

    def columns(self, table: str) -> list[tuple[str, str]]:
        return [(n, k) for n, k in self._table(table)["columns"]]

    def parts(self, table: str) -> list[dict[str, Any]]:
        return list(self._table(table)["parts"])

    def files(self, table: str) -> list[str]:
        """The table's Parquet files, as paths or URIs another reader opens."""
        return [self.dir.uri(p["path"]) for p in self.parts(table)]

    def rows(self, table: str) -> int:
        return sum(p["rows"] for p in self.parts(table))

    def dataframe(self, spark: Any, table: str) -> Any:
        """The table as a Spark DataFrame over its Parquet (Spark's vectorised reader).

        The schema and the files come from the manifest: Spark infers nothing, lists no
        directory and reads no footer to plan. The frame is made once per session and table
        (its file index with it), so each query over it only plans and runs."""
        key = (id(spark), table)
        frame = self._frames.get(key)
        if frame is None or frame.sparkSession is not spark:
            schema = ddl(self.columns(table))
            files = self.files(table)
            frame = spark.createDataFrame([], schema) if not files else spark.read.schema(schema).parquet(*files)
            self._frames[key] = frame
        return frame

    def register(self, spark: Any) -> list[str]:
        """Every table as a temporary view of its name (for ``spark.sql``); returns the names."""
        names = self.tables()
        for name in names:
            self.dataframe(spark, name).createOrReplaceTempView(name)
        return names

    def dataset(self, table: str) -> Any:
        """The table as a ``pyarrow.dataset`` (no Spark: pyarrow, Polars and DuckDB take it)."""
        import pyarrow.dataset as ds

        files = [self.dir.inner(p["path"]) for p in self.parts(table)]
        schema = arrow_schema(self.columns(table))
        return ds.dataset(files, schema=schema, format="parquet", filesystem=self.dir.filesystem)

    def read_table(self, table: str, columns: list[str] | None = None, filter: Any = None) -> Any:
        """The table (or some of its columns, rows matching a ``pyarrow.compute`` expression) in memory."""
        return self.dataset(table).to_table(columns=columns, filter=filter)
