"""SQL92 filtering on the broker: ConsumerFilterManager and the pull's message filters.

With ``enablePropertyFilter=true`` a consumer may subscribe with a SQL92 selector. The
broker keeps each group's compiled selector per topic (registered from heartbeats,
marked dead when the group goes away) and a pull evaluates it over every candidate
record's properties (ExpressionMessageFilter). No bloom-filter bit maps are kept, so
the consume-queue stage lets every entry through, as Java does without bit maps.

Facts of Java 4.9.8 kept here:

* HEART_BEAT never fails on a bad selector; it is just not registered, so a pull
  without the subscription flag answers FILTER_DATA_NOT_EXIST (or
  FILTER_DATA_NOT_LATEST when the registered selector is older than the pull's
  subVersion); CHECK_CLIENT_CONFIG answers SUBSCRIPTION_PARSE_FAILED with the compile error;
* a pull that carries its subscription (FLAG_SUBSCRIPTION, lite pull) with an empty
  selector answers SUBSCRIPTION_PARSE_FAILED, but one with a selector that does not
  compile is served unfiltered (Java's check there is an ``assert``, off in production);
* ``filterSupportRetry=true`` evaluates a group's selector on its retry topic too,
  looking up the original topic from the RETRY_TOPIC property.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..clock import now_ms
from ..codecs import RemotingCommand, ResponseCode
from ..codecs.bodies import SubscriptionData
from ..codecs.codes import ExpressionType, MessageConst, MixAll
from ..codecs.message import record_properties
from .responses import error
from .sql92 import Expr, SelectorError, compile_cached, matches

if TYPE_CHECKING:
    from .controller import BrokerController

log = logging.getLogger("rocketpy.broker")


def compile_expression(expression_type: str | None, expression: str | None) -> Expr:
    """FilterFactory.get(type).compile(expression): only SQL92 is known."""
    if expression_type != ExpressionType.SQL92 or expression is None:
        raise SelectorError("java.lang.NullPointerException", None)
    return compile_cached(expression)


@dataclasses.dataclass(eq=False)
class ConsumerFilterData:
    consumer_group: str
    topic: str
    expression: str
    expression_type: str
    compiled: Expr
    client_version: int
    born_time: int = dataclasses.field(default_factory=now_ms)
    dead_time: int = 0

    @property
    def dead(self) -> bool:
        return self.dead_time >= self.born_time


def build_filter_data(
    topic: str, group: str, expression: str | None, expression_type: str | None, version: int
) -> ConsumerFilterData | None:
    """ConsumerFilterManager.build: None for TAG subscriptions and selectors that do not compile."""
    if ExpressionType.is_tag_type(expression_type):
        return None
    try:
        compiled = compile_expression(expression_type, expression)
    except SelectorError as exc:
        log.error("parse error: expr=%s, topic=%s, group=%s, error=%s", expression, topic, group, exc)
        return None
    return ConsumerFilterData(group, topic, expression or "", expression_type or "", compiled, version)


class ConsumerFilterManager:
    """Compiled selectors by topic, then consumer group."""

    def __init__(self) -> None:
        self.by_topic: dict[str, dict[str, ConsumerFilterData]] = {}

    def register_group(self, group: str, subs: Iterable[SubscriptionData]) -> None:
        """The REGISTER event of a heartbeat: (re)register each subscription, retire the others."""
        subs = list(subs)
        for sub in subs:
            self.register(sub.topic or "", group, sub.sub_string, sub.expression_type, sub.sub_version)
        topics = {sub.topic for sub in subs}
        now = now_ms()
        for data in self.of_group(group):
            if data.topic not in topics and not data.dead:
                data.dead_time = now
                log.info("Consumer filter changed: %s, make illegal topic dead: %s", group, data.topic)

    def register(
        self, topic: str, group: str, expression: str | None, expression_type: str | None, version: int
    ) -> bool:
        if ExpressionType.is_tag_type(expression_type) or not expression:
            return False
        table = self.by_topic.setdefault(topic, {})
        old = table.get(group)
        if old is None:
            data = build_filter_data(topic, group, expression, expression_type, version)
            if data is None:
                return False
            table[group] = data
            return True
        if version <= old.client_version:
            if version == old.client_version and old.dead:
                old.dead_time = 0
                return True
            return False
        if old.expression != expression or old.expression_type != expression_type:
            data = build_filter_data(topic, group, expression, expression_type, version)
            if data is None:
                del table[group]  # the new selector does not compile: the client reports it
                return False
            table[group] = data
            return True
        old.client_version = version
        if old.dead:
            old.dead_time = 0
        return True

    def unregister(self, group: str) -> None:
        now = now_ms()
        for table in self.by_topic.values():
            data = table.get(group)
            if data is not None and not data.dead:
                data.dead_time = now

    def get(self, topic: str, group: str) -> ConsumerFilterData | None:
        table = self.by_topic.get(topic)
        return table.get(group) if table else None

    def of_group(self, group: str) -> list[ConsumerFilterData]:
        return [t[group] for t in self.by_topic.values() if group in t]

    def clean(self, keep_dead_ms: int) -> None:
        """Forget selectors dead for longer than ``keep_dead_ms`` (filterDataCleanTimeSpan)."""
        now = now_ms()
        for topic, table in list(self.by_topic.items()):
            for group, data in list(table.items()):
                if data.dead and now - data.dead_time >= keep_dead_ms:
                    del table[group]
            if not table:
                del self.by_topic[topic]


class ExpressionFilter:
    """ExpressionMessageFilter for a SQL92 subscription (no bloom bit maps)."""

    __slots__ = ("data",)

    def __init__(self, data: ConsumerFilterData | None) -> None:
        self.data = data

    def is_matched_by_consume_queue(self, tags_code: int | None) -> bool:
        return True

    def is_matched_by_commit_log(self, record: bytes) -> bool:
        if self.data is None:
            return True
        try:
            props = record_properties(record)
        except (IndexError, ValueError) as exc:
            log.error("Message Filter error, %s: %s", self.data.expression, exc)
            return False
        return matches(self.data.compiled, props)


class RetryAwareFilter:
    """ExpressionForRetryMessageFilter (filterSupportRetry): a retry topic's records are
    judged by the group's selector on their original topic."""

    __slots__ = ("sub", "data", "manager", "tag_filter")

    def __init__(
        self,
        sub: SubscriptionData,
        data: ConsumerFilterData | None,
        manager: ConsumerFilterManager,
        tag_filter: Any,
    ) -> None:
        self.sub = sub
        self.data = data
        self.manager = manager
        self.tag_filter = tag_filter

    def is_matched_by_consume_queue(self, tags_code: int | None) -> bool:
        if self.tag_filter is not None:
            return bool(self.tag_filter.is_matched_by_consume_queue(tags_code))
        return True

    def is_matched_by_commit_log(self, record: bytes) -> bool:
        topic = self.sub.topic or ""
        is_retry = topic.startswith(MixAll.RETRY_GROUP_TOPIC_PREFIX)
        if not is_retry and ExpressionType.is_tag_type(self.sub.expression_type):
            return True
        try:
            props = record_properties(record)
        except (IndexError, ValueError):
            return False
        data = self.data
        if is_retry:
            real_topic = props.get(MessageConst.PROPERTY_RETRY_TOPIC)
            group = topic[len(MixAll.RETRY_GROUP_TOPIC_PREFIX) :]
            data = self.manager.get(real_topic, group) if real_topic is not None else None
        if data is None:
            return True
        return matches(data.compiled, props)


