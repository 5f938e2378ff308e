"""Outbound Slack: render templates to Block Kit, post/update/upload with retries and keys."""
