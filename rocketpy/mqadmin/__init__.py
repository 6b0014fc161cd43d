"""mqadmin's command line: ``rocketpy admin SUBCOMMAND`` and the ``mqadmin`` entry point.

``core`` holds what every subcommand shares; the subcommands live in one module per topic (topics, brokers,
groups, offsets, messages, config, acl, metrics); ``credentials`` reads the ACL keys.
"""
