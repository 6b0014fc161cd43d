"""Loading and saving the broker's config files through the store's ConfigFile
(``.tmp`` + ``.bak`` like Java's MixAll.string2File); failures are logged, never raised,
so a full disk cannot take a running broker down."""

from __future__ import annotations

import logging
from typing import TypeVar

from ..codecs.bodies.base import JsonBody
from ..codecs.errors import CodecError
from ..store.config_files import ConfigFile

log = logging.getLogger("rocketpy.broker")

B = TypeVar("B", bound=JsonBody)


def load_json(path: str, cls: type[B]) -> B | None:
    try:
        doc = ConfigFile(path, cls).load()
    except (CodecError, ValueError, OSError) as exc:
        log.error("config file %s and its backup are unreadable: %s", path, exc)
        return None
    return doc  # type: ignore[return-value]


def persist_json(path: str, doc: JsonBody) -> None:
    try:
        ConfigFile(path, type(doc)).persist(doc)
    except OSError as exc:
        log.error("persist %s failed: %s", path, exc)
