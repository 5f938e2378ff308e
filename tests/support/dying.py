"""The bot's process dying at a crash point (bot.crashpoint), for the crash tests that run in
one process: `Died` ends the code where it stands, as SIGKILL or the OOM killer would, and is a
BaseException so no `except Exception` of the bot's catches it; `restarted` then stands for the
bot started after it."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import delete, select, update

from bot.services.leases import process_holder
from bot.store import Store
from bot.store import schema as t


class Died(BaseException):
    """The bot's process ending where it stands (SIGKILL, OOM): nothing after it runs."""


def dies_at(point: str) -> Callable[..., None]:
    """A crashpoint hook (monkeypatched over a module's `crashpoint`) that ends the bot (Died)
    at crash point `point` and lets every other point pass."""
    def crashpoint(name: str, detail: str = "") -> None:
        if name == point:
            raise Died(detail)
    return crashpoint


def restarted(store: Store) -> None:
    """The bot started after this one died: the claims this process held in the store (a
    submit's, bot.services.submit_claim, kept by a submit that died after its sbatch) are a
    dead process's, as a killed bot's are to the next one, which takes them over at once: the
    holder's start time becomes another's (its pid reused: bot.core.holders' Death.REUSED).
    Where this process's start time could not be read (nothing can be judged dead), they are
    deleted."""
    here = process_holder().split(":")
    claims = t.command_claims
    with store.engine.begin() as conn:
        for key, holder in conn.execute(select(claims.c.key, claims.c.holder)).all():
            parts = holder.split(":")
            if len(parts) != 6 or parts[:2] != here[:2] or parts[3:] != here[3:]:
                continue  # another process's
            if parts[5].isdigit():
                parts[5] = str(int(parts[5]) + 1)
                conn.execute(update(claims).where(claims.c.key == key)
                             .values(holder=":".join(parts)))
            else:
                conn.execute(delete(claims).where(claims.c.key == key))
