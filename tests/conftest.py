"""Test-wide settings: Hypothesis judged by what it finds, not by how fast a busy 2-core CI machine runs it."""

import os
import sys
import tempfile
from collections.abc import Iterator

import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, settings

from rocketpy.testing import clock_following

settings.register_profile(
    "rocketpy", deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
settings.load_profile("rocketpy")

# servers started by tests (the CLI's, in subprocesses too) log under a temporary directory, not ~/logs
os.environ.setdefault("ROCKETMQ_LOG_DIR", tempfile.mkdtemp(prefix="rocketpy-test-logs-"))

#: interop suites that start JVMs (Spark): marked ``slow`` so a quick local run can leave them out
#: (``pytest -m "not slow"``); CI runs everything
SLOW_FILES = {"test_spark_jobs.py", "test_spark_sources.py"}


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """One local Spark session per test process, shared by the Spark modules: each JVM start costs
    8-30 s on a busy 2-core machine. Adaptive execution is off: on the tests' small inputs it only
    adds jobs (the golden store's audit ran 102 jobs with it, 38 without: 4.7 s instead of 6.7 once warm)."""
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")
    os.environ["PYSPARK_PYTHON"] = sys.executable  # workers need pyarrow and rocketpy
    from rocketpy.spark.session import get_session

    session = get_session(
        "rocketpy-tests",
        "local[2,2]",  # a failed task is tried once more (the lake's retries are tested)
        {
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.sql.adaptive.enabled": "false",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
        },
        log_level="ERROR",
    )
    yield session
    session.stop()


#: the modules of the layers that have a compiled fast path beside a Python reference (codecs, remoting,
#: store, broker, client decoding): marked ``pure``, which CI runs a second time with ROCKETPY_PURE=1 so that
#: the references are known to work alone (under a minute in two workers)
PURE_PREFIXES = (
    "test_frame", "test_header", "test_bod", "test_message", "test_record", "test_codec", "test_json_header",
    "test_store", "test_commitlog", "test_consume", "test_flush", "test_index", "test_send", "test_remoting",
    "test_client_conn", "test_hotpath", "test_speedups", "test_pulled",
)


def pytest_collection_modifyitems(config, items):  # type: ignore[no-untyped-def]
    for item in items:
        if item.path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
        if item.path.parent.name == "tests" and item.path.name.startswith(PURE_PREFIXES):
            item.add_marker(pytest.mark.pure)
    # The Spark modules first: xdist's worksteal hands each worker a contiguous run of the list and
    # steals from its end, so they stay on one worker (one JVM, the session fixture shared) while the
    # other worker and the steals share out the quick tests; last, they left one worker busy alone.
    items.sort(key=lambda item: not item.path.name.startswith("test_spark_"))


#: real seconds every task must have waited before a virtual clock jumps: long enough for a
#: loopback socket or a worker thread (a flush, a config write) to answer first on a busy machine
AUTOJUMP_THRESHOLD_S = 0.02


@pytest.fixture
def virtual_clock() -> Iterator[trio.testing.MockClock]:
    """The test runs on trio's MockClock, jumping ahead whenever everything waits, and rocketpy's
    clock (every broker, NameServer and client timestamp) follows it: delays, timeouts and
    "nothing happened" checks take virtual time, not the wall clock's."""
    clock = trio.testing.MockClock(autojump_threshold=AUTOJUMP_THRESHOLD_S)
    with clock_following(clock):  # set before trio.run: pytest-trio copies this context into the test
        yield clock


@pytest.fixture
def frozen_clock() -> trio.testing.MockClock:
    """Trio's clock standing still (no autojump): any wait on a trio timer would never end."""
    return trio.testing.MockClock()


@pytest.fixture
def autojump_clock() -> None:
    """pytest-trio's own autojumping clock, which rocketpy's clock would not follow: use virtual_clock."""
    pytest.fail("use the virtual_clock fixture (rocketpy's clock follows it; it does not follow autojump_clock)")


def _counting_handler():
    """A pyarrow filesystem handler over the local disk that counts the bytes read through it."""
    import pyarrow.fs as pafs

    class CountingHandler(pafs.FileSystemHandler):
        def __init__(self):
            self.local = pafs.LocalFileSystem()
            self.read = 0

        def get_type_name(self):
            return "counting"

        def equals(self, other):
            return self is other

        def get_file_info(self, paths):
            return self.local.get_file_info(paths)

        def get_file_info_selector(self, selector):
            return self.local.get_file_info(selector)

        def open_input_file(self, path):
            import pyarrow as pa

            handler = self

            class Counting:
                def __init__(self, f):
                    self.f = f
                    self.closed = False

                def read(self, n=-1):
                    data = self.f.read(n)
                    handler.read += len(data)
                    return data

                def seek(self, pos, whence=0):
                    return self.f.seek(pos, whence)

                def tell(self):
                    return self.f.tell()

                def seekable(self):
                    return True

                def readable(self):
                    return True

                def writable(self):
                    return False

                def close(self):
                    self.closed = True
                    self.f.close()

                def size(self):
                    return os.fstat(self.f.fileno()).st_size

            return pa.PythonFile(Counting(open(path, "rb")), mode="r")

        open_input_stream = open_input_file

        def normalize_path(self, path):
            return path

        def _read_only(self, *args, **kwargs):
            raise OSError("read-only test filesystem")

        create_dir = delete_dir = delete_dir_contents = delete_root_dir_contents = delete_file = _read_only
        move = copy_file = open_output_stream = open_append_stream = _read_only

    return CountingHandler()


@pytest.fixture
def counting_fs(monkeypatch):
    """URIs ``count:///abs/path`` read through a PyFileSystem that counts bytes (not LocalFileSystem)."""
    import pyarrow.fs as pafs

    from rocketpy.spark import _files

    handler = _counting_handler()
    fs = pafs.PyFileSystem(handler)

    def uri_fs(uri):
        assert uri.startswith("count://")
        inner = uri[len("count://") :].rstrip("/") or "/"
        return fs, inner, "count://"

    monkeypatch.setattr(_files, "_uri_fs", uri_fs)
    return handler


@pytest.fixture(autouse=True)
def _children_hear_ctrl_c() -> None:
    """A test process may ignore SIGINT (pytest-xdist's workers did in full runs; a server command run
    in-process ignores late Ctrl-Cs once stopped), and an ignored signal stays ignored through exec: a
    server child (``rocketpy proxy``, ``console``) would never see the Ctrl-C its test sends, unless an
    earlier test had left a Python handler installed (Spark's does). Each test starts with Python's own
    SIGINT handling, so its children do too, as from a shell."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
