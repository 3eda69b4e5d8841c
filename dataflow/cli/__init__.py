"""The ``dataflow`` command line."""
