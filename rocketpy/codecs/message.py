"""Messages as RocketMQ 4.9.8 lays them out, in one import (many modules take these names from here).

Each part lives in a module named for what it holds:

* :mod:`.message_types`: :class:`Message` and :class:`MessageExt`, the typed views;
* :mod:`.record`: the CommitLog / PULL-body record (``MESSAGE_RECORD``), its fast path, decode and encode;
* :mod:`.batch`: SEND_BATCH_MESSAGE bodies;
* :mod:`.properties_string`: the properties string and the tags hash;
* :mod:`.compression`: body CRC and compression;
* :mod:`.hosts`: ``ip:port`` hosts and offset message ids;
* :mod:`.uniq_id`: client-made unique ids (UNIQ_KEY).
"""

from __future__ import annotations

from .batch import BATCH_ENTRY, decode_batch, encode_batch
from .compression import DEFAULT_COMPRESS_LEVEL, body_crc, compress_body, compression_of, decompress_body
from .hosts import (
    create_offset_msg_id,
    decode_offset_msg_id,
    format_host,
    host_bytes,
    offset_msg_id,
    offset_msg_id_prefix,
    parse_host,
)
from .message_types import Message, MessageExt
from .properties_string import (
    NAME_VALUE_SEPARATOR,
    PROPERTY_SEPARATOR,
    properties_to_string,
    string_to_properties,
    tags_hash_code,
)
from .record import (
    BLANK_MAGIC_CODE,
    MESSAGE_MAGIC_CODE,
    MESSAGE_RECORD,
    RECORD_MAGIC_AT,
    RECORD_SYS_FLAG_AT,
    build_record,
    decode_message,
    decode_messages,
    encode_message,
    parse_record_fields,
    peek_size_magic,
    peek_store_timestamp,
    record_field_at,
    record_length,
    record_properties,
)
from .uniq_id import UniqIdGenerator, uniq_id_ip, uniq_id_pid, uniq_id_time

__all__ = [
    "BATCH_ENTRY",
    "BLANK_MAGIC_CODE",
    "DEFAULT_COMPRESS_LEVEL",
    "MESSAGE_MAGIC_CODE",
    "MESSAGE_RECORD",
    "NAME_VALUE_SEPARATOR",
    "PROPERTY_SEPARATOR",
    "RECORD_MAGIC_AT",
    "RECORD_SYS_FLAG_AT",
    "Message",
    "MessageExt",
    "UniqIdGenerator",
    "body_crc",
    "build_record",
    "compress_body",
    "compression_of",
    "create_offset_msg_id",
    "decode_batch",
    "decode_message",
    "decode_messages",
    "decode_offset_msg_id",
    "decompress_body",
    "encode_batch",
    "encode_message",
    "format_host",
    "host_bytes",
    "offset_msg_id",
    "offset_msg_id_prefix",
    "parse_host",
    "parse_record_fields",
    "peek_size_magic",
    "peek_store_timestamp",
    "properties_to_string",
    "record_field_at",
    "record_length",
    "record_properties",
    "string_to_properties",
    "tags_hash_code",
    "uniq_id_ip",
    "uniq_id_pid",
    "uniq_id_time",
]
