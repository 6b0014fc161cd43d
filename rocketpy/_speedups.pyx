# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The accelerated build: the one fast form of each hot step, beside its Python reference.

* ``parse_rocketmq_header`` (reference ``codecs.frame.parse_rocketmq_header_py``) and
  ``java_string_hash`` (``javacompat.lang.java_string_hash_py``): anything unusual (lengths that do not
  add up, bad UTF-8) is handed back to the Python function, which decides what is an error and how it
  is worded (``tests/test_speedups.py``);
* the send lane: ``SendCore`` (reference ``broker.processors.send.send_message``, with
  ``broker.processors.send_lane`` holding what it consults), the store's ``PlainAppender`` (reference
  ``MessageStore.put_message``), ``dispatch_plain`` (reference ``MessageStore.do_dispatch``), and
  ``send_answer`` (reference: the general path's encoded response) (``tests/test_send_fast.py``);
* the Spark sources' CommitLog walk (``crc32_ranges``, ``record_positions``, ``gather_ranges``);
* ``parse_json_header`` (reference ``RemotingCommand._from_json_header``) and ``read_frames`` (reference
  ``FrameSplitter`` and ``RemotingCommand.decode``): plain JSON headers (a client's
  answers) read without the json module; anything else handed back (``tests/test_json_header_fast.py``);
* ``plain_records`` (reference ``codecs.record.plain_records_py``): a pull body's plainly consistent records
  in one call, the first unusual one left to the record-by-record path (``tests/test_hotpath.py``);
* ``PulledDecoder`` (references ``codecs.record.pulled_messages_py`` and ``plain_messages_py``): the MessageExt
  objects a consumer keeps from a PULL body, or all of a body's, built in one pass (``tests/test_pulled_decode.py``).

The modules take these through ``rocketpy.accel.compiled`` (None when not built or ROCKETPY_PURE is set).
Layout numbers come from ``_layouts.pxi``, generated from the construct definitions.

``FlushWake`` (reference ``store.flush_wake.PyFlushWake``, ``tests/test_flush_wake.py``) wakes the group
commit's flush thread and msyncs the posted CommitLog range with the GIL released.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int16_t, int32_t, uint8_t, uint32_t

# the layouts' offsets and sizes (BIN_*, REC_*, CQ_*, INDEX_*), generated from the construct definitions
include "_layouts.pxi"


cdef inline int32_t _int32(const uint8_t* p) noexcept:
    return <int32_t>((<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | <uint32_t>p[3])


cdef inline int16_t _int16(const uint8_t* p) noexcept:
    return <int16_t>((p[0] << 8) | p[1])


def parse_rocketmq_header(bytes data, fallback):
    """(code, language, version, opaque, flag, remark, ext_fields) of a ROCKETMQ binary header;
    ``fallback(data)`` decides whatever is not plain."""
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data)
    cdef const uint8_t* p = <const uint8_t*>PyBytes_AS_STRING(data)
    cdef Py_ssize_t pos, kstart, kend, vlen, klen
    cdef int32_t rlen, elen
    if n < BIN_HEADER_MIN:
        return fallback(data)
    rlen = _int32(p + BIN_REMARK_LEN_AT)
    if rlen < 0 or BIN_REMARK_AT + <Py_ssize_t>rlen + BIN_EXT_LEN_SIZE > n:
        return fallback(data)
    pos = BIN_REMARK_AT + rlen
    elen = _int32(p + pos)
    pos += BIN_EXT_LEN_SIZE
    if elen < 0 or pos + elen != n:
        return fallback(data)
    cdef object remark = None
    cdef dict ext
    try:
        if rlen:
            remark = PyUnicode_DecodeUTF8(<const char*>(p + BIN_REMARK_AT), rlen, NULL)
        if not elen:
            return (_int16(p + BIN_CODE_AT), p[BIN_LANGUAGE_AT], _int16(p + BIN_VERSION_AT), _int32(p + BIN_OPAQUE_AT),
                    _int32(p + BIN_FLAG_AT), remark, None)
        ext = {}
        while pos < n:
            if pos + EXT_KEY_LEN_SIZE > n:
                return fallback(data)
            klen = _int16(p + pos)
            if klen < 0:
                return fallback(data)
            kstart = pos + EXT_KEY_LEN_SIZE
            kend = kstart + klen
            if kend + EXT_VALUE_LEN_SIZE > n:
                return fallback(data)
            vlen = _int32(p + kend)
            if vlen < 0 or kend + EXT_VALUE_LEN_SIZE + vlen > n:
                return fallback(data)
            ext[PyUnicode_DecodeUTF8(<const char*>(p + kstart), klen, NULL)] = PyUnicode_DecodeUTF8(
                <const char*>(p + kend + EXT_VALUE_LEN_SIZE), vlen, NULL
            )
            pos = kend + EXT_VALUE_LEN_SIZE + vlen
    except UnicodeDecodeError:
        return fallback(data)
    return (_int16(p + BIN_CODE_AT), p[BIN_LANGUAGE_AT], _int16(p + BIN_VERSION_AT), _int32(p + BIN_OPAQUE_AT),
            _int32(p + BIN_FLAG_AT), remark, ext)


cdef int32_t _jhash(str text) noexcept:
    cdef uint32_t h = 0
    cdef Py_UCS4 ch
    cdef uint32_t c
    for ch in text:
        c = <uint32_t>ch
        if c > 0xFFFF:
            c -= 0x10000
            h = h * 31 + (0xD800 + (c >> 10))
            h = h * 31 + (0xDC00 + (c & 0x3FF))
        else:
            h = h * 31 + c
    return <int32_t>h


def java_string_hash(str text):
    """Java's String.hashCode (over UTF-16 code units) as a signed 32-bit int."""
    return _jhash(text)


# -- the send hot path ----------------------------------------------------------------------------

from cpython.buffer cimport PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport int64_t
from libc.stdio cimport snprintf
from libc.string cimport memcmp, memcpy
from posix.uio cimport iovec, pwritev


cdef inline void _put32(uint8_t* p, int64_t v) noexcept:
    p[0] = (v >> 24) & 0xFF
    p[1] = (v >> 16) & 0xFF
    p[2] = (v >> 8) & 0xFF
    p[3] = v & 0xFF


cdef inline void _put64(uint8_t* p, int64_t v) noexcept:
    _put32(p, v >> 32)
    _put32(p + 4, v & 0xFFFFFFFF)


cdef Py_ssize_t _write_head(
    uint8_t* p, Py_ssize_t total, int32_t body_crc, int32_t queue_id, int32_t flag,
    int64_t queue_offset, int64_t physical_offset, int32_t sys_flag, int64_t born_timestamp, const uint8_t* born_host,
    Py_ssize_t bl, int32_t born_port, int64_t store_timestamp, const uint8_t* store_host, Py_ssize_t sl,
    int32_t store_port, int32_t reconsume_times, int64_t prepared_transaction_offset, Py_ssize_t nb,
) noexcept:
    """A record's fields before its body (at most _HEAD_MAX bytes): how many."""
    cdef uint8_t* start = p
    _put32(p + REC_TOTAL_SIZE_AT, total)
    _put32(p + REC_MAGIC_CODE_AT, MESSAGE_MAGIC_CODE)
    _put32(p + REC_BODY_CRC_AT, body_crc)
    _put32(p + REC_QUEUE_ID_AT, queue_id)
    _put32(p + REC_FLAG_AT, flag)
    _put64(p + REC_QUEUE_OFFSET_AT, queue_offset)
    _put64(p + REC_PHYSICAL_OFFSET_AT, physical_offset)
    _put32(p + REC_SYS_FLAG_AT, sys_flag)
    _put64(p + REC_BORN_TIMESTAMP_AT, born_timestamp)
    p += REC_BORN_HOST_AT
    memcpy(p, born_host, bl)
    p += bl
    _put32(p + REC_BORN_PORT_AFTER_BORN_HOST, born_port)
    _put64(p + REC_STORE_TIMESTAMP_AFTER_BORN_HOST, store_timestamp)
    p += REC_STORE_HOST_AFTER_BORN_HOST
    memcpy(p, store_host, sl)
    p += sl
    _put32(p + REC_STORE_PORT_AFTER_STORE_HOST, store_port)
    _put32(p + REC_RECONSUME_TIMES_AFTER_STORE_HOST, reconsume_times)
    _put64(p + REC_PREPARED_TRANSACTION_OFFSET_AFTER_STORE_HOST, prepared_transaction_offset)
    _put32(p + REC_BODY_LEN_AFTER_STORE_HOST, nb)
    return p + REC_SEGMENT2_END - start


cdef inline Py_ssize_t _write_mid(uint8_t* p, const uint8_t* topic, Py_ssize_t nt, Py_ssize_t np) noexcept:
    """A record's fields between its body and its properties (topic length, topic, properties length):
    how many bytes."""
    p[0] = <uint8_t>nt  # REC_TOPIC_LEN_SIZE: one byte
    memcpy(p + REC_TOPIC_LEN_SIZE, topic, nt)
    p += REC_TOPIC_LEN_SIZE + nt
    p[0] = (np >> 8) & 0xFF  # REC_PROPERTIES_LEN_SIZE: two bytes
    p[1] = np & 0xFF
    return REC_TOPIC_LEN_SIZE + nt + REC_PROPERTIES_LEN_SIZE


#: room for a record's head (_write_head: 112 bytes with IPv6 hosts) and its mid part (_write_mid: topics
#: are under 128 bytes)
cdef enum:
    _HEAD_MAX = 128
    _MID_MAX = 136


cdef Py_ssize_t _write_record_at(
    uint8_t* p, Py_ssize_t total, int32_t body_crc, int32_t queue_id, int32_t flag,
    int64_t queue_offset, int64_t physical_offset, int32_t sys_flag, int64_t born_timestamp, const uint8_t* born_host,
    Py_ssize_t bl, int32_t born_port, int64_t store_timestamp, const uint8_t* store_host, Py_ssize_t sl,
    int32_t store_port, int32_t reconsume_times, int64_t prepared_transaction_offset, const uint8_t* body,
    Py_ssize_t nb, const uint8_t* topic, Py_ssize_t nt, const uint8_t* properties, Py_ssize_t np,
) noexcept:
    p += _write_head(
        p, total, body_crc, queue_id, flag, queue_offset, physical_offset, sys_flag, born_timestamp, born_host, bl,
        born_port, store_timestamp, store_host, sl, store_port, reconsume_times, prepared_transaction_offset, nb,
    )
    memcpy(p, body, nb)
    p += nb
    p += _write_mid(p, topic, nt, np)
    memcpy(p, properties, np)
    return total


cdef bint _pwrite_record(
    int fd, int64_t at, Py_ssize_t total, int32_t body_crc, int32_t queue_id, int32_t flag,
    int64_t queue_offset, int64_t physical_offset, int32_t sys_flag, int64_t born_timestamp, const uint8_t* born_host,
    Py_ssize_t bl, int32_t born_port, int64_t store_timestamp, const uint8_t* store_host, Py_ssize_t sl,
    int32_t store_port, int32_t reconsume_times, int64_t prepared_transaction_offset, const uint8_t* body,
    Py_ssize_t nb, const uint8_t* topic, Py_ssize_t nt, const uint8_t* properties, Py_ssize_t np,
) noexcept:
    """_write_record_at's bytes written at ``at`` of the file ``fd`` with one pwritev, the body and the
    properties from where they are (no copy, no page fault): whether all of it was written. The GIL stays
    held, so the file cannot be closed between the caller's look at ``fd`` and the write."""
    cdef uint8_t head[_HEAD_MAX]
    cdef uint8_t mid[_MID_MAX]
    cdef iovec iov[4]
    iov[0].iov_base = head
    iov[0].iov_len = _write_head(
        head, total, body_crc, queue_id, flag, queue_offset, physical_offset, sys_flag, born_timestamp, born_host,
        bl, born_port, store_timestamp, store_host, sl, store_port, reconsume_times, prepared_transaction_offset, nb,
    )
    iov[1].iov_base = <void*>body
    iov[1].iov_len = nb
    iov[2].iov_base = mid
    iov[2].iov_len = _write_mid(mid, topic, nt, np)
    iov[3].iov_base = <void*>properties
    iov[3].iov_len = np
    return pwritev(fd, iov, 4, at) == total


def write_record(
    object buf, Py_ssize_t pos, Py_ssize_t limit, int32_t body_crc, int32_t queue_id, int32_t flag,
    int64_t queue_offset, int64_t physical_offset, int32_t sys_flag, int64_t born_timestamp, bytes born_host,
    int32_t born_port, int64_t store_timestamp, bytes store_host, int32_t store_port, int32_t reconsume_times,
    int64_t prepared_transaction_offset, bytes body, bytes topic, bytes properties,
):
    """Write one CommitLog record (codecs.message.build_record's bytes) into ``buf`` at ``pos``, if it ends
    at or before ``limit``: its size, or -1 when it does not fit. Hosts are 4 or 16 bytes as sys_flag says,
    the topic is under 128 bytes and the properties under 32 KiB (the caller checked)."""
    cdef Py_ssize_t bl = len(born_host), sl = len(store_host), nb = len(body), nt = len(topic), np = len(properties)
    cdef Py_ssize_t total = REC_FIXED_LEN + bl + sl + nb + nt + np
    if pos + total > limit:
        return -1
    cdef Py_buffer view
    PyObject_GetBuffer(buf, &view, PyBUF_WRITABLE)
    try:
        if pos < 0 or pos + total > view.len:
            raise ValueError("record runs past the buffer")
        _write_record_at(
            <uint8_t*>view.buf + pos, total, body_crc, queue_id, flag, queue_offset, physical_offset, sys_flag,
            born_timestamp, <const uint8_t*>PyBytes_AS_STRING(born_host), bl, born_port, store_timestamp,
            <const uint8_t*>PyBytes_AS_STRING(store_host), sl, store_port, reconsume_times,
            prepared_transaction_offset, <const uint8_t*>PyBytes_AS_STRING(body), nb,
            <const uint8_t*>PyBytes_AS_STRING(topic), nt, <const uint8_t*>PyBytes_AS_STRING(properties), np,
        )
    finally:
        PyBuffer_Release(&view)
    return total


cdef inline uint8_t* _put_key(uint8_t* p, const char* key, Py_ssize_t klen, Py_ssize_t vlen) noexcept:
    """An ext field's key and value length (EXT_FIELD); returns where the value goes."""
    p[0] = (klen >> 8) & 0xFF  # EXT_KEY_LEN_SIZE: two bytes
    p[1] = klen & 0xFF
    memcpy(p + EXT_KEY_LEN_SIZE, key, klen)
    p += EXT_KEY_LEN_SIZE + klen
    _put32(p, vlen)
    return p + EXT_VALUE_LEN_SIZE


def send_answer(
    int32_t version, int32_t opaque, bytes msg_id_prefix, int64_t physical_offset, int32_t queue_id,
    int64_t queue_offset, bytes tail,
):
    """The ROCKETMQ-header SEND answer (the general path's, respond()'s bytes): code 0, remark null,
    msgId (the prefix and the offset in 16 hex digits), queueId, queueOffset, then ``tail``."""
    cdef char qid[24]
    cdef char qoff[24]
    cdef char hexoff[24]
    cdef int nq = snprintf(qid, 24, "%d", queue_id)
    cdef int no = snprintf(qoff, 24, "%lld", <long long>queue_offset)
    snprintf(hexoff, 24, "%016llX", <unsigned long long>physical_offset)
    cdef Py_ssize_t npre = len(msg_id_prefix), ntail = len(tail)
    cdef Py_ssize_t nmid = npre + 16
    cdef Py_ssize_t entry = EXT_KEY_LEN_SIZE + EXT_VALUE_LEN_SIZE
    cdef Py_ssize_t ext_len = 3 * entry + 5 + 7 + 11 + nmid + nq + no + ntail  # msgId, queueId, queueOffset
    cdef Py_ssize_t hlen = BIN_HEADER_MIN + ext_len
    cdef bytes out = PyBytes_FromStringAndSize(NULL, FRAME_PREFIX_SIZE + hlen)
    cdef uint8_t* p = <uint8_t*>PyBytes_AS_STRING(out)
    _put32(p, 4 + hlen)
    _put32(p + 4, (1 << 24) | hlen)
    p += FRAME_PREFIX_SIZE
    p[BIN_CODE_AT] = 0
    p[BIN_CODE_AT + 1] = 0  # code SUCCESS
    p[BIN_LANGUAGE_AT] = 0  # language JAVA
    p[BIN_VERSION_AT] = (version >> 8) & 0xFF
    p[BIN_VERSION_AT + 1] = version & 0xFF
    _put32(p + BIN_OPAQUE_AT, opaque)
    _put32(p + BIN_FLAG_AT, 1)  # the response flag
    _put32(p + BIN_REMARK_LEN_AT, 0)  # no remark
    _put32(p + BIN_REMARK_AT, ext_len)
    p += BIN_HEADER_MIN
    p = _put_key(p, b"msgId", 5, nmid)
    memcpy(p, PyBytes_AS_STRING(msg_id_prefix), npre)
    memcpy(p + npre, hexoff, 16)
    p = _put_key(p + nmid, b"queueId", 7, nq)
    memcpy(p, qid, nq)
    p = _put_key(p + nq, b"queueOffset", 11, no)
    memcpy(p, qoff, no)
    p += no
    memcpy(p, PyBytes_AS_STRING(tail), ntail)
    return out


# -- the send lane on whole frames --------------------------------------------------------------------

from cpython.unicode cimport PyUnicode_AsUTF8String

cdef int _MAX_ENTRIES = 64
#: property names longer in all take the general path: plans are kept per sequence of names, and a
#: producer making up long names would have kept 4,096 of up to 32 KB each
cdef Py_ssize_t _MAX_PLAN_NAMES = 512
# the send header's fields the lane reads, by their V2 letter (V1 spells them out)
cdef enum:
    F_GROUP = 0
    F_TOPIC = 1
    F_DTOPIC = 2
    F_DNUMS = 3
    F_QID = 4
    F_SYSFLAG = 5
    F_BORN = 6
    F_FLAG = 7
    F_PROPS = 8
    F_RT = 9
    F_UNIT = 10
    F_MRT = 11
    F_BATCH = 12
    N_FIELDS = 13

cdef tuple _V1_FIELD_NAMES = (
    b"producerGroup", b"topic", b"defaultTopic", b"defaultTopicQueueNums", b"queueId", b"sysFlag",
    b"bornTimestamp", b"flag", b"properties", b"reconsumeTimes", b"unitMode", b"maxReconsumeTimes", b"batch",
)


cdef tuple _V1_FIELD_NAMES_STR = tuple([n.decode() for n in _V1_FIELD_NAMES])
cdef tuple _V2_FIELD_NAMES_STR = tuple([chr(97 + i) for i in range(N_FIELDS)])


cdef object _fill_json_answer(tuple template, int32_t opaque, bytes prefix, int64_t phys, int32_t queue_id,
                              int64_t queue_offset):
    """The JSON SEND answer from SendLane's template: literal pieces with the msgId (0), queueId (1),
    queueOffset (2) and opaque (3) between them, behind the frame's length prefix."""
    cdef char buf[24]
    cdef int nb
    values = [None, None, None, None]
    nb = snprintf(buf, 24, "%016llX", <unsigned long long>phys)
    values[0] = prefix + PyBytes_FromStringAndSize(buf, nb)
    nb = snprintf(buf, 24, "%d", queue_id)
    values[1] = PyBytes_FromStringAndSize(buf, nb)
    nb = snprintf(buf, 24, "%lld", <long long>queue_offset)
    values[2] = PyBytes_FromStringAndSize(buf, nb)
    nb = snprintf(buf, 24, "%d", opaque)
    values[3] = PyBytes_FromStringAndSize(buf, nb)
    pieces, slots = template
    out = [b"", pieces[0]]
    for k in range(len(<tuple>slots)):
        out.append(values[<int>(<tuple>slots)[k]])
        out.append((<tuple>pieces)[k + 1])
    header = b"".join(out)
    cdef Py_ssize_t hlen = PyBytes_GET_SIZE(header)
    cdef bytes framed = PyBytes_FromStringAndSize(NULL, 8 + hlen)
    cdef uint8_t* q = <uint8_t*>PyBytes_AS_STRING(framed)
    _put32(q, 4 + hlen)
    _put32(q + 4, hlen)  # serialize type JSON (0) in the top byte
    memcpy(q + 8, PyBytes_AS_STRING(header), hlen)
    return framed


cdef inline bint _parse_long(const uint8_t* p, Py_ssize_t n, int64_t lo, int64_t hi, int64_t* out) noexcept:
    """A plain decimal (optional '-', at most 18 digits) within [lo, hi]; the rest is parse_java_int's."""
    cdef Py_ssize_t i = 0
    cdef bint neg = False
    cdef int64_t v = 0
    if n > 0 and p[0] == 45:  # '-'
        neg = True
        i = 1
    if i >= n or n - i > 18:
        return False
    while i < n:
        if p[i] < 48 or p[i] > 57:
            return False
        v = v * 10 + (p[i] - 48)
        i += 1
    if neg:
        v = -v
    if v < lo or v > hi:
        return False
    out[0] = v
    return True


cdef inline bint _is_true(const uint8_t* p, Py_ssize_t n) noexcept:
    """Java's Boolean.parseBoolean: "true" in any case."""
    return n == 4 and (p[0] | 32) == 116 and (p[1] | 32) == 114 and (p[2] | 32) == 117 and (p[3] | 32) == 101


cdef inline bint _ascii(const uint8_t* p, Py_ssize_t n) noexcept:
    cdef Py_ssize_t i
    for i in range(n):
        if p[i] >= 0x80:
            return False
    return True


cdef inline bint _is_false_value(const uint8_t* p, Py_ssize_t sep, Py_ssize_t end) noexcept:
    """Whether the entry's value is "false" in any case (WAIT=false: the producer does not wait)."""
    cdef const uint8_t* v = p + sep + 1
    return end - sep - 1 == 5 and (v[0] | 32) == 102 and (v[1] | 32) == 97 and (v[2] | 32) == 108 and (
        v[3] | 32) == 115 and (v[4] | 32) == 101


cdef class PlainAppender:
    """MessageStore.put_message for a plain message, without the message object: the record written
    straight into the CommitLog's last file under the put lock (by pwritev, see
    MappedFile.advise_writing), its ConsumeQueue and index dispatch queued in
    ``store.pending`` for MessageStore.settle. The store owns it (``MessageStore.plain_appender``) and
    the send lane calls it; put_message stays the reference (tests/test_send_fast.py compares stores).

    Plain: no delay, not transactional, the hosts' sys_flag bits set, topic and properties within
    their limits (the caller checked)."""

    cdef object store
    cdef object commitlog
    cdef object crc32
    cdef Py_ssize_t end_blank

    def __init__(self, store):
        from .codecs.compression import crc32
        from .store.commitlog import END_FILE_MIN_BLANK_LENGTH
        self.store = store
        self.commitlog = store.commitlog
        self.crc32 = crc32
        self.end_blank = END_FILE_MIN_BLANK_LENGTH

    cdef object append(self, str topic, int64_t queue_id, bytes topic_b, int64_t msg_flag, int64_t sys_flag,
                       int64_t born_ts, bytes born_ip, int64_t born_port, bytes store_ip, int64_t store_port,
                       int64_t reconsume, const uint8_t* body, Py_ssize_t nb, bytes props, int64_t tags_code,
                       object keys, object uniq, object body_obj):
        """(physical offset, queue offset), or None: the store refuses puts now, or the record does not
        fit in the current file (put_message closes it and rolls over)."""
        store = self.store
        if not store.put_allowed:
            return None
        # what _pwrite_record's fixed buffers hold (the send lane checks these; put() from Python may not)
        if PyBytes_GET_SIZE(topic_b) > 127 or PyBytes_GET_SIZE(born_ip) not in (4, 16) or \
                PyBytes_GET_SIZE(store_ip) not in (4, 16):
            return None
        cl = self.commitlog
        cdef int64_t crc = self.crc32(body_obj) & 0x7FFFFFFF
        cdef Py_ssize_t bl = PyBytes_GET_SIZE(born_ip), sl = PyBytes_GET_SIZE(store_ip)
        cdef Py_ssize_t nt = PyBytes_GET_SIZE(topic_b), np = PyBytes_GET_SIZE(props)
        cdef Py_ssize_t total = REC_FIXED_LEN + bl + sl + nb + nt + np
        cdef Py_ssize_t pos, limit
        cdef int64_t queue_offset, phys, store_ts
        cdef int fd
        cdef Py_buffer view
        key = (topic, queue_id)
        lock = cl.lock
        table = cl.topic_queue_table
        with lock:
            files = cl.mfq.files
            if not files:
                return None
            mf = files[len(files) - 1]  # (wraparound is off in this module)
            pos = mf.wrote_position
            limit = cl.file_size - self.end_blank
            if pos + total > limit or pos + total > mf.allocated:  # (past allocated: put_message allocates)
                return None
            store_ts = cl.clock()
            queue_offset = table.get(key, 0)
            phys = <int64_t>mf.file_from_offset + pos
            fd = mf.write_fd
            if fd >= 0:  # the file being written takes records by pwritev (see MappedFile.advise_writing)
                if not _pwrite_record(
                    fd, pos, total, <int32_t>crc, <int32_t>queue_id, <int32_t>msg_flag,
                    queue_offset, phys, <int32_t>sys_flag, born_ts, <const uint8_t*>PyBytes_AS_STRING(born_ip), bl,
                    <int32_t>born_port, store_ts, <const uint8_t*>PyBytes_AS_STRING(store_ip), sl,
                    <int32_t>store_port, <int32_t>reconsume, 0, body, nb,
                    <const uint8_t*>PyBytes_AS_STRING(topic_b), nt, <const uint8_t*>PyBytes_AS_STRING(props), np,
                ):
                    return None  # put_message writes it again and reports what the file says
            else:
                PyObject_GetBuffer(mf.mm, &view, PyBUF_WRITABLE)
                try:
                    if pos < 0 or pos + total > view.len:
                        raise ValueError("record runs past the file")
                    _write_record_at(
                        <uint8_t*>view.buf + pos, total, <int32_t>crc, <int32_t>queue_id, <int32_t>msg_flag,
                        queue_offset, phys, <int32_t>sys_flag, born_ts, <const uint8_t*>PyBytes_AS_STRING(born_ip),
                        bl, <int32_t>born_port, store_ts, <const uint8_t*>PyBytes_AS_STRING(store_ip), sl,
                        <int32_t>store_port, <int32_t>reconsume, 0, body, nb,
                        <const uint8_t*>PyBytes_AS_STRING(topic_b), nt, <const uint8_t*>PyBytes_AS_STRING(props), np,
                    )
                finally:
                    PyBuffer_Release(&view)
            mf.wrote_position = pos + total
            mf.store_timestamp = store_ts
            table[key] = queue_offset + 1
        store.pending.append((topic, queue_id, phys, total, tags_code, store_ts, queue_offset, keys, uniq))
        return (phys, queue_offset)

    def put(self, str topic, int64_t queue_id, bytes topic_b, int64_t msg_flag, int64_t sys_flag, int64_t born_ts,
            bytes born_ip, int64_t born_port, bytes store_ip, int64_t store_port, int64_t reconsume, bytes body,
            bytes props, int64_t tags_code=0, object keys=None, object uniq=None):
        """:meth:`append` from Python (tests, tools): the same put, the body given as bytes."""
        return self.append(topic, queue_id, topic_b, msg_flag, sys_flag, born_ts, born_ip, born_port, store_ip,
                           store_port, reconsume, <const uint8_t*>PyBytes_AS_STRING(body), PyBytes_GET_SIZE(body),
                           props, tags_code, keys, uniq, body)



cdef class SendCore:
    """The send lane on a frame's bytes (send_lane.SendLane's ``takes`` and ``answer``): a plain
    SEND_MESSAGE(_V2) checked as the general path checks it, appended through the store's appender and
    answered, without decoding the frame into a RemotingCommand. Whatever is not the plain case answers
    None and the frame goes the general way; tests/test_send_fast.py holds both to the same bytes."""

    cdef object lane
    cdef object broker
    cdef PlainAppender appender
    cdef object json_loads
    cdef dict tags_cache

    def __init__(self, lane):
        import json
        self.lane = lane
        self.broker = lane.broker
        self.appender = lane.store.plain_appender
        self.json_loads = json.loads
        self.tags_cache = {}

    def takes(self, object frame):
        """Whether :meth:`answer` should see ``frame`` (the connection asks per frame): a SEND_MESSAGE or
        SEND_MESSAGE_V2 with a ROCKETMQ binary header, or a JSON one as fastjson writes it."""
        if not isinstance(frame, bytes):
            return False
        cdef Py_ssize_t n = PyBytes_GET_SIZE(frame)
        cdef const uint8_t* p = <const uint8_t*>PyBytes_AS_STRING(frame)
        cdef int16_t code
        if n < FRAME_PREFIX_SIZE + BIN_HEADER_MIN:
            return False
        if p[4] == 1:
            code = _int16(p + FRAME_PREFIX_SIZE + BIN_CODE_AT)
            return code == 10 or code == 310  # SEND_MESSAGE, SEND_MESSAGE_V2
        if p[4] != 0:
            return False
        return memcmp(p + 8, b'{"code":310,', 12) == 0 or memcmp(p + 8, b'{"code":10,', 11) == 0

    def answer(self, ctx, object frame):
        """The encoded answer (b\"\" for a oneway send or one held for the disk), or None: decode the frame
        and take the general path."""
        if not isinstance(frame, bytes):
            return None
        cdef Py_ssize_t n = PyBytes_GET_SIZE(frame)
        cdef const uint8_t* p = <const uint8_t*>PyBytes_AS_STRING(frame)
        cdef Py_ssize_t hlen, pos, hend, klen, vlen, kstart, vstart
        cdef int32_t code, opaque, flag, rlen, elen
        cdef int field
        cdef Py_ssize_t fpos[N_FIELDS]
        cdef Py_ssize_t flen[N_FIELDS]
        cdef int i
        if n < FRAME_PREFIX_SIZE + BIN_HEADER_MIN or p[4] > 1:
            return None
        hlen = (<Py_ssize_t>p[5] << 16) | (<Py_ssize_t>p[6] << 8) | p[7]
        hend = FRAME_PREFIX_SIZE + hlen
        if hend > n or hlen < BIN_HEADER_MIN:
            return None
        if p[4] == 0:
            return self._answer_json(ctx, frame, p, n, hend)
        code = _int16(p + FRAME_PREFIX_SIZE + BIN_CODE_AT)
        flag = _int32(p + FRAME_PREFIX_SIZE + BIN_FLAG_AT)
        if flag & 1:
            return None
        opaque = _int32(p + FRAME_PREFIX_SIZE + BIN_OPAQUE_AT)
        rlen = _int32(p + FRAME_PREFIX_SIZE + BIN_REMARK_LEN_AT)
        if rlen != 0:
            return None
        elen = _int32(p + FRAME_PREFIX_SIZE + BIN_REMARK_AT)  # no remark: the ext fields' length is there
        pos = FRAME_PREFIX_SIZE + BIN_HEADER_MIN
        if elen < 0 or pos + elen != hend:
            return None
        for i in range(N_FIELDS):
            fpos[i] = -1
            flen[i] = 0
        while pos < hend:
            if pos + 2 > hend:
                return None
            klen = _int16(p + pos)
            kstart = pos + 2
            if klen < 0 or kstart + klen + 4 > hend:
                return None
            vlen = _int32(p + kstart + klen)
            vstart = kstart + klen + 4
            if vlen < 0 or vstart + vlen > hend:
                return None
            pos = vstart + vlen
            field = -1
            if code == 310:
                if klen == 1 and 97 <= p[kstart] <= 109:  # 'a'..'m'
                    field = p[kstart] - 97
            elif code == 10:
                for i in range(N_FIELDS):
                    name = <bytes>_V1_FIELD_NAMES[i]
                    if PyBytes_GET_SIZE(name) == klen and memcmp(PyBytes_AS_STRING(name), <const char*>(p + kstart), klen) == 0:
                        field = i
                        break
            else:
                return None
            if field < 0:
                # a field the lane does not read: still text the usual decoding takes
                if not _ascii(p + kstart, klen + 4 + vlen):
                    return None
                continue
            if fpos[field] >= 0:
                return None  # a field twice: the usual decoding decides which one counts
            fpos[field] = vstart
            flen[field] = vlen
            if field != F_PROPS and field != F_TOPIC and not _ascii(p + kstart, klen + 4 + vlen):
                return None
        for i in range(8):  # the @CFNotNull fields
            if fpos[i] < 0:
                return None
        if flen[F_PROPS] == 0:
            return None
        if fpos[F_BATCH] >= 0 and _is_true(p + fpos[F_BATCH], flen[F_BATCH]):
            return None
        if fpos[F_UNIT] >= 0 and _is_true(p + fpos[F_UNIT], flen[F_UNIT]):
            return None
        return self._send(ctx, frame, p, p + hend, n - hend, hend, opaque, flag, fpos, flen, False)

    cdef object _answer_json(self, ctx, object frame, const uint8_t* p, Py_ssize_t n, Py_ssize_t hend):
        """answer() for a JSON header: the stdlib's parser reads it (the usual decoding's first choice);
        anything but plain ints and string ext fields is left to the usual way."""
        cdef Py_ssize_t fpos[N_FIELDS]
        cdef Py_ssize_t flen[N_FIELDS]
        cdef int i
        cdef Py_ssize_t at = 0
        try:
            data = self.json_loads(PyBytes_FromStringAndSize(<const char*>(p + 8), hend - 8))
        except (ValueError, RecursionError):
            return None
        if type(data) is not dict:
            return None
        code = data.get("code")
        opaque = data.get("opaque", 0)
        flag = data.get("flag", 0)
        version = data.get("version", 0)
        language = data.get("language", "JAVA")
        if (
            type(code) is not int or type(opaque) is not int or type(flag) is not int or type(version) is not int
            or not (-0x80000000 <= opaque <= 0x7FFFFFFF and -0x80000000 <= flag <= 0x7FFFFFFF)
            or not (-0x80000000 <= version <= 0x7FFFFFFF) or type(language) is not str
            or data.get("remark") is not None or (code != 10 and code != 310) or flag & 1
        ):
            return None
        ext = data.get("extFields")
        if type(ext) is not dict:
            return None
        names = _V1_FIELD_NAMES_STR if code == 10 else _V2_FIELD_NAMES_STR
        parts = []
        for i in range(N_FIELDS):
            value = (<dict>ext).get(names[i])
            if value is None:
                fpos[i] = -1
                flen[i] = 0
                continue
            if type(value) is not str:
                return None  # the usual decoding writes other JSON values out as text
            try:
                b = PyUnicode_AsUTF8String(value)
            except UnicodeEncodeError:
                return None
            fpos[i] = at
            flen[i] = PyBytes_GET_SIZE(b)
            at += flen[i]
            parts.append(b)
        for i in range(8):  # the @CFNotNull fields
            if fpos[i] < 0:
                return None
        if flen[F_PROPS] == 0:
            return None
        fields = b"".join(parts)
        cdef const uint8_t* fp = <const uint8_t*>PyBytes_AS_STRING(fields)
        if fpos[F_BATCH] >= 0 and _is_true(fp + fpos[F_BATCH], flen[F_BATCH]):
            return None
        if fpos[F_UNIT] >= 0 and _is_true(fp + fpos[F_UNIT], flen[F_UNIT]):
            return None
        return self._send(ctx, frame, fp, p + hend, n - hend, hend, <int32_t>opaque, <int32_t>flag, fpos, flen, True)

    cdef object _send(self, ctx, object frame, const uint8_t* p, const uint8_t* body_p, Py_ssize_t body_len,
                      Py_ssize_t hend, int32_t opaque, int32_t flag, Py_ssize_t* fpos, Py_ssize_t* flen, bint json):
        cdef object lane = self.lane
        cdef object broker = self.broker
        cdef int64_t queue_id, sys_flag, born_ts, msg_flag, reconsume, unused
        cdef Py_ssize_t ppos = fpos[F_PROPS], plen = flen[F_PROPS]
        cdef Py_ssize_t starts[64]
        cdef Py_ssize_t ends[64]
        cdef Py_ssize_t seps[64]
        cdef int count = 0, j, k
        cdef Py_ssize_t i, s, q, total
        cdef uint8_t* nk
        cdef uint8_t* sp
        cdef Py_ssize_t ncl
        cdef int nord
        cdef int64_t tags_code = 0
        cdef int t
        # -- the topic
        try:
            topic = PyUnicode_DecodeUTF8(<const char*>(p + fpos[F_TOPIC]), flen[F_TOPIC], NULL)
        except UnicodeDecodeError:
            return None
        topic_b = lane.topics.get(topic)
        if topic_b is None:
            topic_b = lane.first_sight(topic)
            if topic_b is None:
                return None
        tc = broker.topics.table.get(topic)
        if tc is None or not (broker.config.broker_permission & 2):
            return None
        # -- the numbers
        if not _parse_long(p + fpos[F_QID], flen[F_QID], 0, 0x7FFFFFFF, &queue_id):
            return None
        if not _parse_long(p + fpos[F_SYSFLAG], flen[F_SYSFLAG], -0x80000000, 0x7FFFFFFF, &sys_flag):
            return None
        if not _parse_long(p + fpos[F_BORN], flen[F_BORN], -0x7FFFFFFFFFFFFFFF, 0x7FFFFFFFFFFFFFFF, &born_ts):
            return None
        if not _parse_long(p + fpos[F_FLAG], flen[F_FLAG], -0x80000000, 0x7FFFFFFF, &msg_flag):
            return None
        # (a present "" fails _parse_long too: V2's decoding refuses it, V1's drops it; the general path decides)
        reconsume = 0
        if fpos[F_RT] >= 0 and not _parse_long(p + fpos[F_RT], flen[F_RT], -0x80000000, 0x7FFFFFFF, &reconsume):
            return None
        # unused here, but Java's header decoding parses them: a value it refuses is the general path's error
        if not _parse_long(p + fpos[F_DNUMS], flen[F_DNUMS], -0x80000000, 0x7FFFFFFF, &unused):
            return None
        if fpos[F_MRT] >= 0 and not _parse_long(p + fpos[F_MRT], flen[F_MRT], -0x80000000, 0x7FFFFFFF, &unused):
            return None
        if queue_id >= max(<int64_t>tc.write_queue_nums, <int64_t>tc.read_queue_nums):
            return None
        if sys_flag & 0xC:  # TRANSACTION_ROLLBACK_TYPE: prepared, commit or rollback
            return None
        if not _ascii(p + ppos, plen):
            try:
                PyUnicode_DecodeUTF8(<const char*>(p + ppos), plen, NULL)
            except UnicodeDecodeError:
                return None
        # -- the properties: entries name\x01value split on \x02 (one trailing \x02 dropped)
        if p[ppos + plen - 1] == 2:
            plen -= 1
        s = ppos
        q = -1
        for i in range(ppos, ppos + plen + 1):
            if i == ppos + plen or p[i] == 2:
                # an entry needs exactly one \x01, with a name before it and a value after it
                if q < 0 or q == s or q == i - 1 or count >= _MAX_ENTRIES:
                    return None
                starts[count] = s
                seps[count] = q
                ends[count] = i
                count += 1
                s = i + 1
                q = -1
            elif p[i] == 1:
                if q >= 0:
                    return None
                q = i
        # plans are kept per sequence of names
        total = count - 1
        for j in range(count):
            total += seps[j] - starts[j]
        if total > _MAX_PLAN_NAMES:
            return None
        names_key = PyBytes_FromStringAndSize(NULL, total)
        nk = <uint8_t*>PyBytes_AS_STRING(names_key)
        for j in range(count):
            memcpy(nk, p + starts[j], seps[j] - starts[j])
            nk += seps[j] - starts[j]
            if j + 1 < count:
                nk[0] = 2
                nk += 1
        raw_plans = lane.plans
        plan = raw_plans.get(names_key, False)
        if plan is False:
            try:
                plan = lane.plan(names_key)
            except UnicodeDecodeError:
                plan = None
            raw_plans[names_key] = plan
        if plan is None:
            return None
        order, tags_at, keys_at, uniq_at, wait_at = <tuple>plan
        # -- waiting for the disk (SYNC_FLUSH): the answer is held until the group commit covers it; a
        # SYNC_MASTER's wait for its slave is the general path's (per message, as Java decides it)
        hold = False
        if broker.answers_after_store():
            if wait_at is None or not _is_false_value(p, seps[<int>wait_at], ends[<int>wait_at]):
                if json or ctx.nursery is None or flag & 2 or broker.ha.is_sync_master:
                    return None
                hold = True
        # -- the stored properties: the plan's order, CLUSTER last among the client's entries
        state = lane.identity
        store_ip, store_port, prefix_b, tail, cluster_b, json_answer = <tuple>state
        ncl = PyBytes_GET_SIZE(cluster_b)
        nord = len(<tuple>order)
        total = nord - 1
        for k in range(nord):
            j = <int>(<tuple>order)[k]
            total += ncl if j == count else ends[j] - starts[j]
        if total > 32767 or body_len > broker.config.store.max_message_size:
            return None
        stored = PyBytes_FromStringAndSize(NULL, total)
        sp = <uint8_t*>PyBytes_AS_STRING(stored)
        for k in range(nord):
            j = <int>(<tuple>order)[k]
            if j == count:
                memcpy(sp, PyBytes_AS_STRING(cluster_b), ncl)
                sp += ncl
            else:
                memcpy(sp, p + starts[j], ends[j] - starts[j])
                sp += ends[j] - starts[j]
            if k + 1 < nord:
                sp[0] = 2
                sp += 1
        # -- hosts, tags, keys
        attributes = ctx.connection.attributes
        born_host = attributes.get("born_host")
        if born_host is None:
            born_host = lane.born_host(ctx)
            if born_host is None:
                return None
        born_ip, born_port = <tuple>born_host
        sys_flag &= ~(0x10 | 0x20)  # BORNHOST_V6_FLAG, STOREHOSTADDRESS_V6_FLAG
        if PyBytes_GET_SIZE(born_ip) == 16:
            sys_flag |= 0x10
        if PyBytes_GET_SIZE(store_ip) == 16:
            sys_flag |= 0x20
        if tags_at is not None:
            t = <int>tags_at
            if ends[t] > seps[t] + 1:
                tags_b = PyBytes_FromStringAndSize(<const char*>(p + seps[t] + 1), ends[t] - seps[t] - 1)
                cached = self.tags_cache.get(tags_b)
                if cached is None:
                    cached = _jhash(tags_b.decode())
                    if len(self.tags_cache) < 4096 and len(tags_b) <= 255:  # a hostile 32 KB tag is not kept
                        self.tags_cache[tags_b] = cached
                tags_code = <int64_t>cached
        keys = None
        uniq = None
        if keys_at is not None:
            t = <int>keys_at
            keys = PyUnicode_DecodeUTF8(<const char*>(p + seps[t] + 1), ends[t] - seps[t] - 1, NULL)
        if uniq_at is not None:
            t = <int>uniq_at
            uniq = PyUnicode_DecodeUTF8(<const char*>(p + seps[t] + 1), ends[t] - seps[t] - 1, NULL)
        body = memoryview(frame)[hend:]
        done = self.appender.append(
            topic, queue_id, topic_b, msg_flag, sys_flag, born_ts, born_ip, born_port, store_ip, store_port,
            reconsume, body_p, body_len, stored, tags_code, keys, uniq, body,
        )
        if done is None:
            return None
        lane.pending_puts += 1
        if flag & 2:
            return b""
        phys, queue_offset = <tuple>done
        if json:
            return _fill_json_answer(<tuple>json_answer, opaque, prefix_b, phys, <int32_t>queue_id, queue_offset)
        answer = send_answer(lane.version, opaque, prefix_b, phys, <int32_t>queue_id, queue_offset, tail)
        if hold:
            lane.hold_answer(ctx, answer)
            return b""
        return answer



# -- the send lane's deferred dispatch ---------------------------------------------------------------

cdef object _cq_put(object cq, int64_t offset, int64_t size, int64_t tags_code, int64_t cq_offset):
    """ConsumeQueue.put (the reference) for the common case: a unit appended after the last in a file
    with room whose blocks are allocated; anything else is the Python method's."""
    cdef Py_buffer view
    cdef Py_ssize_t wp, allocated
    cdef uint8_t* u
    if offset + size <= <int64_t>cq.max_physic_offset:
        return True
    files = cq.mfq.files
    if not files:
        return cq.put(offset, size, tags_code, cq_offset)
    mf = files[len(files) - 1]
    wp = mf.wrote_position
    allocated = mf.allocated  # never past the file's size
    if wp == 0 or wp + CQ_UNIT_SIZE > allocated:
        return cq.put(offset, size, tags_code, cq_offset)
    if cq_offset != 0 and cq_offset * CQ_UNIT_SIZE != wp + <int64_t>mf.file_from_offset:
        return cq.put(offset, size, tags_code, cq_offset)  # already there, or out of order: as Python decides
    cq.max_physic_offset = offset + size
    PyObject_GetBuffer(mf.mm, &view, PyBUF_WRITABLE)
    try:
        if wp + CQ_UNIT_SIZE > view.len:
            raise ValueError("unit runs past the file")
        u = <uint8_t*>view.buf + wp
        _put64(u + CQ_COMMIT_LOG_OFFSET_AT, offset)
        _put32(u + CQ_SIZE_AT, size)
        _put64(u + CQ_TAGS_CODE_AT, tags_code)
    finally:
        PyBuffer_Release(&view)
    mf.wrote_position = wp + CQ_UNIT_SIZE
    return True


cdef bint _index_put(object f, str key, int64_t phy_offset, int64_t store_ts) except -1:
    """IndexFile.put_key (the reference); False when the file is full."""
    cdef int64_t index_count = f.index_count, index_num = f.index_num, hash_slot_num = f.hash_slot_num
    cdef int64_t begin_ts, time_diff, h
    cdef int32_t slot_value
    cdef Py_ssize_t abs_slot, abs_index
    cdef Py_buffer view
    cdef uint8_t* m
    if index_count >= index_num:
        return False
    if <Py_ssize_t>f.entries_at + (index_count + 1) * INDEX_ENTRY_SIZE > <Py_ssize_t>f.mf.allocated:
        return False  # the entry's blocks are not allocated yet: IndexFile.put_key allocates them
    h = <int64_t>_jhash(key)
    if h < 0:
        h = -h
    if h > 0x7FFFFFFF:
        h = 0  # Math.abs(Integer.MIN_VALUE) stays negative: the file uses 0
    abs_slot = INDEX_HEADER_SIZE + (h % hash_slot_num) * INDEX_HASH_SLOT_SIZE
    abs_index = <Py_ssize_t>f.entries_at + index_count * INDEX_ENTRY_SIZE
    begin_ts = f.begin_timestamp
    if begin_ts <= 0:
        time_diff = 0
    else:
        time_diff = store_ts - begin_ts
        if time_diff < 0:
            time_diff = 0  # before the file's first entry: both Java and the Python twin land on 0
        else:
            time_diff = time_diff // 1000
        if time_diff > 0x7FFFFFFF:
            time_diff = 0x7FFFFFFF
    PyObject_GetBuffer(f.mf.mm, &view, PyBUF_WRITABLE)
    try:
        if abs_index + INDEX_ENTRY_SIZE > view.len or abs_slot + INDEX_HASH_SLOT_SIZE > view.len:
            raise ValueError("index entry runs past the file")
        m = <uint8_t*>view.buf
        slot_value = _int32(m + abs_slot)
        if slot_value <= 0 or slot_value > index_count:
            slot_value = 0
        _put32(m + abs_index + INDEX_KEY_HASH_AT, h)
        _put64(m + abs_index + INDEX_PHY_OFFSET_AT, phy_offset)
        _put32(m + abs_index + INDEX_TIME_DIFF_AT, time_diff)
        _put32(m + abs_index + INDEX_PREV_INDEX_AT, slot_value)
        _put32(m + abs_slot, index_count)
        if index_count <= 1:
            f.begin_phy_offset = phy_offset
            f.begin_timestamp = store_ts
        if slot_value == 0:
            f.hash_slot_count += 1
        index_count += 1
        f.index_count = index_count
        f.end_phy_offset = phy_offset
        f.end_timestamp = store_ts
        # the header, written through as Java's IndexHeader does
        _put64(m + INDEX_HEADER_BEGIN_TIMESTAMP_AT, <int64_t>f.begin_timestamp)
        _put64(m + INDEX_HEADER_END_TIMESTAMP_AT, store_ts)
        _put64(m + INDEX_HEADER_BEGIN_PHY_OFFSET_AT, <int64_t>f.begin_phy_offset)
        _put64(m + INDEX_HEADER_END_PHY_OFFSET_AT, phy_offset)
        _put32(m + INDEX_HEADER_HASH_SLOT_COUNT_AT, <int64_t>f.hash_slot_count)
        _put32(m + INDEX_HEADER_INDEX_COUNT_AT, index_count)
    finally:
        PyBuffer_Release(&view)
    return True


def dispatch_plain(store, list pending, index):
    """MessageStore.settle's loop (ConsumeQueue units and index keys of the send lane's appends, in order):
    the store timestamp of the last unit written, 0 if none. ``index`` is the IndexService, or None."""
    cdef int64_t last_ts = 0
    cdef int64_t phys, size, tags_code, store_ts, queue_offset
    queues = store.consume_queues
    files = index.files if index is not None else None
    for item in pending:
        topic, queue_id, phys, size, tags_code, store_ts, queue_offset, keys, uniq = <tuple>item
        per_topic = queues.get(topic)
        cq = per_topic.get(queue_id) if per_topic else None
        if cq is None:
            cq = store.find_consume_queue(topic, queue_id, create=True)
        if _cq_put(cq, phys, size, tags_code, queue_offset):
            last_ts = store_ts
        else:
            store.consume_queue_failed(topic, queue_id)
        if index is None or not (uniq or keys):
            continue
        f = files[len(files) - 1] if files else None
        if f is None or <int64_t>f.index_count >= <int64_t>f.index_num:
            index.put_keys(topic, uniq, keys, phys, store_ts)  # a new file: the Python way
            continue
        if phys < <int64_t>f.end_phy_offset:
            continue
        if uniq:
            if not _index_put(f, f"{topic}#{uniq}", phys, store_ts):
                index.put_keys(topic, uniq, keys, phys, store_ts)
                continue
        if keys:
            for key in (<str>keys).split(" "):
                if key and not _index_put(f, f"{topic}#{key}", phys, store_ts):
                    index.put_key(f"{topic}#{key}", phys, store_ts)  # a new file: the Python way
                    f = files[len(files) - 1]
    return last_ts


# -- the group commit's wake-up (reference: rocketpy.store.flush_wake.PyFlushWake) --------------------------

from cpython.ref cimport PyObject, Py_INCREF, Py_XDECREF
from libc.errno cimport errno, ETIMEDOUT
from posix.mman cimport msync as _posix_msync, MS_SYNC
from posix.time cimport clock_gettime, CLOCK_MONOTONIC, timespec


cdef extern from "<pthread.h>" nogil:
    ctypedef struct pthread_mutex_t:
        pass
    ctypedef struct pthread_cond_t:
        pass
    ctypedef struct pthread_condattr_t:
        pass
    int pthread_condattr_init(pthread_condattr_t*)
    int pthread_condattr_setclock(pthread_condattr_t*, int)
    int pthread_condattr_destroy(pthread_condattr_t*)
    int pthread_mutex_init(pthread_mutex_t*, const void*)
    int pthread_mutex_destroy(pthread_mutex_t*)
    int pthread_mutex_lock(pthread_mutex_t*)
    int pthread_mutex_unlock(pthread_mutex_t*)
    int pthread_cond_init(pthread_cond_t*, const pthread_condattr_t*)
    int pthread_cond_destroy(pthread_cond_t*)
    int pthread_cond_signal(pthread_cond_t*)
    int pthread_cond_wait(pthread_cond_t*, pthread_mutex_t*)
    int pthread_cond_timedwait(pthread_cond_t*, pthread_mutex_t*, const timespec*)


cdef inline void _after(const timespec* start, double seconds, timespec* out) noexcept nogil:
    out.tv_sec = start.tv_sec + <long>seconds
    out.tv_nsec = start.tv_nsec + <long>((seconds - <long>seconds) * 1e9)
    if out.tv_nsec >= 1000000000:
        out.tv_sec += 1
        out.tv_nsec -= 1000000000


cdef class FlushWake:
    """Wakes the group commit's flush thread, which msyncs the posted range before it needs the GIL.

    A woken Python thread waits for the GIL before it runs a line; while the event loop finishes its
    turn (tens to hundreds of µs per receive) the disk would sit idle. Here the waiting and the msync
    happen in one call that holds no GIL, so the disk starts as soon as the thread is scheduled, and
    the thread needs the GIL only to note what is on disk and answer. See PyFlushWake for the contract.
    """

    cdef pthread_mutex_t lock
    cdef pthread_cond_t cond
    cdef bint posted, stopped
    cdef PyObject* owner  # the posted range's file (a reference held here), NULL when none
    cdef size_t address
    cdef Py_ssize_t start, stop
    cdef int64_t stamp, target
    cdef int64_t count  # requests posted since the last wait took what was posted
    #: seconds the last msync done by wait() took (0.0 when it did none)
    cdef public double sync_seconds

    def __cinit__(self):
        cdef pthread_condattr_t attr
        pthread_mutex_init(&self.lock, NULL)
        # timed waits on the monotonic clock, as PyFlushWake's (a wall clock stepped back must not
        # stretch a wait, and with it a round of SYNC_FLUSH answers)
        pthread_condattr_init(&attr)
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC)
        pthread_cond_init(&self.cond, &attr)
        pthread_condattr_destroy(&attr)
        self.owner = NULL

    def __dealloc__(self):
        Py_XDECREF(self.owner)
        pthread_cond_destroy(&self.cond)
        pthread_mutex_destroy(&self.lock)

    def post(self, int64_t target, owner=None, size_t address=0, Py_ssize_t start=0, Py_ssize_t stop=0,
             int64_t stamp=0, int64_t count=1):
        """Wake the waiter for ``target`` (``count`` requests wait for it); with ``owner`` (a file mapped
        at ``address``), msync its ``[start, stop)`` first (``start`` page-aligned)."""
        cdef PyObject* drop1 = NULL
        cdef PyObject* drop2 = NULL
        cdef PyObject* new = NULL
        if owner is not None and address != 0 and stop > start:
            new = <PyObject*>owner
            Py_INCREF(owner)
        pthread_mutex_lock(&self.lock)  # never held by anyone waiting for the GIL
        self.count += count
        if not self.posted:
            drop1 = self.owner
            self.owner = new
            self.address, self.start, self.stop, self.stamp, self.target = address, start, stop, stamp, target
            self.posted = True
        else:
            if target > self.target:
                self.target = target
            if new != NULL and new == self.owner and address == self.address:
                # the same file: one range reaching both
                if start < self.start:
                    self.start = start
                if stop > self.stop:
                    self.stop = stop
                if stamp > self.stamp:
                    self.stamp = stamp
                drop1 = new
            else:
                # another file, or nothing to sync early: the waiter's Python flush does it all
                drop1, drop2 = self.owner, new
                self.owner = NULL
        pthread_mutex_unlock(&self.lock)
        # after the unlock: the woken thread then finds the lock free instead of sleeping on it once more
        pthread_cond_signal(&self.cond)
        Py_XDECREF(drop1)
        Py_XDECREF(drop2)

    def stop_waiting(self):
        """Wake the waiter for good: wait() returns what is posted, then None at once."""
        pthread_mutex_lock(&self.lock)
        self.stopped = True
        pthread_cond_signal(&self.cond)
        pthread_mutex_unlock(&self.lock)

    def pending(self):
        """The requests posted since the last wait took what was posted."""
        cdef int64_t count
        pthread_mutex_lock(&self.lock)
        count = self.count
        pthread_mutex_unlock(&self.lock)
        return count

    def wait(self, double timeout=-1.0, int64_t until=0, double linger=0.0):
        """Until something is posted (or stop_waiting, or ``timeout`` seconds when >= 0): None when
        nothing was, else ``(target, owner, start, stop, stamp, error)``: owner None when no range was
        synced; error msync's errno (0: ``[start, stop)`` of owner is on disk). Once something is
        posted, while fewer than ``until`` requests are, it waits on until ``linger`` seconds after
        the call (never once stopped)."""
        cdef timespec now, deadline, gather, synced, done
        cdef bint got = False
        cdef PyObject* owner = NULL
        cdef size_t address = 0
        cdef Py_ssize_t start = 0, stop = 0
        cdef int64_t stamp = 0, target = 0
        cdef int err = 0
        with nogil:
            clock_gettime(CLOCK_MONOTONIC, &now)
            pthread_mutex_lock(&self.lock)
            if timeout >= 0:
                _after(&now, timeout, &deadline)
            while not self.posted and not self.stopped:
                if timeout < 0:
                    pthread_cond_wait(&self.cond, &self.lock)
                elif pthread_cond_timedwait(&self.cond, &self.lock, &deadline) == ETIMEDOUT:
                    break
            if self.posted and self.count < until and linger > 0:
                _after(&now, linger, &gather)
                while self.count < until and not self.stopped:
                    if pthread_cond_timedwait(&self.cond, &self.lock, &gather) == ETIMEDOUT:
                        break
            if self.posted:
                got = True
                owner, self.owner = self.owner, NULL
                address, start, stop, stamp, target = self.address, self.start, self.stop, self.stamp, self.target
                self.posted = False
                self.count = 0
            pthread_mutex_unlock(&self.lock)
            if owner != NULL:
                clock_gettime(CLOCK_MONOTONIC, &synced)
                if _posix_msync(<void*>(address + start), <size_t>(stop - start), MS_SYNC) != 0:
                    err = errno
                clock_gettime(CLOCK_MONOTONIC, &done)
        self.sync_seconds = 0.0
        if owner != NULL:
            self.sync_seconds = (done.tv_sec - synced.tv_sec) + (done.tv_nsec - synced.tv_nsec) * 1e-9
        if not got:
            return None
        if owner == NULL:
            return (target, None, 0, 0, 0, 0)
        obj = <object>owner
        Py_XDECREF(owner)  # the reference post() took, now held by obj
        return (target, obj, start, stop, stamp, err)


