"""Thread -> the context text the model reads (factor 3: own your context window).

Compact tagged blocks, one per event. Free text is escaped so a message cannot close its
own block and forge another, and anything that looks like a secret is redacted.

The context has a budget: `render` never returns more than `budget` estimated tokens
(`estimate_tokens`; CONTEXT_BUDGET unless the caller passes the configured one). Always
kept verbatim: the first request and the latest instruction (each cut in the middle, with a
marker, only if it alone is over a quarter of the budget), what the next decision rests on
(the last step, its approval request, decision and outcome, the newest tag list, a newer
error) and then the newest events, as many as fit. Every block's text is capped (a 20 MB
message or deploy log keeps its head and its tail). Whatever does not fit is compacted into
one <summary> block in its place: counts of messages, steps and errors, the last few errors
and the decisions and deploys made, one line each (factor 9: compact errors).
docs/context.md has the figures.

The package: estimate.py (the token estimate), redaction.py (secrets redacted, a text fitted
to a number of tokens), blocks.py (one tagged block per event type) and context.py (the
budget: what is kept, the summary of the rest). Callers import from here.
"""

from bot.core.prompt.blocks import MAX_TAGS
from bot.core.prompt.context import CONTEXT_BUDGET, MIN_BUDGET, render
from bot.core.prompt.estimate import estimate_tokens
from bot.core.prompt.redaction import REDACTED, fit, redact

__all__ = [
    "CONTEXT_BUDGET",
    "MAX_TAGS",
    "MIN_BUDGET",
    "REDACTED",
    "estimate_tokens",
    "fit",
    "redact",
    "render",
]
