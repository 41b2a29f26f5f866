"""The local Slack Web API and model server in a process of their own, so that their
threads do not compete with a load generator for one interpreter lock.

Prints {"llm": URL, "slack": URL} on one line; then, for each line of input, how many
calls each Slack method got so far, as JSON; exits at end of input.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.testing.fake_llm import FakeLlm  # noqa: E402
from bot.testing.fake_slack import FakeSlack  # noqa: E402

if __name__ == "__main__":
    llm = FakeLlm(default='{"intent": "done_for_now", "message": "all good"}').start()
    slack = FakeSlack().start()
    print(json.dumps({"llm": llm.base_url, "slack": slack.base_url}), flush=True)
    for _ in sys.stdin:
        print(json.dumps(Counter(c.method for c in list(slack.calls))), flush=True)
