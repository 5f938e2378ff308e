"""The network below the adapters: what connecting out needs whatever it connects to (a
host name looked up within a deadline, `dns`). No adapter's library: the SSH and Slack
adapters both use it."""
