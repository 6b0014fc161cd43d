"""Transactional messages: a half message, your local transaction, then commit or rollback.
When the outcome is unknown the broker asks back later (check_local_transaction).

    python examples/transaction_producer.py [-n 127.0.0.1:9876]
"""

import os
import sys

import trio

from rocketpy.client import LocalTransactionState, TransactionProducer, make_message

NAMESRV = os.environ.get("ROCKETMQ_NAMESRV", "127.0.0.1:9876")
if "-n" in sys.argv:
    NAMESRV = sys.argv[sys.argv.index("-n") + 1]
checked = trio.Event()


def execute_local_transaction(msg, arg):
    # a plain function runs in a worker thread: do the blocking database work here
    return arg


async def check_local_transaction(msg):
    # an async function runs on the client's trio loop (and may touch trio objects)
    print(f"broker asks about {msg.keys_string}: commit it")
    checked.set()
    return LocalTransactionState.COMMIT_MESSAGE


async def main() -> None:
    async with TransactionProducer("example_tx_group", execute_local_transaction, check_local_transaction,
                                   namesrv=NAMESRV) as producer:
        for state in (LocalTransactionState.COMMIT_MESSAGE, LocalTransactionState.ROLLBACK_MESSAGE,
                      LocalTransactionState.UNKNOW):
            result, outcome = await producer.send_in_transaction(
                make_message("ExampleTxTopic", f"order {state}", keys=f"tx-{state}"), state)
            print(f"half message {result.msg_id}: local transaction said {outcome}")
        with trio.move_on_after(90):  # a Java broker checks after about a minute
            await checked.wait()


try:
    # Ctrl-C raised in main() at an await: the `async with` blocks shut the clients down on the way out
    trio.run(main, restrict_keyboard_interrupt_to_checkpoints=True)
except KeyboardInterrupt:
    print("interrupted")
