"""The smallest config file with one recipe, `mix` on cluster `gpu`, whose recipe takes one
more line: `ONE_RECIPE % "time: 4:00:00"`. Shared by the config tests that check how a single
field's value is read (sizes, unquoted scalars, booleans in number fields)."""

ONE_RECIPE = """\
clusters:
  gpu: {host: login.example.org, user: alice, key_file: ~/.ssh/id_ed25519}
recipes:
  mix:
    cluster: gpu
    sbatch_script: /home/alice/train.sbatch
    %s
slack:
  channels: {training: C0123TRAIN}
"""
