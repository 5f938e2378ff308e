"""What the watcher says of an event in a run's thread, in the recipe's language.

`EventWords` is mixed into bot.services.watch_events.ThreadEvents (which posts what these
build; it holds the `ctx`):
- `_say`: the event's sentence (templates/event.json.j2) in the recipe's language, or a
  cluster notice's in a chain's: the template words the facts (the Decision and its `facts`,
  the JobRecord, the Diagnosis' detail and hint, `event.facts`); the watcher's English
  `event.text` (stored and logged), escaped, when the template fails. A stall prompt's names
  its job first; an incident's head line leaves its card's figures to the card;
- `_incident_blocks`: an incident's card (templates/incident.json.j2 via
  bot.core.incident.build_incident, under the recipe's policy, `_policy`) without its own
  buttons, and the view it says; None when it cannot be built (the head line then says the
  figures itself);
- `_incident_people`: the owners an incident mentions (the recipe's `mentions.incidents`:
  every one, the thread's first, or never).
`shown_job` is the event's job as people read it (`123_4` for an array task).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from bot.config import PolicyConfig, RecipeConfig
from bot.core.incident import Incident, build_incident
from bot.core.models import Diagnosis
from bot.core.text import mrkdwn_escape
from bot.services.access import owners_to_mention
from bot.services.job_placement import job_recipe
from bot.services.ports import Blocks, BotContext
from bot.services.probes import probe_offer
from bot.services.threads import render
from bot.services.watch.events import WatchEvent
from bot.services.watch.said import said_of

log = logging.getLogger(__name__)


class EventWords:
    """The words of ThreadEvents' posts (see module doc)."""

    ctx: BotContext

    def _say(self, event: WatchEvent, *, recipe: str | None = None,
             prompt: bool = False, card: Incident | None = None) -> str:
        """The event's sentence in `recipe`'s language (default: the event's recipe); a stall
        prompt's (`prompt`) names its job first; an incident's head line above its `card`
        leaves the card's figures to it (its work lost, its memory limit and MaxRSS). The
        English text if the template fails."""
        english = f"job {event.job_id}: {event.text}" if prompt else event.text
        recipe = recipe if recipe is not None else event.recipe
        d, dec, rec = event.diagnosis, event.decision, event.record
        reason = dict(event.facts)
        if dec is not None:
            reason.update({"kind": str(dec.kind), "class_id": dec.class_id,
                           "charged": dec.charged, "resume_from": dec.resume_from,
                           "resume_checkpoint": dec.resume_checkpoint,
                           "work_lost_iters": dec.work_lost_iters, "mem": dec.mem,
                           "projected_oom_iter": dec.projected_oom_iter})
            reason.update(dec.facts)
        view = {"kind": event.kind, "prompt": prompt, "text": english,
                "text_only": event.text_only, "job_id": shown_job(event),
                "cluster": event.cluster, "state": rec.state if rec else None,
                "class_id": d.class_id if d else (dec.class_id if dec else None),
                "reason": reason, "facts": with_said(event, reason),
                "detail": d.detail if d else None, "hint": d.hint if d else None,
                "translations": d.translations if d else {},
                "site_hint": d.site_hint if d else False,
                "card": {"work_lost": card.lost_iters is not None,
                         "mem_limit": bool(card.mem_limit_bytes),
                         "max_rss": bool(card.max_rss_bytes)} if card is not None else {}}
        try:
            return render(self.ctx, "event", recipe, view)[1]
        except Exception as exc:  # noqa: BLE001 - the English sentence is never lost
            log.warning("event template for %s failed (%s); posting the English text",
                        event.key, exc)
            return mrkdwn_escape(english)  # mrkdwn, as the template's would be

    def _incident_blocks(self, event: WatchEvent,
                         diagnosis: Diagnosis) -> tuple[Blocks, Incident] | None:
        """The incident template's blocks without its own buttons (the approval prompt's
        carry the token), and the view they say; None when the view or template cannot be
        built."""
        try:
            rec, dec = event.record, event.decision
            view = build_incident(
                diagnosis, recipe=event.recipe or "", job_id=shown_job(event),
                last_checkpoint_iter=dec.resume_from if dec else None, now=self.ctx.clock(),
                state=rec.state if rec else None,
                exit_code=(f"{rec.exit_code}:{rec.signal}"
                           if rec and rec.exit_code is not None else None),
                mem_limit_bytes=rec.mem_limit_bytes if rec else None,
                whole_node_mem=bool(rec and rec.whole_node_mem),
                max_rss_bytes=rec.max_rss_bytes if rec else None,
                suggested_mem=dec.mem if dec else None,
                mem_policy=self._policy(event.recipe),
                probe=probe_offer(self.ctx.config, event.recipe or "", job=self._placed(event)),
                from_checkpoint=dec.resume_checkpoint if dec else None,
                checkpoint_unknown=dec.checkpoint_unknown if dec else None,
            )
            # below the head line (self._incident), which may say its explanation
            view = replace(view, headed=str(dec.facts.get("why") or "") if dec else "")
            blocks, _ = render(self.ctx, "incident", event.recipe, view)
        except Exception as exc:  # noqa: BLE001 - fall back to the plain text, never lose it
            log.warning("incident template for %s failed (%s); posting plain text",
                        event.key, exc)
            return None
        return [b for b in blocks if b.get("type") != "actions"], view

    def _placed(self, event: WatchEvent) -> RecipeConfig | None:
        """The recipe as the event's job's sbatch got it (job_recipe: its overrides, the
        nodes it left out), where a probe offered by hand runs; None: no recipe configured."""
        if not event.recipe or event.recipe not in self.ctx.config.recipes:
            return None
        return job_recipe(self.ctx.config, self.ctx.store, event.recipe, event.job_id)

    def _policy(self, recipe: str | None) -> PolicyConfig:
        """The policy the watcher decided `recipe`'s jobs by (its site cap on --mem)."""
        config = self.ctx.config
        return config.policy_for(recipe) if recipe in config.recipes else config.policy

    def _incident_people(self, event: WatchEvent) -> tuple[str, ...]:
        """The owners, when the recipe's `mentions.incidents` says this incident mentions
        them: every one, or the thread's first (no earlier final incident stored for the
        chain: a re-publish of the same incident decides the same)."""
        config = self.ctx.config
        if event.recipe is None or event.recipe not in config.recipes:
            return ()
        rule = config.recipe(event.recipe).mentions.incidents
        if rule == "never":
            return ()
        if rule == "first" and event.chain_id is not None:
            for inc in self.ctx.store.incidents.for_chain(event.chain_id):  # oldest first
                if inc.key == event.key:
                    break
                if inc.key.endswith(":final") and inc.class_id != "completed":
                    return ()
        return owners_to_mention(config, event.recipe)


def with_said(event: WatchEvent, reason: dict[str, Any]) -> dict[str, Any]:
    """The event's facts, with its sentence (`said`, bot.services.watch.said) made again from
    its figures when it was recorded without one (an outbox row of an older bot): said in the
    thread's language, not as the English text it stored."""
    facts = dict(event.facts)
    if "said" not in facts:
        said = said_of(event.kind, shown_job(event), event.cluster, facts, reason)
        if said is not None:
            facts["said"] = said
    return facts


def shown_job(event: WatchEvent) -> str:
    """The event's job as people read it: `123_4` for an array task (its record says, or,
    without a record, the event's `shown_id` fact)."""
    if event.facts.get("shown_id"):
        return str(event.facts["shown_id"])
    if event.record is not None and event.job_id == str(event.record.job_id):
        return event.record.display_id
    return event.job_id or ""
