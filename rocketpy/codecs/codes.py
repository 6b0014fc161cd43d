"""Numeric codes, flags, enum names and well-known strings of RocketMQ 4.9.8.

Constant and member names are Java's, spelled the same way, so a value can
be looked up by what a Java log or a packet dump shows. Where one Python class
gathers constants from several Java classes, comments say which.
"""

from __future__ import annotations

from enum import IntEnum, IntFlag, StrEnum

__all__ = [
    "CURRENT_VERSION",
    "BrokerRole",
    "CMResult",
    "CompressionType",
    "ConsumeFromWhere",
    "ConsumeType",
    "ExpressionType",
    "FlushDiskType",
    "LanguageCode",
    "LocalTransactionState",
    "MQVersion",
    "MessageConst",
    "MessageModel",
    "MessageSysFlag",
    "MessageType",
    "MixAll",
    "NameEnum",
    "PermName",
    "PullStatus",
    "PullSysFlag",
    "RemotingCommandFlag",
    "RequestCode",
    "RequestType",
    "ResponseCode",
    "SendStatus",
    "SerializeType",
    "SubscriptionSysFlag",
    "TopicFilterType",
    "TopicSysFlag",
    "TraceType",
    "request_code_name",
    "response_code_name",
    "version_desc",
    "version_of",
]


# ---------------------------------------------------------------------------
# Command codes
# ---------------------------------------------------------------------------


class RequestCode(IntEnum):
    """``RemotingCommand.code`` of a request (RequestCode.java)."""

    # Broker: messages, offsets, clients.
    SEND_MESSAGE = 10
    PULL_MESSAGE = 11
    QUERY_MESSAGE = 12
    QUERY_BROKER_OFFSET = 13
    QUERY_CONSUMER_OFFSET = 14
    UPDATE_CONSUMER_OFFSET = 15
    UPDATE_AND_CREATE_TOPIC = 17
    GET_ALL_TOPIC_CONFIG = 21
    GET_TOPIC_CONFIG_LIST = 22
    GET_TOPIC_NAME_LIST = 23
    UPDATE_BROKER_CONFIG = 25
    GET_BROKER_CONFIG = 26
    TRIGGER_DELETE_FILES = 27
    GET_BROKER_RUNTIME_INFO = 28
    SEARCH_OFFSET_BY_TIMESTAMP = 29
    GET_MAX_OFFSET = 30
    GET_MIN_OFFSET = 31
    GET_EARLIEST_MSG_STORETIME = 32
    VIEW_MESSAGE_BY_ID = 33
    HEART_BEAT = 34
    UNREGISTER_CLIENT = 35
    CONSUMER_SEND_MSG_BACK = 36
    END_TRANSACTION = 37
    GET_CONSUMER_LIST_BY_GROUP = 38
    CHECK_TRANSACTION_STATE = 39
    NOTIFY_CONSUMER_IDS_CHANGED = 40
    LOCK_BATCH_MQ = 41
    UNLOCK_BATCH_MQ = 42
    GET_ALL_CONSUMER_OFFSET = 43
    GET_ALL_DELAY_OFFSET = 45
    CHECK_CLIENT_CONFIG = 46
    # ACL administration.
    UPDATE_AND_CREATE_ACL_CONFIG = 50
    DELETE_ACL_CONFIG = 51
    GET_BROKER_CLUSTER_ACL_INFO = 52
    UPDATE_GLOBAL_WHITE_ADDRS_CONFIG = 53
    # Name server.
    PUT_KV_CONFIG = 100
    GET_KV_CONFIG = 101
    DELETE_KV_CONFIG = 102
    REGISTER_BROKER = 103
    UNREGISTER_BROKER = 104
    GET_ROUTEINFO_BY_TOPIC = 105
    GET_BROKER_CLUSTER_INFO = 106
    # Administration (mqadmin and friends).
    UPDATE_AND_CREATE_SUBSCRIPTIONGROUP = 200
    GET_ALL_SUBSCRIPTIONGROUP_CONFIG = 201
    GET_TOPIC_STATS_INFO = 202
    GET_CONSUMER_CONNECTION_LIST = 203
    GET_PRODUCER_CONNECTION_LIST = 204
    WIPE_WRITE_PERM_OF_BROKER = 205
    GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206
    DELETE_SUBSCRIPTIONGROUP = 207
    GET_CONSUME_STATS = 208
    SUSPEND_CONSUMER = 209
    RESUME_CONSUMER = 210
    RESET_CONSUMER_OFFSET_IN_CONSUMER = 211
    RESET_CONSUMER_OFFSET_IN_BROKER = 212
    ADJUST_CONSUMER_THREAD_POOL = 213
    WHO_CONSUME_THE_MESSAGE = 214
    DELETE_TOPIC_IN_BROKER = 215
    DELETE_TOPIC_IN_NAMESRV = 216
    GET_KVLIST_BY_NAMESPACE = 219
    RESET_CONSUMER_CLIENT_OFFSET = 220
    GET_CONSUMER_STATUS_FROM_CLIENT = 221
    INVOKE_BROKER_TO_RESET_OFFSET = 222
    INVOKE_BROKER_TO_GET_CONSUMER_STATUS = 223
    GET_TOPICS_BY_CLUSTER = 224
    # Later additions (Java declares 300 before 224; order here is by value).
    QUERY_TOPIC_CONSUME_BY_WHO = 300
    REGISTER_FILTER_SERVER = 301
    REGISTER_MESSAGE_FILTER_CLASS = 302
    QUERY_CONSUME_TIME_SPAN = 303
    GET_SYSTEM_TOPIC_LIST_FROM_NS = 304
    GET_SYSTEM_TOPIC_LIST_FROM_BROKER = 305
    CLEAN_EXPIRED_CONSUMEQUEUE = 306
    GET_CONSUMER_RUNNING_INFO = 307
    QUERY_CORRECTION_OFFSET = 308
    CONSUME_MESSAGE_DIRECTLY = 309
    SEND_MESSAGE_V2 = 310
    GET_UNIT_TOPIC_LIST = 311
    GET_HAS_UNIT_SUB_TOPIC_LIST = 312
    GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST = 313
    CLONE_GROUP_OFFSET = 314
    VIEW_BROKER_STATS_DATA = 315
    CLEAN_UNUSED_TOPIC = 316
    GET_BROKER_CONSUME_STATS = 317
    UPDATE_NAMESRV_CONFIG = 318
    GET_NAMESRV_CONFIG = 319
    SEND_BATCH_MESSAGE = 320
    QUERY_CONSUME_QUEUE = 321
    QUERY_DATA_VERSION = 322
    RESUME_CHECK_HALF_MESSAGE = 323
    SEND_REPLY_MESSAGE = 324
    SEND_REPLY_MESSAGE_V2 = 325
    PUSH_REPLY_MESSAGE_TO_CLIENT = 326
    ADD_WRITE_PERM_OF_BROKER = 327
    GET_ALL_PRODUCER_INFO = 328
    DELETE_EXPIRED_COMMITLOG = 329


