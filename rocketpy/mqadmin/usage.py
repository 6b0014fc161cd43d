"""mqadmin's help texts: the subcommand list (MQAdminStartup.printHelp) and a subcommand's usage in the layout
of Apache commons-cli's HelpFormatter at width 110 (ServerUtil.printCommandLineHelp)."""

from __future__ import annotations

import argparse

from .core import COMMANDS
from .java_usage import USAGE

#: MQAdminStartup.initCommand's order, the order ``mqadmin`` lists them
JAVA_ORDER = (
    "updateTopic", "deleteTopic", "updateSubGroup", "deleteSubGroup", "updateBrokerConfig", "updateTopicPerm",
    "topicRoute", "topicStatus", "topicClusterList", "brokerStatus", "queryMsgById", "queryMsgByKey",
    "queryMsgByUniqueKey", "queryMsgByOffset", "queryMsgTraceById", "printMsg", "printMsgByQueue", "sendMsgStatus",
    "brokerConsumeStats", "producerConnection", "consumerConnection", "consumerProgress", "consumerStatus",
    "cloneGroupOffset", "producer", "clusterList", "topicList", "updateKvConfig", "deleteKvConfig", "wipeWritePerm",
    "addWritePerm", "resetOffsetByTime", "skipAccumulatedMessage", "updateOrderConf", "cleanExpiredCQ",
    "deleteExpiredCommitLog", "cleanUnusedTopic", "startMonitoring", "statsAll", "allocateMQ", "checkMsgSendRT",
    "clusterRT", "getNamesrvConfig", "updateNamesrvConfig", "getBrokerConfig", "getConsumerConfig", "queryCq",
    "sendMessage", "consumeMessage", "updateAclConfig", "deleteAclConfig", "clusterAclConfigVersion",
    "updateGlobalWhiteAddr", "exportMetadata", "exportConfigs", "exportMetrics",
)
WIDTH = 110


def command_list(prog: str = "mqadmin", more: str = "help <command>") -> str:
    """``mqadmin`` with no argument: every subcommand with its one-line description."""
    names = [n for n in JAVA_ORDER if n in COMMANDS] + [n for n in COMMANDS if n not in JAVA_ORDER]
    lines = [f"The most commonly used {prog} commands are:"]
    lines += [f"   {name:<20} {COMMANDS[name][0]}" for name in names]
    lines += ["", f"See '{prog} {more}' for more information on a specific command."]
    return "\n".join(lines) + "\n"


def _java_option(action: argparse.Action) -> tuple[str, str] | None:
    """(-x, longName) of an option mqadmin has: a one-letter short name and a camelCase long one."""
    shorts = [o for o in action.option_strings if len(o) == 2 and o[0] == "-" and o[1] != "-"]
    longs = [o[2:] for o in action.option_strings if o.startswith("--")]
    if not shorts:
        return None
    plain = [o for o in longs if "-" not in o] or longs
    return shorts[0][1], (plain[0] if plain else "")


def _wrap_pos(text: str, width: int) -> int:
    """commons-cli findWrapPos from 0: where to break ``text`` to fit ``width``, -1 when it fits."""
    if width >= len(text):
        return -1
    pos = width
    while pos >= 0 and text[pos] not in " \t\n":
        pos -= 1
    return pos if pos > 0 else width


def _wrapped(text: str, indent: int, width: int = WIDTH) -> list[str]:
    """commons-cli renderWrappedText: lines after the first are indented by ``indent`` spaces."""
    out = []
    pos = _wrap_pos(text, width)
    while pos != -1:
        out.append(text[:pos].rstrip())
        text = " " * indent + text[pos:].strip()
        pos = _wrap_pos(text, width)
        if pos == indent - 1 and len(text) > width:
            pos = width
    out.append(text)
    return out


def usage(name: str, parser: argparse.ArgumentParser, prog: str = "mqadmin") -> str:
    """``mqadmin help NAME``: Java's text for its subcommands; else (a subcommand of ours alone) the usage
    line and one line per option, sorted by short name, in commons-cli's layout."""
    if prog == "mqadmin" and name in USAGE:
        return USAGE[name]
    return command_usage(name, parser, prog)


def command_usage(name: str, parser: argparse.ArgumentParser, prog: str = "mqadmin") -> str:
    """A subcommand's usage in commons-cli's layout, from our parser's options that have a short name."""
    options = []
    for action in parser._actions:
        java = _java_option(action)
        if java is not None:
            options.append((java, action))
    options.sort(key=lambda item: item[0][0].lower())
    parts = []
    for (short, _), action in options:
        arg = "" if action.nargs == 0 else " <arg>"
        parts.append(f"-{short}{arg}" if action.required else f"[-{short}{arg}]")
    lines = _wrapped(f"usage: {prog} {name} " + " ".join(parts), len("usage: "))
    cells = [f" -{short},--{long}" + ("" if action.nargs == 0 else " <arg>") for (short, long), action in options]
    pad = max(len(c) for c in cells) + 3
    for cell, (_, action) in zip(cells, options):
        text = "Print help" if isinstance(action, argparse._HelpAction) else action.help or ""
        text = text.replace("%(default)s", str(action.default)).replace("%%", "%")
        lines += _wrapped(cell.ljust(pad) + text, pad)
    return "\n".join(lines) + "\n"
