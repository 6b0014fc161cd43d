"""The context broker handlers get: a RequestContext whose ``state`` is the BrokerController."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

from ..remoting.dispatch import RequestContext

if TYPE_CHECKING:
    from .controller import BrokerController

#: for annotations (the processors import it under TYPE_CHECKING)
BrokerContext: TypeAlias = "RequestContext[BrokerController]"

__all__ = ["BrokerContext"]
