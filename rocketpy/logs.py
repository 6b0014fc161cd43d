"""The servers' logs where operators of the Java servers look for them.

Files under ``~/logs/rocketmqlogs/`` as Java's logback_broker.xml / logback_namesrv.xml name them (broker.log,
store.log, remoting.log, transaction.log, namesrv.log, and ``<role>_default.log`` for everything else),
rotated by size and count as theirs (``broker.log`` 128 MB x 20, ``store.log`` 128 MB x 10, the others 100 MB x
10), plus stderr for the foreground and container runtimes. ``--log-format json`` writes one JSON object a line.

The files are written by a ``QueueListener`` thread, as Java's AsyncAppender does: a log call on the event loop
only puts the record on a queue, it never blocks on the disk. The queue is bounded, as logback's is: past 80 %
full, records below WARN are dropped (its discardingThreshold); when full, WARN too, where logback would block
the caller (here the event loop); ERROR records (tracebacks) have as much room again. The listener then writes
how many went.
"""

from __future__ import annotations

import argparse
import atexit
import json
import logging
import logging.handlers
import os
import queue
import sys
from datetime import datetime
from typing import TextIO

#: Java's ``${user.home}/logs/rocketmqlogs``; ROCKETMQ_LOG_DIR moves it (as ``-Duser.home`` moves Java's)
LOG_DIR_ENV = "ROCKETMQ_LOG_DIR"
MB = 1024 * 1024

#: file -> (max bytes, backups), as logback_broker.xml / logback_namesrv.xml
FILES = {
    "broker.log": (128 * MB, 20),
    "store.log": (128 * MB, 10),
    "remoting.log": (100 * MB, 10),
    "transaction.log": (100 * MB, 10),
    "namesrv.log": (100 * MB, 10),
    "broker_default.log": (100 * MB, 10),
    "namesrv_default.log": (100 * MB, 10),
}

#: logger name prefix -> file, the longest prefix wins (Java's RocketmqStore, RocketmqRemoting ... loggers)
BROKER_ROUTES = {
    "rocketpy.broker": "broker.log",
    "rocketpy.broker.acl": "broker.log",
    "rocketpy.broker.ha": "store.log",  # Java's HAService logs to RocketmqStore
    "rocketpy.broker.transaction": "transaction.log",
    "rocketpy.store": "store.log",
    "rocketpy.remoting": "remoting.log",
    "rocketpy.namesrv": "namesrv.log",
}
#: the NameServer alone: its remoting lines go to namesrv.log, as logback_namesrv.xml routes RocketmqRemoting
NAMESRV_ROUTES = {"rocketpy.namesrv": "namesrv.log", "rocketpy.remoting": "namesrv.log"}

_JAVA_LEVEL = {"WARNING": "WARN", "CRITICAL": "ERROR"}


def say(line: str, stream: TextIO | None = None) -> None:
    """Write one line of a server command's own (its boot line, a warning, its last word) in one write, and
    flush it. ``print`` writes the text and the newline apart, and where nothing buffers them (the image sets
    PYTHONUNBUFFERED) the listener thread's log lines, on stderr, came in between when stdout and stderr went
    to one file: "... listening on 127.0.0.1:9876" ran into the next log line, the newline after it."""
    out = stream if stream is not None else sys.stdout
    out.write(line + "\n")
    out.flush()


def default_log_dir() -> str:
    return os.environ.get(LOG_DIR_ENV) or os.path.join(os.path.expanduser("~"), "logs", "rocketmqlogs")


def add_log_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--log-dir", default=None,
                   help=f"directory of the log files (default: ${LOG_DIR_ENV}, else ~/logs/rocketmqlogs as Java)")
    p.add_argument("--log-format", choices=["text", "json"], default="text",
                   help="log line format: Java's pattern, or one JSON object a line")
    p.add_argument("--no-log-files", action="store_true", help="log to stderr only")


