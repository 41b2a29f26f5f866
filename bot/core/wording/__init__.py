"""Every sentence deploybot says to people, one module per feature behind this one face:
callers say `from bot.core import wording` and `wording.X(...)`, whichever module X is in. Pure:
no I/O.

One small function per message, named for what it says. Which message applies is decided
by the module that calls it (agent, steps, deploying, service, authority, policy, notices); only
the words live here. Dates are always shown in UTC (dates.py). A new sentence goes in the module
of its feature, next to the related ones, and in that module's `__all__`, which this face
imports (tests/core/test_wording.py fails when one is not on the face).
"""

from bot.core.wording.agents import *
from bot.core.wording.approvals import *
from bot.core.wording.asking import *
from bot.core.wording.changes import *
from bot.core.wording.console import *
from bot.core.wording.dates import *
from bot.core.wording.deploys import *
from bot.core.wording.faults import *
from bot.core.wording.freezes import *
from bot.core.wording.gate import *
from bot.core.wording.locks import *
from bot.core.wording.metrics import *
from bot.core.wording.notices import *
from bot.core.wording.over_time import *
from bot.core.wording.promotion import *
from bot.core.wording.refusals import *
from bot.core.wording.rollback import *
from bot.core.wording.sender_confirmation import *
from bot.core.wording.services import *
from bot.core.wording.triggers import *
from bot.core.wording.verification import *
