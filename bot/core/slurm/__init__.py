"""Slurm's protocol, pure: the argv of each command and the parsers of what it prints."""
