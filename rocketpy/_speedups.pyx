# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled forms of the hot path's pure functions (the accelerated build).

Each has a pure-Python twin that stays the reference: ``codecs.frame.parse_rocketmq_header`` and
``codecs.javalang.java_string_hash``; the modules use these when the extension is built and
``ROCKETPY_PURE`` is not set, and ``tests/test_speedups.py`` checks both give the same answers.
Anything unusual (lengths that do not add up, bad UTF-8) is handed back to the pure-Python
function, which decides what is an error and how it is worded.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int16_t, int32_t, uint8_t, uint32_t


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
    if n < 21:
        return fallback(data)
    rlen = _int32(p + 13)
    if rlen < 0 or 17 + <Py_ssize_t>rlen + 4 > n:
        return fallback(data)
    pos = 17 + rlen
    elen = _int32(p + pos)
    pos += 4
    if elen < 0 or pos + elen != n:
        return fallback(data)
    cdef object remark = None
    cdef dict ext
    try:
        if rlen:
            remark = PyUnicode_DecodeUTF8(<const char*>(p + 17), rlen, NULL)
        if not elen:
            return (_int16(p), p[2], _int16(p + 3), _int32(p + 5), _int32(p + 9), remark, None)
        ext = {}
        while pos < n:
            if pos + 2 > n:
                return fallback(data)
            klen = _int16(p + pos)
            if klen < 0:
                return fallback(data)
            kstart = pos + 2
            kend = kstart + klen
            if kend + 4 > n:
                return fallback(data)
            vlen = _int32(p + kend)
            if vlen < 0 or kend + 4 + vlen > n:
                return fallback(data)
            ext[PyUnicode_DecodeUTF8(<const char*>(p + kstart), klen, NULL)] = PyUnicode_DecodeUTF8(
                <const char*>(p + kend + 4), vlen, NULL
            )
            pos = kend + 4 + vlen
    except UnicodeDecodeError:
        return fallback(data)
    return (_int16(p), p[2], _int16(p + 3), _int32(p + 5), _int32(p + 9), remark, ext)


def java_string_hash(str text):
    """Java's String.hashCode (over UTF-16 code units) as a signed 32-bit int."""
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


# -- the send hot path ----------------------------------------------------------------------------

from cpython.buffer cimport PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport int64_t
from libc.stdio cimport snprintf
from libc.string cimport memcpy

cdef int32_t _MESSAGE_MAGIC_CODE = -626843481  # 0xDAA320A7


cdef inline void _put32(uint8_t* p, int64_t v) noexcept:
    p[0] = (v >> 24) & 0xFF
    p[1] = (v >> 16) & 0xFF
    p[2] = (v >> 8) & 0xFF
    p[3] = v & 0xFF


cdef inline void _put64(uint8_t* p, int64_t v) noexcept:
    _put32(p, v >> 32)
    _put32(p + 4, v & 0xFFFFFFFF)


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
    cdef Py_ssize_t total = 83 + bl + sl + nb + nt + np
    if pos + total > limit:
        return -1
    cdef Py_buffer view
    PyObject_GetBuffer(buf, &view, PyBUF_WRITABLE)
    cdef uint8_t* p
    try:
        if pos < 0 or pos + total > view.len:
            raise ValueError("record runs past the buffer")
        p = <uint8_t*>view.buf + pos
        _put32(p, total)
        _put32(p + 4, _MESSAGE_MAGIC_CODE)
        _put32(p + 8, body_crc)
        _put32(p + 12, queue_id)
        _put32(p + 16, flag)
        _put64(p + 20, queue_offset)
        _put64(p + 28, physical_offset)
        _put32(p + 36, sys_flag)
        _put64(p + 40, born_timestamp)
        p += 48
        memcpy(p, PyBytes_AS_STRING(born_host), bl)
        p += bl
        _put32(p, born_port)
        _put64(p + 4, store_timestamp)
        p += 12
        memcpy(p, PyBytes_AS_STRING(store_host), sl)
        p += sl
        _put32(p, store_port)
        _put32(p + 4, reconsume_times)
        _put64(p + 8, prepared_transaction_offset)
        _put32(p + 16, nb)
        p += 20
        memcpy(p, PyBytes_AS_STRING(body), nb)
        p += nb
        p[0] = <uint8_t>nt
        memcpy(p + 1, PyBytes_AS_STRING(topic), nt)
        p += 1 + nt
        p[0] = (np >> 8) & 0xFF
        p[1] = np & 0xFF
        memcpy(p + 2, PyBytes_AS_STRING(properties), np)
    finally:
        PyBuffer_Release(&view)
    return total


def send_answer(
    int32_t version, int32_t opaque, bytes msg_id_prefix, int64_t physical_offset, int32_t queue_id,
    int64_t queue_offset, bytes tail,
):
    """The ROCKETMQ-header SEND answer (send_fast.FastSend._binary_answer's bytes): code 0, remark null,
    msgId (the prefix and the offset in 16 hex digits), queueId, queueOffset, then ``tail``."""
    cdef char qid[24]
    cdef char qoff[24]
    cdef char hexoff[24]
    cdef int nq = snprintf(qid, 24, "%d", queue_id)
    cdef int no = snprintf(qoff, 24, "%lld", <long long>queue_offset)
    snprintf(hexoff, 24, "%016llX", <unsigned long long>physical_offset)
    cdef Py_ssize_t npre = len(msg_id_prefix), ntail = len(tail)
    cdef Py_ssize_t nmid = npre + 16
    cdef Py_ssize_t ext_len = 41 + nmid + nq + no + ntail
    cdef Py_ssize_t hlen = 21 + ext_len
    cdef bytes out = PyBytes_FromStringAndSize(NULL, 8 + hlen)
    cdef uint8_t* p = <uint8_t*>PyBytes_AS_STRING(out)
    _put32(p, 4 + hlen)
    _put32(p + 4, (1 << 24) | hlen)
    p += 8
    p[0] = 0
    p[1] = 0  # code SUCCESS
    p[2] = 0  # language JAVA
    p[3] = (version >> 8) & 0xFF
    p[4] = version & 0xFF
    _put32(p + 5, opaque)
    _put32(p + 9, 1)  # the response flag
    _put32(p + 13, 0)  # no remark
    _put32(p + 17, ext_len)
    p += 21
    memcpy(p, b"\x00\x05msgId", 7)
    _put32(p + 7, nmid)
    memcpy(p + 11, PyBytes_AS_STRING(msg_id_prefix), npre)
    memcpy(p + 11 + npre, hexoff, 16)
    p += 11 + nmid
    memcpy(p, b"\x00\x07queueId", 9)
    _put32(p + 9, nq)
    memcpy(p + 13, qid, nq)
    p += 13 + nq
    memcpy(p, b"\x00\x0bqueueOffset", 13)
    _put32(p + 13, no)
    memcpy(p + 17, qoff, no)
    p += 17 + no
    memcpy(p, PyBytes_AS_STRING(tail), ntail)
    return out
