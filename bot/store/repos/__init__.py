"""Repositories: small classes with domain verbs over the store's tables (SQLAlchemy Core), one
module per aggregate: `runs` (chains, attempts, tail offsets), `incidents`, `approvals`,
`watched` (watched jobs), `replicas` (leases, command claims, Home tab viewers); `base` is
what they share. `bot.store.Store` builds them; callers reach them through it.

Each verb is one transaction. Times are passed in by the caller (`now`, epoch seconds);
where the time is bookkeeping only (`updated_at` of a Slack post or tail offset) `now` may
be omitted and the wall clock is used.
"""
