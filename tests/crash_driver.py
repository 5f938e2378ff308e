"""The bot's watcher, or its prompts job, as a separate process, for
tests/integration/test_crash_safety.py and test_crash_recovery_cluster.py (which SIGKILL it at
chosen points and start it again).

    python -m tests.crash_driver --config CONFIG.yaml --slack-url URL --token TOKEN
        [--cluster dev] [--tick 0.5] [--until-idle] [--job watch|prompts|all]
        [--clock-ahead S]
        [--train "resume RECIPE" --actor U… --channel C…]

Builds the bot's services as `trainbot run` does (bot.app.build_context: the config file's
store, cluster sessions, catalogue, a thread poster on a client for the given Slack Web API
URL, …), so each service the bot has is in what the crash tests kill, and the production
watcher (bot.app.build_watcher), then ticks it every `--tick` seconds. With `--until-idle`
it exits 0 once the cluster has no active chain and no watched job. With `--job prompts` it
runs the scheduler's `prompts` job instead, as `trainbot run` schedules it
(bot.app.schedule_prompts: every policy tick, under its lease, its side effects fenced by
it); with `--until-idle` it exits 0 once no approved cancel is left to settle or to say. With
`--job all` it runs every job `trainbot run` schedules (bot.app.build_scheduler, each under
its lease; this process's holder id printed as `driver: holder ID`), printing
`driver: watch tick CLUSTER at WALL-TIME` as each watcher tick starts, until killed. With
`--train` it runs that `/train` command as the person `--actor` typed it in `--channel`
(bot.services.train), prints the reply and exits instead of ticking. `--clock-ahead S` runs
the bot's clock S seconds ahead of the machine's: a restart that comes that much later (a
settle whose process died is taken over only after a while). TRAINBOT_CRASH_AT
(bot.crashpoint) makes it SIGKILL itself at a named step.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="crash_driver")
    p.add_argument("--config", required=True)
    p.add_argument("--slack-url", required=True, help="Slack Web API base URL (…/api/)")
    p.add_argument("--token", default="xoxb-standin-token")
    p.add_argument("--cluster", default="dev")
    p.add_argument("--tick", type=float, default=0.5)
    p.add_argument("--until-idle", action="store_true")
    p.add_argument("--job", choices=("watch", "prompts", "all"), default="watch")
    p.add_argument("--clock-ahead", type=float, default=0.0)
    p.add_argument("--train", help="a /train command's text to run once instead of ticking")
    p.add_argument("--actor", default="U0OWNER")
    p.add_argument("--channel", default=None)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    from bot.app import build_context, build_watcher
    from bot.config import load_config
    from bot.core.slack_bounds import CALL_TIMEOUT_S
    from bot.slack.retry import make_client

    ctx = build_context(load_config(args.config),
                        client=make_client(args.token, base_url=args.slack_url,
                                           timeout=CALL_TIMEOUT_S))
    store = ctx.store

    def clock() -> float:
        return time.time() + args.clock_ahead

    if args.train:
        from bot.core.train_grammar import parse_command
        from bot.services.train import execute

        try:
            reply = execute(ctx, parse_command(args.train), actor=args.actor,
                            channel=args.channel, now=clock())
            print(f"driver: reply {reply.text}", flush=True)
            return 0
        finally:
            ctx.clusters.close()
            store.close()
    if args.job == "prompts":
        return _run_prompts(ctx, clock, every_s=args.tick, until_idle=args.until_idle)
    if args.job == "all":
        return _run_all(ctx, clock)
    watcher = build_watcher(ctx, args.cluster)
    print("driver: ticking", flush=True)
    try:
        while True:
            started = time.monotonic()
            try:
                report = watcher.tick(clock())
                for event in report.events:
                    print(f"driver: event {event.kind} {event.key}", flush=True)
            except Exception:  # noqa: BLE001 - as the scheduler: logged, next tick retries
                logging.exception("tick failed")
            if args.until_idle and not store.watched_jobs.list(args.cluster) and not [
                    c for c in store.chains.with_status("active") if c.cluster == args.cluster]:
                print("driver: idle", flush=True)
                return 0
            time.sleep(max(0.0, args.tick - (time.monotonic() - started)))
    finally:
        ctx.clusters.close()
        store.close()


def _run_prompts(ctx, clock, *, every_s: float, until_idle: bool) -> int:
    """The scheduler's `prompts` job as `trainbot run` schedules it, until killed (or, when
    `until_idle`, until no approved cancel is left to settle or to say: exit 0)."""
    from bot.app import schedule_prompts
    from bot.services.leases import LeaseKeeper
    from bot.services.scheduler import JobScheduler

    store = ctx.store
    scheduler = JobScheduler(LeaseKeeper(store.leases), clock=clock)
    schedule_prompts(scheduler, ctx)
    scheduler.start()
    print("driver: prompts scheduled", flush=True)
    try:
        while not (until_idle and not store.approvals.cancels_unknown()
                   and not store.approvals.cancels_unannounced()):
            time.sleep(every_s)
        print("driver: idle", flush=True)
        return 0
    finally:
        scheduler.stop()
        ctx.clusters.close()
        store.close()


def _run_all(ctx, clock) -> int:
    """Every job `trainbot run` schedules (bot.app.build_scheduler), until killed."""
    from bot.app import TickHealth, build_scheduler
    from bot.services.leases import process_holder

    class PrintedTicks(TickHealth):
        """Says when each watcher tick starts (no metrics)."""

        def __init__(self) -> None:
            self.last_ok = {}

        def observed(self, cluster, tick):
            def run(now):
                print(f"driver: watch tick {cluster} at {time.time():.3f}", flush=True)
                return tick(now)

            return run

    scheduler = build_scheduler(ctx, clock=clock, ticks=PrintedTicks())
    print(f"driver: holder {process_holder()}", flush=True)
    scheduler.start()
    try:
        while True:
            time.sleep(1.0)
    finally:
        scheduler.stop()
        ctx.clusters.close()
        ctx.store.close()


if __name__ == "__main__":
    sys.exit(main())
