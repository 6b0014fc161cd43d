"""Where rocketpy's ACL is stricter than Java 4.9.8's, and the broker.conf switches back to Java's checks.

Each switch is on by default; ``false`` gives Java's exact behaviour (see SECURITY.md):

``aclStrictAdmin``
    UPDATE_AND_CREATE_ACL_CONFIG, DELETE_ACL_CONFIG and UPDATE_GLOBAL_WHITE_ADDRS_CONFIG need an admin
    account, as topic creation does. In Java any valid signature may call them: a normal account makes
    itself admin, deletes the other accounts, or adds its address to the global white list (which then
    skips every check). The admin codes are also checked for an account that its own
    ``whiteRemoteAddress`` lets in unsigned (Java skips every check for it): that address stands for the
    signature, not for ``admin: true``.
``aclStrictBatchSend``
    SEND_BATCH_MESSAGE needs what a send to its topic needs (PUB, or the group's SUB for a retry topic);
    Java checks nothing, so a batch writes into a topic the account is denied.
``aclStrictReads``
    VIEW_MESSAGE_BY_ID (the topic of the message at that offset), QUERY_CONSUME_QUEUE, GET_MAX_OFFSET,
    GET_MIN_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP and GET_EARLIEST_MSG_STORETIME need SUB on their topic;
    QUERY_MESSAGE (checked by Java against its topic) answers only messages of that topic, where Java also
    returns other topics' messages whose keys share the index hash. Java reads a denied topic through them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from ...codecs.codes import RequestCode as R
from .permission import ADMIN_CODES

__all__ = ["ACL_ADMIN_CODES", "JAVA", "READ_CODES", "STRICT", "AclStrictness"]

#: the ACL administration codes that need an admin account under aclStrictAdmin
#: (GET_BROKER_CLUSTER_ACL_INFO stays open: it answers file names and versions, no account or secret)
ACL_ADMIN_CODES = frozenset({R.UPDATE_AND_CREATE_ACL_CONFIG, R.DELETE_ACL_CONFIG, R.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG})

#: the reads that name their topic in the header (``topic``) and need its SUB under aclStrictReads
READ_CODES = frozenset(
    {
        R.QUERY_CONSUME_QUEUE,
        R.GET_MAX_OFFSET,
        R.GET_MIN_OFFSET,
        R.SEARCH_OFFSET_BY_TIMESTAMP,
        R.GET_EARLIEST_MSG_STORETIME,
    }
)

def _switch(props: Mapping[str, str], key: str) -> bool:
    value = props.get(key)
    # on unless set to something Boolean.parseBoolean reads as false: a typo keeps the strict check
    return value is None or value.strip().lower() != "false"


@dataclasses.dataclass(frozen=True)
class AclStrictness:
    admin: bool = True
    batch_send: bool = True
    reads: bool = True

    @classmethod
    def from_props(cls, props: Mapping[str, str]) -> AclStrictness:
        return cls(_switch(props, "aclStrictAdmin"), _switch(props, "aclStrictBatchSend"),
                   _switch(props, "aclStrictReads"))

    @property
    def admin_codes(self) -> frozenset[int]:
        return ADMIN_CODES | ACL_ADMIN_CODES if self.admin else ADMIN_CODES


#: Java 4.9.8's checks, for tests and for comparison
JAVA = AclStrictness(admin=False, batch_send=False, reads=False)
STRICT = AclStrictness()
