"""The config file's schema: pydantic models with a description on every field.

Unknown keys are errors, so a typo never passes silently. Secrets (Slack tokens) are never
fields: `read_slack_secrets` takes them from the environment.

One module per section (`clusters`, `policy`, `recipes`, `service`; `root` the whole `Config`),
`_base` what they share. Callers import the models from `bot.config`, which re-exports them.
"""