class ResponseCode(IntEnum):
    """``RemotingCommand.code`` of a response.

    Java's ResponseCode extends RemotingSysResponseCode, so both live here.
    Response codes share numbers with request codes (10 is SEND_MESSAGE and
    FLUSH_DISK_TIMEOUT); the RESPONSE flag bit tells them apart.
    """

    # RemotingSysResponseCode (remoting module).
    SUCCESS = 0
    SYSTEM_ERROR = 1
    SYSTEM_BUSY = 2
    REQUEST_CODE_NOT_SUPPORTED = 3
    TRANSACTION_FAILED = 4
    # ResponseCode (common module).
    FLUSH_DISK_TIMEOUT = 10
    SLAVE_NOT_AVAILABLE = 11
    FLUSH_SLAVE_TIMEOUT = 12
    MESSAGE_ILLEGAL = 13
    SERVICE_NOT_AVAILABLE = 14
    VERSION_NOT_SUPPORTED = 15
    NO_PERMISSION = 16
    TOPIC_NOT_EXIST = 17
    TOPIC_EXIST_ALREADY = 18
    PULL_NOT_FOUND = 19
    PULL_RETRY_IMMEDIATELY = 20
    PULL_OFFSET_MOVED = 21
    QUERY_NOT_FOUND = 22
    SUBSCRIPTION_PARSE_FAILED = 23
    SUBSCRIPTION_NOT_EXIST = 24
    SUBSCRIPTION_NOT_LATEST = 25
    SUBSCRIPTION_GROUP_NOT_EXIST = 26
    FILTER_DATA_NOT_EXIST = 27
    FILTER_DATA_NOT_LATEST = 28
    TRANSACTION_SHOULD_COMMIT = 200
    TRANSACTION_SHOULD_ROLLBACK = 201
    TRANSACTION_STATE_UNKNOW = 202
    TRANSACTION_STATE_GROUP_WRONG = 203
    NO_BUYER_ID = 204
    NOT_IN_CURRENT_UNIT = 205
    CONSUMER_NOT_ONLINE = 206
    CONSUME_MSG_TIMEOUT = 207
    NO_MESSAGE = 208
    UPDATE_AND_CREATE_ACL_CONFIG_FAILED = 209
    DELETE_ACL_CONFIG_FAILED = 210
    UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED = 211
    FLOW_CONTROL = 215


def request_code_name(code: int) -> str:
    """Java name of a request code, or ``UNKNOWN(<code>)``."""
    try:
        return RequestCode(code).name
    except ValueError:
        pass
    from .dledger import DLedgerRequestCode  # the Raft RPC of DLedger groups rides the same frames

    try:
        return DLedgerRequestCode(code).name
    except ValueError:
        return f"UNKNOWN({code})"


def response_code_name(code: int, request_code: int | None = None) -> str:
    """Java name of a response code, or ``UNKNOWN(<code>)``; the reply to a DLedger request
    (``request_code``) is named by DLedgerResponseCode, marked ``(DLedger)``."""
    if request_code is not None:
        from .dledger import DLedgerResponseCode, is_dledger_code

        if is_dledger_code(request_code):
            try:
                return f"{DLedgerResponseCode(code).name} (DLedger)"
            except ValueError:
                return f"UNKNOWN({code}) (DLedger)"
    try:
        return ResponseCode(code).name
    except ValueError:
        return f"UNKNOWN({code})"


# ---------------------------------------------------------------------------
# RemotingCommand header fields
# ---------------------------------------------------------------------------


class LanguageCode(IntEnum):
    """Client language (LanguageCode.java).

    The JSON header carries the member name, the ROCKETMQ binary header the
    one-byte value.
    """

    JAVA = 0
    CPP = 1
    DOTNET = 2
    PYTHON = 3
    DELPHI = 4
    ERLANG = 5
    RUBY = 6
    OTHER = 7
    HTTP = 8
    GO = 9
    PHP = 10
    OMS = 11
    RUST = 12


class SerializeType(IntEnum):
    """Header encoding, stored in the top byte of the header-length word."""

    JSON = 0
    ROCKETMQ = 1


class RemotingCommandFlag(IntFlag):
    """Bits of ``RemotingCommand.flag``.

    Java names the bit positions RPC_TYPE (0) and RPC_ONEWAY (1); a clear
    RPC_TYPE bit means a request.
    """

    RESPONSE = 1 << 0
    ONEWAY = 1 << 1


class RequestType(IntEnum):
    """Value of the ``ReqT`` ext field (``MixAll.REQ_T``) set by StreamTypeRPCHook.

    Java puts ``String.valueOf(code)`` in the ext field, i.e. ``"0"``.
    """

    STREAM = 0


# ---------------------------------------------------------------------------
# Versions
# ---------------------------------------------------------------------------


