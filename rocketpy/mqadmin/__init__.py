"""mqadmin's command line: ``rocketpy admin SUBCOMMAND`` and the ``mqadmin`` entry point.

``core`` holds what every subcommand shares; the subcommands live in one module per topic (topics, brokers,
groups, offsets, messages, config, acl, metrics); ``credentials`` reads the ACL keys.
"""

# the subcommands register themselves in core.COMMANDS on import, topic by topic (the order `admin --help` lists)
from . import topics, brokers, groups, offsets, messages, config, acl, metrics  # noqa: E402, F401, I001