def pull_filter(
    broker: BrokerController,
    request: RemotingCommand,
    sub: SubscriptionData,
    group: str,
    topic: str,
    sub_version: int,
    carries_subscription: bool,
    tag_filter: Any,
) -> Any:
    """The message filter of a pull, or the error answer; ``tag_filter`` when tags decide.

    Called by PULL_MESSAGE once it knows the subscription, before the check that the
    broker supports the expression type.
    """
    data: ConsumerFilterData | None = None
    if not ExpressionType.is_tag_type(sub.expression_type):
        if carries_subscription:
            if not sub.sub_string:
                return error(
                    request,
                    ResponseCode.SUBSCRIPTION_PARSE_FAILED,
                    "parse the consumer's subscription failed",
                    header=True,
                )
            data = build_filter_data(topic, group, sub.sub_string, sub.expression_type, sub_version)
        else:
            data = broker.filters.get(topic, group)
            if data is None:
                return error(
                    request,
                    ResponseCode.FILTER_DATA_NOT_EXIST,
                    "The broker's consumer filter data is not exist!Your expression may be wrong!",
                    header=True,
                )
            if data.client_version < sub_version:
                return error(
                    request,
                    ResponseCode.FILTER_DATA_NOT_LATEST,
                    "the consumer's consumer filter data not latest",
                    header=True,
                )
    if broker.config.props.get("filterSupportRetry", "false").strip().lower() == "true":
        return RetryAwareFilter(
            sub, data, broker.filters, tag_filter if ExpressionType.is_tag_type(sub.expression_type) else None
        )
    if ExpressionType.is_tag_type(sub.expression_type):
        return tag_filter
    return ExpressionFilter(data)


def check_client_config(sub: SubscriptionData | None, property_filter: bool) -> tuple[int, str | None]:
    """CHECK_CLIENT_CONFIG's verdict on a subscription: (code, remark)."""
    if sub is None or ExpressionType.is_tag_type(sub.expression_type):
        return ResponseCode.SUCCESS, None
    if not property_filter:
        return (
            ResponseCode.SYSTEM_ERROR,
            f"The broker does not support consumer to filter message by {sub.expression_type}",
        )
    try:
        compile_expression(sub.expression_type, sub.sub_string)
    except SelectorError as exc:
        return ResponseCode.SUBSCRIPTION_PARSE_FAILED, exc.java_message if exc.message is not None else None
    return ResponseCode.SUCCESS, None
