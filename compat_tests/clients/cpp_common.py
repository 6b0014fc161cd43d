"""Shared driver code for the two C++-based Python clients (``rocketmq`` 0.4.4 and
``rocketmq-python-cvs`` 2.1.0.3): both expose the same ``rocketmq.client`` API.

Run by the client's own interpreter (never the project's venv). Arguments come as one
JSON document in argv[1]; the result is printed as one line ``RESULT {json}`` on stdout
(the C++ library may print other lines), before the client is shut down; a line
``SHUTDOWN ok`` follows once shutdown returned (the 2.1.0 consumer can crash there).
A watchdog ends the process with whatever it has if the deadline passes, so a hung
C++ shutdown can never hang a test.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback
from typing import Any

_printed = threading.Lock()


def emit(result: dict[str, Any]) -> None:
    if not _printed.acquire(blocking=False):
        return
    sys.stdout.write("RESULT " + json.dumps(result) + "\n")
    sys.stdout.flush()
    sys.stderr.flush()


def watchdog(seconds: float, result: dict[str, Any]) -> None:
    def fire() -> None:
        result.setdefault("error", f"watchdog: still running after {seconds} s")
        result["watchdog"] = True
        emit(result)
        os._exit(3)

    t = threading.Timer(seconds, fire)
    t.daemon = True
    t.start()


def _text(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def _set_log_dir(client: Any) -> None:
    log_dir = os.environ.get("ROCKETMQ_CLIENT_LOG_DIR")
    if log_dir and hasattr(client, "set_log_root_path"):
        try:
            client.set_log_root_path(log_dir)
        except Exception:  # older builds lack the symbol
            pass


def produce(args: dict[str, Any]) -> dict[str, Any]:
    from rocketmq.client import Message, Producer

    result: dict[str, Any] = {"results": [], "started": False}
    watchdog(float(args.get("deadline", 60)), result)
    try:
        producer = Producer(args["group"], timeout=int(args.get("send_timeout_ms", 5000)))
        _set_log_dir(producer)
        producer.set_namesrv_addr(args["namesrv"])
        producer.start()
        result["started"] = True
        mode = args.get("mode", "sync")
        built = []
        for spec in args["messages"]:
            msg = Message(args["topic"])
            if spec.get("keys"):
                msg.set_keys(spec["keys"])
            if spec.get("tags"):
                msg.set_tags(spec["tags"])
            for key, value in (spec.get("properties") or {}).items():
                msg.set_property(key, value)
            if spec.get("delay_level"):
                msg.set_delay_time_level(int(spec["delay_level"]))
            msg.set_body(spec["body"].encode("utf-8"))
            built.append(msg)
        if mode == "batch":
            try:
                sent = producer.send_batch(built)
                result["results"].append({"status": sent.status.name, "msg_id": sent.msg_id, "offset": sent.offset})
            except Exception as exc:
                result["results"].append({"error": f"{type(exc).__name__}: {exc}"})
        for msg in built if mode != "batch" else []:
            try:
                if mode == "oneway":
                    producer.send_oneway(msg)
                    result["results"].append({"status": "ONEWAY", "msg_id": "-", "offset": -1})
                    continue
                sent = producer.send_sync(msg)
                result["results"].append(
                    {"status": sent.status.name, "msg_id": sent.msg_id, "offset": sent.offset}
                )
            except Exception as exc:
                result["results"].append({"error": f"{type(exc).__name__}: {exc}"})
    except Exception as exc:
        result["error"] = f"{type(exc).__name__}: {exc}"
        result["traceback"] = traceback.format_exc()
        return result
    emit(result)
    if not args.get("skip_shutdown"):
        producer.shutdown()
        print("SHUTDOWN ok", flush=True)
    return result


def consume(args: dict[str, Any]) -> dict[str, Any]:
    """Push consumer: ``expect`` successful deliveries or ``timeout`` s. With ``fail_first``, the
    first delivery of each message answers RECONSUME_LATER (so the broker must redeliver it)."""
    from rocketmq.client import PushConsumer, RecvMessage
    from rocketmq.exceptions import ffi_check
    from rocketmq.ffi import MessageModel, dll

    expect = int(args["expect"])
    names = list(args.get("property_names") or [])
    fail_first = bool(args.get("fail_first"))
    received: list[dict[str, Any]] = []
    attempts: list[dict[str, Any]] = []
    failed_keys: set[str] = set()
    lock = threading.Lock()
    result: dict[str, Any] = {"messages": received, "attempts": attempts, "started": False}
    watchdog(float(args.get("deadline", 90)), result)

    def on_message(_consumer: Any, handle: Any) -> int:
        # registered raw: the package's subscribe() wrapper re-raises a callback's exception,
        # which ctypes turns into 0 = CONSUME_SUCCESS, so it cannot ask for a redelivery
        try:
            msg = RecvMessage(handle)
            item = {
                "topic": _text(msg.topic),
                "tags": _text(msg.tags),
                "keys": _text(msg.keys),
                "body": _text(msg.body),
                "msg_id": _text(msg.id),
                "queue_id": msg.queue_id,
                "queue_offset": msg.queue_offset,
                "reconsume_times": msg.reconsume_times,
                "born_timestamp": msg.born_timestamp,
                "store_timestamp": msg.store_timestamp,
                "properties": {name: _text(msg.get_property(name)) for name in names},
            }
        except Exception as exc:  # never let an exception cross the C boundary
            with lock:
                attempts.append({"error": repr(exc)})
            return 1
        with lock:
            attempts.append(item)
            if fail_first and item["keys"] not in failed_keys:
                failed_keys.add(item["keys"])
                return 1  # RECONSUME_LATER
            received.append(item)
        return 0  # CONSUME_SUCCESS

    try:
        model = MessageModel.BROADCASTING if args.get("broadcast") else MessageModel.CLUSTERING
        consumer = PushConsumer(args["group"], message_model=model)
        _set_log_dir(consumer)
        consumer.set_namesrv_addr(args["namesrv"])
        consumer.set_thread_count(1)
        ffi_check(dll.Subscribe(consumer._handle, args["topic"].encode(), args.get("expression", "*").encode()))
        consumer._register_callback(on_message)
        consumer.start()
        result["started"] = True
        sys.stderr.write("CONSUMER STARTED\n")
        sys.stderr.flush()
        end = time.monotonic() + float(args.get("timeout", 40))
        while time.monotonic() < end:
            with lock:
                if len(received) >= expect:
                    break
            time.sleep(0.1)
        # a short wait shows duplicates or unwanted messages
        time.sleep(float(args.get("linger", 0.5)))
    except Exception as exc:
        result["error"] = f"{type(exc).__name__}: {exc}"
        result["traceback"] = traceback.format_exc()
        return result
    with lock:
        result["messages"] = list(received)
        result["attempts"] = list(attempts)
    emit(result)
    if not args.get("skip_shutdown"):
        consumer.shutdown()
        print("SHUTDOWN ok", flush=True)
    return result


def probe() -> dict[str, Any]:
    import rocketmq.client  # noqa: F401  (loads librocketmq.so)

    return {"ok": True, "python": sys.version.split()[0]}


def main(role: str) -> None:
    args = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    if role == "produce":
        result = produce(args)
    elif role == "consume":
        result = consume(args)
    else:
        result = probe()
    emit(result)
    # the C++ libraries sometimes hang in static destructors: leave at once
    os._exit(0)
