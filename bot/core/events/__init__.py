"""Every fact about a thread is one of these events; the list of them is the whole state.

New fields must get defaults so that threads written by older versions still load.

One module per kind of fact, behind this face (callers say `from bot.core.events import X`
or `ev.X`, whichever module X is in): base (what every event is), said (what people say),
steps (what the agent chose to do next), approvals, sender_confirmation, results (what
happened when a step ran, and the facts recorded beside), verification, and stored (the
union every stored event loads as; dump and load). The private bases `_Event` and `_Deploy`
are reachable here too, as they were before the package.
"""

from bot.core.events.approvals import (
    ApprovalEscalated,
    ApprovalExpired,
    ApprovalReminded,
    ApprovalRequested,
    ApprovalRulesChanged,
)
from bot.core.events.base import UNRECORDED, V, entry_for, new_id
from bot.core.events.base import _Event as _Event
from bot.core.events.results import (
    PREVIEW_COMMITS,
    Change,
    CommandResult,
    CommitSummary,
    DeliveryFailed,
    DeployQueued,
    DeployResult,
    DeployStarted,
    Error,
    ErrorKind,
    GitHubAnswered,
    GitTag,
    GitTagsResult,
    LockTaken,
    ToolCalled,
)
from bot.core.events.said import LEGACY, Cancelled, HumanResponse, Said, UserMessage, identity_of, principal_of
from bot.core.events.sender_confirmation import SenderConfirmationExpired, SenderConfirmationRequested, SenderConfirmed
from bot.core.events.steps import (
    COMMAND_STEPS,
    DEPLOY_STEPS,
    STEP_TYPES,
    CommandStep,
    Deploy,
    DeployBackend,
    DeployFrontend,
    DeployService,
    DoneForNow,
    ListGitTags,
    LockEnvironment,
    Promote,
    RequestMoreInformation,
    ResumeDeploys,
    RollBack,
    ShowDeploys,
    Step,
    StepSource,
    StopDeploys,
    UnlockEnvironment,
)
from bot.core.events.steps import _Deploy as _Deploy
from bot.core.events.stored import EVENT, Event, dump, load, stamped
from bot.core.events.verification import (
    CheckObserved,
    VerificationEnded,
    VerificationRefused,
    VerificationStarted,
    VerifyCheck,
)

__all__ = [
    "ApprovalEscalated", "ApprovalExpired", "ApprovalReminded", "ApprovalRequested", "ApprovalRulesChanged",
    "COMMAND_STEPS", "Cancelled", "Change", "CheckObserved", "CommandResult", "CommandStep", "CommitSummary",
    "DEPLOY_STEPS", "DeliveryFailed", "Deploy", "DeployBackend", "DeployFrontend", "DeployQueued",
    "DeployResult", "DeployService", "DeployStarted", "DoneForNow", "EVENT", "Error", "ErrorKind", "Event",
    "GitHubAnswered", "GitTag", "GitTagsResult", "HumanResponse", "LEGACY", "ListGitTags", "LockEnvironment",
    "LockTaken", "PREVIEW_COMMITS", "Promote", "RequestMoreInformation", "ResumeDeploys", "RollBack",
    "STEP_TYPES", "Said", "SenderConfirmationExpired", "SenderConfirmationRequested", "SenderConfirmed",
    "ShowDeploys", "Step", "StepSource", "StopDeploys", "ToolCalled", "UNRECORDED", "UnlockEnvironment",
    "UserMessage", "V", "VerificationEnded", "VerificationRefused", "VerificationStarted", "VerifyCheck",
    "dump", "entry_for", "identity_of", "load", "new_id", "principal_of", "stamped",
]
