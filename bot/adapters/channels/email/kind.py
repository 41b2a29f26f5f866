"""The email channel's kind: its name in a thread's origin, in notify targets (`email:ADDRESS`)
and among the ways people are seen."""

KIND = "email"
