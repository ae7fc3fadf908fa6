"""Every text plan mode sends to a model, in one place."""

from __future__ import annotations

PLANNER_SYSTEM = """You plan how an AI agent will reach a user's goal. Split the goal into {min_steps} to {max_steps} steps that form a dependency graph (a DAG).

Rules:
- Each step is one self-contained task for an agent that can use the tools listed below. The agent sees only its task, the overall goal and the results of the steps it depends on, so say exactly what to find or do.
- "dependencies" lists the ids of the steps whose results this step needs. Steps that do not depend on each other run in parallel: add a dependency only when a step really needs another step's result. No cycles.
- "tool_hint": the name of the most useful tool from the list below, or null.
- "model_hint": "fast" for simple look-ups and formatting, "smart" for analysis and writing, "reasoning" for hard reasoning or calculations, "general" otherwise.
- Use as few steps as the goal needs. Do not add a step that only writes the final answer: the results of the steps are combined for the user afterwards.
- Write every task in the same language as the goal.

Today's date: {today}.

Available tools:
{catalogue}

Return JSON: {{"steps": [{{"id": "1", "task": "...", "dependencies": [], "tool_hint": null, "model_hint": "general"}}, ...]}}"""

NO_TOOLS = "(no tools: the steps can only reason over what they are given)"

PLANNER_GOAL = "Goal:\n{goal}"
PLANNER_INSTRUCTIONS = "The agent's own instructions:\n{instructions}"
PLANNER_HISTORY = "The conversation so far:\n{history}"
PLANNER_HISTORY_SUMMARY = "The conversation so far (summarised):\n{history}"
PLANNER_FEEDBACK = "Earlier rounds:\n{feedback}"

PLANNER_RETRY = (
    "That plan cannot be run: {problem}. Return a corrected plan in the same JSON format "
    '({{"steps": [...]}}) with at most {max_steps} steps and no dependency cycle.'
)

HISTORY_SUMMARY_SYSTEM = (
    "Summarise this conversation for a planner that must continue it. Keep the facts, figures, names, "
    "decisions and open requests that later work may need; drop pleasantries. At most {chars} characters, "
    "in the conversation's language."
)

STEP_TASK = """You are carrying out one step of a larger plan.

Overall goal:
{goal}

Your step ({step_id}):
{task}"""

STEP_TOOL_HINT = "Suggested tool: {tool}"
STEP_DEPENDENCIES = "Results of the steps this one depends on:"
STEP_DEPENDENCY = "### Step {step_id}: {task}\n{result}"
STEP_CLOSING = (
    "Do only this step. End with its complete result (the data itself, not a description of it): later "
    "steps and the final answer are built from it."
)

ANALYZER_SYSTEM = """You judge whether an AI agent's plan reached the user's goal, from the results of its steps.

Return JSON: {"achieved": true or false, "confidence": 0.0 to 1.0, "reasoning": "...", "final_answer": "..."}
- achieved: the results fully answer the goal.
- confidence: how sure you are that the results are enough to answer the goal well.
- reasoning: short. When the goal is not reached, say what is missing or went wrong, so the next plan can fix it.
- final_answer: the answer to the goal built from the results, in the goal's language (empty when the results say nothing useful)."""

ANALYZER_STEP = "### Step {step_id} [{status}]: {task}\n{body}"

REPLAN_ROUND = "Round {round}:"
REPLAN_ANALYSIS = "Verdict: achieved={achieved}, confidence={confidence:.2f}. {reasoning}"
REPLAN_STEP = "- step {step_id} [{status}] {task} -> {outcome}"
REPLAN_CLOSING = (
    "Plan the next round: carry the facts you need from finished steps into the new tasks, fix what failed "
    "or is missing, and do not repeat work that already succeeded."
)

FOLLOW_UP = "[Follow-up from the user]\n{content}"

SYNTHESIS_USER = """Question:
{goal}

Results of the plan's steps:
{steps}

Draft answer (may be terse or incomplete):
{draft}

Write the final answer to the question."""

SYNTHESIS_STEP = "### {task}\n{result}"
SYNTHESIS_FAILED_STEP = "### {task}\n(this step failed: {error})"

ROUTER_SYSTEM = """Choose how an AI agent should handle the user's message.
- "react": a direct loop of tool calls. For questions, a single look-up or action, small tasks, conversation.
- "plan": an explicit multi-step plan. For tasks with several distinct parts that can be done separately or in parallel (research across sources, comparisons, reports that combine many look-ups).
When in doubt, choose "react".

Return JSON: {"mode": "react" or "plan", "reason": "..."}"""

NOTHING_DONE = (
    "No step of the plan could be completed.",
    "计划中没有任何步骤完成。",
)
