"""Slurm's protocol, pure: the argv of each command and the parsers of what it prints.

One module per command (`squeue`, `sacct`, `sstat`, `sbatch`, `scontrol`, `scancel`, `sinfo`
in `version`), plus the shared states, values and the `JobRecord` they produce. No I/O, no
clock: `bot.cluster.slurm` runs the argv through SSH and hands the text back here.
"""
