"""Slack post references: each message the bot posts, keyed, so it is posted at most once."""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from bot.store import schema as t
from bot.store.repos.base import _Repo, _wall
from bot.store.rows import SlackPost


class SlackPostsRepo(_Repo):
    """Slack message refs: an intent is stored before posting, the ts after, so a restart
    neither loses nor duplicates a post."""

    def get(self, key: str) -> SlackPost | None:
        return self._one(SlackPost, select(t.slack_posts).where(t.slack_posts.c.key == key))

    def record_intent(
        self,
        key: str,
        *,
        channel: str,
        kind: str,
        chain_id: int | None = None,
        thread_ts: str | None = None,
        payload_hash: str | None = None,
        now: float | None = None,
    ) -> SlackPost:
        """Store the intent to post `key` unless it exists; returns the (existing) row. A
        root refused before (`record_refused`) is an intent again, to `channel`."""
        existing = self.get(key)
        if existing is not None and existing.refused:
            with self._engine.begin() as conn:
                conn.execute(update(t.slack_posts).where(
                    t.slack_posts.c.key == key, t.slack_posts.c.state == "refused",
                ).values(channel=channel, thread_ts=thread_ts, state="intent",
                         payload_hash=payload_hash, updated_at=_wall(now)))
            existing = self.get(key)
        if existing is not None:
            return existing
        try:
            with self._engine.begin() as conn:
                conn.execute(
                    insert(t.slack_posts).values(
                        key=key,
                        chain_id=chain_id,
                        channel=channel,
                        kind=kind,
                        ts=None,
                        thread_ts=thread_ts,
                        state="intent",
                        payload_hash=payload_hash,
                        updated_at=_wall(now),
                    )
                )
        except IntegrityError:  # concurrent intent for the same key: theirs stands
            pass
        post = self.get(key)
        assert post is not None
        return post

    def record_posted(
        self,
        key: str,
        *,
        ts: str,
        thread_ts: str | None = None,
        payload_hash: str | None = None,
        now: float | None = None,
    ) -> SlackPost:
        """Mark `key` posted with Slack's ts (and thread_ts for a reply)."""
        values: dict[str, Any] = dict(ts=ts, state="posted", updated_at=_wall(now))
        if thread_ts is not None:
            values["thread_ts"] = thread_ts
        if payload_hash is not None:
            values["payload_hash"] = payload_hash
        with self._engine.begin() as conn:
            result = conn.execute(
                update(t.slack_posts).where(t.slack_posts.c.key == key).values(**values)
            )
        if result.rowcount != 1:
            raise KeyError(f"no Slack post intent {key!r}; call record_intent first")
        post = self.get(key)
        assert post is not None
        return post

    def forget_intent(self, key: str) -> None:
        """Drop the intent to post `key` (nothing when it is posted or unknown): Slack refused
        the post, so it is not in Slack and nothing is left to reconcile."""
        posts = t.slack_posts
        with self._engine.begin() as conn:
            conn.execute(delete(posts).where(posts.c.key == key, posts.c.state == "intent"))

    def record_refused(self, key: str, *, now: float | None = None) -> None:
        """The chat refused to post `key`, a run's root message (nothing is in the chat): its
        intent is kept as `refused`, with its channel, so the replies waiting for its thread
        know it will not come by itself (bot.services.threads.say_in_thread tries it again
        for them); its next try (`record_intent`) makes it an intent again."""
        with self._engine.begin() as conn:
            conn.execute(update(t.slack_posts).where(
                t.slack_posts.c.key == key, t.slack_posts.c.state == "intent",
            ).values(state="refused", updated_at=_wall(now)))

    def record_file(self, key: str, file_id: str | None, *, now: float | None = None) -> None:
        """Remember, before completing it, which uploaded file the chart intent `key` shares
        (None: that upload is gone, start a new one)."""
        with self._engine.begin() as conn:
            result = conn.execute(
                update(t.slack_posts)
                .where(t.slack_posts.c.key == key, t.slack_posts.c.state == "intent")
                .values(ts=file_id, updated_at=_wall(now))
            )
        if result.rowcount != 1:
            raise KeyError(f"no Slack post intent {key!r}; call record_intent first")

    def record_updated(self, key: str, *, payload_hash: str, now: float | None = None) -> None:
        """Remember the hash of the content last sent with chat.update."""
        with self._engine.begin() as conn:
            result = conn.execute(
                update(t.slack_posts)
                .where(t.slack_posts.c.key == key)
                .values(payload_hash=payload_hash, updated_at=_wall(now))
            )
        if result.rowcount != 1:
            raise KeyError(f"no Slack post {key!r}")

    def unposted(self) -> list[SlackPost]:
        """Intents never confirmed posted (to finish after a restart)."""
        return self._all(
            SlackPost,
            select(t.slack_posts)
            .where(t.slack_posts.c.state == "intent")
            .order_by(t.slack_posts.c.updated_at),
        )

    def posted_under(self, prefix: str) -> bool:
        """Whether a post whose key starts with `prefix` is posted (one message sent to
        several threads, under a key each: a cluster's notice)."""
        posts = t.slack_posts
        return self._one(SlackPost, select(posts).where(
            posts.c.key.startswith(prefix, autoescape=True), posts.c.state == "posted",
        ).limit(1)) is not None

    def intents_under(self, prefix: str) -> list[SlackPost]:
        """The intents never confirmed posted whose key starts with `prefix` (a cluster's
        notice's, one per thread), oldest first."""
        posts = t.slack_posts
        return self._all(SlackPost, select(posts).where(
            posts.c.key.startswith(prefix, autoescape=True), posts.c.state == "intent",
        ).order_by(posts.c.updated_at))

    def for_chain(self, chain_id: int) -> list[SlackPost]:
        return self._all(
            SlackPost,
            select(t.slack_posts)
            .where(t.slack_posts.c.chain_id == chain_id)
            .order_by(t.slack_posts.c.updated_at),
        )
