"""Storage and format connectors; core code reaches them through ``connectors.registry`` only."""
