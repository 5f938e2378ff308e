"""Pure core: log parsing, failure catalogue, detectors, policy, incident model.

No I/O and no clock reads: callers pass data and `now`.
"""