class MQVersion(IntEnum):
    """MQVersion.Version: the header ``version`` field is the ordinal.

    Java's enum is not regular (3.0.x runs to 15, 3.3 to 3.9 start at .1), so
    every member is listed; the value is the position in Java's declaration.
    """

    V3_0_0_SNAPSHOT = 0
    V3_0_0_ALPHA1 = 1
    V3_0_0_BETA1 = 2
    V3_0_0_BETA2 = 3
    V3_0_0_BETA3 = 4
    V3_0_0_BETA4 = 5
    V3_0_0_BETA5 = 6
    V3_0_0_BETA6_SNAPSHOT = 7
    V3_0_0_BETA6 = 8
    V3_0_0_BETA7_SNAPSHOT = 9
    V3_0_0_BETA7 = 10
    V3_0_0_BETA8_SNAPSHOT = 11
    V3_0_0_BETA8 = 12
    V3_0_0_BETA9_SNAPSHOT = 13
    V3_0_0_BETA9 = 14
    V3_0_0_FINAL = 15
    V3_0_1_SNAPSHOT = 16
    V3_0_1 = 17
    V3_0_2_SNAPSHOT = 18
    V3_0_2 = 19
    V3_0_3_SNAPSHOT = 20
    V3_0_3 = 21
    V3_0_4_SNAPSHOT = 22
    V3_0_4 = 23
    V3_0_5_SNAPSHOT = 24
    V3_0_5 = 25
    V3_0_6_SNAPSHOT = 26
    V3_0_6 = 27
    V3_0_7_SNAPSHOT = 28
    V3_0_7 = 29
    V3_0_8_SNAPSHOT = 30
    V3_0_8 = 31
    V3_0_9_SNAPSHOT = 32
    V3_0_9 = 33
    V3_0_10_SNAPSHOT = 34
    V3_0_10 = 35
    V3_0_11_SNAPSHOT = 36
    V3_0_11 = 37
    V3_0_12_SNAPSHOT = 38
    V3_0_12 = 39
    V3_0_13_SNAPSHOT = 40
    V3_0_13 = 41
    V3_0_14_SNAPSHOT = 42
    V3_0_14 = 43
    V3_0_15_SNAPSHOT = 44
    V3_0_15 = 45
    V3_1_0_SNAPSHOT = 46
    V3_1_0 = 47
    V3_1_1_SNAPSHOT = 48
    V3_1_1 = 49
    V3_1_2_SNAPSHOT = 50
    V3_1_2 = 51
    V3_1_3_SNAPSHOT = 52
    V3_1_3 = 53
    V3_1_4_SNAPSHOT = 54
    V3_1_4 = 55
    V3_1_5_SNAPSHOT = 56
    V3_1_5 = 57
    V3_1_6_SNAPSHOT = 58
    V3_1_6 = 59
    V3_1_7_SNAPSHOT = 60
    V3_1_7 = 61
    V3_1_8_SNAPSHOT = 62
    V3_1_8 = 63
    V3_1_9_SNAPSHOT = 64
    V3_1_9 = 65
    V3_2_0_SNAPSHOT = 66
    V3_2_0 = 67
    V3_2_1_SNAPSHOT = 68
    V3_2_1 = 69
    V3_2_2_SNAPSHOT = 70
    V3_2_2 = 71
    V3_2_3_SNAPSHOT = 72
    V3_2_3 = 73
    V3_2_4_SNAPSHOT = 74
    V3_2_4 = 75
    V3_2_5_SNAPSHOT = 76
    V3_2_5 = 77
    V3_2_6_SNAPSHOT = 78
    V3_2_6 = 79
    V3_2_7_SNAPSHOT = 80
    V3_2_7 = 81
    V3_2_8_SNAPSHOT = 82
    V3_2_8 = 83
    V3_2_9_SNAPSHOT = 84
    V3_2_9 = 85
    V3_3_1_SNAPSHOT = 86
    V3_3_1 = 87
    V3_3_2_SNAPSHOT = 88
    V3_3_2 = 89
    V3_3_3_SNAPSHOT = 90
    V3_3_3 = 91
    V3_3_4_SNAPSHOT = 92
    V3_3_4 = 93
    V3_3_5_SNAPSHOT = 94
    V3_3_5 = 95
    V3_3_6_SNAPSHOT = 96
    V3_3_6 = 97
    V3_3_7_SNAPSHOT = 98
    V3_3_7 = 99
    V3_3_8_SNAPSHOT = 100
    V3_3_8 = 101
    V3_3_9_SNAPSHOT = 102
    V3_3_9 = 103
    V3_4_1_SNAPSHOT = 104
    V3_4_1 = 105
    V3_4_2_SNAPSHOT = 106
    V3_4_2 = 107
    V3_4_3_SNAPSHOT = 108
    V3_4_3 = 109
    V3_4_4_SNAPSHOT = 110
    V3_4_4 = 111
    V3_4_5_SNAPSHOT = 112
    V3_4_5 = 113
    V3_4_6_SNAPSHOT = 114
    V3_4_6 = 115
    V3_4_7_SNAPSHOT = 116
    V3_4_7 = 117
    V3_4_8_SNAPSHOT = 118
    V3_4_8 = 119
    V3_4_9_SNAPSHOT = 120
    V3_4_9 = 121
    V3_5_1_SNAPSHOT = 122
    V3_5_1 = 123
    V3_5_2_SNAPSHOT = 124
    V3_5_2 = 125
    V3_5_3_SNAPSHOT = 126
    V3_5_3 = 127
    V3_5_4_SNAPSHOT = 128
    V3_5_4 = 129
    V3_5_5_SNAPSHOT = 130
    V3_5_5 = 131
    V3_5_6_SNAPSHOT = 132
    V3_5_6 = 133
    V3_5_7_SNAPSHOT = 134
    V3_5_7 = 135
    V3_5_8_SNAPSHOT = 136
    V3_5_8 = 137
    V3_5_9_SNAPSHOT = 138
    V3_5_9 = 139
    V3_6_1_SNAPSHOT = 140
    V3_6_1 = 141
    V3_6_2_SNAPSHOT = 142
    V3_6_2 = 143
    V3_6_3_SNAPSHOT = 144
    V3_6_3 = 145
    V3_6_4_SNAPSHOT = 146
    V3_6_4 = 147
    V3_6_5_SNAPSHOT = 148
    V3_6_5 = 149
    V3_6_6_SNAPSHOT = 150
    V3_6_6 = 151
    V3_6_7_SNAPSHOT = 152
    V3_6_7 = 153
    V3_6_8_SNAPSHOT = 154
    V3_6_8 = 155
    V3_6_9_SNAPSHOT = 156
    V3_6_9 = 157
    V3_7_1_SNAPSHOT = 158
    V3_7_1 = 159
    V3_7_2_SNAPSHOT = 160
    V3_7_2 = 161
    V3_7_3_SNAPSHOT = 162
    V3_7_3 = 163
    V3_7_4_SNAPSHOT = 164
    V3_7_4 = 165
    V3_7_5_SNAPSHOT = 166
    V3_7_5 = 167
    V3_7_6_SNAPSHOT = 168
    V3_7_6 = 169
    V3_7_7_SNAPSHOT = 170
    V3_7_7 = 171
    V3_7_8_SNAPSHOT = 172
    V3_7_8 = 173
    V3_7_9_SNAPSHOT = 174
    V3_7_9 = 175
    V3_8_1_SNAPSHOT = 176
    V3_8_1 = 177
    V3_8_2_SNAPSHOT = 178
    V3_8_2 = 179
    V3_8_3_SNAPSHOT = 180
    V3_8_3 = 181
    V3_8_4_SNAPSHOT = 182
    V3_8_4 = 183
    V3_8_5_SNAPSHOT = 184
    V3_8_5 = 185
    V3_8_6_SNAPSHOT = 186
    V3_8_6 = 187
    V3_8_7_SNAPSHOT = 188
    V3_8_7 = 189
    V3_8_8_SNAPSHOT = 190
    V3_8_8 = 191
    V3_8_9_SNAPSHOT = 192
    V3_8_9 = 193
    V3_9_1_SNAPSHOT = 194
    V3_9_1 = 195
    V3_9_2_SNAPSHOT = 196
    V3_9_2 = 197
    V3_9_3_SNAPSHOT = 198
    V3_9_3 = 199
    V3_9_4_SNAPSHOT = 200
    V3_9_4 = 201
    V3_9_5_SNAPSHOT = 202
    V3_9_5 = 203
    V3_9_6_SNAPSHOT = 204
    V3_9_6 = 205
    V3_9_7_SNAPSHOT = 206
    V3_9_7 = 207
    V3_9_8_SNAPSHOT = 208
    V3_9_8 = 209
    V3_9_9_SNAPSHOT = 210
    V3_9_9 = 211
    V4_0_0_SNAPSHOT = 212
    V4_0_0 = 213
    V4_0_1_SNAPSHOT = 214
    V4_0_1 = 215
    V4_0_2_SNAPSHOT = 216
    V4_0_2 = 217
    V4_0_3_SNAPSHOT = 218
    V4_0_3 = 219
    V4_0_4_SNAPSHOT = 220
    V4_0_4 = 221
    V4_0_5_SNAPSHOT = 222
    V4_0_5 = 223
    V4_0_6_SNAPSHOT = 224
    V4_0_6 = 225
    V4_0_7_SNAPSHOT = 226
    V4_0_7 = 227
    V4_0_8_SNAPSHOT = 228
    V4_0_8 = 229
    V4_0_9_SNAPSHOT = 230
    V4_0_9 = 231
    V4_1_0_SNAPSHOT = 232
    V4_1_0 = 233
    V4_1_1_SNAPSHOT = 234
    V4_1_1 = 235
    V4_1_2_SNAPSHOT = 236
    V4_1_2 = 237
    V4_1_3_SNAPSHOT = 238
    V4_1_3 = 239
    V4_1_4_SNAPSHOT = 240
    V4_1_4 = 241
    V4_1_5_SNAPSHOT = 242
    V4_1_5 = 243
    V4_1_6_SNAPSHOT = 244
    V4_1_6 = 245
    V4_1_7_SNAPSHOT = 246
    V4_1_7 = 247
    V4_1_8_SNAPSHOT = 248
    V4_1_8 = 249
    V4_1_9_SNAPSHOT = 250
    V4_1_9 = 251
    V4_2_0_SNAPSHOT = 252
    V4_2_0 = 253
    V4_2_1_SNAPSHOT = 254
    V4_2_1 = 255
    V4_2_2_SNAPSHOT = 256
    V4_2_2 = 257
    V4_2_3_SNAPSHOT = 258
    V4_2_3 = 259
    V4_2_4_SNAPSHOT = 260
    V4_2_4 = 261
    V4_2_5_SNAPSHOT = 262
    V4_2_5 = 263
    V4_2_6_SNAPSHOT = 264
    V4_2_6 = 265
    V4_2_7_SNAPSHOT = 266
    V4_2_7 = 267
    V4_2_8_SNAPSHOT = 268
    V4_2_8 = 269
    V4_2_9_SNAPSHOT = 270
    V4_2_9 = 271
    V4_3_0_SNAPSHOT = 272
    V4_3_0 = 273
    V4_3_1_SNAPSHOT = 274
    V4_3_1 = 275
    V4_3_2_SNAPSHOT = 276
    V4_3_2 = 277
    V4_3_3_SNAPSHOT = 278
    V4_3_3 = 279
    V4_3_4_SNAPSHOT = 280
    V4_3_4 = 281
    V4_3_5_SNAPSHOT = 282
    V4_3_5 = 283
    V4_3_6_SNAPSHOT = 284
    V4_3_6 = 285
    V4_3_7_SNAPSHOT = 286
    V4_3_7 = 287
    V4_3_8_SNAPSHOT = 288
    V4_3_8 = 289
    V4_3_9_SNAPSHOT = 290
    V4_3_9 = 291
    V4_4_0_SNAPSHOT = 292
    V4_4_0 = 293
    V4_4_1_SNAPSHOT = 294
    V4_4_1 = 295
    V4_4_2_SNAPSHOT = 296
    V4_4_2 = 297
    V4_4_3_SNAPSHOT = 298
    V4_4_3 = 299
    V4_4_4_SNAPSHOT = 300
    V4_4_4 = 301
    V4_4_5_SNAPSHOT = 302
    V4_4_5 = 303
    V4_4_6_SNAPSHOT = 304
    V4_4_6 = 305
    V4_4_7_SNAPSHOT = 306
    V4_4_7 = 307
    V4_4_8_SNAPSHOT = 308
    V4_4_8 = 309
    V4_4_9_SNAPSHOT = 310
    V4_4_9 = 311
    V4_5_0_SNAPSHOT = 312
    V4_5_0 = 313
    V4_5_1_SNAPSHOT = 314
    V4_5_1 = 315
    V4_5_2_SNAPSHOT = 316
    V4_5_2 = 317
    V4_5_3_SNAPSHOT = 318
    V4_5_3 = 319
    V4_5_4_SNAPSHOT = 320
    V4_5_4 = 321
    V4_5_5_SNAPSHOT = 322
    V4_5_5 = 323
    V4_5_6_SNAPSHOT = 324
    V4_5_6 = 325
    V4_5_7_SNAPSHOT = 326
    V4_5_7 = 327
    V4_5_8_SNAPSHOT = 328
    V4_5_8 = 329
    V4_5_9_SNAPSHOT = 330
    V4_5_9 = 331
    V4_6_0_SNAPSHOT = 332
    V4_6_0 = 333
    V4_6_1_SNAPSHOT = 334
    V4_6_1 = 335
    V4_6_2_SNAPSHOT = 336
    V4_6_2 = 337
    V4_6_3_SNAPSHOT = 338
    V4_6_3 = 339
    V4_6_4_SNAPSHOT = 340
    V4_6_4 = 341
    V4_6_5_SNAPSHOT = 342
    V4_6_5 = 343
    V4_6_6_SNAPSHOT = 344
    V4_6_6 = 345
    V4_6_7_SNAPSHOT = 346
    V4_6_7 = 347
    V4_6_8_SNAPSHOT = 348
    V4_6_8 = 349
    V4_6_9_SNAPSHOT = 350
    V4_6_9 = 351
    V4_7_0_SNAPSHOT = 352
    V4_7_0 = 353
    V4_7_1_SNAPSHOT = 354
    V4_7_1 = 355
    V4_7_2_SNAPSHOT = 356
    V4_7_2 = 357
    V4_7_3_SNAPSHOT = 358
    V4_7_3 = 359
    V4_7_4_SNAPSHOT = 360
    V4_7_4 = 361
    V4_7_5_SNAPSHOT = 362
    V4_7_5 = 363
    V4_7_6_SNAPSHOT = 364
    V4_7_6 = 365
    V4_7_7_SNAPSHOT = 366
    V4_7_7 = 367
    V4_7_8_SNAPSHOT = 368
    V4_7_8 = 369
    V4_7_9_SNAPSHOT = 370
    V4_7_9 = 371
    V4_8_0_SNAPSHOT = 372
    V4_8_0 = 373
    V4_8_1_SNAPSHOT = 374
    V4_8_1 = 375
    V4_8_2_SNAPSHOT = 376
    V4_8_2 = 377
    V4_8_3_SNAPSHOT = 378
    V4_8_3 = 379
    V4_8_4_SNAPSHOT = 380
    V4_8_4 = 381
    V4_8_5_SNAPSHOT = 382
    V4_8_5 = 383
    V4_8_6_SNAPSHOT = 384
    V4_8_6 = 385
    V4_8_7_SNAPSHOT = 386
    V4_8_7 = 387
    V4_8_8_SNAPSHOT = 388
    V4_8_8 = 389
    V4_8_9_SNAPSHOT = 390
    V4_8_9 = 391
    V4_9_0_SNAPSHOT = 392
    V4_9_0 = 393
    V4_9_1_SNAPSHOT = 394
    V4_9_1 = 395
    V4_9_2_SNAPSHOT = 396
    V4_9_2 = 397
    V4_9_3_SNAPSHOT = 398
    V4_9_3 = 399
    V4_9_4_SNAPSHOT = 400
    V4_9_4 = 401
    V4_9_5_SNAPSHOT = 402
    V4_9_5 = 403
    V4_9_6_SNAPSHOT = 404
    V4_9_6 = 405
    V4_9_7_SNAPSHOT = 406
    V4_9_7 = 407
    V4_9_8_SNAPSHOT = 408
    V4_9_8 = 409
    V4_9_9_SNAPSHOT = 410
    V4_9_9 = 411
    V5_0_0_SNAPSHOT = 412
    V5_0_0 = 413
    V5_0_1_SNAPSHOT = 414
    V5_0_1 = 415
    V5_0_2_SNAPSHOT = 416
    V5_0_2 = 417
    V5_0_3_SNAPSHOT = 418
    V5_0_3 = 419
    V5_0_4_SNAPSHOT = 420
    V5_0_4 = 421
    V5_0_5_SNAPSHOT = 422
    V5_0_5 = 423
    V5_0_6_SNAPSHOT = 424
    V5_0_6 = 425
    V5_0_7_SNAPSHOT = 426
    V5_0_7 = 427
    V5_0_8_SNAPSHOT = 428
    V5_0_8 = 429
    V5_0_9_SNAPSHOT = 430
    V5_0_9 = 431
    V5_1_0_SNAPSHOT = 432
    V5_1_0 = 433
    V5_1_1_SNAPSHOT = 434
    V5_1_1 = 435
    V5_1_2_SNAPSHOT = 436
    V5_1_2 = 437
    V5_1_3_SNAPSHOT = 438
    V5_1_3 = 439
    V5_1_4_SNAPSHOT = 440
    V5_1_4 = 441
    V5_1_5_SNAPSHOT = 442
    V5_1_5 = 443
    V5_1_6_SNAPSHOT = 444
    V5_1_6 = 445
    V5_1_7_SNAPSHOT = 446
    V5_1_7 = 447
    V5_1_8_SNAPSHOT = 448
    V5_1_8 = 449
    V5_1_9_SNAPSHOT = 450
    V5_1_9 = 451
    V5_2_0_SNAPSHOT = 452
    V5_2_0 = 453
    V5_2_1_SNAPSHOT = 454
    V5_2_1 = 455
    V5_2_2_SNAPSHOT = 456
    V5_2_2 = 457
    V5_2_3_SNAPSHOT = 458
    V5_2_3 = 459
    V5_2_4_SNAPSHOT = 460
    V5_2_4 = 461
    V5_2_5_SNAPSHOT = 462
    V5_2_5 = 463
    V5_2_6_SNAPSHOT = 464
    V5_2_6 = 465
    V5_2_7_SNAPSHOT = 466
    V5_2_7 = 467
    V5_2_8_SNAPSHOT = 468
    V5_2_8 = 469
    V5_2_9_SNAPSHOT = 470
    V5_2_9 = 471
    V5_3_0_SNAPSHOT = 472
    V5_3_0 = 473
    V5_3_1_SNAPSHOT = 474
    V5_3_1 = 475
    V5_3_2_SNAPSHOT = 476
    V5_3_2 = 477
    V5_3_3_SNAPSHOT = 478
    V5_3_3 = 479
    V5_3_4_SNAPSHOT = 480
    V5_3_4 = 481
    V5_3_5_SNAPSHOT = 482
    V5_3_5 = 483
    V5_3_6_SNAPSHOT = 484
    V5_3_6 = 485
    V5_3_7_SNAPSHOT = 486
    V5_3_7 = 487
    V5_3_8_SNAPSHOT = 488
    V5_3_8 = 489
    V5_3_9_SNAPSHOT = 490
    V5_3_9 = 491
    V5_4_0_SNAPSHOT = 492
    V5_4_0 = 493
    V5_4_1_SNAPSHOT = 494
    V5_4_1 = 495
    V5_4_2_SNAPSHOT = 496
    V5_4_2 = 497
    V5_4_3_SNAPSHOT = 498
    V5_4_3 = 499
    V5_4_4_SNAPSHOT = 500
    V5_4_4 = 501
    V5_4_5_SNAPSHOT = 502
    V5_4_5 = 503
    V5_4_6_SNAPSHOT = 504
    V5_4_6 = 505
    V5_4_7_SNAPSHOT = 506
    V5_4_7 = 507
    V5_4_8_SNAPSHOT = 508
    V5_4_8 = 509
    V5_4_9_SNAPSHOT = 510
    V5_4_9 = 511
    V5_5_0_SNAPSHOT = 512
    V5_5_0 = 513
    V5_5_1_SNAPSHOT = 514
    V5_5_1 = 515
    V5_5_2_SNAPSHOT = 516
    V5_5_2 = 517
    V5_5_3_SNAPSHOT = 518
    V5_5_3 = 519
    V5_5_4_SNAPSHOT = 520
    V5_5_4 = 521
    V5_5_5_SNAPSHOT = 522
    V5_5_5 = 523
    V5_5_6_SNAPSHOT = 524
    V5_5_6 = 525
    V5_5_7_SNAPSHOT = 526
    V5_5_7 = 527
    V5_5_8_SNAPSHOT = 528
    V5_5_8 = 529
    V5_5_9_SNAPSHOT = 530
    V5_5_9 = 531
    V5_6_0_SNAPSHOT = 532
    V5_6_0 = 533
    V5_6_1_SNAPSHOT = 534
    V5_6_1 = 535
    V5_6_2_SNAPSHOT = 536
    V5_6_2 = 537
    V5_6_3_SNAPSHOT = 538
    V5_6_3 = 539
    V5_6_4_SNAPSHOT = 540
    V5_6_4 = 541
    V5_6_5_SNAPSHOT = 542
    V5_6_5 = 543
    V5_6_6_SNAPSHOT = 544
    V5_6_6 = 545
    V5_6_7_SNAPSHOT = 546
    V5_6_7 = 547
    V5_6_8_SNAPSHOT = 548
    V5_6_8 = 549
    V5_6_9_SNAPSHOT = 550
    V5_6_9 = 551
    V5_7_0_SNAPSHOT = 552
    V5_7_0 = 553
    V5_7_1_SNAPSHOT = 554
    V5_7_1 = 555
    V5_7_2_SNAPSHOT = 556
    V5_7_2 = 557
    V5_7_3_SNAPSHOT = 558
    V5_7_3 = 559
    V5_7_4_SNAPSHOT = 560
    V5_7_4 = 561
    V5_7_5_SNAPSHOT = 562
    V5_7_5 = 563
    V5_7_6_SNAPSHOT = 564
    V5_7_6 = 565
    V5_7_7_SNAPSHOT = 566
    V5_7_7 = 567
    V5_7_8_SNAPSHOT = 568
    V5_7_8 = 569
    V5_7_9_SNAPSHOT = 570
    V5_7_9 = 571
    V5_8_0_SNAPSHOT = 572
    V5_8_0 = 573
    V5_8_1_SNAPSHOT = 574
    V5_8_1 = 575
    V5_8_2_SNAPSHOT = 576
    V5_8_2 = 577
    V5_8_3_SNAPSHOT = 578
    V5_8_3 = 579
    V5_8_4_SNAPSHOT = 580
    V5_8_4 = 581
    V5_8_5_SNAPSHOT = 582
    V5_8_5 = 583
    V5_8_6_SNAPSHOT = 584
    V5_8_6 = 585
    V5_8_7_SNAPSHOT = 586
    V5_8_7 = 587
    V5_8_8_SNAPSHOT = 588
    V5_8_8 = 589
    V5_8_9_SNAPSHOT = 590
    V5_8_9 = 591
    V5_9_0_SNAPSHOT = 592
    V5_9_0 = 593
    V5_9_1_SNAPSHOT = 594
    V5_9_1 = 595
    V5_9_2_SNAPSHOT = 596
    V5_9_2 = 597
    V5_9_3_SNAPSHOT = 598
    V5_9_3 = 599
    V5_9_4_SNAPSHOT = 600
    V5_9_4 = 601
    V5_9_5_SNAPSHOT = 602
    V5_9_5 = 603
    V5_9_6_SNAPSHOT = 604
    V5_9_6 = 605
    V5_9_7_SNAPSHOT = 606
    V5_9_7 = 607
    V5_9_8_SNAPSHOT = 608
    V5_9_8 = 609
    V5_9_9_SNAPSHOT = 610
    V5_9_9 = 611
    HIGHER_VERSION = 612


