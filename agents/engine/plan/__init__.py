"""Plan mode: planning a goal as steps, running them, judging the round, answering.

This package owns everything plan mode does on top of the ReAct engine; its names drop the ``plan_`` prefix:

- :class:`Planner` (``planner.py``): goal -> validated :class:`Plan` of 2-6 :class:`PlanStep`; the JSON's
  shape recovery, ids and cycle check in ``graph.py``.
- :class:`PlanExecutor` (``executor.py``): runs ready steps concurrently, each as a fresh ``ReActAgent``.
- :class:`PlanAnalyzer` (``analyzer.py``): the round's verdict, an :class:`Analysis`.
- :class:`PlanAgent` (``agent.py``): plan, execute, analyse, re-plan, then stream the answer
  (``synthesis.py``); its run state in ``state.py`` and its checkpoints in ``checkpoint.py``.
- :func:`route_execution_mode` (``router.py``): ``auto`` agents pick ``react`` or ``plan`` per message.
- ``models.py``: the value types; ``prompts.py``: every text plan mode sends to a model.

:class:`ModelRegistry` (``agents/engine/model_registry.py``, LLMs by role) is re-exported here too.
"""

from __future__ import annotations

from agents.engine.model_registry import ROLES, ModelRegistry
from agents.engine.plan.agent import PlanAgent
from agents.engine.plan.analyzer import PlanAnalyzer
from agents.engine.plan.executor import PlanExecutor
from agents.engine.plan.models import Analysis, Plan, PlanResult, PlanStep, PlanValidationError
from agents.engine.plan.planner import Planner
from agents.engine.plan.router import route_execution_mode

__all__ = [
    "ROLES",
    "Analysis",
    "PlanExecutor",
    "Planner",
    "ModelRegistry",
    "Plan",
    "PlanAgent",
    "PlanAnalyzer",
    "PlanResult",
    "PlanStep",
    "PlanValidationError",
    "route_execution_mode",
]
