"""The fault suite (`python -m bot.testing.chaos --faults [NAME ...]`): each fault one entry of
FAULTS, run on its own web and workers (`rig`) under a load of approved deploys to protected
environments, then checked: 0 lost, 0 duplicate threads, 0 deploys of one target at once,
0 unapproved, 0 stuck, and the answer the docs promise for that fault (`suite.Seen`).

`suite` (the Fault entry, the runner), `rig` (the processes, the load, the checks), `ledger`
(the deploy command that records when each deploy ran), and one module per family of faults:
`storage` (OOM, eviction, the embedded Redis killed), `network` (Redis blackholed, a slow link,
a worker cut off mid-deploy), `processes` (a forking deploy command, a hung model, a skewed
clock), `mail` (SMTP down with every worker killed).
"""

from bot.testing.faults import ledger, mail, network, processes, rig, storage, suite
from bot.testing.faults.suite import Fault, Result, Seen, run

FAULTS = [
    Fault("oom", storage.oom),
    Fault("eviction", storage.eviction),
    Fault("forking-deploy", processes.forking_deploy, lambda: {"DEPLOY_TIMEOUT": processes.DEPLOY_TIMEOUT}),
    Fault("hung-model", processes.hung_model, lambda: {"LLM_TIMEOUT": processes.LLM_TIMEOUT}),
    Fault("skewed-clock", processes.skewed_clock, lambda: {"APPROVAL_TTL": "120"}),
    Fault("smtp-down", mail.smtp_down_workers_killed, mail.settings),
    Fault("embedded-redis", storage.embedded_redis_killed, embedded_redis=True),
    Fault("redis-partition", network.redis_partition),
    Fault("slow-redis", network.slow_redis),
    Fault("partitioned-worker", network.partitioned_worker, network.partitioned_settings),
]
BY_NAME = {f.name: f for f in FAULTS}

__all__ = [
    "BY_NAME", "FAULTS", "Fault", "Result", "Seen", "ledger", "mail", "network", "processes", "rig", "run", "storage",
    "suite",
]