# The version a 4.9.8 Java client or broker puts in every command it sends.
CURRENT_VERSION = MQVersion.V4_9_8

# Java clamps every value past the table to its last member.
_VERSIONS: tuple[MQVersion, ...] = tuple(MQVersion)


def version_of(value: int) -> MQVersion:
    """Java's ``MQVersion.value2Version``: unknown future values map to HIGHER_VERSION."""
    if value < 0:
        raise ValueError(f"negative MQ version ordinal: {value}")
    if value >= len(_VERSIONS):
        return _VERSIONS[-1]
    return _VERSIONS[value]


def version_desc(value: int) -> str:
    """Java's ``MQVersion.getVersionDesc``, e.g. ``"V4_9_8"`` for 409."""
    return version_of(value).name


# ---------------------------------------------------------------------------
# System flags and permissions
# ---------------------------------------------------------------------------


class CompressionType(IntEnum):
    """Body compression algorithm, kept in bits 8-10 of the message sysFlag."""

    LZ4 = 1
    ZSTD = 2
    ZLIB = 3

    @property
    def compression_flag(self) -> int:
        """The sysFlag bits that select this algorithm."""
        return int(self) << 8

    @staticmethod
    def find_by_value(value: int) -> CompressionType:
        """Java's ``findByValue``: 0 means ZLIB, for flags written before 4.9.5."""
        if value == 0:
            return CompressionType.ZLIB
        try:
            return CompressionType(value)
        except ValueError:
            raise ValueError(f"unknown compression type value: {value}") from None


