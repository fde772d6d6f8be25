"""The commands: one module each, with ``register(subparsers)`` setting ``handler``; ``main`` is the
command line's entry point, and this package imports none of them until it parses (``main.commands``).
"""
