"""Inbound Slack: slash commands and button clicks, translated into service calls."""
