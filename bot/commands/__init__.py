"""`trainbot` subcommands, one module each.

Every module here defines ``NAME`` (the subcommand), ``HELP`` (one line),
``configure(parser)`` (adds its arguments) and ``run(args) -> int`` (the exit code).
`bot.cli` discovers them; adding a command is adding a module.
"""
