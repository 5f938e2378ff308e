"""The current schema as SQLAlchemy Core tables (what the repositories query).

The tables are *created* only by the migrations in `bot.store.migrations`, which are
self-contained per version; a test checks that migrating from scratch yields exactly these
tables and columns. Times are float epoch seconds supplied by the caller (`now`).
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Table,
    Text,
    UniqueConstraint,
)

SCHEMA_VERSION = 24

metadata = MetaData()

meta = Table("meta", metadata, Column("schema_version", Integer, nullable=False))

chains = Table(
    "chains",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("recipe", Text, nullable=False),
    Column("cluster", Text, nullable=False),
    Column("job_name", Text, nullable=False),
    Column("channel", Text),
    Column("thread_ts", Text),
    Column("status", Text, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    Column("retries_used", Integer, nullable=False, server_default="0"),
    # version 11: "run" (a recipe's), "adopted" (one job watched, submitted outside trainbot),
    # "array" (a whole job array watched: one attempt row per task)
    Column("kind", Text, nullable=False, server_default="run"),
    Column("array_job_id", Integer),  # version 11: the array of an "array" chain
    # version 12: who adopted an "adopted"/"array" chain (`/train watch`): its App Home owner
    Column("watched_by", Text),
    # version 13: the run's target iteration its submit set (`target_iter=`; NULL: none):
    # bot.core.models.run_target
    Column("target_iter", Integer),
    Index("ix_chains_recipe", "recipe"),
)

attempts = Table(
    "attempts",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("chain_id", Integer, ForeignKey("chains.id"), nullable=False),
    Column("job_id", Text, nullable=False),
    Column("attempt_no", Integer, nullable=False),
    Column("state", Text, nullable=False),
    Column("submitted_at", Float, nullable=False),
    Column("started_at", Float),
    Column("ended_at", Float),
    Column("start_iter", Integer),
    Column("last_iter", Integer),
    Column("result", Text),
    Column("cause", Text),
    Column("work_lost_iters", Integer),
    Column("work_lost_s", Float),
    Column("checkpoint_path", Text),
    Column("excluded_nodes", Text),  # --exclude of this submit (a faulty node), else NULL
    Column("display_id", Text),  # version 11: `123_4` for an array task (job_id is its raw id)
    Column("logged_target_iter", Integer),  # version 13: the target its log printed (`/8000`)
    # version 24: the --mem its submit passed ('' none); NULL: not recorded (Attempt.submit_mem)
    Column("submit_mem", Text),
    UniqueConstraint("chain_id", "attempt_no", name="uq_attempts_chain_no"),
    Index("ix_attempts_job_id", "job_id"),
    # version 17: one Slurm job is one attempt of its run (AttemptsRepo.record)
    Index("uq_attempts_chain_job", "chain_id", "job_id", unique=True),
)

tail_offsets = Table(
    "tail_offsets",
    metadata,
    Column("job_id", Text, primary_key=True),
    Column("path", Text, primary_key=True),
    Column("offset", BigInteger, nullable=False),
    Column("inode_or_signature", Text),
    Column("size", BigInteger, nullable=False),
    Column("line_no", BigInteger, nullable=False),
    Column("updated_at", Float, nullable=False),
)

incidents = Table(
    "incidents",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("key", Text, nullable=False, unique=True),
    Column("chain_id", Integer, ForeignKey("chains.id")),
    Column("job_id", Text),
    Column("class_id", Text, nullable=False),
    Column("diagnosis_json", Text, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("state", Text, nullable=False),
)

approvals = Table(
    "approvals",
    metadata,
    Column("id", Text, primary_key=True),
    Column("action", Text, nullable=False),
    Column("payload_json", Text, nullable=False),
    Column("target_job", Text),
    Column("chain_id", Integer, ForeignKey("chains.id")),
    Column("allowed_json", Text, nullable=False),
    Column("expires_at", Float, nullable=False),
    Column("state", Text, nullable=False),
    Column("decided_by", Text),
    Column("decided_at", Float),
    Column("created_at", Float, nullable=False),
    Index("ix_approvals_action_state", "action", "state"),  # version 3
)

# version 8: the follow-up steps (reminded, escalated) a pending prompt went through
prompt_steps = Table(
    "prompt_steps",
    metadata,
    Column("token", Text, primary_key=True),
    Column("step", Text, primary_key=True),
    Column("at", Float, nullable=False),
    # version 21: one remote command's and one checkpoint lookup's worst case as the step's
    # marker (or taker-over) counted them (bot.core.takeover.StepBounds), so its takeover
    # waits at least that long; NULL: not kept (a step marked before)
    Column("command_at_most_s", Float, nullable=True),
    Column("lookup_at_most_s", Float, nullable=True),
    # version 22: one Slack post's worst case as the marker counted it (its post deadline,
    # the config's slack.post_deadline_s, then one request); NULL: not kept
    Column("post_at_most_s", Float, nullable=True),
)

slack_posts = Table(
    "slack_posts",
    metadata,
    Column("key", Text, primary_key=True),
    Column("chain_id", Integer, ForeignKey("chains.id")),
    Column("channel", Text, nullable=False),
    Column("kind", Text, nullable=False),
    Column("ts", Text),
    Column("thread_ts", Text),
    Column("state", Text, nullable=False),
    Column("payload_hash", Text),
    Column("updated_at", Float, nullable=False),
)

audit_log = Table(
    "audit_log",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at", Float, nullable=False),
    Column("actor", Text, nullable=False),
    Column("action", Text, nullable=False),
    Column("job_id", Text),
    Column("recipe", Text),
    Column("result", Text, nullable=False),
    Column("detail", Text),
)

watched_jobs = Table(
    "watched_jobs",
    metadata,
    Column("cluster", Text, primary_key=True),
    Column("job_id", Text, primary_key=True),
    Column("chain_id", Integer, ForeignKey("chains.id")),
    Column("adopted", Boolean, nullable=False),
    Column("added_at", Float, nullable=False),
    Column("held_since", Float),  # version 5: when the watcher first saw it held (JobHeldAdmin)
    # version 16: when the watcher first failed to read its ended job's log or sampler file
    Column("unreadable_since", Float),
)

leases = Table(  # version 4
    "leases",
    metadata,
    Column("name", Text, primary_key=True),
    Column("holder", Text, nullable=False),
    Column("acquired_at", Float, nullable=False),
    Column("expires_at", Float, nullable=False),
    # version 7: +1 on each change of holder; side effects are fenced with it (LeasesRepo)
    Column("epoch", Integer, nullable=False, server_default="0"),
)

command_claims = Table(  # version 6
    "command_claims",
    metadata,
    Column("key", Text, primary_key=True),  # the invocation's Slack trigger_id
    Column("holder", Text, nullable=False),  # the replica that carries it out
    Column("claimed_at", Float, nullable=False),
    Column("expires_at", Float, nullable=False),
    Index("ix_command_claims_expires_at", "expires_at"),
)

home_viewers = Table(  # version 9
    "home_viewers",
    metadata,
    Column("user_id", Text, primary_key=True),  # a Slack user who opened the App Home tab
    Column("opened_at", Float, nullable=False),  # last opened (or clicked on)
    Index("ix_home_viewers_opened_at", "opened_at"),
)

submits_in_flight = Table(  # version 14
    "submits_in_flight",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("cluster", Text, nullable=False),
    Column("recipe", Text, nullable=False),
    Column("job_name", Text, nullable=False),  # what the job is looked up by
    Column("chain_id", Integer, nullable=True),  # None: the submit starts a new run
    Column("array_task", Integer, nullable=True),  # a task's resubmit (--array=N)
    Column("resumed_at", Integer, nullable=True),  # the checkpoint iteration it resumed from
    Column("charge_retry", Boolean, nullable=False),  # counted against the retry budget
    Column("actor", Text, nullable=False),  # the Slack user who asked for it
    Column("channel", Text, nullable=True),  # where they asked
    Column("sent_at", Float, nullable=False),  # when the sbatch was sent (trainbot's clock)
    # version 18: the key of what it carries out (an automatic resubmit's intent row, a
    # cancel and resume's approval), whose recovery forgets this row alone; NULL: none
    Column("intent", Text, nullable=True),
    # version 19: one remote command's worst case as its sender counted it (RemoteDeadlines
    # .command_at_most_s), so its lookup waits at least that long per command; NULL: not kept
    Column("command_at_most_s", Float, nullable=True),
    # version 23: the holder of the submit claim it was sent under (bot.services.submit_claim
    # .submit_holder), whose claim the row's settle ends; NULL: not kept (written before)
    Column("holder", Text, nullable=True),
    Index("ix_submits_in_flight_sent_at", "sent_at"),
    Index("ix_submits_in_flight_intent", "intent"),  # version 20: SubmitsInFlightRepo.with_intent
)

# version 15: the workspace's budget of thread roots rewritten for progress alone, shared by
# the replicas (bot.store.repos.replicas.ProgressRewritesRepo)
progress_rewrite_slots = Table(
    "progress_rewrite_slots",
    metadata,
    Column("slot", Integer, primary_key=True, autoincrement=False),  # 0 .. the budget - 1
    Column("granted_at", Float, nullable=False),  # when it last let a root be rewritten
    Column("chain_id", Integer, nullable=False),  # that root's chain
)

roots_waiting = Table(  # version 15
    "roots_waiting",
    metadata,
    # a root due for its progress alone that its cluster's last tick did not rewrite
    Column("chain_id", Integer, primary_key=True, autoincrement=False),
    Column("cluster", Text, nullable=False),  # whose tick left it waiting
    Column("rewritten_at", Float, nullable=True),  # its last rewrite (NULL: never)
    Column("noted_at", Float, nullable=False),  # that tick
    Index("ix_roots_waiting_noted_at", "noted_at"),
)
