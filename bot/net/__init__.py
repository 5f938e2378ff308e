"""The network below the adapters: what connecting out needs whatever it connects to (a
host name looked up within a deadline, `dns`; the one thread that keeps the requests'
deadlines, `deadlines`). No adapter's library: the SSH and Slack
adapters both use it."""
