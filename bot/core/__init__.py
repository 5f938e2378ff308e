"""Pure core: log parsing, failure catalogue, detectors, policy, incident model. No I/O, no clock."""
