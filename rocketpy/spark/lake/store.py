"""Where a lake lives: a directory on any ``pyarrow.fs`` filesystem, and its manifest.

A lake is plain Parquet (one directory per table) plus ``_manifest.json``, written last by
the driver, and ``_SUCCESS``. Readers trust only the manifest: a part a killed or retried task
left behind, or a part of an export that never committed, is in no manifest and is never
read (the next export deletes it).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import pyarrow.fs as pafs

from .. import _files
from .._files import _is_uri

SCHEMA_VERSION = 1
FORMAT = "rocketpy-lake"
MANIFEST = "_manifest.json"
SUCCESS = "_SUCCESS"


class LakeError(Exception):
    """A lake that cannot be read (no manifest, another format, a newer schema version)."""


@dataclass
class LakeDir:
    """A lake's root: a local path, a URI ``pyarrow.fs`` opens, or a path inside ``filesystem``."""

    root: str
    filesystem: Any = None  # a pyarrow FileSystem; None: from the root (local path or URI)
    _inner: str = field(init=False, default="")
    _prefix: str = field(init=False, default="")

    def __post_init__(self) -> None:
        if self.filesystem is not None:
            self._inner = self.root.rstrip("/") or "/"
        elif _is_uri(self.root):
            self.filesystem, self._inner, self._prefix = _files._uri_fs(self.root)
        else:
            self.filesystem = pafs.LocalFileSystem()
            self._inner = os.path.abspath(self.root)

    @property
    def local(self) -> bool:
        return isinstance(self.filesystem, pafs.LocalFileSystem)

    def inner(self, rel: str = "") -> str:
        """The path inside the filesystem of ``rel`` (relative to the root)."""
        return f"{self._inner}/{rel}" if rel else self._inner

    def uri(self, rel: str) -> str:
        """What another reader (Spark, DuckDB) is given for ``rel``: a local path, or the URI."""
        return self._prefix + self.inner(rel)

    def read_manifest(self) -> dict[str, Any] | None:
        """The committed manifest, or None when there is none."""
        info = self.filesystem.get_file_info(self.inner(MANIFEST))
        if info.type != pafs.FileType.File:
            return None
        with self.filesystem.open_input_stream(self.inner(MANIFEST)) as f:
            manifest = json.loads(f.read().decode("utf-8"))
        if manifest.get("format") != FORMAT:
            raise LakeError(f"{self.root} holds no rocketpy lake manifest")
        if int(manifest.get("schema_version", 0)) > SCHEMA_VERSION:
            raise LakeError(
                f"{self.root} was written with lake schema version {manifest['schema_version']}; "
                f"this rocketpy reads up to {SCHEMA_VERSION}"
            )
        return manifest

    def manifest(self) -> dict[str, Any]:
        manifest = self.read_manifest()
        if manifest is None:
            raise LakeError(f"no lake at {self.root} (no {MANIFEST}: export into it first)")
        return manifest

    def commit(self, manifest: dict[str, Any]) -> None:
        """Make ``manifest`` the lake's: written beside, then moved over the old one (a reader sees
        the old or the new one whole), then ``_SUCCESS``; then parts no manifest names go."""
        fs = self.filesystem
        fs.create_dir(self.inner(), recursive=True)
        manifest = dict(manifest, format=FORMAT, schema_version=SCHEMA_VERSION, committed_at=time.time())
        staged = self.inner(f"_manifest.{uuid.uuid4().hex}.tmp")
        with fs.open_output_stream(staged) as f:
            f.write(json.dumps(manifest, indent=1, sort_keys=True).encode("utf-8"))
        fs.move(staged, self.inner(MANIFEST))
        with fs.open_output_stream(self.inner(SUCCESS)) as f:
            f.write(b"")
        self.remove_unlisted(manifest)

    def remove_unlisted(self, manifest: dict[str, Any]) -> list[str]:
        """Delete parts (and staged manifests) the committed manifest does not name: a killed
        attempt's, or those an export replaced. Returns their paths relative to the root."""
        fs = self.filesystem
        listed = {p["path"] for t in manifest.get("tables", {}).values() for p in t.get("parts", [])}
        gone: list[str] = []
        infos = fs.get_file_info(pafs.FileSelector(self.inner(), recursive=True, allow_not_found=True))
        base = self.inner() + "/"
        for info in infos:
            if info.type != pafs.FileType.File or not info.path.startswith(base):
                continue
            rel = info.path[len(base) :]
            name = rel.rsplit("/", 1)[-1]
            stale_part = name.startswith("part-") and rel not in listed
            if stale_part or (name.startswith("_manifest.") and name.endswith(".tmp")):
                fs.delete_file(info.path)
                gone.append(rel)
        return gone


def file_stat(path: str) -> tuple[int, int]:
    """(size, modification time in ns) of a source file: what tells an incremental export
    that it changed."""
    if _is_uri(path):
        fs, inner, _ = _files._uri_fs(path)
        info = fs.get_file_info(inner)
        mtime = info.mtime_ns if info.mtime_ns is not None else 0
        return int(info.size or 0), int(mtime)
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns
