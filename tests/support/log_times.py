"""The times (and the launcher's prefixes around them) a log may put before a line's message,
for tests of what is read after them."""

#: A time at the start of a line in the forms the clock reads, with a rank's prefix before or
#: after it (`[rank3]:`, srun --label's `0:`), each followed by the message's first character.
TIMES_BEFORE_A_BAR = [
    "2025-05-14 16:10:00 ", "2025-05-14 16:10:00,123 ", "2025-05-14T16:10:00 ",
    "2025-05-14T16:10:00.5+00:00 ", "[2025-05-14 16:10:00] ", "[2025-05-14 16:10:00,123] ",
    "[rank3]: 2025-05-14 16:10:00 ", "0: 2025-05-14 16:10:00 ", "2025-05-14 16:10:00 [rank3]: ",
    "2025-05-14 16:10:00 0: ", "2025-05-14T16:10:00Z ",
]