class MessageSysFlag(IntFlag):
    """Bits of a stored/sent message's ``sysFlag`` (MessageSysFlag.java).

    Bits 2-3 form a two-bit transaction type rather than independent flags,
    and bits 8-10 a compression type; hence the multi-bit members.
    """

    COMPRESSED_FLAG = 0x1
    MULTI_TAGS_FLAG = 0x1 << 1
    TRANSACTION_NOT_TYPE = 0
    TRANSACTION_PREPARED_TYPE = 0x1 << 2
    TRANSACTION_COMMIT_TYPE = 0x2 << 2
    TRANSACTION_ROLLBACK_TYPE = 0x3 << 2
    BORNHOST_V6_FLAG = 0x1 << 4
    STOREHOSTADDRESS_V6_FLAG = 0x1 << 5
    NEED_UNWRAP_FLAG = 0x1 << 6
    INNER_BATCH_FLAG = 0x1 << 7
    COMPRESSION_LZ4_TYPE = 0x1 << 8
    COMPRESSION_ZSTD_TYPE = 0x2 << 8
    COMPRESSION_ZLIB_TYPE = 0x3 << 8
    COMPRESSION_TYPE_COMPARATOR = 0x7 << 8

    @staticmethod
    def transaction_value(flag: int) -> int:
        """The transaction-type bits of ``flag`` (one of the TRANSACTION_* values)."""
        return int(flag) & int(MessageSysFlag.TRANSACTION_ROLLBACK_TYPE)

    @staticmethod
    def reset_transaction_value(flag: int, type_: int) -> int:
        """``flag`` with its transaction-type bits replaced by ``type_``."""
        return (int(flag) & ~int(MessageSysFlag.TRANSACTION_ROLLBACK_TYPE)) | int(type_)

    @staticmethod
    def clear_compressed_flag(flag: int) -> int:
        """``flag`` without COMPRESSED_FLAG."""
        return int(flag) & ~int(MessageSysFlag.COMPRESSED_FLAG)

    @staticmethod
    def compression_type(flag: int) -> CompressionType:
        """Compression algorithm recorded in ``flag`` (ZLIB when none is recorded)."""
        bits = (int(flag) & int(MessageSysFlag.COMPRESSION_TYPE_COMPARATOR)) >> 8
        return CompressionType.find_by_value(bits)


