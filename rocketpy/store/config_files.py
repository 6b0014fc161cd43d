"""The broker's JSON config files under ``<storePathRootDir>/config/`` and their ``.bak`` copies.

Java's ConfigManager.persist writes ``toJson(true)`` through MixAll.string2File:
the new text goes to ``<name>.tmp``, the current file's text is copied to
``<name>.bak``, then the old file is deleted and the ``.tmp`` renamed over it.
ConfigManager.load reads the file and falls back to the ``.bak`` when the file is
missing, empty or does not parse. Contents are the JSON bodies of
codecs.bodies.store_config (TopicConfigSerializeWrapper, ...).
"""

from __future__ import annotations

import logging
import os

from ..codecs.bodies.base import JsonBody
from ..codecs.bodies.store_config import CONFIG_FILES, encode_config_file
from ..javacompat.files import file_to_string, string_to_file

__all__ = [
    "CONFIG_FILE_NAMES",
    "BrokerConfigFiles",
    "ConfigFile",
    "ConfigFileUnreadable",
    "file_to_string",
    "string_to_file",
]

log = logging.getLogger("rocketpy.store")

CONFIG_FILE_NAMES = (
    "topics.json",
    "subscriptionGroup.json",
    "consumerOffset.json",
    "delayOffset.json",
    "consumerFilter.json",
)


class ConfigFileUnreadable(OSError):
    """A config file that does not parse, with no ``.bak`` that does: a broker must not start on an
    empty table in its place (every group's offsets, every topic would be gone at the next write).
    Java 4.9.8's ConfigManager.load fails the same way when the ``.bak`` does not parse either, and the
    broker exits; it starts empty only when there is no ``.bak`` at all, which we refuse too."""


class ConfigFile:
    """One config file with its ``.bak``."""

    def __init__(self, path: str, doc_class: type[JsonBody]) -> None:
        self.path = path
        self.doc_class = doc_class

    @property
    def bak_path(self) -> str:
        return self.path + ".bak"

    def exists(self) -> bool:
        return os.path.exists(self.path) or os.path.exists(self.bak_path)

    def load(self) -> JsonBody | None:
        """The document, from the file or else its ``.bak``; None when neither exists or both are empty.

        ConfigFileUnreadable when the file does not parse and there is no ``.bak`` that does."""
        text = file_to_string(self.path)
        failure: ValueError | None = None
        if text:
            try:
                return self.doc_class.decode(text)
            except ValueError as exc:
                failure = exc
        bak = file_to_string(self.bak_path)
        if bak:
            try:
                doc = self.doc_class.decode(bak)
            except ValueError as exc:
                raise ConfigFileUnreadable(
                    f"config file {self.path} and its backup do not parse: {failure or exc}"
                ) from None
            if failure is not None:
                log.error("load %s failed (%s), loaded its backup", self.path, failure)
            return doc
        if failure is not None:
            raise ConfigFileUnreadable(f"config file {self.path} does not parse and has no backup: {failure}")
        return None

    def persist(self, doc: JsonBody) -> None:
        """ConfigManager.persist: pretty JSON, previous version kept as ``.bak``."""
        string_to_file(encode_config_file(doc), self.path)

    def persist_text(self, text: str | bytes) -> None:
        string_to_file(text, self.path)


class BrokerConfigFiles:
    """The five config files of a store root, by their Java file names."""

    def __init__(self, store_root: str) -> None:
        self.dir = os.path.join(store_root, "config")
        self.files = {name: ConfigFile(os.path.join(self.dir, name), CONFIG_FILES[name]) for name in CONFIG_FILE_NAMES}

    def __getitem__(self, name: str) -> ConfigFile:
        return self.files[name]

    @property
    def topics(self) -> ConfigFile:
        return self.files["topics.json"]

    @property
    def subscription_group(self) -> ConfigFile:
        return self.files["subscriptionGroup.json"]

    @property
    def consumer_offset(self) -> ConfigFile:
        return self.files["consumerOffset.json"]

    @property
    def delay_offset(self) -> ConfigFile:
        return self.files["delayOffset.json"]

    @property
    def consumer_filter(self) -> ConfigFile:
        return self.files["consumerFilter.json"]

    def load_all(self) -> dict[str, JsonBody | None]:
        return {name: f.load() for name, f in self.files.items()}
