"""The plain ACL file manager (PlainPermissionManager): the accounts of every ACL file.

Loads ``plain_acl.yml`` and ``conf/acl/*.yml``, reloads them when they change (Java's
AclFileWatchService), validates a parsed request against them and writes the updates of
the ACL admin codes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hmac
import json
import logging
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from ...clock import now_ms
from ...codecs.acl_signature import signature_of
from ...javacompat.hashmap import hashmap_order
from .accounts import AccessRequest, OwnedAccess, PlainAccessConfig, check_account, check_admin, check_perm, jstr
from .address import AddressMatcher, address_matcher
from .permission import (
    PUB,
    TRACE_TOPIC,
    WHERE_NO_CONFIG,
    WHERE_NO_KEY,
    WHERE_NO_RESOURCE,
    WHERE_SIGNATURE,
    AclError,
    check_resource_perms,
)
from .strict import STRICT, AclStrictness

log = logging.getLogger("rocketpy.broker.acl")

DEFAULT_PLAIN_FILE = "conf/plain_acl.yml"
ACL_DIR = "conf/acl"
WATCH_INTERVAL_S = 5.0


def _data_version_of(doc: Mapping[str, Any] | None) -> dict[str, int]:
    versions = (doc or {}).get("dataVersion")
    if isinstance(versions, list) and versions and isinstance(versions[0], Mapping):
        first = versions[0]
        try:
            return {"counter": int(first.get("counter") or 0), "timestamp": int(first.get("timestamp") or 0)}
        except (TypeError, ValueError):
            pass
    return {"counter": 0, "timestamp": now_ms()}


@dataclass(frozen=True)
class AclSnapshot:
    """What one reading of the ACL files gave; the manager swaps a whole snapshot in at once, so a
    request validated while a worker thread reloads sees the old accounts or the new, never a mix."""

    files: list[str] = field(default_factory=list)
    accounts: dict[str, dict[str, OwnedAccess]] = field(default_factory=dict)  # file -> access key -> rights
    key_file: dict[str, str] = field(default_factory=dict)  # access key -> file
    global_white: list[AddressMatcher] = field(default_factory=list)
    data_versions: dict[str, dict[str, int]] = field(default_factory=dict)
    stamp: dict[str, tuple[float, int]] = field(default_factory=dict)


class PlainPermissionManager:
    """The accounts of every ACL file and the checks of one request.

    Thread-safe: reloads and the updates of the ACL admin codes (file reads and writes) run in worker
    threads, one at a time, while requests are validated on the event loop against the snapshot of the
    moment."""

    def __init__(
        self,
        home: str | None,
        plain_file: str = DEFAULT_PLAIN_FILE,
        *,
        create: bool = True,
        strict: AclStrictness = STRICT,
    ) -> None:
        self.home = home or ""
        #: where the checks are stricter than Java's (:mod:`.strict`)
        self.strict = strict
        # without a home only an absolute plain file can be read (never a directory relative to the cwd)
        self.acl_dir = os.path.normpath(os.path.join(self.home, ACL_DIR)) if self.home else ""
        self.default_file = os.path.normpath(os.path.join(self.home, plain_file))
        self.readable = bool(self.home) or os.path.isabs(self.default_file)
        self._snap = AclSnapshot()
        self.data_version: dict[str, int] = {"counter": 0, "timestamp": now_ms()}
        self._lock = threading.RLock()  # one reload or update at a time
        self._next_check = 0.0
        self.create = create
        self.load()

    # the current snapshot's parts
    @property
    def files(self) -> list[str]:
        return self._snap.files

    @property
    def accounts(self) -> dict[str, dict[str, OwnedAccess]]:
        return self._snap.accounts

    @property
    def key_file(self) -> dict[str, str]:
        return self._snap.key_file

    @property
    def global_white(self) -> list[AddressMatcher]:
        return self._snap.global_white

    @property
    def data_versions(self) -> dict[str, dict[str, int]]:
        return self._snap.data_versions

    # -- loading -------------------------------------------------------------------------
    def _list_files(self) -> list[str]:
        found: list[str] = []
        if self.acl_dir and os.path.isdir(self.acl_dir):
            tools = os.path.normpath(os.path.join(self.home, "conf/tools.yml"))
            for root, dirs, names in os.walk(self.acl_dir):
                dirs.sort()
                for name in sorted(names):
                    full = os.path.join(root, name)
                    if full != tools and name.endswith((".yml", ".yaml")):
                        found.append(os.path.normpath(full))
        if os.path.exists(self.default_file) and self.default_file not in found:
            found.append(self.default_file)
        return found

    @staticmethod
    def read(path: str) -> dict[str, Any] | None:
        try:
            with open(path, encoding="utf-8") as f:
                # PyYAML's safe loader resolves scalars as YAML 1.1, like SnakeYAML: `y` stays a string
                doc = yaml.safe_load(f)
        except FileNotFoundError:
            return None
        except (OSError, yaml.YAMLError) as exc:
            raise AclError(str(exc)) from exc
        return doc if isinstance(doc, dict) else None

    def load(self) -> None:
        """Read every ACL file anew (PlainPermissionManager.load); raises AclError on a bad file.
        Blocking file I/O: the broker calls it from a worker thread."""
        with self._lock:
            self._load()

    def _load(self) -> None:
        if not self.readable:
            log.warning("ACL enabled but no rocketmqHome: every request without a white address is refused")
            return
        if self.create and not os.path.exists(self.default_file) and os.path.isdir(os.path.dirname(self.default_file)):
            open(self.default_file, "a").close()
        accounts: dict[str, dict[str, OwnedAccess]] = {}
        key_file: dict[str, str] = {}
        white: list[AddressMatcher] = []
        versions: dict[str, dict[str, int]] = {}
        files = self._list_files()
        for path in files:
            doc = self.read(path)
            if not doc:
                log.warning("No data in file %s", path)
                continue
            for addr in doc.get("globalWhiteRemoteAddresses") or []:
                white.append(address_matcher(None if addr is None else str(addr)))
            table: dict[str, OwnedAccess] = {}
            for entry in doc.get("accounts") or []:
                if not isinstance(entry, Mapping):
                    continue
                owned = OwnedAccess.build(PlainAccessConfig.from_yaml(entry))
                if owned.access_key in key_file:
                    log.warning("The accessKey %s is repeated in multiple ACL files", owned.access_key)
                    continue
                table[owned.access_key] = owned
                key_file[owned.access_key] = path
            if table:
                accounts[path] = table
            versions[path] = _data_version_of(doc)
        snap = AclSnapshot(files, accounts, key_file, white, versions, self._stamps())
        with self._lock:
            if self.default_file in versions:
                self.data_version = dict(versions[self.default_file])
            self._snap = snap

    def _stamps(self) -> dict[str, tuple[float, int]]:
        out = {}
        for path in self._list_files():
            try:
                st = os.stat(path)
            except OSError:
                continue
            out[path] = (st.st_mtime, st.st_size)
        return out

    def reload_if_changed(self, now: float | None = None) -> bool:
        """Reload when an ACL file changed, appeared or went, at most once per WATCH_INTERVAL_S."""
        now = time.monotonic() if now is None else now
        with self._lock:
            if now < self._next_check:
                return False
            self._next_check = now + WATCH_INTERVAL_S
            return self.reload_changed()

    def reload_changed(self) -> bool:
        """Reload if an ACL file changed, appeared or went (Java's AclFileWatchService); a broken file
        keeps the previous accounts. Blocking file I/O: the broker's watcher calls it from a worker thread."""
        with self._lock:
            if not self.readable or self._stamps() == self._snap.stamp:
                return False
            try:
                self._load()
            except AclError as exc:
                log.error("reloading the ACL files failed, keeping the previous accounts: %s", exc.message)
                self._snap = dataclasses.replace(self._snap, stamp=self._stamps())
                return False
        log.info("ACL files reloaded: %s", ", ".join(self.files))
        return True

    # -- validation ----------------------------------------------------------------------
    def validate(self, req: AccessRequest) -> None:
        """PlainPermissionManager.validate; raises AclError."""
        snap = self._snap
        for matcher in snap.global_white:
            if matcher(req.remote_ip):
                return
        if req.access_key is None:
            raise AclError("No accessKey is configured", WHERE_NO_KEY)
        path = snap.key_file.get(req.access_key)
        if path is None:
            raise AclError(f"No acl config for {req.access_key}", WHERE_NO_CONFIG)
        owned = snap.accounts.get(path, {}).get(req.access_key)
        if owned is None:
            raise AclError(f"No PlainAccessResource for accessKey={req.access_key}", WHERE_NO_RESOURCE)
        admin_codes = self.strict.admin_codes
        if owned.matcher(req.remote_ip):
            if self.strict.admin:  # the account's white address stands for its signature, not for admin: true
                check_admin(req, owned, admin_codes)
            return
        expected = signature_of(req.content or b"", owned.secret_key)
        if req.signature is None or not hmac.compare_digest(expected, req.signature):
            raise AclError(f"Check signature failed for accessKey={req.access_key}", WHERE_SIGNATURE)
        if req.resources is not None and req.resources.get(TRACE_TOPIC) == PUB:
            return
        check_perm(req, owned, admin_codes)

    # -- updates (the ACL admin codes) -------------------------------------------------------
    def _write(self, path: str, doc: dict[str, Any]) -> None:
        version = _data_version_of(doc) if isinstance(doc.get("dataVersion"), list) and doc["dataVersion"] else None
        counter = version["counter"] if version else 0
        doc["dataVersion"] = [{"counter": counter + 1, "timestamp": now_ms()}]
        tmp = path + ".tmp"
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                yaml.safe_dump(doc, f, default_flow_style=False, sort_keys=False, allow_unicode=True)
        except OSError:
            # a full disk: the old file stays, no half-written .tmp beside it (the caller answers the error)
            with contextlib.suppress(OSError):
                os.remove(tmp)
            raise
        os.replace(tmp, path)
        try:
            self._load()
        except AclError as exc:
            log.error("reloading %s after an update failed: %s", path, exc.message)

    @staticmethod
    def _account_map(existing: dict[str, Any] | None, cfg: PlainAccessConfig) -> dict[str, Any]:
        """createAclAccessConfigMap: the YAML entry of an account, keeping what it had."""
        entry = existing if existing is not None else {}
        if not cfg.access_key or len(cfg.access_key) <= 6:
            raise AclError(f"The accessKey={jstr(cfg.access_key)} cannot be null and length should longer than 6")
        entry["accessKey"] = cfg.access_key
        if cfg.secret_key:
            if len(cfg.secret_key) <= 6:
                raise AclError(f"The secretKey={cfg.secret_key} value length should longer than 6")
            entry["secretKey"] = cfg.secret_key
        if cfg.white_remote_address is not None:
            entry["whiteRemoteAddress"] = cfg.white_remote_address
        entry["admin"] = cfg.admin
        if cfg.default_topic_perm:
            entry["defaultTopicPerm"] = cfg.default_topic_perm
        if cfg.default_group_perm:
            entry["defaultGroupPerm"] = cfg.default_group_perm
        if cfg.topic_perms is not None:
            entry["topicPerms"] = list(cfg.topic_perms)
        if cfg.group_perms is not None:
            entry["groupPerms"] = list(cfg.group_perms)
        return entry

    def _update_access_config(self, cfg: PlainAccessConfig) -> bool:
        """UPDATE_AND_CREATE_ACL_CONFIG: change an account where it is defined, else add it
        to the default file; raises AclError for a bad account."""
        check_account(cfg)
        check_resource_perms(cfg.topic_perms)
        check_resource_perms(cfg.group_perms)
        OwnedAccess.build(cfg)  # its white address must parse too
        path = self.key_file.get(cfg.access_key or "")
        if path is not None:
            doc = self.read(path) or {}
            accounts = doc.get("accounts")
            if isinstance(accounts, list):
                for i, entry in enumerate(accounts):
                    if isinstance(entry, dict) and str(entry.get("accessKey")) == cfg.access_key:
                        del accounts[i]
                        accounts.append(self._account_map(entry, cfg))
                        break
            else:
                doc["accounts"] = [self._account_map(None, cfg)]
            self._write(path, doc)
            return True
        if not os.path.exists(self.default_file):
            os.makedirs(os.path.dirname(self.default_file), exist_ok=True)
            open(self.default_file, "a").close()
        doc = self.read(self.default_file) or {"accounts": []}
        accounts = doc.get("accounts")
        if not isinstance(accounts, list):
            accounts = doc["accounts"] = []
        accounts.append(self._account_map(None, cfg))
        self._write(self.default_file, doc)
        return True

    def _delete_access_config(self, access_key: str | None) -> bool:
        """DELETE_ACL_CONFIG: remove an account from its file."""
        if not access_key:
            return False
        path = self.key_file.get(access_key)
        if path is None:
            return False
        doc = self.read(path)
        if not doc:
            return True
        accounts = doc.get("accounts")
        for i, entry in enumerate(accounts if isinstance(accounts, list) else []):
            if isinstance(entry, dict) and str(entry.get("accessKey")) == access_key:
                del accounts[i]  # type: ignore[union-attr]
                self._write(path, doc)
                return True
        return False

    def _update_global_white_addrs(self, addresses: list[str] | None, path: str | None = None) -> bool:
        """UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: replace the global white list of an ACL file."""
        path = path or self.default_file
        if addresses is None:
            return False
        if not os.path.isfile(path):
            log.error("Parameter value %s is not exist or is a directory, please check your parameter", path)
            return False
        if not path.startswith(self.home):
            log.error("Parameter value %s is not in the directory rocketmq.home.dir %s", path, self.home)
            return False
        if path.endswith(".yaml") and not path.endswith(".yml"):
            log.error("Parameter value %s is not a ACL configuration file", path)
            return False
        doc = self.read(path) or {}
        doc["globalWhiteRemoteAddresses"] = list(addresses)
        self._write(path, doc)
        return True

    def update_access_config(self, cfg: PlainAccessConfig) -> bool:
        with self._lock:
            return self._update_access_config(cfg)

    def delete_access_config(self, access_key: str | None) -> bool:
        with self._lock:
            return self._delete_access_config(access_key)

    def update_global_white_addrs(self, addresses: list[str] | None, path: str | None = None) -> bool:
        with self._lock:
            return self._update_global_white_addrs(addresses, path)

    def version_json(self) -> str:
        """The deprecated single version (the default file's DataVersion as JSON)."""
        v = self.data_version
        return json.dumps({"counter": v["counter"], "timestamp": v["timestamp"]}, separators=(",", ":"))

    def all_versions_json(self) -> str:
        """JSON of file -> DataVersion (GET_BROKER_CLUSTER_ACL_INFO's allAclFileVersion)."""
        order = hashmap_order(list(self.data_versions))
        doc = {
            p: {"counter": self.data_versions[p]["counter"], "timestamp": self.data_versions[p]["timestamp"]}
            for p in order
        }
        return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
