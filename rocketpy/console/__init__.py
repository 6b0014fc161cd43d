"""A web console and Prometheus endpoint for RocketMQ 4.x clusters (``rocketpy console``).

Pages and ``/metrics`` are built from the admin protocol only (:mod:`.data`), so they work
against Java NameServers and brokers as well as rocketpy's.
"""
