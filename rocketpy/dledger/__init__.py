"""DLedger mode (RocketMQ 4.9.8 with openmessaging/dledger 0.3.1.2): the Raft member of a broker group.

Sans-IO state (:mod:`.member`); the codecs are :mod:`rocketpy.codecs.dledger`.
"""
