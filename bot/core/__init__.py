"""The core: what deploybot decides, pure (no I/O, no clock unless handed one). `events` and
`thread` are the state; `control` the reducer (what must happen next); `authority` who may do
what, `policy` and `people` the rules and who is who; `deploy_rules`, `freeze_windows`,
`promotion`, `verification`, `standing`, `outcomes`, `triggers`, `gate` the rest of the
decisions; `wording` every sentence people see; `prompt`, `commands` and `agents` what the model
and agents are told and parsed from; `deploys` (a deploy's id) and `audit` (what its history
record keeps); `transcript`, `views`, `notices` how a thread is shown; `catalog` the services, `code_links`
their code host's pages; `public_url` PUBLIC_URL as it may be shown."""

__all__ = [
    "agents", "audit", "authority", "catalog", "characters", "code_links", "commands", "control",
    "delivery_metrics", "deploy_command", "deploy_rules", "deploys", "events", "freeze_windows", "gate", "identity",
    "notices", "outcomes", "people", "policy", "promotion", "prompt", "public_url", "redis_target", "standing",
    "thread", "tokens", "transcript", "triggers", "verification", "views", "wording"
]
