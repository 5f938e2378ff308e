"""trainbot: a Slack chat-ops bot that watches, diagnoses and resumes ML training jobs on Slurm."""

__version__ = "0.1.0"