class TextFormatter(logging.Formatter):
    """Java's ``%d{yyy-MM-dd HH:mm:ss,SSS} %p %t - %m%n`` with the logger's name where Java has the thread."""

    def format(self, record: logging.LogRecord) -> str:
        when = datetime.fromtimestamp(record.created).strftime("%Y-%m-%d %H:%M:%S")
        level = _JAVA_LEVEL.get(record.levelname, record.levelname)
        text = f"{when},{int(record.msecs):03d} {level} {record.name} - {record.getMessage()}"
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time (ISO 8601, local), level (Java's names), logger, thread, message."""

    def format(self, record: logging.LogRecord) -> str:
        doc = {
            "time": datetime.fromtimestamp(record.created).astimezone().isoformat(timespec="milliseconds"),
            "level": _JAVA_LEVEL.get(record.levelname, record.levelname),
            "logger": record.name,
            "thread": record.threadName,
            "message": record.getMessage(),
        }
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        return json.dumps(doc, ensure_ascii=False)


class _Route(logging.Filter):
    """Passes the records whose logger the routing table sends to ``target`` (the longest prefix decides)."""

    def __init__(self, routes: dict[str, str], target: str, default: str) -> None:
        super().__init__()
        self.routes, self.target, self.default = routes, target, default

    def filter(self, record: logging.LogRecord) -> bool:
        best, where = -1, self.default
        for prefix, file in self.routes.items():
            if (record.name == prefix or record.name.startswith(prefix + ".")) and len(prefix) > best:
                best, where = len(prefix), file
        return where == self.target


#: records below ERROR the queue holds at most (Java's AsyncAppenders hold 256 each): a burst (a transaction
#: check over thousands of half messages logs a line for each) costs about 1 KiB a record at worst, not one
#: record per line logged; ERROR and above (tracebacks) may take as many again
QUEUE_RECORDS = 1024


class BoundedQueueHandler(logging.handlers.QueueHandler):
    """A QueueHandler whose queue never holds more than ``limit`` records (see the module's text)."""

    def __init__(self, records: queue.SimpleQueue[logging.LogRecord], limit: int = QUEUE_RECORDS) -> None:
        super().__init__(records)
        self.records = records
        self.limit = limit
        self.discard_below_warn_from = limit * 4 // 5
        self.dropped = 0
        #: of those, ERROR and above: a traceback may be among them
        self.dropped_errors = 0

    # emit runs under the handler's lock (Handler.handle), so the count is exact across threads
    def emit(self, record: logging.LogRecord) -> None:
        waiting, level = self.records.qsize(), record.levelno
        if (waiting >= 2 * self.limit or (waiting >= self.limit and level < logging.ERROR)
                or (waiting >= self.discard_below_warn_from and level < logging.WARNING)):
            self.dropped += 1  # before the record is formatted: a flood's cost is its formatting
            self.dropped_errors += level >= logging.ERROR
            return
        super().emit(record)

    def enqueue(self, record: logging.LogRecord) -> None:
        self._say_dropped()
        self.records.put_nowait(record)

    def flush(self) -> None:
        """Queue the count of records dropped since the last one that went (stop calls this before the
        listener's last round, so a flood just before the end is still told)."""
        self.acquire()  # as Handler.handle around emit
        try:
            self._say_dropped()
        finally:
            self.release()

    def _say_dropped(self) -> None:
        if self.dropped:
            dropped, errors, self.dropped, self.dropped_errors = self.dropped, self.dropped_errors, 0, 0
            self.records.put_nowait(logging.makeLogRecord({
                "name": "rocketpy.logs", "levelno": logging.WARNING, "levelname": "WARNING",
                "msg": f"{dropped} log records dropped, {errors} of them ERROR or above: the log files were not"
                       " written as fast as they came"}))


_listener: logging.handlers.QueueListener | None = None
#: the root logger's handlers and level before setup, put back by stop (a command run in-process, in tests)
_saved: tuple[list[logging.Handler], int] | None = None


def setup(role: str, *, log_format: str = "text", log_dir: str | None = None, files: bool = True,
          level: int = logging.INFO, stream: bool = True,
          sizes: dict[str, tuple[int, int]] | None = None) -> str | None:
    """Route the ``rocketpy`` loggers of a server process: ``role`` is "broker", "namesrv" or "serve" (both).
    Returns the log directory, or None when there are no files. Call once, before the servers start."""
    global _listener, _saved
    stop()
    formatter: logging.Formatter = JsonFormatter() if log_format == "json" else TextFormatter()
    handlers: list[logging.Handler] = []
    directory = None
    if files:
        directory = os.path.abspath(log_dir or default_log_dir())
        os.makedirs(directory, exist_ok=True)
        routes = NAMESRV_ROUTES if role == "namesrv" else BROKER_ROUTES
        default = "namesrv_default.log" if role == "namesrv" else "broker_default.log"
        limits = {**FILES, **(sizes or {})}
        for file in sorted({*routes.values(), default}):
            max_bytes, backups = limits[file]
            h = logging.handlers.RotatingFileHandler(os.path.join(directory, file), maxBytes=max_bytes,
                                                     backupCount=backups, encoding="utf-8")
            h.setFormatter(formatter)
            h.addFilter(_Route(routes, file, default))
            handlers.append(h)
    if stream:
        err = logging.StreamHandler(sys.stderr)
        err.setFormatter(formatter)
        handlers.append(err)
    records: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
    root = logging.getLogger()
    _saved = (list(root.handlers), root.level)
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(BoundedQueueHandler(records))
    root.setLevel(level)
    _listener = logging.handlers.QueueListener(records, *handlers, respect_handler_level=True)
    _listener.start()
    return directory


def stop() -> None:
    """Write what is queued, close the files and give the root logger its handlers back (when the command
    returns, at exit, or before a second ``setup``)."""
    global _listener, _saved
    if _listener is not None:
        for h in logging.getLogger().handlers:
            if isinstance(h, BoundedQueueHandler):
                h.flush()  # the count of a flood just before the end is written too
        _listener.stop()
        for h in _listener.handlers:
            h.close()
        _listener = None
    if _saved is not None:
        root = logging.getLogger()
        for h in list(root.handlers):
            if isinstance(h, logging.handlers.QueueHandler):
                root.removeHandler(h)
        handlers, level = _saved
        for h in handlers:
            root.addHandler(h)
        root.setLevel(level)
        _saved = None


atexit.register(stop)