class PullSysFlag(IntFlag):
    """Bits of PullMessageRequestHeader.sysFlag (PullSysFlag.java)."""

    FLAG_COMMIT_OFFSET = 0x1
    FLAG_SUSPEND = 0x1 << 1
    FLAG_SUBSCRIPTION = 0x1 << 2
    FLAG_CLASS_FILTER = 0x1 << 3
    FLAG_LITE_PULL_MESSAGE = 0x1 << 4

    @staticmethod
    def build_sys_flag(
        commit_offset: bool,
        suspend: bool,
        subscription: bool,
        class_filter: bool,
        lite_pull: bool = False,
    ) -> int:
        """Combine the pull options into a sysFlag int."""
        flag = 0
        if commit_offset:
            flag |= PullSysFlag.FLAG_COMMIT_OFFSET
        if suspend:
            flag |= PullSysFlag.FLAG_SUSPEND
        if subscription:
            flag |= PullSysFlag.FLAG_SUBSCRIPTION
        if class_filter:
            flag |= PullSysFlag.FLAG_CLASS_FILTER
        if lite_pull:
            flag |= PullSysFlag.FLAG_LITE_PULL_MESSAGE
        return int(flag)

    @staticmethod
    def clear_commit_offset_flag(sys_flag: int) -> int:
        """``sys_flag`` without FLAG_COMMIT_OFFSET."""
        return int(sys_flag) & ~int(PullSysFlag.FLAG_COMMIT_OFFSET)

    @staticmethod
    def has_commit_offset_flag(sys_flag: int) -> bool:
        """Whether the broker should also commit the consumer offset."""
        return bool(sys_flag & int(PullSysFlag.FLAG_COMMIT_OFFSET))

    @staticmethod
    def has_suspend_flag(sys_flag: int) -> bool:
        """Whether the broker may hold the pull (long polling)."""
        return bool(sys_flag & int(PullSysFlag.FLAG_SUSPEND))

    @staticmethod
    def has_subscription_flag(sys_flag: int) -> bool:
        """Whether the request carries its own subscription expression."""
        return bool(sys_flag & int(PullSysFlag.FLAG_SUBSCRIPTION))

    @staticmethod
    def has_class_filter_flag(sys_flag: int) -> bool:
        """Whether class-filter mode is on."""
        return bool(sys_flag & int(PullSysFlag.FLAG_CLASS_FILTER))

    @staticmethod
    def has_lite_pull_flag(sys_flag: int) -> bool:
        """Whether the pull comes from a lite-pull consumer."""
        return bool(sys_flag & int(PullSysFlag.FLAG_LITE_PULL_MESSAGE))


class TopicSysFlag(IntFlag):
    """Bits of TopicConfig.topicSysFlag (TopicSysFlag.java)."""

    FLAG_UNIT = 0x1 << 0
    FLAG_UNIT_SUB = 0x1 << 1

    @staticmethod
    def build_sys_flag(unit: bool, has_unit_sub: bool) -> int:
        """Combine the unit options into a sysFlag int."""
        flag = 0
        if unit:
            flag |= TopicSysFlag.FLAG_UNIT
        if has_unit_sub:
            flag |= TopicSysFlag.FLAG_UNIT_SUB
        return int(flag)

    @staticmethod
    def set_unit_flag(sys_flag: int) -> int:
        """``sys_flag`` with FLAG_UNIT."""
        return int(sys_flag) | int(TopicSysFlag.FLAG_UNIT)

    @staticmethod
    def clear_unit_flag(sys_flag: int) -> int:
        """``sys_flag`` without FLAG_UNIT."""
        return int(sys_flag) & ~int(TopicSysFlag.FLAG_UNIT)

    @staticmethod
    def has_unit_flag(sys_flag: int) -> bool:
        """Whether FLAG_UNIT is set."""
        return bool(sys_flag & int(TopicSysFlag.FLAG_UNIT))

    @staticmethod
    def set_unit_sub_flag(sys_flag: int) -> int:
        """``sys_flag`` with FLAG_UNIT_SUB."""
        return int(sys_flag) | int(TopicSysFlag.FLAG_UNIT_SUB)

    @staticmethod
    def clear_unit_sub_flag(sys_flag: int) -> int:
        """``sys_flag`` without FLAG_UNIT_SUB."""
        return int(sys_flag) & ~int(TopicSysFlag.FLAG_UNIT_SUB)

    @staticmethod
    def has_unit_sub_flag(sys_flag: int) -> bool:
        """Whether FLAG_UNIT_SUB is set."""
        return bool(sys_flag & int(TopicSysFlag.FLAG_UNIT_SUB))


class SubscriptionSysFlag(IntFlag):
    """Bits of a subscription's sysFlag (SubscriptionSysFlag.java)."""

    FLAG_UNIT = 0x1 << 0

    @staticmethod
    def build_sys_flag(unit: bool) -> int:
        """FLAG_UNIT if ``unit`` else 0."""
        return int(SubscriptionSysFlag.FLAG_UNIT) if unit else 0

    @staticmethod
    def set_unit_flag(sys_flag: int) -> int:
        """``sys_flag`` with FLAG_UNIT."""
        return int(sys_flag) | int(SubscriptionSysFlag.FLAG_UNIT)

    @staticmethod
    def clear_unit_flag(sys_flag: int) -> int:
        """``sys_flag`` without FLAG_UNIT."""
        return int(sys_flag) & ~int(SubscriptionSysFlag.FLAG_UNIT)

    @staticmethod
    def has_unit_flag(sys_flag: int) -> bool:
        """Whether FLAG_UNIT is set."""
        return bool(sys_flag & int(SubscriptionSysFlag.FLAG_UNIT))


class PermName(IntFlag):
    """Topic / broker permission bits (PermName.java)."""

    PERM_PRIORITY = 0x1 << 3
    PERM_READ = 0x1 << 2
    PERM_WRITE = 0x1 << 1
    PERM_INHERIT = 0x1

    @staticmethod
    def perm_to_string(perm: int) -> str:
        """Java's ``perm2String``: three chars R/W/X or ``-``; PRIORITY is not shown."""
        return (
            ("R" if PermName.is_readable(perm) else "-")
            + ("W" if PermName.is_writeable(perm) else "-")
            + ("X" if PermName.is_inherited(perm) else "-")
        )

    @staticmethod
    def is_readable(perm: int) -> bool:
        """Whether PERM_READ is set."""
        return bool(perm & int(PermName.PERM_READ))

    @staticmethod
    def is_writeable(perm: int) -> bool:
        """Whether PERM_WRITE is set."""
        return bool(perm & int(PermName.PERM_WRITE))

    @staticmethod
    def is_inherited(perm: int) -> bool:
        """Whether PERM_INHERIT is set."""
        return bool(perm & int(PermName.PERM_INHERIT))


# ---------------------------------------------------------------------------
# Enums that JSON bodies carry by name
# ---------------------------------------------------------------------------


class NameEnum(StrEnum):
    """A Java enum as fastjson writes it: the value is the constant's name.

    Being a ``str`` lets members go straight into ``json.dumps``; ``str()``
    and f-strings give the bare name.
    """


class ConsumeType(NameEnum):
    """Consumer kind in heartbeats (Java's typeCN "PULL"/"PUSH" is not sent)."""

    CONSUME_ACTIVELY = "CONSUME_ACTIVELY"
    CONSUME_PASSIVELY = "CONSUME_PASSIVELY"


class MessageModel(NameEnum):
    """Consumer group delivery model (Java's modeCN is not sent)."""

    BROADCASTING = "BROADCASTING"
    CLUSTERING = "CLUSTERING"


class ConsumeFromWhere(NameEnum):
    """Where a new consumer group starts; Java declaration order, deprecated ones kept."""

    CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST = "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST"
    CONSUME_FROM_MIN_OFFSET = "CONSUME_FROM_MIN_OFFSET"
    CONSUME_FROM_MAX_OFFSET = "CONSUME_FROM_MAX_OFFSET"
    CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    CONSUME_FROM_TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


class TopicFilterType(NameEnum):
    """TopicConfig.topicFilterType."""

    SINGLE_TAG = "SINGLE_TAG"
    MULTI_TAG = "MULTI_TAG"


