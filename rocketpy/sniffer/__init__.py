"""Protocol sniffer: every RemotingCommand on the wire, decoded, paired, timed.

Sans-IO core, one concern per module:

* ``packet``: link layer → IP → TCP segment (hand-rolled, shared by files and live capture)
* ``pcap``: forward-only pcap/pcapng reading (files and pipes); ``read_frames``/``read_pcap``
* ``reassembly``: TCP reassembly per connection and direction, each connection recognised by its
  content (remoting or HA) on any port; ``framing``: frames and resync
* ``hastream``: the master/slave HA stream's units (offset reports, transfers) and their pairing
* ``pairing``: request/response pairing by opaque, with latency
* ``session``: filters and the glue every source shares; ``render`` and ``stats``: the outputs
* ``live`` (AF_PACKET capture), ``proxy`` (trio decoding proxy), ``cli`` (``sniff``/``proxy``)
* ``lua``: renders the Wireshark dissector ``codecs/rocketmq.lua``
"""
