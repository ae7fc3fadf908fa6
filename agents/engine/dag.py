"""Plan mode (the spec's DAG engine): one import point for the planner, executor, analyser and orchestrator.

- :class:`ModelRegistry` (``model_registry.py``): LLMs by role, ``general``/``fast``/``smart``/``reasoning``.
- :class:`DAGPlanner` (``planner.py``): goal -> validated :class:`Plan` of 2-6 :class:`PlanStep`.
- :class:`DAGExecutor` (``executor.py``): runs ready steps concurrently, each as a fresh ``ReActAgent``.
- :class:`PlanAnalyzer` (``analyzer.py``): the round's verdict, an :class:`Analysis`.
- :class:`PlanAgent` (``plan_agent.py``): plan, execute, analyse, re-plan, then stream the answer.
- :func:`route_execution_mode` (``router.py``): ``auto`` agents pick ``react`` or ``plan`` per message.
"""

from __future__ import annotations

from agents.engine.analyzer import PlanAnalyzer
from agents.engine.executor import DAGExecutor
from agents.engine.model_registry import ROLES, ModelRegistry
from agents.engine.plan_agent import PlanAgent
from agents.engine.plan_models import Analysis, Plan, PlanResult, PlanStep, PlanValidationError
from agents.engine.planner import DAGPlanner
from agents.engine.router import route_execution_mode

__all__ = [
    "ROLES",
    "Analysis",
    "DAGExecutor",
    "DAGPlanner",
    "ModelRegistry",
    "Plan",
    "PlanAgent",
    "PlanAnalyzer",
    "PlanResult",
    "PlanStep",
    "PlanValidationError",
    "route_execution_mode",
]