class ExpressionType:
    """Subscription expression languages (a class of strings in Java, not an enum)."""

    SQL92 = "SQL92"
    TAG = "TAG"

    @staticmethod
    def is_tag_type(type_: str | None) -> bool:
        """Java treats a missing or empty type as TAG."""
        return not type_ or type_ == ExpressionType.TAG


class LocalTransactionState(NameEnum):
    """Producer-side transaction outcome (also written by name into trace data)."""

    COMMIT_MESSAGE = "COMMIT_MESSAGE"
    ROLLBACK_MESSAGE = "ROLLBACK_MESSAGE"
    UNKNOW = "UNKNOW"  # sic: Java's spelling


class SendStatus(NameEnum):
    """Outcome of a send as reported to the producer."""

    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"


class PullStatus(NameEnum):
    """Outcome of a pull as reported to the consumer."""

    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


class BrokerRole(NameEnum):
    """Broker replication role (brokerRole in broker config)."""

    ASYNC_MASTER = "ASYNC_MASTER"
    SYNC_MASTER = "SYNC_MASTER"
    SLAVE = "SLAVE"


class FlushDiskType(NameEnum):
    """Commit-log flush policy (flushDiskType in broker config)."""

    SYNC_FLUSH = "SYNC_FLUSH"
    ASYNC_FLUSH = "ASYNC_FLUSH"


class CMResult(NameEnum):
    """ConsumeMessageDirectlyResult.consumeResult."""

    CR_SUCCESS = "CR_SUCCESS"
    CR_LATER = "CR_LATER"
    CR_ROLLBACK = "CR_ROLLBACK"
    CR_COMMIT = "CR_COMMIT"
    CR_THROW_EXCEPTION = "CR_THROW_EXCEPTION"
    CR_RETURN_NULL = "CR_RETURN_NULL"


class TraceType(NameEnum):
    """First field of a trace record (TraceDataEncoder writes the name)."""

    Pub = "Pub"
    SubBefore = "SubBefore"
    SubAfter = "SubAfter"
    EndTransaction = "EndTransaction"


class MessageType(IntEnum):
    """Message kind in trace records, which carry the ordinal, not the name."""

    Normal_Msg = 0
    Trans_Msg_Half = 1
    Trans_msg_Commit = 2  # sic: lower-case "msg" in Java
    Delay_Msg = 3


# ---------------------------------------------------------------------------
# Message property keys
# ---------------------------------------------------------------------------


class MessageConst:
    """Keys of the message properties map (MessageConst.java)."""

    PROPERTY_KEYS = "KEYS"
    PROPERTY_TAGS = "TAGS"
    PROPERTY_WAIT_STORE_MSG_OK = "WAIT"
    PROPERTY_DELAY_TIME_LEVEL = "DELAY"
    PROPERTY_RETRY_TOPIC = "RETRY_TOPIC"
    PROPERTY_REAL_TOPIC = "REAL_TOPIC"
    PROPERTY_REAL_QUEUE_ID = "REAL_QID"
    PROPERTY_TRANSACTION_PREPARED = "TRAN_MSG"
    PROPERTY_PRODUCER_GROUP = "PGROUP"
    PROPERTY_MIN_OFFSET = "MIN_OFFSET"
    PROPERTY_MAX_OFFSET = "MAX_OFFSET"
    PROPERTY_BUYER_ID = "BUYER_ID"
    PROPERTY_ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
    PROPERTY_TRANSFER_FLAG = "TRANSFER_FLAG"
    PROPERTY_CORRECTION_FLAG = "CORRECTION_FLAG"
    PROPERTY_MQ2_FLAG = "MQ2_FLAG"
    PROPERTY_RECONSUME_TIME = "RECONSUME_TIME"
    PROPERTY_MSG_REGION = "MSG_REGION"
    PROPERTY_TRACE_SWITCH = "TRACE_ON"
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX = "UNIQ_KEY"
    PROPERTY_MAX_RECONSUME_TIMES = "MAX_RECONSUME_TIMES"
    PROPERTY_CONSUME_START_TIMESTAMP = "CONSUME_START_TIME"
    PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET = "TRAN_PREPARED_QUEUE_OFFSET"
    PROPERTY_TRANSACTION_CHECK_TIMES = "TRANSACTION_CHECK_TIMES"
    PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS = "CHECK_IMMUNITY_TIME_IN_SECONDS"
    PROPERTY_INSTANCE_ID = "INSTANCE_ID"
    PROPERTY_CORRELATION_ID = "CORRELATION_ID"
    PROPERTY_MESSAGE_REPLY_TO_CLIENT = "REPLY_TO_CLIENT"
    PROPERTY_MESSAGE_TTL = "TTL"
    PROPERTY_REPLY_MESSAGE_ARRIVE_TIME = "ARRIVE_TIME"
    PROPERTY_PUSH_REPLY_TIME = "PUSH_REPLY_TIME"
    PROPERTY_CLUSTER = "CLUSTER"
    PROPERTY_MESSAGE_TYPE = "MSG_TYPE"
    PROPERTY_INNER_MULTI_DISPATCH = "INNER_MULTI_DISPATCH"
    PROPERTY_INNER_MULTI_QUEUE_OFFSET = "INNER_MULTI_QUEUE_OFFSET"

    # Separates several keys inside the KEYS property.
    KEY_SEPARATOR = " "

    # Java's STRING_HASH_SET: names Message.putUserProperty refuses.
    # It leaves out TRAN_PREPARED_QUEUE_OFFSET, TRANSACTION_CHECK_TIMES,
    # CHECK_IMMUNITY_TIME_IN_SECONDS and INNER_MULTI_DISPATCH, so they do too.
    SYSTEM_PROPERTIES: frozenset[str] = frozenset(
        {
            PROPERTY_TRACE_SWITCH,
            PROPERTY_MSG_REGION,
            PROPERTY_KEYS,
            PROPERTY_TAGS,
            PROPERTY_WAIT_STORE_MSG_OK,
            PROPERTY_DELAY_TIME_LEVEL,
            PROPERTY_RETRY_TOPIC,
            PROPERTY_REAL_TOPIC,
            PROPERTY_REAL_QUEUE_ID,
            PROPERTY_TRANSACTION_PREPARED,
            PROPERTY_PRODUCER_GROUP,
            PROPERTY_MIN_OFFSET,
            PROPERTY_MAX_OFFSET,
            PROPERTY_BUYER_ID,
            PROPERTY_ORIGIN_MESSAGE_ID,
            PROPERTY_TRANSFER_FLAG,
            PROPERTY_CORRECTION_FLAG,
            PROPERTY_MQ2_FLAG,
            PROPERTY_RECONSUME_TIME,
            PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
            PROPERTY_MAX_RECONSUME_TIMES,
            PROPERTY_CONSUME_START_TIMESTAMP,
            PROPERTY_INSTANCE_ID,
            PROPERTY_CORRELATION_ID,
            PROPERTY_MESSAGE_REPLY_TO_CLIENT,
            PROPERTY_MESSAGE_TTL,
            PROPERTY_REPLY_MESSAGE_ARRIVE_TIME,
            PROPERTY_PUSH_REPLY_TIME,
            PROPERTY_CLUSTER,
            PROPERTY_MESSAGE_TYPE,
            PROPERTY_INNER_MULTI_QUEUE_OFFSET,
        }
    )
    STRING_HASH_SET = SYSTEM_PROPERTIES  # Java's name for the same set


# ---------------------------------------------------------------------------
# Well-known topics, groups and related strings
# ---------------------------------------------------------------------------


def _topic_char_allowed(ch: str) -> bool:
    # TopicValidator accepts ^[%|a-zA-Z0-9_-]+$, ASCII only.
    return ch.isascii() and (ch.isalnum() or ch in "%|_-")


