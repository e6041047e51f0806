"""Each kind of question a flow asks (``flows.ui.Question`` and the flows' own) → the modal that shows it, here and
only here. ``ScreenUI`` (screens/ui.py) looks a question up with ``modal``; this module, and every flow module
with it, is imported at the first question, never before the first frame. A new kind of question registers its
modal with ``modal_for``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ..flows.apply import CustomJob
from ..flows.connect import SignInLink
from ..flows.lease import Ceiling, ExitGuard
from ..flows.limit import Countdown, SpendingLimitAsk
from ..flows.node import AddNode, CopyOffForm, CopyProgress, RunImage
from ..flows.ui import Confirm, Prompt, Question, Results, Retry
from ..flows.vm import AskCeiling, AskGpus, PickKey

if TYPE_CHECKING:
    from textual.screen import ModalScreen

Q = TypeVar("Q", bound=Question[Any])

MODALS: dict[type[Question[Any]], Callable[[Any], ModalScreen[Any]]] = {}


def modal_for(kind: type[Q]) -> Callable[[Callable[[Q], ModalScreen[Any]]], Callable[[Q], ModalScreen[Any]]]:
    """Register the function that shows questions of type ``kind``."""

    def register(build: Callable[[Q], ModalScreen[Any]]) -> Callable[[Q], ModalScreen[Any]]:
        MODALS[kind] = build
        return build

    return register


def modal(question: Question[Any]) -> ModalScreen[Any]:
    for kind in type(question).__mro__:
        build = MODALS.get(kind)
        if build is not None:
            return build(question)
    raise TypeError(f"no modal shows {type(question).__name__}")  # (a programming error: said in the log)


@modal_for(Confirm)
def _confirm(q: Confirm) -> ModalScreen[Any]:
    from .modals import ConfirmModal

    return ConfirmModal(q.title, q.body, yes=q.yes, no=q.no, default=q.default)  # type: ignore[arg-type]


@modal_for(Retry)
def _retry(q: Retry) -> ModalScreen[Any]:
    from .modals import RetryModal

    return RetryModal(q.title, q.body)


@modal_for(Results)
def _results(q: Results) -> ModalScreen[Any]:
    from .modals import ResultsModal

    return ResultsModal(q.title, q.body)


@modal_for(Prompt)
def _prompt(q: Prompt) -> ModalScreen[Any]:
    from .modals import PromptModal

    return PromptModal(q.title, q.placeholder)


# ---- LeaseFlow (ncui/flows/lease.py) ------------------------------------------------------------------------


@modal_for(Ceiling)
def _ceiling(q: Ceiling) -> ModalScreen[Any]:
    from .modals import CeilingModal

    return CeilingModal(q.title, q.context, q.judge, q.standing)


@modal_for(ExitGuard)
def _exit_guard(q: ExitGuard) -> ModalScreen[Any]:
    from .exitguard import ExitGuardModal

    return ExitGuardModal(list(q.meters))


# ---- ApplyFlow (ncui/flows/apply.py) ------------------------------------------------------------------------


@modal_for(CustomJob)
def _custom_job(q: CustomJob) -> ModalScreen[Any]:
    from .modals import CustomJobModal

    return CustomJobModal(q.build)


# ---- SpendingLimitFlow (ncui/flows/limit.py) ---------------------------------------------------------------


@modal_for(SpendingLimitAsk)
def _spending_limit(q: SpendingLimitAsk) -> ModalScreen[Any]:
    from .limitguard import SpendingLimitModal

    return SpendingLimitModal(q.current, q.now, q.counts, q.kind)


@modal_for(Countdown)
def _countdown(q: Countdown) -> ModalScreen[Any]:
    from .limitguard import CountdownModal

    return CountdownModal(q.body, q.what, q.seconds, q.yes)


# ---- ConnectFlow (ncui/flows/connect.py) ----


@modal_for(SignInLink)
def _sign_in_link(q: SignInLink) -> ModalScreen[Any]:
    from .modals import SignInModal

    return SignInModal(q.cluster, q.board.link, reason=q.reason, approve=q.approve, board=q.board)


# ---- NodeFlow (ncui/flows/node.py) ----


@modal_for(CopyOffForm)
def _copy_off_form(q: CopyOffForm) -> ModalScreen[Any]:
    from .nodes import CopyOffModal

    return CopyOffModal(list(q.nodes), q.remote, q.local, q.intro)


@modal_for(CopyProgress)
def _copy_progress(q: CopyProgress) -> ModalScreen[Any]:
    from .nodes import CopyProgressModal

    return CopyProgressModal(q.title, q.board)


@modal_for(RunImage)
def _run_image(q: RunImage) -> ModalScreen[Any]:
    from .nodes import RunImageModal

    return RunImageModal(q.node, q.image, q.name)


@modal_for(AddNode)
def _add_node(q: AddNode) -> ModalScreen[Any]:
    from .research import AddNodeModal

    return AddNodeModal(q.box_ports)


# ---- VmFlow (ncui/flows/vm.py) ------------------------------------------------------------------------------


@modal_for(PickKey)
def _pick_key(q: PickKey) -> ModalScreen[Any]:
    from .vmflows import KeyPickModal

    return KeyPickModal(list(q.keys), set(q.registered))


@modal_for(AskGpus)
def _ask_gpus(q: AskGpus) -> ModalScreen[Any]:
    from .vmflows import GpusModal

    return GpusModal(q.context, q.gpus_per_node, q.prefill)


@modal_for(AskCeiling)
def _ask_ceiling(q: AskCeiling) -> ModalScreen[Any]:
    from .modals import CeilingModal

    return CeilingModal(q.title, q.body, q.judge, q.standing)