# -- CommitLog reading (the Spark sources' columnar walk) ---------------------------------------
# Twins of ``spark._records._next_positions`` and of ``zlib.crc32`` over each record's body: the
# two loops of that walk that go record by record.

cdef uint32_t _CRC_TABLES[16][256]


cdef void _crc_tables_init() noexcept:
    # CRC-32 (reflected 0xEDB88320, what zlib and java.util.zip.CRC32 compute), sixteen tables so
    # the loop takes sixteen bytes a step.
    cdef uint32_t c
    cdef int i, k, t
    for i in range(256):
        c = <uint32_t>i
        for k in range(8):
            c = (c >> 1) ^ (0xEDB88320U if c & 1 else 0U)
        _CRC_TABLES[0][i] = c
    for i in range(256):
        for t in range(1, 16):
            _CRC_TABLES[t][i] = (_CRC_TABLES[t - 1][i] >> 8) ^ _CRC_TABLES[0][_CRC_TABLES[t - 1][i] & 0xFF]


_crc_tables_init()


cdef inline uint32_t _le32(const uint8_t* p) noexcept nogil:
    return <uint32_t>p[0] | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


cdef uint32_t _crc32(const uint8_t* p, Py_ssize_t n) noexcept nogil:
    cdef uint32_t c = 0xFFFFFFFFU
    cdef uint32_t a, b, d, e
    while n >= 16:
        a = _le32(p) ^ c
        b = _le32(p + 4)
        d = _le32(p + 8)
        e = _le32(p + 12)
        c = (_CRC_TABLES[15][a & 0xFF] ^ _CRC_TABLES[14][(a >> 8) & 0xFF]
             ^ _CRC_TABLES[13][(a >> 16) & 0xFF] ^ _CRC_TABLES[12][a >> 24]
             ^ _CRC_TABLES[11][b & 0xFF] ^ _CRC_TABLES[10][(b >> 8) & 0xFF]
             ^ _CRC_TABLES[9][(b >> 16) & 0xFF] ^ _CRC_TABLES[8][b >> 24]
             ^ _CRC_TABLES[7][d & 0xFF] ^ _CRC_TABLES[6][(d >> 8) & 0xFF]
             ^ _CRC_TABLES[5][(d >> 16) & 0xFF] ^ _CRC_TABLES[4][d >> 24]
             ^ _CRC_TABLES[3][e & 0xFF] ^ _CRC_TABLES[2][(e >> 8) & 0xFF]
             ^ _CRC_TABLES[1][(e >> 16) & 0xFF] ^ _CRC_TABLES[0][e >> 24])
        p += 16
        n -= 16
    while n > 0:
        c = _CRC_TABLES[0][(c ^ p[0]) & 0xFF] ^ (c >> 8)
        p += 1
        n -= 1
    return c ^ 0xFFFFFFFFU


cdef Py_ssize_t _ranges_total(Py_ssize_t size, const int64_t[::1] starts, const int64_t[::1] lengths) except -1:
    """The bytes the ranges ``[starts[i], starts[i] + lengths[i])`` hold together; ValueError if one
    is not inside a buffer of ``size`` bytes (compared without overflowing, whatever the values)."""
    cdef Py_ssize_t i, total = 0
    if lengths.shape[0] != starts.shape[0]:
        raise ValueError("starts and lengths differ in length")
    for i in range(starts.shape[0]):
        if starts[i] < 0 or starts[i] > size or lengths[i] < 0 or lengths[i] > size - starts[i]:
            raise ValueError(f"range {i} ({starts[i]}, {lengths[i]}) is outside the buffer")
        total += lengths[i]
    return total


def crc32_ranges(const uint8_t[::1] buf, const int64_t[::1] starts, const int64_t[::1] lengths, int64_t[::1] out):
    """``out[i] = zlib.crc32(buf[starts[i] : starts[i] + lengths[i]])``; every range must lie in ``buf``
    (ValueError otherwise, before anything is computed)."""
    cdef Py_ssize_t i, n = starts.shape[0]
    if out.shape[0] < n:
        raise ValueError("out is shorter than the ranges")
    if _ranges_total(buf.shape[0], starts, lengths) == 0:
        for i in range(n):
            out[i] = 0
        return
    cdef const uint8_t* base = &buf[0]
    with nogil:
        for i in range(n):
            out[i] = _crc32(base + starts[i], lengths[i])


def record_positions(
    const uint8_t[::1] buf, Py_ssize_t pos, Py_ssize_t stop, Py_ssize_t max_rows,
    int32_t magic, int32_t least, int64_t[::1] out,
):
    """(count, next position): the positions of the records from ``pos`` on whose size and magic
    look right and that fit in ``buf``, written to ``out`` (at most ``max_rows``, none at or past
    ``stop``), and where the walk stopped."""
    cdef Py_ssize_t total = buf.shape[0]
    cdef Py_ssize_t count = 0
    cdef int32_t size
    if max_rows > out.shape[0]:
        max_rows = out.shape[0]
    if stop > total - 7:
        stop = total - 7  # every size-and-magic read fits
    if pos < 0:
        raise ValueError("negative position")
    cdef const uint8_t* p = &buf[0] if total else NULL
    while count < max_rows and pos < stop:
        size = _int32(p + pos)
        if _int32(p + pos + 4) != magic or size < least or pos + size > total:
            break
        out[count] = pos
        count += 1
        pos += size
    return count, pos


def gather_ranges(const uint8_t[::1] buf, const int64_t[::1] starts, const int64_t[::1] lengths, uint8_t[::1] out):
    """Copy the ranges ``buf[starts[i] : starts[i] + lengths[i]]`` one after another into ``out``
    (which holds exactly their total); every range must lie in ``buf`` (ValueError otherwise,
    before anything is copied)."""
    cdef Py_ssize_t i, at = 0
    cdef Py_ssize_t total = _ranges_total(buf.shape[0], starts, lengths)
    if total != out.shape[0]:
        raise ValueError("out does not hold exactly the ranges' total")
    if total == 0:
        return
    cdef const uint8_t* src = &buf[0]
    cdef uint8_t* dst = &out[0]
    with nogil:
        for i in range(starts.shape[0]):
            memcpy(dst + at, src + starts[i], lengths[i])
            at += lengths[i]


# -- the client's answers: plain JSON headers -------------------------------------------------------------

cdef inline Py_ssize_t _json_string_end(const uint8_t* p, Py_ssize_t pos, Py_ssize_t n) noexcept:
    """The index of the closing quote of the string whose text starts at ``pos``; -1 when it is not plain
    (an escape or a control character, which the reference's decoder handles) or runs off the end."""
    cdef uint8_t c
    while pos < n:
        c = p[pos]
        if c == 34:  # '"'
            return pos
        if c == 92 or c < 32:  # '\\' or a control character
            return -1
        pos += 1
    return -1


cdef inline Py_ssize_t _json_int_end(const uint8_t* p, Py_ssize_t pos, Py_ssize_t n, int64_t* out) noexcept:
    """Parse -?(0|[1-9][0-9]{0,17}) at ``pos`` into ``out``: the index after it, or -1 when it is not a plain
    integer (a fraction, an exponent, a leading zero, too many digits)."""
    cdef bint neg = False
    cdef int64_t v = 0
    cdef Py_ssize_t start
    if pos < n and p[pos] == 45:  # '-'
        neg = True
        pos += 1
    start = pos
    while pos < n and 48 <= p[pos] <= 57:
        v = v * 10 + (p[pos] - 48)
        pos += 1
        if pos - start > 18:
            return -1
    if pos == start or (p[start] == 48 and pos - start > 1):
        return -1
    if pos < n and (p[pos] == 46 or p[pos] == 101 or p[pos] == 69):  # '.', 'e', 'E'
        return -1
    out[0] = -v if neg else v
    return pos


cdef inline bint _key_is(const uint8_t* p, Py_ssize_t start, Py_ssize_t end, const char* name, Py_ssize_t size) noexcept:
    # the first byte before memcmp: a call to memcmp costs more than most keys' whole comparison
    return end - start == size and p[start] == <uint8_t>name[0] and memcmp(p + start, name, size) == 0


def parse_json_header(bytes frame, Py_ssize_t start, Py_ssize_t end):
    """(code, language, version, opaque, flag, remark, ext_fields) of the JSON header ``frame[start:end]``
    when it is plain: one object without whitespace, its values integers that fit a Java int (code, version,
    opaque, flag), strings without escapes (language, remark, others) and an extFields object of such
    strings; the language is left as its name. None for anything else, which the reference
    (``RemotingCommand._from_json_header``) decodes or refuses."""
    if start < 0 or end > PyBytes_GET_SIZE(frame) or start >= end:
        return None
    return _json_header(<const uint8_t*>PyBytes_AS_STRING(frame), start, end)


cdef object _json_header(const uint8_t* p, Py_ssize_t start, Py_ssize_t end):
    """parse_json_header on ``p[start:end]`` (``start < end``)."""
    cdef Py_ssize_t n = end
    cdef Py_ssize_t pos = start, ks, ke, vs, ve
    cdef int64_t num = 0
    cdef int64_t code = 0, version = 0, opaque = 0, flag = 0
    cdef bint have_code = False
    cdef object language = "JAVA"
    cdef object remark = None
    cdef object ext = None
    cdef dict fields
    if p[pos] != 123:  # '{'
        return None
    pos += 1
    try:
        while True:
            if pos >= n or p[pos] != 34:
                return None
            ks = pos + 1
            ke = _json_string_end(p, ks, n)
            if ke < 0 or ke + 1 >= n or p[ke + 1] != 58:  # ':'
                return None
            pos = ke + 2
            if pos >= n:
                return None
            if p[pos] == 34:  # a string value
                vs = pos + 1
                ve = _json_string_end(p, vs, n)
                if ve < 0:
                    return None
                pos = ve + 1
                if _key_is(p, ks, ke, b"language", 8):
                    language = _answer_text(p + vs, ve - vs)
                elif _key_is(p, ks, ke, b"remark", 6):
                    remark = _answer_text(p + vs, ve - vs)
                elif (_key_is(p, ks, ke, b"code", 4) or _key_is(p, ks, ke, b"version", 7)
                      or _key_is(p, ks, ke, b"opaque", 6) or _key_is(p, ks, ke, b"flag", 4)
                      or _key_is(p, ks, ke, b"extFields", 9)):
                    return None  # a number as a string, or fields as a string: the reference's care
                else:  # serializeTypeCurrentRPC, or a key the header ignores: still valid UTF-8 to be plain
                    _answer_text(p + vs, ve - vs)
                    _answer_text(p + ks, ke - ks)
            elif p[pos] == 123:  # an object: extFields only
                if not _key_is(p, ks, ke, b"extFields", 9):
                    return None
                pos += 1
                fields = {}
                if pos < n and p[pos] == 125:  # '}'
                    pos += 1
                else:
                    while True:
                        if pos >= n or p[pos] != 34:
                            return None
                        vs = pos + 1
                        ve = _json_string_end(p, vs, n)
                        if ve < 0 or ve + 2 >= n or p[ve + 1] != 58 or p[ve + 2] != 34:
                            return None  # not "key":"string"
                        key = _answer_text(p + vs, ve - vs)
                        vs = ve + 3
                        ve = _json_string_end(p, vs, n)
                        if ve < 0:
                            return None
                        fields[key] = _answer_text(p + vs, ve - vs)
                        pos = ve + 1
                        if pos < n and p[pos] == 44:  # ','
                            pos += 1
                            continue
                        if pos < n and p[pos] == 125:  # '}'
                            pos += 1
                            break
                        return None
                ext = fields
            else:  # a number
                pos = _json_int_end(p, pos, n, &num)
                if pos < 0:
                    return None
                if _key_is(p, ks, ke, b"code", 4):
                    code = num
                    have_code = True
                elif _key_is(p, ks, ke, b"version", 7):
                    version = num
                elif _key_is(p, ks, ke, b"opaque", 6):
                    opaque = num
                elif _key_is(p, ks, ke, b"flag", 4):
                    flag = num
                elif (_key_is(p, ks, ke, b"language", 8) or _key_is(p, ks, ke, b"remark", 6)
                      or _key_is(p, ks, ke, b"extFields", 9)):
                    return None
                else:
                    _answer_text(p + ks, ke - ks)
            if pos < n and p[pos] == 44:  # ','
                pos += 1
                continue
            if pos + 1 == n and p[pos] == 125:  # the closing '}' ends the header
                break
            return None
    except UnicodeDecodeError:
        return None
    if not have_code:
        return None
    if not (-2147483648 <= code <= 2147483647 and -2147483648 <= version <= 2147483647
            and -2147483648 <= opaque <= 2147483647 and -2147483648 <= flag <= 2147483647):
        return None
    return (<int>code, language, <int>version, <int>opaque, <int>flag, remark, ext)


from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE


def read_frames(bytearray buf, Py_ssize_t pos, Py_ssize_t max_frame, make, dict languages):
    """The whole frames at ``buf[pos:]`` with plain JSON headers (see parse_json_header), each made into
    ``make(code, language, version, opaque, flag, remark, ext_fields, body)`` with the language looked up in
    ``languages``: (the commands, the position after them). It stops at the first frame that is not whole,
    not JSON, not plain, or has a bad length, for the reference (``FrameSplitter`` and
    ``RemotingCommand.decode``) to decode or refuse."""
    cdef const uint8_t* p = <const uint8_t*>PyByteArray_AS_STRING(buf)
    cdef Py_ssize_t n = PyByteArray_GET_SIZE(buf)
    cdef Py_ssize_t length, hlen, end, frame_end
    cdef list out = []
    while pos >= 0 and n - pos >= 8:
        length = _int32(p + pos)
        if length < 4 or length + 4 > max_frame or n - pos - 4 < length:
            break
        if p[pos + 4] != 0:  # serialize type: JSON only
            break
        hlen = (<Py_ssize_t>p[pos + 5] << 16) | (<Py_ssize_t>p[pos + 6] << 8) | p[pos + 7]
        if hlen > length - 4 or hlen == 0:
            break
        end = pos + 8 + hlen
        frame_end = pos + 4 + length
        plain = _json_header(p, pos + 8, end)
        if plain is None:
            break
        code, language, version, opaque, flag, remark, ext = plain
        body = PyBytes_FromStringAndSize(<const char*>(p + end), frame_end - end) if frame_end > end else None
        out.append(make(code, languages.get(language, language), version, opaque, flag, remark, ext, body))
        pos = frame_end
    return out, pos


# =========================================================================================================
# The client's fast paths: a consumer decodes every record of every PULL body, so the per-record Python work
# is paid per message (tools/bench/bench_decode.py gives the µs per message). First the records as fields
# =========================================================================================================


from libc.stdint cimport uint64_t


cdef inline int64_t _int64(const uint8_t* p) noexcept:
    return <int64_t>((<uint64_t>_int32(p) << 32) | <uint32_t>_int32(p + 4))


cdef struct _Spans:
    # where the parts of one plainly consistent record lie, relative to its start
    Py_ssize_t size  # total_size
    int32_t sys_flag
    Py_ssize_t bh  # the born host
    Py_ssize_t sh  # the store host
    Py_ssize_t pos  # the body
    Py_ssize_t blen
    Py_ssize_t bend  # the topic length byte
    Py_ssize_t tlen
    Py_ssize_t tend  # the properties length
    Py_ssize_t plen


cdef inline bint _plain_spans(const uint8_t* r, Py_ssize_t avail, _Spans* s) noexcept:
    """Whether the ``avail`` bytes at ``r`` start with a plainly consistent record (parse_record_fields'
    checks), its parts then in ``s``."""
    if avail < 8:
        return False
    s.size = _int32(r)
    if _int32(r + REC_MAGIC_CODE_AT) != MESSAGE_MAGIC_CODE or s.size < REC_FIXED_LEN + 8 or s.size > avail:
        return False
    s.sys_flag = _int32(r + REC_SYS_FLAG_AT)
    s.bh = REC_BORN_HOST_AT
    s.sh = s.bh + (REC_HOST_V6_SIZE if s.sys_flag & 16 else REC_HOST_V4_SIZE) + REC_STORE_HOST_AFTER_BORN_HOST
    s.pos = s.sh + (REC_HOST_V6_SIZE if s.sys_flag & 32 else REC_HOST_V4_SIZE) + REC_SEGMENT2_END
    if s.pos > s.size:
        return False
    s.blen = _int32(r + s.pos - 4)
    s.bend = s.pos + s.blen
    if s.blen < 0 or s.bend >= s.size:
        return False
    s.tlen = r[s.bend]
    s.tend = s.bend + 1 + s.tlen
    if s.tlen > 127 or s.tend + 2 > s.size:
        return False
    s.plen = _int16(r + s.tend)
    return s.plen >= 0 and s.tend + 2 + s.plen == s.size


cdef struct _Numbers:
    # a plainly consistent record's numeric fields (the ones MESSAGE_RECORD declares as ints, magic aside)
    int32_t body_crc, queue_id, flag, born_port, store_port, reconsume_times
    int64_t queue_offset, physical_offset, born_timestamp, store_timestamp, prepared_transaction_offset


cdef inline void _numbers(const uint8_t* r, const _Spans* s, _Numbers* f) noexcept:
    cdef const uint8_t* a = r + s.sh - REC_STORE_HOST_AFTER_BORN_HOST  # just after the born host
    cdef const uint8_t* b = r + s.pos - REC_SEGMENT2_END  # just after the store host
    f.body_crc = _int32(r + REC_BODY_CRC_AT)
    f.queue_id = _int32(r + REC_QUEUE_ID_AT)
    f.flag = _int32(r + REC_FLAG_AT)
    f.queue_offset = _int64(r + REC_QUEUE_OFFSET_AT)
    f.physical_offset = _int64(r + REC_PHYSICAL_OFFSET_AT)
    f.born_timestamp = _int64(r + REC_BORN_TIMESTAMP_AT)
    f.born_port = _int32(a + REC_BORN_PORT_AFTER_BORN_HOST)
    f.store_timestamp = _int64(a + REC_STORE_TIMESTAMP_AFTER_BORN_HOST)
    f.store_port = _int32(b + REC_STORE_PORT_AFTER_STORE_HOST)
    f.reconsume_times = _int32(b + REC_RECONSUME_TIMES_AFTER_STORE_HOST)
    f.prepared_transaction_offset = _int64(b + REC_PREPARED_TRANSACTION_OFFSET_AFTER_STORE_HOST)


cdef inline bytes _part(const uint8_t* r, Py_ssize_t start, Py_ssize_t end):
    return PyBytes_FromStringAndSize(<const char*>(r + start), end - start)


def plain_records(bytes buf):
    """parse_record_fields of the records laid back to back from the start of ``buf``, up to the first one
    that is not plainly consistent (reference ``codecs.record.plain_records_py``, ``tests/test_hotpath.py``):
    (their fields, the offset where they end)."""
    cdef const uint8_t* p = <const uint8_t*>PyBytes_AS_STRING(buf)
    cdef const uint8_t* r
    cdef Py_ssize_t n = PyBytes_GET_SIZE(buf)
    cdef Py_ssize_t off = 0
    cdef _Spans s
    cdef _Numbers f
    cdef list out = []
    while _plain_spans(p + off, n - off, &s):
        r = p + off
        _numbers(r, &s, &f)
        out.append((
            <int32_t>s.size, f.body_crc, f.queue_id, f.flag, f.queue_offset, f.physical_offset, s.sys_flag,
            f.born_timestamp, _part(r, s.bh, s.sh - REC_STORE_HOST_AFTER_BORN_HOST), f.born_port,
            f.store_timestamp, _part(r, s.sh, s.pos - REC_SEGMENT2_END), f.store_port, f.reconsume_times,
            f.prepared_transaction_offset, _part(r, s.pos, s.bend), _part(r, s.bend + 1, s.tend),
            _part(r, s.tend + 2, s.size),
        ))
        off += s.size
    return out, off


# =========================================================================================================
# The client's fast paths: a consumer's PULL body straight to MessageExt objects, no field tuples between
# =========================================================================================================


from cpython.object cimport Py_TYPE, PyTypeObject
from cpython.type cimport PyType_GenericNew
from cpython.dict cimport PyDict_GetItem
from libc.string cimport memchr

cdef extern from "Python.h":
    bint PyUnicode_IS_ASCII(object)
    Py_ssize_t PyUnicode_GET_LENGTH(object)
    const uint8_t* PyUnicode_1BYTE_DATA(object)

ctypedef int (*_setfunc)(PyObject*, PyObject*, PyObject*) except -1


cdef tuple _slot_descriptors(type cls, tuple names, PyObject** out):
    """The slot descriptors of ``names`` on ``cls`` (kept alive by the tuple returned), their pointers put in
    ``out``: TypeError when one is not a slot (a maker fills slots through their descriptors' setter)."""
    import types

    descriptors = tuple([getattr(cls, name) for name in names])
    for i, d in enumerate(descriptors):
        if type(d) is not types.MemberDescriptorType:
            raise TypeError(f"{cls.__name__}.{names[i]} is not a slot")
        out[i] = <PyObject*>d
    return descriptors

#: the MessageExt fields PulledDecoder fills, in its order (_record_view's values)
_PULLED_FIELDS = (
    "topic", "body", "flag", "properties", "_raw_properties", "queue_id", "store_size", "queue_offset",
    "sys_flag", "born_timestamp", "born_host", "store_timestamp", "store_host", "commit_log_offset",
    "body_crc", "reconsume_times", "prepared_transaction_offset", "_inflated",
)

cdef enum:
    _N_FIELDS = 18
    _CACHED_ENTRIES = 16  # the properties entries whose name and value are remembered by position
    _COMPRESSED_FLAG = 1  # MessageSysFlag.COMPRESSED_FLAG
    # what becomes of a compressed body
    _AS_STORED = 0  # left as stored (decode_messages(decompress=False))
    _CACHE_INFLATED = 1  # left, its inflation cached (decode_messages(decompress=True))
    _PULLED = 2  # inflated into the body (a consumer's pulled message)


cdef inline bint _same_text(object text, const uint8_t* p, Py_ssize_t n) noexcept:
    """Whether ``text`` (a str or None) is the ASCII text of these ``n`` bytes."""
    return (
        text is not None and PyUnicode_IS_ASCII(text) and PyUnicode_GET_LENGTH(text) == n
        and memcmp(PyUnicode_1BYTE_DATA(text), p, n) == 0
    )


cdef inline str _utf8(const uint8_t* p, Py_ssize_t n):
    # Java's new String(bytes, UTF_8): malformed input replaced. Bytes split at ASCII separators decode to
    # the pieces of the whole's decoding (a malformed sequence never swallows an ASCII byte).
    return PyUnicode_DecodeUTF8(<const char*>p, n, "replace")


cdef class _HostCache:
    # the last host seen in one position of the records, and its text (records of a body repeat a few hosts)
    cdef uint8_t ip[16]
    cdef Py_ssize_t ip_len
    cdef int32_t port
    cdef object text

    cdef object get(self, const uint8_t* ip, Py_ssize_t ip_len, int32_t port, object host_text):
        if self.text is not None and ip_len == self.ip_len and port == self.port and memcmp(ip, self.ip, ip_len) == 0:
            return self.text
        text = host_text(PyBytes_FromStringAndSize(<const char*>ip, ip_len), port)
        memcpy(self.ip, ip, ip_len)
        self.ip_len = ip_len
        self.port = port
        self.text = text
        return text


cdef class PulledDecoder:
    """The messages a consumer keeps from a PULL body (``messages``, reference ``codecs.record.pulled_messages_py``),
    or all of a body's (``records``, reference ``plain_messages_py``), built in one pass (``tests/test_pulled_decode.py``).

    The MessageExt objects are made as the dataclass's ``__init__`` would make them (every slot set through
    its descriptor); texts that repeat from record to record (topic, hosts, property names and values by
    position) are decoded once and shared.
    """

    cdef type cls
    cdef tuple descriptors  # keeps _descr alive
    cdef PyObject* _descr[_N_FIELDS]
    cdef _setfunc _set
    cdef object host_text, inflate, tags_key
    cdef object topic
    cdef list names, values
    cdef _HostCache born, store

    def __init__(self, type cls, host_text, inflate, str tags_key):
        """``cls``: MessageExt (a slots dataclass whose fields are exactly _PULLED_FIELDS, without
        __post_init__); ``host_text(ip, port)``: a host's text; ``inflate(msg)``: what a compressed pulled
        message undergoes; ``tags_key``: the TAGS property's name. TypeError when ``cls`` is not such a class."""
        import dataclasses

        slots = set()
        for k in cls.__mro__:
            slots.update(k.__dict__.get("__slots__", ()))
        names = {f.name for f in dataclasses.fields(cls)}
        if (
            names != set(_PULLED_FIELDS) or slots != names or hasattr(cls, "__post_init__")
            or cls.__new__ is not object.__new__
        ):
            raise TypeError(f"{cls.__name__} is not the slots dataclass PulledDecoder fills")
        self.descriptors = _slot_descriptors(cls, _PULLED_FIELDS, self._descr)
        self._set = <_setfunc>Py_TYPE(self.descriptors[0]).tp_descr_set
        self.cls = cls
        self.host_text = host_text
        self.inflate = inflate
        self.tags_key = tags_key
        self.names = [None] * _CACHED_ENTRIES
        self.values = [None] * _CACHED_ENTRIES
        self.born = _HostCache()
        self.store = _HostCache()

    cdef inline int _put(self, object m, int i, object v) except -1:
        return self._set(self._descr[i], <PyObject*>m, <PyObject*>v)

    cdef inline str _cached(self, list cache, Py_ssize_t i, const uint8_t* p, Py_ssize_t n):
        cdef object text
        if i >= _CACHED_ENTRIES:
            return _utf8(p, n)
        text = cache[i]
        if _same_text(text, p, n):
            return text
        text = _utf8(p, n)
        cache[i] = text
        return text

    cdef dict _properties(self, const uint8_t* p, Py_ssize_t n):
        # string_to_properties(raw.decode("utf-8", "replace")): entries split on \x02, each at its first
        # \x01; empty names or values and entries without \x01 dropped; a repeated name takes the last value
        cdef dict props = {}
        cdef Py_ssize_t start = 0, end, sep, i = 0
        cdef const uint8_t* hit
        while start < n:
            hit = <const uint8_t*>memchr(p + start, 2, n - start)
            end = hit - p if hit != NULL else n
            hit = <const uint8_t*>memchr(p + start, 1, end - start)
            if hit != NULL:
                sep = hit - p
                if sep > start and sep + 1 < end:
                    props[self._cached(self.names, i, p + start, sep - start)] = self._cached(
                        self.values, i, p + sep + 1, end - sep - 1
                    )
            i += 1
            start = end + 1
        return props

    def messages(self, bytes buf, wanted):
        """pulled_messages_py(buf, wanted): the kept messages, or None when ``buf`` is not only plain records."""
        return self._decode(buf, wanted, _PULLED)

    def records(self, bytes buf, bint decompress):
        """plain_messages_py(buf, decompress): the messages, or None when ``buf`` is not only plain records."""
        return self._decode(buf, None, _CACHE_INFLATED if decompress else _AS_STORED)

    cdef object _decode(self, bytes buf, object wanted, int how):
        cdef const uint8_t* p = <const uint8_t*>PyBytes_AS_STRING(buf)
        cdef const uint8_t* r
        cdef Py_ssize_t n = PyBytes_GET_SIZE(buf)
        cdef Py_ssize_t off = 0
        cdef _Spans s
        cdef _Numbers f
        cdef list out = []
        cdef dict props
        cdef PyObject* tag
        cdef bint compressed
        while off < n:  # all plain first, as the references ask before anything is inflated
            if not _plain_spans(p + off, n - off, &s):
                return None
            off += s.size
        off = 0
        while off < n:
            r = p + off
            _plain_spans(r, n - off, &s)
            off += s.size
            props = self._properties(r + s.tend + 2, s.plen) if s.plen else {}
            compressed = s.sys_flag & _COMPRESSED_FLAG and how != _AS_STORED
            if compressed and how == _PULLED:
                if not s.blen:
                    return None
            elif wanted is not None:  # dropped before it is built (a compressed one is inflated first)
                tag = PyDict_GetItem(props, self.tags_key)
                if tag == NULL or <object>tag not in wanted:
                    continue
            m = PyType_GenericNew(self.cls, None, None)
            if _same_text(self.topic, r + s.bend + 1, s.tlen):
                topic = self.topic
            else:
                topic = self.topic = _utf8(r + s.bend + 1, s.tlen)
            _numbers(r, &s, &f)
            self._put(m, 0, topic)
            self._put(m, 1, _part(r, s.pos, s.bend))
            self._put(m, 2, f.flag)
            self._put(m, 3, props)
            self._put(m, 4, _part(r, s.tend + 2, s.size))
            self._put(m, 5, f.queue_id)
            self._put(m, 6, <int32_t>s.size)
            self._put(m, 7, f.queue_offset)
            self._put(m, 8, s.sys_flag)
            self._put(m, 9, f.born_timestamp)
            self._put(m, 10, self.born.get(r + s.bh, s.sh - REC_STORE_HOST_AFTER_BORN_HOST - s.bh, f.born_port,
                                           self.host_text))
            self._put(m, 11, f.store_timestamp)
            self._put(m, 12, self.store.get(r + s.sh, s.pos - REC_SEGMENT2_END - s.sh, f.store_port, self.host_text))
            self._put(m, 13, f.physical_offset)
            self._put(m, 14, f.body_crc)
            self._put(m, 15, f.reconsume_times)
            self._put(m, 16, f.prepared_transaction_offset)
            self._put(m, 17, None)
            if compressed and how == _CACHE_INFLATED:
                if s.blen:
                    m.decompressed_body()
            elif compressed:
                self.inflate(m)
                if wanted is not None:
                    tag = PyDict_GetItem(props, self.tags_key)
                    if tag == NULL or <object>tag not in wanted:
                        continue
            out.append(m)
        return out


# --- client send: a producer's frame, built per message on the sender's turn ---
# ``send_frame`` (reference: ``client.send_frames.PreparedSend.frame``'s Python path, the template %-filled with
# the fields, the properties' stdlib JSON string checked by ``_written_alike``, then the frame's prefix, flag and
# opaque): a producer's SEND_MESSAGE_V2 frame in one call, or None where the reference decides (a value whose
# JSON only fastjson's writer gets right, a header too long for 24 bits, a frame over 2 GiB, a lone surrogate)
# (``tests/test_client_send_frames.py``).

cdef inline Py_ssize_t _decimal_len(long long v) noexcept:
    cdef unsigned long long m = <unsigned long long>(-(v + 1)) + 1 if v < 0 else <unsigned long long>v
    cdef Py_ssize_t n = 1 if v >= 0 else 2
    while m >= 10:
        m //= 10
        n += 1
    return n


cdef inline char* _put_decimal(char* p, long long v) noexcept:
    cdef unsigned long long m = <unsigned long long>(-(v + 1)) + 1 if v < 0 else <unsigned long long>v
    cdef char digits[24]
    cdef int i = 0
    if v < 0:
        p[0] = b'-'
        p += 1
    while True:
        digits[i] = <char>(48 + m % 10)
        i += 1
        m //= 10
        if m == 0:
            break
    while i > 0:
        i -= 1
        p[0] = digits[i]
        p += 1
    return p


cdef inline char* _put_bytes(char* p, bytes b) noexcept:
    cdef Py_ssize_t n = PyBytes_GET_SIZE(b)
    memcpy(p, PyBytes_AS_STRING(b), n)
    return p + n


cdef Py_ssize_t _json_text_len(str text) noexcept:
    """The UTF-8 length of the stdlib's JSON string of ``text`` (quotes included), or -1 where fastjson writes it
    otherwise (DEL, C1 controls, U+2028/9, a control escaped with a hex letter) or it has no UTF-8 (a surrogate)."""
    cdef Py_ssize_t n = 2
    cdef Py_UCS4 uch
    cdef uint32_t ch  # arithmetic on a Py_UCS4 would make it a str again
    for uch in text:
        ch = uch
        if ch < 0x20:
            if ch == 0x0a or ch == 0x0d or ch == 0x09 or ch == 0x08 or ch == 0x0c:
                n += 2
            elif (ch & 0x0f) >= 10:
                return -1  # \u000b, \u001a...: lower-case hex, fastjson's is upper-case
            else:
                n += 6
        elif ch == 0x22 or ch == 0x5c:
            n += 2
        elif ch < 0x7f:
            n += 1
        elif ch <= 0xa0 or ch == 0x2028 or ch == 0x2029 or 0xd800 <= ch <= 0xdfff:
            return -1
        elif ch < 0x800:
            n += 2
        elif ch < 0x10000:
            n += 3
        else:
            n += 4
    return n


cdef char* _put_json_text(char* p, str text) noexcept:
    """The JSON string _json_text_len measured, written at ``p``."""
    cdef Py_UCS4 uch
    cdef uint32_t ch
    p[0] = b'"'
    p += 1
    for uch in text:
        ch = uch
        if ch < 0x20:
            p[0] = b'\\'
            if ch == 0x0a:
                p[1] = b'n'
            elif ch == 0x0d:
                p[1] = b'r'
            elif ch == 0x09:
                p[1] = b't'
            elif ch == 0x08:
                p[1] = b'b'
            elif ch == 0x0c:
                p[1] = b'f'
            else:
                p[1] = b'u'
                p[2] = b'0'
                p[3] = b'0'
                p[4] = <char>(48 + (ch >> 4))
                p[5] = <char>(48 + (ch & 0x0f))  # a digit: _json_text_len refused the hex letters
                p += 4
            p += 2
        elif ch == 0x22 or ch == 0x5c:
            p[0] = b'\\'
            p[1] = <char>ch
            p += 2
        elif ch < 0x80:
            p[0] = <char>ch
            p += 1
        elif ch < 0x800:
            p[0] = <char>(0xc0 | (ch >> 6))
            p[1] = <char>(0x80 | (ch & 0x3f))
            p += 2
        elif ch < 0x10000:
            p[0] = <char>(0xe0 | (ch >> 12))
            p[1] = <char>(0x80 | ((ch >> 6) & 0x3f))
            p[2] = <char>(0x80 | (ch & 0x3f))
            p += 3
        else:
            p[0] = <char>(0xf0 | (ch >> 18))
            p[1] = <char>(0x80 | ((ch >> 12) & 0x3f))
            p[2] = <char>(0x80 | ((ch >> 6) & 0x3f))
            p[3] = <char>(0x80 | (ch & 0x3f))
            p += 4
    p[0] = b'"'
    return p + 1


