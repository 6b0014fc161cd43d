"""ACL request signatures as RocketMQ 4.9.8 computes them (AclClientRPCHook, AclUtils, AclSigner).

The signed content is the request's extFields with ``AccessKey`` (and ``SecurityToken``)
added, sorted by name as Java's TreeMap sorts them, values concatenated, then the body;
the ``Signature`` is Base64 of HmacSHA1 of that content under the secret key. Pure: no I/O.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
from collections.abc import Iterable, Mapping
from typing import Any

ACCESS_KEY = "AccessKey"
SECRET_KEY = "SecretKey"
SIGNATURE = "Signature"
SECURITY_TOKEN = "SecurityToken"


def _java_key(name: str) -> bytes:
    """String.compareTo order (UTF-16 code units), the order of Java's TreeMap."""
    return name.encode("utf-16-be", "surrogatepass")


def signing_content(
    ext_fields: Mapping[str, str | None], body: bytes | None, skip: Iterable[str] = (SIGNATURE,)
) -> bytes:
    """AclUtils.combineRequestContent: values sorted by field name, then the body."""
    left_out = set(skip)
    text = "".join(
        "null" if ext_fields[k] is None else str(ext_fields[k])
        for k in sorted(ext_fields, key=_java_key)
        if k not in left_out
    )
    return text.encode("utf-8") + (body or b"")


def signature_of(content: bytes, secret_key: str) -> str:
    """AclSigner.calSignature: Base64 of HmacSHA1(content, secret key)."""
    digest = hmac.new(secret_key.encode("utf-8"), content, hashlib.sha1).digest()
    return base64.b64encode(digest).decode("ascii")


def sign(ext_fields: Mapping[str, str | None], body: bytes | None, secret_key: str) -> str:
    """The Signature a client puts on a request whose extFields (AccessKey included) are given."""
    return signature_of(signing_content(ext_fields, body), secret_key)


def sign_request(command: Any, access_key: str, secret_key: str, security_token: str | None = None) -> None:
    """What AclClientRPCHook.doBeforeRequest does to a RemotingCommand: add AccessKey
    (and SecurityToken), then Signature over all of them."""
    ext = dict(command.ext_fields or {})
    ext[ACCESS_KEY] = access_key
    if security_token is not None:
        ext[SECURITY_TOKEN] = security_token
    ext.pop(SIGNATURE, None)
    ext[SIGNATURE] = sign(ext, command.body, secret_key)
    command.ext_fields = ext


@dataclasses.dataclass(frozen=True, slots=True)
class SessionCredentials:
    """Java's SessionCredentials: who signs (accessKey, secretKey, optional securityToken)."""

    access_key: str
    secret_key: str
    security_token: str | None = None

    def __post_init__(self) -> None:
        if not self.access_key or not self.secret_key:
            raise ValueError("ACL signing needs both an accessKey and a secretKey")


class AclClientRPCHook:
    """Java's AclClientRPCHook: signs every outgoing request (``hook(command)`` before it is sent)."""

    def __init__(self, credentials: SessionCredentials) -> None:
        self.credentials = credentials

    def __call__(self, command: Any) -> None:
        c = self.credentials
        sign_request(command, c.access_key, c.secret_key, c.security_token)
