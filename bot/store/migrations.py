"""Versioned schema migrations: `MIGRATIONS[i]` upgrades a database from version i to i + 1.

Each migration is self-contained (its own table definitions or DDL as of that version), so
later edits to `schema.py` never change what an old migration does. `upgrade` runs the
missing ones, each in its own transaction together with the version bump, so an interrupted
upgrade leaves a database at a consistent version. Replicas starting at once upgrade one at a
time: SQLite's `BEGIN IMMEDIATE` already serialises them; on PostgreSQL each transaction first
takes an advisory lock (`_UPGRADE_LOCK`), then reads the version.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Connection,
    Engine,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Table,
    Text,
    UniqueConstraint,
    inspect,
    text,
)
from sqlalchemy.schema import SchemaItem


class StoreVersionError(Exception):
    """The database was written by a newer trainbot than this one."""


def _create_table(conn: Connection, name: str, *parts: SchemaItem,
                  references: tuple[str, ...] = ()) -> None:
    """Create table `name` of `parts` (columns, indexes, constraints) as they are at this
    version; `references`: the tables its foreign keys point at (by their `id`)."""
    md = MetaData()
    for table in references:  # known to this MetaData, so the foreign keys resolve
        Table(table, md, Column("id", Integer, primary_key=True))
    Table(name, md, *parts).create(conn, checkfirst=True)


def _add_column(conn: Connection, table: str, column: str) -> None:
    """ALTER TABLE `table` ADD COLUMN `column` (its DDL: name, type, constraints)."""
    conn.execute(text(f"ALTER TABLE {table} ADD COLUMN {column}"))


def _v1_initial(conn: Connection) -> None:
    """Version 1: chains, attempts, tail offsets, incidents, approvals, audit log."""
    md = MetaData()
    Table("meta", md, Column("schema_version", Integer, nullable=False))
    Table(
        "chains",
        md,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("recipe", Text, nullable=False),
        Column("cluster", Text, nullable=False),
        Column("job_name", Text, nullable=False),
        Column("channel", Text),
        Column("thread_ts", Text),
        Column("status", Text, nullable=False),
        Column("created_at", Float, nullable=False),
        Column("updated_at", Float, nullable=False),
        Index("ix_chains_recipe", "recipe"),
    )
    Table(
        "attempts",
        md,
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
        Column("checkpoint_path", Text),
        UniqueConstraint("chain_id", "attempt_no", name="uq_attempts_chain_no"),
        Index("ix_attempts_job_id", "job_id"),
    )
    Table(
        "tail_offsets",
        md,
        Column("job_id", Text, primary_key=True),
        Column("path", Text, primary_key=True),
        Column("offset", BigInteger, nullable=False),
        Column("inode_or_signature", Text),
        Column("size", BigInteger, nullable=False),
        Column("line_no", BigInteger, nullable=False),
        Column("updated_at", Float, nullable=False),
    )
    Table(
        "incidents",
        md,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("key", Text, nullable=False, unique=True),
        Column("chain_id", Integer, ForeignKey("chains.id")),
        Column("job_id", Text),
        Column("class_id", Text, nullable=False),
        Column("diagnosis_json", Text, nullable=False),
        Column("created_at", Float, nullable=False),
        Column("state", Text, nullable=False),
    )
    Table(
        "approvals",
        md,
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
    )
    Table(
        "audit_log",
        md,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("at", Float, nullable=False),
        Column("actor", Text, nullable=False),
        Column("action", Text, nullable=False),
        Column("job_id", Text),
        Column("recipe", Text),
        Column("result", Text, nullable=False),
        Column("detail", Text),
    )
    md.create_all(conn)
    conn.execute(text("INSERT INTO meta (schema_version) VALUES (0)"))


def _v2_posts_and_watch(conn: Connection) -> None:
    """Version 2: Slack post refs (intent/posted), watched jobs, retry ledger, wall time lost."""
    _create_table(
        conn,
        "slack_posts",
        Column("key", Text, primary_key=True),
        Column("chain_id", Integer, ForeignKey("chains.id")),
        Column("channel", Text, nullable=False),
        Column("kind", Text, nullable=False),
        Column("ts", Text),
        Column("thread_ts", Text),
        Column("state", Text, nullable=False),
        Column("payload_hash", Text),
        Column("updated_at", Float, nullable=False),
        references=("chains",),
    )
    _create_table(
        conn,
        "watched_jobs",
        Column("cluster", Text, primary_key=True),
        Column("job_id", Text, primary_key=True),
        Column("chain_id", Integer, ForeignKey("chains.id")),
        Column("adopted", Boolean, nullable=False),
        Column("added_at", Float, nullable=False),
        references=("chains",),
    )
    _add_column(conn, "chains", "retries_used INTEGER NOT NULL DEFAULT 0")
    _add_column(conn, "attempts", "work_lost_s FLOAT")


def _v3_approvals_by_state(conn: Connection) -> None:
    """Version 3: index approvals by (action, state), for "which jobs does trainbot hold"
    (`ApprovalsRepo.with_state`) without scanning every chain."""
    conn.execute(
        text("CREATE INDEX IF NOT EXISTS ix_approvals_action_state ON approvals (action, state)")
    )


def _v4_leases(conn: Connection) -> None:
    """Version 4: leases, so of several replicas on one database exactly one runs each
    scheduled job (`watch:<cluster>`, `holds`) at a time (`LeasesRepo`)."""
    _create_table(
        conn,
        "leases",
        Column("name", Text, primary_key=True),
        Column("holder", Text, nullable=False),
        Column("acquired_at", Float, nullable=False),
        Column("expires_at", Float, nullable=False),
    )


def _v5_held_since(conn: Connection) -> None:
    """Version 5: watched_jobs.held_since, so how long a job has been held (JobHeldAdmin)
    survives a restart of the bot instead of counting again from zero."""
    _add_column(conn, "watched_jobs", "held_since FLOAT")


def _v6_command_claims(conn: Connection) -> None:
    """Version 6: command_claims, so a slash command Slack delivers again (a late ack) is
    carried out by one replica only, whichever replicas on this database it reaches
    (`CommandClaimsRepo`)."""
    _create_table(
        conn,
        "command_claims",
        Column("key", Text, primary_key=True),
        Column("holder", Text, nullable=False),
        Column("claimed_at", Float, nullable=False),
        Column("expires_at", Float, nullable=False),
        Index("ix_command_claims_expires_at", "expires_at"),
    )


def _v7_lease_epochs(conn: Connection) -> None:
    """Version 7: leases.epoch, a counter raised each time a lease changes holder, so a side
    effect of a replica that lost its lease is refused by the database (`LeasesRepo.renew`)."""
    _add_column(conn, "leases", "epoch INTEGER NOT NULL DEFAULT 0")


def _v8_prompt_steps(conn: Connection) -> None:
    """Version 8: prompt_steps, one row per follow-up step (reminded, escalated) of a prompt,
    so it happens once, whichever replica runs the follow-up (`ApprovalsRepo.mark_step`)."""
    _create_table(
        conn,
        "prompt_steps",
        Column("token", Text, primary_key=True),
        Column("step", Text, primary_key=True),
        Column("at", Float, nullable=False),
    )


def _v9_home_viewers(conn: Connection) -> None:
    """Version 9: home_viewers, the users who opened the App Home tab, so every replica (and
    one restarted) refreshes their tabs when a run changes (`HomeViewersRepo`)."""
    _create_table(
        conn,
        "home_viewers",
        Column("user_id", Text, primary_key=True),
        Column("opened_at", Float, nullable=False),
        Index("ix_home_viewers_opened_at", "opened_at"),
    )


def _v10_excluded_nodes(conn: Connection) -> None:
    """Version 10: attempts.excluded_nodes, the nodes a resubmit left out (--exclude) after a
    fault of that node (gpu_failure, node_failure), so the thread and the ledger show it."""
    _add_column(conn, "attempts", "excluded_nodes TEXT")


def _v11_adopted_chains(conn: Connection) -> None:
    """Version 11: chains.kind and chains.array_job_id, so a job or a whole job array watched
    without trainbot submitting it gets a thread of its own; attempts.display_id, the `123_4`
    of an array task whose job_id is its raw id."""
    _add_column(conn, "chains", "kind TEXT NOT NULL DEFAULT 'run'")
    _add_column(conn, "chains", "array_job_id INTEGER")
    _add_column(conn, "attempts", "display_id TEXT")


def _v12_watched_by(conn: Connection) -> None:
    """Version 12: chains.watched_by, the Slack user who adopted a job or an array with
    `/train watch`, so it shows on their App Home tab (a run's team comes from its recipe)."""
    _add_column(conn, "chains", "watched_by TEXT")


def _v13_run_targets(conn: Connection) -> None:
    """Version 13: chains.target_iter, the target iteration a submit's `target_iter=` override
    set for the run, and attempts.logged_target_iter, the one the job's log printed, so the
    watcher, the thread, App Home and approvals all see one target (bot.core.models
    .run_target) when the recipe sets none or a submit overrides it."""
    _add_column(conn, "chains", "target_iter INTEGER")
    _add_column(conn, "attempts", "logged_target_iter INTEGER")


def _v14_submits_in_flight(conn: Connection) -> None:
    """Version 14: submits_in_flight, a person's submit between its sbatch and the attempt row
    that records its job, so a job whose submit the bot died in is found by its name and
    recorded by the next bot (bot.services.runs.recover_submits_in_flight)."""
    _create_table(
        conn,
        "submits_in_flight",
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("cluster", Text, nullable=False),
        Column("recipe", Text, nullable=False),
        Column("job_name", Text, nullable=False),
        Column("chain_id", Integer, nullable=True),
        Column("array_task", Integer, nullable=True),
        Column("resumed_at", Integer, nullable=True),
        Column("charge_retry", Boolean, nullable=False),
        Column("actor", Text, nullable=False),
        Column("channel", Text, nullable=True),
        Column("sent_at", Float, nullable=False),
        Index("ix_submits_in_flight_sent_at", "sent_at"),
    )


def _v15_progress_rewrites(conn: Connection) -> None:
    """Version 15: progress_rewrite_slots and roots_waiting, the workspace's budget of thread
    roots rewritten for progress alone (its slots, each taken for a minute by a rewrite) and
    the roots each cluster's last tick left waiting for it, so the replicas on one database
    together keep chat.update's rate (bot.services.watch.chains.ProgressRewriteBudget)."""
    _create_table(
        conn,
        "progress_rewrite_slots",
        Column("slot", Integer, primary_key=True, autoincrement=False),
        Column("granted_at", Float, nullable=False),
        Column("chain_id", Integer, nullable=False),
    )
    _create_table(
        conn,
        "roots_waiting",
        Column("chain_id", Integer, primary_key=True, autoincrement=False),
        Column("cluster", Text, nullable=False),
        Column("rewritten_at", Float, nullable=True),
        Column("noted_at", Float, nullable=False),
        Index("ix_roots_waiting_noted_at", "noted_at"),
    )


def _v16_unreadable_since(conn: Connection) -> None:
    """Version 16: watched_jobs.unreadable_since, so the wait for an ended job's log or
    sampler file that cannot be read (or does not exist) survives a restart of the bot: the
    job is judged without it at the first failure's deadline, not that long after a restart."""
    _add_column(conn, "watched_jobs", "unreadable_since FLOAT")


#: What the watcher writes on an attempt as its job runs and ends (bot.store.repos.runs
#: _ATTEMPT_UPDATABLE as of version 17 but the submit's own start_iter and checkpoint_path):
#: carried from a job's last duplicate row to the first by `_v17_one_attempt_per_job`.
_V17_PROGRESS = ("state", "started_at", "ended_at", "last_iter", "result", "cause",
                 "work_lost_iters", "work_lost_s", "logged_target_iter")


def _v17_one_attempt_per_job(conn: Connection) -> None:
    """Version 17: a unique index on attempts (chain_id, job_id), so one Slurm job is one
    attempt of its run however many paths record it (a lost submit's recovery and a settle's
    takeover both finding it by name: AttemptsRepo.record returns the row already there).

    A database that already holds a job twice in a run (recorded by both before this
    version) keeps the first row (lowest id: its attempt number, submit time, checkpoint and
    --exclude, what its thread's posts were keyed by) and drops the later ones, after copying
    to it what the watcher recorded since on the last of them (it updated the newest row of a
    job: AttemptsRepo.get_by_job), each field the last one has. The later attempt numbers
    stay as they are (a gap where a duplicate was: their posts are keyed by them), and the
    run's retries_used is not lowered: whether a duplicate was charged is not recorded."""
    first = ("SELECT MIN(id) FROM attempts GROUP BY chain_id, job_id HAVING COUNT(*) > 1")
    newest = ("(SELECT d.{0} FROM attempts d WHERE d.chain_id = attempts.chain_id"
              " AND d.job_id = attempts.job_id ORDER BY d.id DESC LIMIT 1)")
    progress = ", ".join(f"{c} = COALESCE({newest.format(c)}, {c})" for c in _V17_PROGRESS)
    conn.execute(text(f"UPDATE attempts SET {progress} WHERE id IN ({first})"))
    conn.execute(text("DELETE FROM attempts WHERE id NOT IN "
                      "(SELECT MIN(id) FROM attempts GROUP BY chain_id, job_id)"))
    conn.execute(text("CREATE UNIQUE INDEX IF NOT EXISTS uq_attempts_chain_job"
                      " ON attempts (chain_id, job_id)"))


def _v18_submit_intents(conn: Connection) -> None:
    """Version 18: submits_in_flight.intent, the key of what a submit carries out (the
    watcher's automatic resubmit: its intent row; a cancel and resume: its approval), so the
    recovery of a resubmit the bot died in (bot.services.runs.lost_resubmit) forgets that
    submit's row alone, not a person's submit of the same run in flight then. A row written
    before has none; an automatic one of those is still known by its run, task and actor."""
    _add_column(conn, "submits_in_flight", "intent TEXT")


def _v19_submit_command_bounds(conn: Connection) -> None:
    """Version 19: submits_in_flight.command_at_most_s, one remote command's worst case as the
    sender counted it when it sent the sbatch (bot.core.takeover.RemoteDeadlines
    .command_at_most_s: its connect and command timeouts, a jump host on its way), so a
    submit in flight is looked up or taken over only after the longer of its sender's bound
    and the current config's (bot.core.takeover.submit_in_flight_s): a jump host or a longer
    timeout removed from the config meanwhile never shortens it. A row written before has
    none: the current config's bound alone, as before."""
    _add_column(conn, "submits_in_flight", "command_at_most_s FLOAT")


def _v20_submit_intents_index(conn: Connection) -> None:
    """Version 20: an index on submits_in_flight.intent, so a cancel and resume's settle check
    reads its approval's rows in flight by their intent (SubmitsInFlightRepo.with_intent,
    bot.services.cancel_settle.takeover_s), not every row of its cluster."""
    conn.execute(text("CREATE INDEX IF NOT EXISTS ix_submits_in_flight_intent"
                      " ON submits_in_flight (intent)"))


def _v21_step_bounds(conn: Connection) -> None:
    """Version 21: prompt_steps.command_at_most_s and lookup_at_most_s, one remote command's
    and one checkpoint lookup's worst case as the run that marked (or took over) the step
    counted them (bot.core.takeover.StepBounds: its connect, command and SFTP timeouts, a
    jump host on its way), so an approved cancel's `cancelling` step, or a settle's, is taken
    over only after the longer of its marker's bounds and the current config's
    (bot.core.takeover.cancel_takeover_s, settle_takeover_s). A step marked before has none:
    the current config's bounds alone, as before."""
    _add_column(conn, "prompt_steps", "command_at_most_s FLOAT")
    _add_column(conn, "prompt_steps", "lookup_at_most_s FLOAT")


def _v22_step_post_bounds(conn: Connection) -> None:
    """Version 22: prompt_steps.post_at_most_s, one Slack post's worst case as the run that
    marked (or took over) the step counted it (its post deadline, the config's
    slack.post_deadline_s, then one request: bot.core.slack_bounds.bot_post_at_most_s), so a
    settle's step is taken over only after the longer of its marker's and the current
    config's (bot.core.takeover.settle_takeover_s): a replica configured with a shorter post
    deadline never takes over early. A step marked before has none: the current config's,
    as before."""
    _add_column(conn, "prompt_steps", "post_at_most_s FLOAT")


def _v23_submit_holders(conn: Connection) -> None:
    """Version 23: submits_in_flight.holder, the holder of the submit claim the row's submit
    was sent under (bot.services.submit_claim.submit_holder), so the settle that forgets the
    row (its recovery, SubmitsInFlightRepo.remove) ends that claim, and only that one: a
    claim of the same key another submit took since has another holder. A row written
    before has none: its claim lapses by its hold, as before."""
    _add_column(conn, "submits_in_flight", "holder TEXT")


def _v24_attempt_submit_mem(conn: Connection) -> None:
    """Version 24: attempts.submit_mem, the --mem trainbot submitted the attempt's job with
    (its recipe's `mem` after the submit's overrides; '' when it passed none), so a host OOM
    of a job submitted with --mem=0 (all of each node's memory) is told that no --mem gives
    it more, and one whose submit overrode the recipe's `mem: 0` is not. An attempt recorded
    before has none (NULL): its recipe's `mem` tells, as before."""
    _add_column(conn, "attempts", "submit_mem TEXT")


MIGRATIONS: list[Callable[[Connection], None]] = [
    _v1_initial,
    _v2_posts_and_watch,
    _v3_approvals_by_state,
    _v4_leases,
    _v5_held_since,
    _v6_command_claims,
    _v7_lease_epochs,
    _v8_prompt_steps,
    _v9_home_viewers,
    _v10_excluded_nodes,
    _v11_adopted_chains,
    _v12_watched_by,
    _v13_run_targets,
    _v14_submits_in_flight,
    _v15_progress_rewrites,
    _v16_unreadable_since,
    _v17_one_attempt_per_job,
    _v18_submit_intents,
    _v19_submit_command_bounds,
    _v20_submit_intents_index,
    _v21_step_bounds,
    _v22_step_post_bounds,
    _v23_submit_holders,
    _v24_attempt_submit_mem,
]


# PostgreSQL advisory lock key held by each upgrade transaction ("trainbot" in ASCII, as int).
_UPGRADE_LOCK = 0x747261696E626F74

UPGRADE_STATEMENT_TIMEOUT_S = 60 * 60
"""The statement_timeout of each PostgreSQL upgrade transaction, in place of the store's own
(bot.store.PG_STATEMENT_TIMEOUT_S, or a store.url's): its wait on the upgrade lock while
another replica upgrades, and a migration rewriting a large table, may outlast that bound."""


def current_version(conn: Connection) -> int:
    """Schema version of the database (0 for an empty one)."""
    if not inspect(conn).has_table("meta"):
        return 0
    value = conn.execute(text("SELECT schema_version FROM meta")).scalar()
    return int(value or 0)


def upgrade(engine: Engine, target: int | None = None) -> int:
    """Run the missing migrations up to `target` (default: latest); returns the version."""
    target = len(MIGRATIONS) if target is None else target
    while True:
        with engine.begin() as conn:
            if conn.dialect.name == "postgresql":  # both end with this transaction
                conn.execute(text(f"SET LOCAL statement_timeout = "
                                  f"{int(UPGRADE_STATEMENT_TIMEOUT_S * 1000)}"))
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _UPGRADE_LOCK})
            version = current_version(conn)
            if version > len(MIGRATIONS):
                raise StoreVersionError(
                    f"the store is at schema version {version} but this trainbot knows only "
                    f"up to {len(MIGRATIONS)}; upgrade trainbot (never downgrade a store)"
                )
            if version >= target:
                return version
            MIGRATIONS[version](conn)
            conn.execute(text("UPDATE meta SET schema_version = :v"), {"v": version + 1})