class MixAll:
    """Constants of MixAll.java and TopicValidator.java, plus a few from store and broker.

    Process-dependent values of MixAll (LOCALHOST, CURRENT_JVM_PID, ...) are
    left out on purpose.
    """

    # Environment / system-property names.
    ROCKETMQ_HOME_ENV = "ROCKETMQ_HOME"
    ROCKETMQ_HOME_PROPERTY = "rocketmq.home.dir"
    NAMESRV_ADDR_ENV = "NAMESRV_ADDR"
    NAMESRV_ADDR_PROPERTY = "rocketmq.namesrv.addr"
    MESSAGE_COMPRESS_TYPE = "rocketmq.message.compressType"
    MESSAGE_COMPRESS_LEVEL = "rocketmq.message.compressLevel"
    DEFAULT_NAMESRV_ADDR_LOOKUP = "jmenv.tbsite.net"

    # Groups.
    DEFAULT_PRODUCER_GROUP = "DEFAULT_PRODUCER"
    DEFAULT_CONSUMER_GROUP = "DEFAULT_CONSUMER"
    TOOLS_CONSUMER_GROUP = "TOOLS_CONSUMER"
    SCHEDULE_CONSUMER_GROUP = "SCHEDULE_CONSUMER"
    FILTERSRV_CONSUMER_GROUP = "FILTERSRV_CONSUMER"
    MONITOR_CONSUMER_GROUP = "__MONITOR_CONSUMER"
    CLIENT_INNER_PRODUCER_GROUP = "CLIENT_INNER_PRODUCER"
    SELF_TEST_PRODUCER_GROUP = "SELF_TEST_P_GROUP"
    SELF_TEST_CONSUMER_GROUP = "SELF_TEST_C_GROUP"
    ONS_HTTP_PROXY_GROUP = "CID_ONS-HTTP-PROXY"
    CID_ONSAPI_PERMISSION_GROUP = "CID_ONSAPI_PERMISSION"
    CID_ONSAPI_OWNER_GROUP = "CID_ONSAPI_OWNER"
    CID_ONSAPI_PULL_GROUP = "CID_ONSAPI_PULL"
    CID_RMQ_SYS_PREFIX = "CID_RMQ_SYS_"
    CID_SYS_RMQ_TRANS = "CID_RMQ_SYS_TRANS"

    # Misc MixAll strings and numbers.
    DEFAULT_CHARSET = "UTF-8"
    MASTER_ID = 0
    RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
    DLQ_GROUP_TOPIC_PREFIX = "%DLQ%"
    REPLY_TOPIC_POSTFIX = "REPLY_TOPIC"
    UNIQUE_MSG_QUERY_FLAG = "_UNIQUE_KEY_QUERY"
    DEFAULT_TRACE_REGION_ID = "DefaultRegion"
    CONSUME_CONTEXT_TYPE = "ConsumeContextType"
    ACL_CONF_TOOLS_FILE = "/conf/tools.yml"
    REPLY_MESSAGE_FLAG = "reply"
    LMQ_PREFIX = "%LMQ%"
    MULTI_DISPATCH_QUEUE_SPLITTER = ","
    REQ_T = "ReqT"

    # TopicValidator.
    AUTO_CREATE_TOPIC_KEY_TOPIC = "TBW102"
    RMQ_SYS_SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
    RMQ_SYS_BENCHMARK_TOPIC = "BenchmarkTest"
    RMQ_SYS_TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
    RMQ_SYS_TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"
    RMQ_SYS_TRANS_OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
    RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
    RMQ_SYS_SELF_TEST_TOPIC = "SELF_TEST_TOPIC"
    RMQ_SYS_OFFSET_MOVED_EVENT = "OFFSET_MOVED_EVENT"
    SYSTEM_TOPIC_PREFIX = "rmq_sys_"
    TOPIC_MAX_LENGTH = 127
    SYSTEM_TOPIC_SET: frozenset[str] = frozenset(
        {
            AUTO_CREATE_TOPIC_KEY_TOPIC,
            RMQ_SYS_SCHEDULE_TOPIC,
            RMQ_SYS_BENCHMARK_TOPIC,
            RMQ_SYS_TRANS_HALF_TOPIC,
            RMQ_SYS_TRACE_TOPIC,
            RMQ_SYS_TRANS_OP_HALF_TOPIC,
            RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC,
            RMQ_SYS_SELF_TEST_TOPIC,
            RMQ_SYS_OFFSET_MOVED_EVENT,
        }
    )
    # Topics a client may not send to directly.
    NOT_ALLOWED_SEND_TOPIC_SET: frozenset[str] = frozenset(
        {
            RMQ_SYS_SCHEDULE_TOPIC,
            RMQ_SYS_TRANS_HALF_TOPIC,
            RMQ_SYS_TRANS_OP_HALF_TOPIC,
            RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC,
            RMQ_SYS_SELF_TEST_TOPIC,
            RMQ_SYS_OFFSET_MOVED_EVENT,
        }
    )

    # Names these constants had in MixAll / ScheduleMessageService before
    # they moved to TopicValidator (4.7); same strings.
    DEFAULT_TOPIC = AUTO_CREATE_TOPIC_KEY_TOPIC
    BENCHMARK_TOPIC = RMQ_SYS_BENCHMARK_TOPIC
    SCHEDULE_TOPIC = RMQ_SYS_SCHEDULE_TOPIC

    # TransactionalMessageUtil.REMOVETAG: tag of the op-half message that marks
    # a half message as resolved.
    REMOVETAG = "d"

    # MessageStoreConfig.messageDelayLevel default; level n (1-based) is the
    # n-th entry and is stored in SCHEDULE_TOPIC queue n-1.
    DEFAULT_MESSAGE_DELAY_LEVEL = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

    @staticmethod
    def get_retry_topic(consumer_group: str) -> str:
        """``%RETRY%<group>``."""
        return MixAll.RETRY_GROUP_TOPIC_PREFIX + consumer_group

    @staticmethod
    def get_dlq_topic(consumer_group: str) -> str:
        """``%DLQ%<group>``."""
        return MixAll.DLQ_GROUP_TOPIC_PREFIX + consumer_group

    @staticmethod
    def get_reply_topic(cluster_name: str) -> str:
        """``<cluster>_REPLY_TOPIC``."""
        return f"{cluster_name}_{MixAll.REPLY_TOPIC_POSTFIX}"

    @staticmethod
    def is_sys_consumer_group(consumer_group: str) -> bool:
        """Whether the group name starts with ``CID_RMQ_SYS_``."""
        return consumer_group.startswith(MixAll.CID_RMQ_SYS_PREFIX)

    @staticmethod
    def is_system_topic(topic: str) -> bool:
        """TopicValidator.isSystemTopic: a known system topic or ``rmq_sys_*``."""
        return topic in MixAll.SYSTEM_TOPIC_SET or topic.startswith(MixAll.SYSTEM_TOPIC_PREFIX)

    @staticmethod
    def is_not_allowed_send_topic(topic: str) -> bool:
        """TopicValidator.isNotAllowedSendTopic."""
        return topic in MixAll.NOT_ALLOWED_SEND_TOPIC_SET

    @staticmethod
    def is_topic_or_group_illegal(name: str) -> bool:
        """True if ``name`` has a character outside ``[%|a-zA-Z0-9_-]``.

        Like Java, this does not check emptiness or length.
        """
        return not all(_topic_char_allowed(ch) for ch in name)

    @staticmethod
    def is_lmq(name: str | None) -> bool:
        """Whether ``name`` is a light message queue (``%LMQ%`` prefix)."""
        return name is not None and name.startswith(MixAll.LMQ_PREFIX)

    @staticmethod
    def broker_vip_channel(is_change: bool, broker_addr: str) -> str:
        """The broker's VIP channel address: same host, port minus 2, when enabled."""
        if not is_change:
            return broker_addr
        host, sep, port = broker_addr.rpartition(":")
        if not sep:
            raise ValueError(f"broker address without port: {broker_addr!r}")
        return f"{host}:{int(port) - 2}"

    @staticmethod
    def delay_level_to_queue_id(delay_level: int) -> int:
        """Queue of SCHEDULE_TOPIC that holds messages of ``delay_level``."""
        return delay_level - 1

    @staticmethod
    def queue_id_to_delay_level(queue_id: int) -> int:
        """Inverse of :meth:`delay_level_to_queue_id`."""
        return queue_id + 1
