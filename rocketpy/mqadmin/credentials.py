"""The admin commands' ACL credentials: ``--aclAccessKey``/``--aclSecretKey``, else mqadmin's
``$ROCKETMQ_HOME/conf/tools.yml`` (AclUtils.getAclRPCHook): with both keys every request is signed."""

from __future__ import annotations

import argparse
import os
from typing import Any

import yaml

from ..client.errors import BadArgument
from ..codecs.codes import MixAll

HOME_ENV = "ROCKETMQ_HOME"


def add_acl_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--aclAccessKey", dest="acl_access_key", default=None,
                   help="sign every request with this ACL accessKey (default: accessKey of "
                        "$ROCKETMQ_HOME/conf/tools.yml, as mqadmin; none: requests are not signed)")
    p.add_argument("--aclSecretKey", dest="acl_secret_key", default=None,
                   help="the secretKey that signs the requests (default: secretKey of $ROCKETMQ_HOME/conf/tools.yml)")


def tools_yml_credentials(home: str | None) -> tuple[str | None, str | None]:
    """accessKey/secretKey of ``<home>/conf/tools.yml``; (None, None) when there is no such file."""
    if not home:
        return None, None
    path = home + MixAll.ACL_CONF_TOOLS_FILE
    try:
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
    except FileNotFoundError:
        return None, None
    except (OSError, yaml.YAMLError) as exc:
        raise BadArgument(f"cannot read the ACL credentials in {path}: {exc}") from None
    if not isinstance(doc, dict):
        return None, None
    ak, sk = doc.get("accessKey"), doc.get("secretKey")
    # Java: a blank key means ACL is off for the tool
    if not ak or not sk or not str(ak).strip() or not str(sk).strip():
        return None, None
    return str(ak), str(sk)


def acl_credentials(args: argparse.Namespace) -> dict[str, Any]:
    """ClientConfig keywords (access_key, secret_key) of the options or tools.yml; {} without credentials."""
    ak, sk = getattr(args, "acl_access_key", None), getattr(args, "acl_secret_key", None)
    if ak is None and sk is None:
        ak, sk = tools_yml_credentials(os.environ.get(HOME_ENV))
        if ak is None:
            return {}
    if not ak or not sk:
        raise BadArgument("ACL signing needs both --aclAccessKey and --aclSecretKey")
    return {"access_key": ak, "secret_key": sk}
