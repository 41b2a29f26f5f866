"""The one web app: `api` (the FastAPI app: threads, deploys, signing in, health and the
channels' endpoints) and `console` (the web console, under /console/), behind the `front_door`
(what a request must pass before its body is read: `limits`, `origins`, `auth`), with `sessions`
(signed cookies), `logs` (secrets kept out of log lines) and `shared` (what they all share)."""

__all__ = ["api", "auth", "console", "front_door", "limits", "logs", "origins", "sessions", "shared"]
