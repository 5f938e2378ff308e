"""Everything that crosses SSH to the cluster: ssh runner, Slurm client, log tail, checkpoints."""