cdef bint _escape_like_fastjsons(const char* p, Py_ssize_t n) noexcept:
    """Whether written JSON text holds no ``\\u00[01][a-f]`` (what _UNLIKE_FASTJSON looks for besides raw
    characters): a literal backslash and ``u001a`` in a value read so once escaped."""
    cdef Py_ssize_t i
    cdef char c
    for i in range(n - 5):
        if p[i] == b'\\' and p[i + 1] == b'u' and p[i + 2] == b'0' and p[i + 3] == b'0' \
                and (p[i + 4] == b'0' or p[i + 4] == b'1'):
            c = p[i + 5]
            if b'a' <= c <= b'f':
                return False
    return True


def send_frame(tuple pieces, long long queue_id, long long sys_flag, long long born, long long flag, str props,
               long long reconsume, object max_reconsume, bint batch, long long command_flag, long long opaque,
               bytes middle, bytes tail, object body):
    """A send's frame: ``pieces`` are the template's literal parts around the per-message values (queue id,
    sysFlag, born timestamp, flag, properties, reconsume times, max reconsume times when not None, batch), the
    last ending at ``"flag":``; then the command's flag, ``middle``, the opaque, ``tail`` and the body. None
    where the reference must decide."""
    cdef Py_ssize_t values = 8 if max_reconsume is not None else 7
    cdef long long max_times = max_reconsume if max_reconsume is not None else 0
    cdef long long[8] numbers
    cdef Py_ssize_t i, n, total, props_len, props_at
    cdef bytes piece, out
    cdef char* start
    cdef char* p
    if len(pieces) != values + 1 or type(body) is not bytes:
        return None
    props_len = _json_text_len(props)
    if props_len < 0:
        return None
    numbers[0] = queue_id
    numbers[1] = sys_flag
    numbers[2] = born
    numbers[3] = flag
    numbers[4] = reconsume
    numbers[5] = max_times
    n = props_len + (6 if batch else 7) + _decimal_len(command_flag) + _decimal_len(opaque) \
        + PyBytes_GET_SIZE(middle) + PyBytes_GET_SIZE(tail)
    for i in range(values + 1):
        piece = <bytes>pieces[i]
        n += PyBytes_GET_SIZE(piece)
    for i in range(6 if values == 8 else 5):
        n += _decimal_len(numbers[i])
    total = 4 + n + PyBytes_GET_SIZE(body)
    if n > 0xFFFFFF or total > 0x7FFFFFFF:
        return None
    out = PyBytes_FromStringAndSize(NULL, 4 + total)
    start = PyBytes_AS_STRING(out)
    _put32(<uint8_t*>start, total)
    _put32(<uint8_t*>start + 4, n)  # serialize type JSON: 0 in the top byte
    p = start + 8
    for i in range(4):
        p = _put_bytes(p, <bytes>pieces[i])
        p = _put_decimal(p, numbers[i])
    p = _put_bytes(p, <bytes>pieces[4])
    props_at = p - start
    p = _put_json_text(p, props)
    if not _escape_like_fastjsons(start + props_at, props_len):
        return None
    p = _put_bytes(p, <bytes>pieces[5])
    p = _put_decimal(p, reconsume)
    p = _put_bytes(p, <bytes>pieces[6])
    if values == 8:
        p = _put_decimal(p, max_times)
        p = _put_bytes(p, <bytes>pieces[7])
    if batch:
        memcpy(p, b'"true"', 6)
        p += 6
    else:
        memcpy(p, b'"false"', 7)
        p += 7
    p = _put_bytes(p, <bytes>pieces[values])
    p = _put_decimal(p, command_flag)
    p = _put_bytes(p, middle)
    p = _put_decimal(p, opaque)
    p = _put_bytes(p, tail)
    p = _put_bytes(p, body)
    return out


# ``uniq_id_text`` (reference: ``codecs.uniq_id.UniqIdGenerator``'s ``_format % (diff, count)``): a UNIQ_KEY's text,
# the generator's upper-case hex prefix, then the month's millis as 8 and the counter as 4 upper-case hex digits
# (``tests/test_message.py``).

cdef char* _UPPER_HEX = b"0123456789ABCDEF"


def uniq_id_text(bytes prefix, uint32_t diff, uint32_t count):
    cdef char buf[80]
    cdef Py_ssize_t n = PyBytes_GET_SIZE(prefix)
    cdef int i
    if n > 64 or count > 0xFFFF:
        return None
    memcpy(buf, PyBytes_AS_STRING(prefix), n)
    for i in range(8):
        buf[n + i] = _UPPER_HEX[(diff >> (28 - 4 * i)) & 0xF]
    for i in range(4):
        buf[n + 8 + i] = _UPPER_HEX[(count >> (12 - 4 * i)) & 0xF]
    return buf[:n + 12].decode("ascii")


# --- client answers: every answer's header is read, so a cost per field is paid per message ---------------
# What a client does with each answer. ``_answer_text`` gives _json_header (above) one str object
# for each text that recurs in answers' headers (their keys, the language, a send answer's region and trace
# flag): no decode, no new object and a hash already known, per field of every answer (the property tests of
# ``tests/test_json_header_fast.py`` hold the readers to the reference). ``SendResultMaker`` makes the
# SendResult of a plain send answer (reference ``client.api.ClientAPI.send_result``'s own path,
# ``tests/test_client_answers.py``).

from cpython.unicode cimport PyUnicode_CheckExact

#: texts every answer (or every send and pull answer) repeats
_ANSWER_TEXTS = (
    "JAVA", "JSON", "serializeTypeCurrentRPC", "msgId", "queueId", "queueOffset", "transactionId", "MSG_REGION",
    "TRACE_ON", "true", "false", "DefaultRegion", "suggestWhichBrokerId", "nextBeginOffset", "minOffset",
    "maxOffset", "0",
)
cdef tuple _ANSWER_UTF8 = tuple([t.encode() for t in _ANSWER_TEXTS])
cdef enum:
    _N_ANSWER_TEXTS = 17
assert len(_ANSWER_TEXTS) == _N_ANSWER_TEXTS
cdef const char* _answer_ptr[_N_ANSWER_TEXTS]
cdef Py_ssize_t _answer_len[_N_ANSWER_TEXTS]
cdef PyObject* _answer_str[_N_ANSWER_TEXTS]


cdef void _answer_texts_init():
    cdef Py_ssize_t i
    for i in range(_N_ANSWER_TEXTS):
        _answer_ptr[i] = PyBytes_AS_STRING(_ANSWER_UTF8[i])  # the module's tuples keep both alive
        _answer_len[i] = PyBytes_GET_SIZE(_ANSWER_UTF8[i])
        _answer_str[i] = <PyObject*>_ANSWER_TEXTS[i]


_answer_texts_init()


cdef inline object _answer_text(const uint8_t* p, Py_ssize_t n):
    """The UTF-8 text ``p[:n]`` as a str (UnicodeDecodeError when it is not UTF-8): a recurring text's one object."""
    cdef Py_ssize_t i
    for i in range(_N_ANSWER_TEXTS):
        if _answer_len[i] == n and n and <uint8_t>_answer_ptr[i][0] == p[0] and memcmp(_answer_ptr[i], p, n) == 0:
            return <object>_answer_str[i]
    return PyUnicode_DecodeUTF8(<const char*>p, n, NULL)


cdef inline bint _ascii_digits(object text, Py_ssize_t most, int64_t* out) noexcept:
    """Whether ``text`` is an exact str of 1 to ``most`` ASCII digits (then its value in ``out``)."""
    cdef Py_ssize_t i, n
    cdef const uint8_t* d
    cdef int64_t v = 0
    if not PyUnicode_CheckExact(text) or not PyUnicode_IS_ASCII(text):
        return False
    n = PyUnicode_GET_LENGTH(text)
    if n == 0 or n > most:
        return False
    d = PyUnicode_1BYTE_DATA(text)
    for i in range(n):
        if not 48 <= d[i] <= 57:
            return False
        v = v * 10 + (d[i] - 48)
    out[0] = v
    return True


cdef object _send_answer_fields(object ext):
    """(msgId, queueId, queueOffset, transactionId, region, traceOn) of a send's answer whose extFields are the
    usual ones (a str msgId, queueId and queueOffset in plain digits, no transactionId or a str one), as
    ``client.api.send_answer_fields_py`` gives them; None for anything else (the reference then decides)."""
    cdef PyObject* v
    cdef int64_t queue_id, queue_offset
    if type(ext) is not dict:
        return None
    v = PyDict_GetItem(ext, "msgId")
    if v == NULL or not PyUnicode_CheckExact(<object>v):
        return None
    msg_id = <object>v
    v = PyDict_GetItem(ext, "transactionId")
    if v == NULL:
        transaction_id = None
    elif PyUnicode_CheckExact(<object>v):
        transaction_id = <object>v
    else:
        return None
    v = PyDict_GetItem(ext, "queueId")
    if v == NULL or not _ascii_digits(<object>v, 9, &queue_id):
        return None
    v = PyDict_GetItem(ext, "queueOffset")
    if v == NULL or not _ascii_digits(<object>v, 18, &queue_offset):
        return None
    v = PyDict_GetItem(ext, "MSG_REGION")
    region = <object>v if v != NULL and <object>v else "DefaultRegion"
    v = PyDict_GetItem(ext, "TRACE_ON")
    trace_on = True if v == NULL else (<object>v != "false")
    return msg_id, queue_id, queue_offset, transaction_id, region, trace_on


#: SendResult's fields, in the order SendResultMaker fills them (its dataclass's order)
_SEND_RESULT_FIELDS = (
    "send_status", "msg_id", "message_queue", "queue_offset", "offset_msg_id", "transaction_id", "region_id",
    "trace_on",
)
_QUEUE_FIELDS = ("topic", "broker_name", "queue_id", "extra")


cdef class SendResultMaker:
    """``ClientAPI.send_result`` of a send's answer whose fields are plain (see send_answer_fields): the SendResult
    and its MessageQueue made as their dataclasses' ``__init__`` would make them; None for any other answer (the
    reference then reads it) (``tests/test_client_answers.py``)."""

    cdef type result_cls, queue_cls
    cdef tuple descriptors  # keeps _descr alive
    cdef PyObject* _descr[8]
    cdef _setfunc _set

    def __init__(self, type result_cls, type queue_cls):
        """``result_cls``: SendResult (a slots dataclass of exactly _SEND_RESULT_FIELDS, without __post_init__);
        ``queue_cls``: MessageQueue (a dataclass of exactly _QUEUE_FIELDS with instance dicts, without
        __post_init__). TypeError for classes that are not such."""
        import dataclasses

        names = tuple([f.name for f in dataclasses.fields(result_cls)])
        if names != _SEND_RESULT_FIELDS or hasattr(result_cls, "__post_init__") or \
                result_cls.__new__ is not object.__new__:
            raise TypeError(f"{result_cls.__name__} is not the slots dataclass SendResultMaker fills")
        self.descriptors = _slot_descriptors(result_cls, _SEND_RESULT_FIELDS, self._descr)
        self._set = <_setfunc>Py_TYPE(self.descriptors[0]).tp_descr_set
        names = tuple([f.name for f in dataclasses.fields(queue_cls)])
        if names != _QUEUE_FIELDS or hasattr(queue_cls, "__post_init__") or queue_cls.__new__ is not object.__new__ \
                or "__slots__" in queue_cls.__dict__:
            raise TypeError(f"{queue_cls.__name__} is not the dataclass SendResultMaker fills")
        self.result_cls = result_cls
        self.queue_cls = queue_cls

    def __call__(self, status, uniq_id, topic, broker_name, ext):
        """The SendResult of a send answer with these extFields, or None."""
        fields = _send_answer_fields(ext)
        if fields is None:
            return None
        msg_id, queue_id, queue_offset, transaction_id, region, trace_on = <tuple>fields
        mq = PyType_GenericNew(self.queue_cls, None, None)
        mq.topic = topic
        mq.broker_name = broker_name
        mq.queue_id = queue_id
        mq.extra = {}
        result = PyType_GenericNew(self.result_cls, None, None)
        self._put(result, 0, status)
        self._put(result, 1, uniq_id)
        self._put(result, 2, mq)
        self._put(result, 3, queue_offset)
        self._put(result, 4, msg_id)
        self._put(result, 5, transaction_id)
        self._put(result, 6, region)
        self._put(result, 7, trace_on)
        return result

    cdef inline int _put(self, object m, int i, object v) except -1:
        return self._set(self._descr[i], <PyObject*>m, <PyObject*>v)
