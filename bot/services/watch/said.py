"""The sentences the watcher's notes say, each written once, as a Text (bot.core.text).

An event carries its sentence in `facts["said"]`: its English is the event's `text` (stored,
logged, sent to the webhook), and templates/event.json.j2 renders it in the thread's language
(the `msg` filter: Korean from messages.po, the same message ids). The figures the sentence is
made of stay in the facts beside it (`held_s`, `ticks`, `new_job` …).

`said_of` makes an event's sentence again from those figures, for an event recorded before
its sentence was (an outbox row of an older bot, published again from the store): it says
what the watcher would say now, in the thread's language, not the English text stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.core.policy import resume_start
from bot.core.text import N_, Text, duration_phrase


def held_said(job: str, reason: str, held_s: float) -> Text:
    """A job held (JobHeldAdmin) for `held_s` seconds."""
    return N_("job %(job)s has been held (%(reason)s) for %(duration)s, usually after a "
              "requeue; it will not start by itself. Ask an admin to release it, or cancel it "
              "and resubmit from the last complete checkpoint.",
              job=job, reason=reason, duration=duration_phrase(held_s))


def unknown_said(job: str, minutes: float, cluster: str) -> Text:
    """A watched job neither squeue nor sacct knows `minutes` after it was watched."""
    return N_("job %(job)s is known to neither squeue nor sacct %(duration)s after it was "
              "watched (purged from accounting, or not a job of cluster %(cluster)s); trainbot "
              "stopped watching it. `/train watch %(job)s` watches it again.",
              job=job, duration=duration_phrase(minutes * 60), cluster=cluster)


def read_failed_said(job: str, ticks: int, seconds: float, error: Any) -> Text:
    """A running job's files not read for `ticks` ticks in a row (`seconds` since the first);
    `error` is the reader's sentence (a Text)."""
    return N_("The files of job %(job)s have not been read for %(ticks)s ticks in a row "
              "(%(duration)s): %(error)s. The job is not judged until they read again; "
              "trainbot reads them again each tick.",
              job=job, ticks=ticks, duration=duration_phrase(seconds), error=error)


def resubmitted_said(job: str, new_job: str, start: Text) -> Text:
    """An automatic resubmit made: job `new_job`, resuming `start` (resume_start)."""
    return N_("job %(job)s resubmitted automatically as %(new)s, %(start)s",
              job=job, new=new_job, start=start)


def superseded_said(job: str, recipe: str, new_job: str) -> Text:
    """A due automatic resubmit not made: a new run of its recipe carries it on."""
    return N_("job %(job)s was not resubmitted automatically: a new run of %(recipe)s was "
              "started since as job %(new)s, which carries it on; a second copy beside it "
              "would write the same checkpoints", job=job, recipe=recipe, new=new_job)


def unreachable_said(cluster: str, ticks: int, since: str, error: Any) -> Text:
    """The cluster has not answered for `ticks` ticks (since `since`, a UTC time)."""
    return N_("cluster %(cluster)s unreachable for %(ticks)s ticks (since %(since)s): "
              "%(error)s. Jobs are not being judged; nothing is concluded about them until it "
              "answers again.", cluster=cluster, ticks=ticks, since=since, error=error)


def back_said(cluster: str, since: str) -> Text:
    """The cluster answers again after an outage that began at `since`."""
    return N_("cluster %(cluster)s answers again (unreachable since %(since)s); watching "
              "resumes.", cluster=cluster, since=since)


def resubmit_note_said(job: str, facts: Mapping[str, Any]) -> Text:
    """The note of an automatic resubmit a person takes over (bot.services.watch.resubmit),
    from its facts: `resubmit` says which (`refused`, `failed` after `tries`, or `ask`: its
    stored decision, of kind `stored_kind`, could not be read back); `recipe` resumes it."""
    recipe = str(facts.get("recipe") or "RECIPE")
    if facts.get("resubmit") == "ask":
        return N_("job %(job)s: trainbot could not read back its decision to resubmit (stored "
                  "kind `%(kind)s`), so it did not resubmit; a person decides: "
                  "`/train resume %(recipe)s` resumes the run.",
                  job=job, kind=str(facts.get("stored_kind")), recipe=recipe)
    error = str(facts.get("error") or "")
    if facts.get("resubmit") == "refused":
        return N_("job %(job)s was not resubmitted: the cluster refused the automatic "
                  "resubmit (%(error)s), so trainbot will not try it again; fix the cause, "
                  "then `/train resume %(recipe)s` resumes the run.",
                  job=job, error=error, recipe=recipe)
    return N_("job %(job)s was not resubmitted: the automatic resubmit failed %(tries)s "
              "times, the last with: %(error)s. trainbot stopped trying; "
              "`/train resume %(recipe)s` resumes the run.",
              job=job, error=error, recipe=recipe, tries=int(facts.get("tries") or 0))


def said_of(kind: str, job: str, cluster: str, facts: Mapping[str, Any],
            reason: Mapping[str, Any]) -> Text | None:
    """The sentence of an event of `kind` (of `job`, shown as people read it, on `cluster`)
    made from its figures (`facts`; `reason`: its decision's, where a resubmit starts), for
    an event recorded without its `said`; None for an event with no such sentence, or without
    the figures for it."""
    if "said" in facts:
        said = facts["said"]
        return said if isinstance(said, Text) else None
    try:
        if kind == "note" and "resubmit" in facts:
            return resubmit_note_said(job, facts)
        if kind == "held" and "held_s" in facts:
            return held_said(job, str(facts["reason"]), float(facts["held_s"]))
        if kind == "unknown" and "minutes" in facts:
            return unknown_said(job, float(facts["minutes"]), cluster)
        if kind == "read_failed" and "ticks" in facts:
            return read_failed_said(job, int(facts["ticks"]), float(facts["seconds"]),
                                    facts["error"])
        if kind == "resubmitted" and "new_job" in facts:
            return resubmitted_said(job, str(facts["new_job"]), resume_start(
                reason.get("resume_from"), reason.get("resume_checkpoint")))
        if kind == "resubmit_superseded" and "new_job" in facts:
            return superseded_said(job, str(facts["recipe"]), str(facts["new_job"]))
        if kind == "cluster_unreachable" and "ticks" in facts:
            return unreachable_said(cluster, int(facts["ticks"]), str(facts["since"]),
                                    facts["error"])
        if kind == "cluster_back" and "since" in facts:
            return back_said(cluster, str(facts["since"]))
    except (KeyError, TypeError, ValueError):
        return None  # figures of another shape: the stored English text is said
    return None
