"""The broker's config files: changes are written from worker threads, never on the event loop;
admin changes are on disk when answered; everything is flushed on shutdown."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from rocketpy.broker.persist import ConfigWriter
from rocketpy.broker.topics import TopicConfigManager, new_topic
from rocketpy.codecs import ResponseCode
from rocketpy.codecs.bodies import ConsumerOffsetSerializeWrapper, SubscriptionGroupConfig
from rocketpy.codecs.codes import RequestCode
from rocketpy.codecs.headers import CreateTopicRequestHeader
from rocketpy.store import config_files
from rocketpy.testing import broker_client, running_broker, wait_until


@pytest.fixture
def fsync_threads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, bool]]:
    """Every config-file fsync: (file, whether it ran on the main thread, where trio runs)."""
    calls: list[tuple[str, bool]] = []
    real = os.fsync

    def spy(fd: int) -> None:
        calls.append((os.readlink(f"/proc/self/fd/{fd}"), threading.current_thread() is threading.main_thread()))
        real(fd)

    monkeypatch.setattr(config_files.os, "fsync", spy)
    return calls


def read_json(path: Path) -> dict:  # type: ignore[type-arg]
    return json.loads(path.read_text())


async def test_config_files_written_off_the_event_loop(tmp_path: Path, fsync_threads: list[tuple[str, bool]]) -> None:
    config = tmp_path / "config"
    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            # auto-created topic (send) and subscription group (heartbeat), then an offset commit
            assert (await c.send("TAuto", b"x", queue_id=0)).code == ResponseCode.SUCCESS
            await c.heartbeat(consumer_groups={"GAuto": ["TAuto"]})
            assert (await c.update_offset("GAuto", "TAuto", 0, 1)).code == ResponseCode.SUCCESS
            # admin changes are on disk once answered
            r = await c.invoke(
                RequestCode.UPDATE_AND_CREATE_TOPIC,
                CreateTopicRequestHeader(topic="TAdmin", default_topic="TBW102", read_queue_nums=2,
                                         write_queue_nums=2, perm=6, topic_filter_type="SINGLE_TAG",
                                         topic_sys_flag=0, order=False),
            )
            assert r.code == ResponseCode.SUCCESS
            assert "TAdmin" in read_json(config / "topics.json")["topicConfigTable"]
            r = await c.invoke(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None,
                               SubscriptionGroupConfig(group_name="GAdmin").encode())
            assert r.code == ResponseCode.SUCCESS
            assert "GAdmin" in read_json(config / "subscriptionGroup.json")["subscriptionGroupTable"]
            # auto-created ones follow soon after, from the writer task
            await wait_until(lambda: "TAuto" in read_json(config / "topics.json")["topicConfigTable"])
            assert "GAuto" in read_json(config / "subscriptionGroup.json")["subscriptionGroupTable"]
    # shutdown flushed the committed offset (the interval had not come round)
    offsets = ConsumerOffsetSerializeWrapper.decode((config / "consumerOffset.json").read_text())
    assert offsets.offset_table == {"TAuto@GAuto": {0: 1}}
    assert (config / "delayOffset.json").exists()
    written = {Path(path).name for path, _ in fsync_threads}
    assert {"topics.json.tmp", "subscriptionGroup.json.tmp", "consumerOffset.json.tmp"} <= written
    assert [path for path, on_loop in fsync_threads if on_loop and f"{os.sep}config{os.sep}" in path] == []


async def test_writer_retries_a_failed_write_and_snapshots_on_the_loop(tmp_path: Path) -> None:
    topics = TopicConfigManager(str(tmp_path / "config"))
    writer = ConfigWriter([topics])
    topics.on_dirty = writer.wake
    (tmp_path / "config").write_text("a file where the directory should be")
    topics.update(new_topic("T1"))
    assert topics.dirty
    await writer.write_dirty()
    assert topics.dirty  # the disk refused it: still to be written
    (tmp_path / "config").unlink()
    await writer.write_dirty()
    assert not topics.dirty
    assert "T1" in read_json(tmp_path / "config" / "topics.json")["topicConfigTable"]


def test_a_snapshot_is_the_table_when_taken_and_encodes_as_the_whole_file(tmp_path: Path) -> None:
    # the ConfigWriter takes the snapshot on the loop and encodes it in a worker while handlers go on changing
    # the tables: what they change after it is not half in the file
    from rocketpy.broker.groups import ConsumerOffsetManager, SubscriptionGroupManager
    from rocketpy.codecs.bodies.store_config import encode_config_file

    topics = TopicConfigManager(str(tmp_path))
    topics.update(new_topic("T1"))
    expected = encode_config_file(topics.wrapper())
    snapshot = topics.snapshot()
    topics.update(new_topic("T2"))  # a new topic and a new data version
    topics.delete("T1")
    assert snapshot.encode() == expected

    groups = SubscriptionGroupManager(str(tmp_path))
    groups.update(SubscriptionGroupConfig(group_name="G1"))
    expected = encode_config_file(groups.wrapper())
    snapshot = groups.snapshot()
    groups.update(SubscriptionGroupConfig(group_name="G2"))
    assert snapshot.encode() == expected

    offsets = ConsumerOffsetManager(str(tmp_path))
    offsets.commit("G", "T", 0, 5)
    snapshot = offsets.snapshot()
    offsets.commit("G", "T", 1, 7)  # an entry's queues as the worker reaches it (Java writes its live maps)
    offsets.commit("G", "U", 0, 1)  # entries as they were when taken
    offsets.remove_group("G")
    written = ConsumerOffsetSerializeWrapper.decode(snapshot.encode())
    assert written.offset_table == {"T@G": {0: 5, 1: 7}}


@pytest.mark.parametrize("name", config_files.CONFIG_FILE_NAMES[:4])
async def test_unreadable_config_file_stops_the_broker(tmp_path: Path, name: str) -> None:
    """A config file that does not parse, with a .bak that does not either, stops the broker with an
    error naming the file (Java's ConfigManager.load fails and the broker exits); its tables are never
    started empty in its place, to be written over the file at the next flush."""
    config = tmp_path / "config"
    config.mkdir()
    for path in (config / name, config / f"{name}.bak"):
        path.write_text('{"offsetTable":{"T@G":{-18446744073709551616:5}}, "topicConfigTable": [')
    with pytest.raises(BaseExceptionGroup) as caught:
        async with running_broker(str(tmp_path)):
            pass
    errors = caught.value.subgroup(config_files.ConfigFileUnreadable)
    assert errors is not None and name in str(errors.exceptions[0])
    assert (config / name).read_text().startswith('{"offsetTable"')  # left as it was


async def test_config_file_falls_back_to_its_bak(tmp_path: Path) -> None:
    config = tmp_path / "config"
    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            assert (await c.send("TBak", b"x", queue_id=0)).code == ResponseCode.SUCCESS
            assert (await c.update_offset("GBak", "TBak", 0, 1)).code == ResponseCode.SUCCESS
    saved = (config / "consumerOffset.json").read_text()
    (config / "consumerOffset.json.bak").write_text(saved.replace(":1", ":5"))
    (config / "consumerOffset.json").write_text("{oops")
    async with running_broker(str(tmp_path)) as broker:
        assert broker.offsets.query("GBak", "TBak", 0) == 5  # the .bak's


def test_remove_offset_takes_the_keys_that_split_into_topic_and_group(tmp_path: Path) -> None:
    """ConsumerOffsetManager.removeOffset (deleteSubGroup -removeOffset): a key goes only when splitting it at
    '@' gives exactly the topic and the group, as Java's String.split does (trailing empty parts dropped)."""
    from rocketpy.broker.groups import ConsumerOffsetManager

    offsets = ConsumerOffsetManager(str(tmp_path))
    for key in ("T@G", "U@G", "a@b@G", "T@", "@G", "T@GG"):
        offsets.table[key] = {0: 1}
    offsets.remove_group("G")
    assert sorted(offsets.table) == ["T@", "T@GG", "a@b@G"]
    offsets.remove_group("b@G")  # "a@b@G" splits into three parts: Java keeps it
    offsets.remove_group("")  # "T@" splits into one part
    assert sorted(offsets.table) == ["T@", "T@GG", "a@b@G"]
