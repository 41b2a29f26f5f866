"""A deploy command: an argv template, run without a shell by the command deployer
(bot/adapters/deployers/command.py) and checked when the settings are read (bot/config), so a
typo such as {env} is caught at start, not at the first deploy. Both read it from here: config
imports no adapter. Pure: it only splits and checks text."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

# The out-of-the-box command: the command deployer's dry run (bot/adapters/deployers/dry_run.py),
# which says what it would deploy and changes nothing. Run by its path, not `-m`: the command
# does not get the bot's PYTHONPATH.
_DRY_RUN_SCRIPT = Path(__file__).parents[1] / "adapters" / "deployers" / "dry_run.py"
DRY_RUN = f"{shlex.quote(sys.executable)} {shlex.quote(str(_DRY_RUN_SCRIPT))} " + "{service} {tag} {environment}"


def command_argv(command: str, what: str = "DEPLOY_COMMAND") -> list[str]:
    """A deploy command (`what` names the setting) as argv, or a ValueError saying what is
    wrong with it."""
    try:
        argv = shlex.split(command)
    except ValueError as e:  # "No closing quotation"
        raise ValueError(f"{what} cannot be split into arguments: {e}") from None
    if not argv:
        raise ValueError(f"{what} is empty")
    try:
        for arg in argv:
            arg.format(service="", tag="", environment="", commit="")
    except (KeyError, IndexError, ValueError) as e:
        raise ValueError(
            f"{what} may use {{service}}, {{tag}}, {{environment}}, {{commit}} only: {e!r}"
        ) from None
    return argv
