"""Protocol sniffer: pcap reading, TCP reassembly, RemotingCommand pairing (sans-IO core)."""
