"""TaskHost: a failure of the hosted tasks is reported and keeps none of their frames."""

from __future__ import annotations

import gc
import logging
import types

import pytest
import trio

from rocketpy.client.hosting import TaskHost


async def test_a_failed_host_says_why_and_keeps_no_frame(monkeypatch: pytest.MonkeyPatch) -> None:
    # the host kept the exception, whose traceback kept the failed tasks' frames while the host lived
    monkeypatch.setattr(logging.getLogger("rocketpy.client"), "disabled", True)  # a captured record would keep them
    host = TaskHost("test host")
    nursery = await host.open()

    async def hosted_task_that_fails() -> None:
        raise ValueError("broken on purpose")

    nursery.start_soon(hosted_task_that_fails)
    with trio.fail_after(5):
        while host.running:
            await trio.sleep(0.01)
    assert host.error == "ValueError: broken on purpose"
    del nursery
    gc.collect()
    kept = [f for f in gc.get_objects() if isinstance(f, types.FrameType) and f.f_code.co_name.startswith("hosted_")]
    assert kept == []
    await host.aclose()
