"""CSV the console writes, safe to open in a spreadsheet (OWASP's CSV injection rule): a text cell that begins
with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a ``'`` in front, so Excel, LibreOffice and
Google Sheets show it as text instead of running it as a formula. Numbers the console itself writes are left
as they are; quotes and separators inside cells are the csv module's quoting."""

from __future__ import annotations

import csv
from collections.abc import Iterable
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


class SafeWriter:
    """``csv.writer`` whose rows go through :func:`safe_cell`."""

    def __init__(self, out: Any, **fmt: Any) -> None:
        self._w = csv.writer(out, **fmt)

    def writerow(self, row: Iterable[Any]) -> Any:
        return self._w.writerow([safe_cell(v) for v in row])

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)
