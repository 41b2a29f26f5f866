"""A real HTTP server that plays the parts of GitHub's REST API the GitHub deployer uses.

Tags are paginated with `Link` headers; a workflow dispatch creates a run whose title carries
the `deploy_id` input (as the documented `run-name` does) and whose `head_sha` is what the
dispatched ref (a branch or a tag) points to then; each read of a run moves it on
(queued -> in_progress -> completed) unless runs are held; a run can be cancelled. Inputs the
workflow does not declare are refused, as GitHub does; tags can be set to move the moment a
run is dispatched (the race a queued run is exposed to). Failures can be scripted.

Commits form one linear history (`commits`, oldest first; add to it with `commit()`), which
the compare endpoint answers from: a commit later in the history is ahead of an earlier one.
With no commits given, the history is the tags' commits, oldest tag first (one commit per
tag, as a repository that tags every release). Commit statuses and check runs are set per
commit (`set_status()`, `add_check_run()`) and served, paginated, as GitHub does.

A gated run (`protection_rule()`: a job waits for deploybot's answer) waits until answered:
`approved` sets it in progress, `rejected` completes it as failed; it then runs until its
deployment finishes (`finish_deployment()`) or the run is ended (`end_run()`, as cancelling it
on GitHub does), never moved on by being read.

Deployments (`deployments`, oldest first) are created on a commit, branch or tag the repository
has, checked against its commit statuses unless `required_contexts` is `[]`, listed newest
first (filtered by sha, ref, task and environment), and given statuses (`deployment_statuses`:
deployment id -> the statuses posted to it, in order; listed newest first, as GitHub does).

The package: server.py (the fields, scripted failures, routing) and one part per area of the
API: repository.py, actions.py, deployments.py, app.py. Tests import FakeGitHub from here.
"""


from bot.testing.fake_github.server import FakeGitHub

__all__ = ["FakeGitHub"]
