"""The system prompt lists a run's skills by name and description only, bounded in number and length,
after the agent's own instructions; without skills the instructions are left as they are."""

from __future__ import annotations

from agents.engine.skills import (
    DESCRIPTION_CHARS,
    MAX_LISTED_SKILLS,
    SkillListing,
    instructions_with_skills,
    skills_prompt,
)


def test_the_skills_follow_the_instructions_one_line_each():
    skills = [
        SkillListing("purchase-approval", "Who approves\na purchase,\n  by amount."),
        SkillListing("supplier-check", "How a new supplier is checked."),
    ]

    prompt = instructions_with_skills("Help the buyers.", skills, tool_name="skills__read_skill")

    head, listed = prompt.split("\n\n", 1)
    assert head == "Help the buyers."
    assert listed.startswith("## Skills\n") and "`skills__read_skill`" in listed
    assert listed.splitlines()[-2:] == [
        "- purchase-approval: Who approves a purchase, by amount.",
        "- supplier-check: How a new supplier is checked.",
    ]


def test_no_skills_leave_the_instructions_alone():
    assert instructions_with_skills("Help.", [], tool_name="skills__read_skill") == "Help."
    assert skills_prompt([], tool_name="skills__read_skill") == ""


def test_the_list_is_bounded_and_long_descriptions_are_cut():
    skills = [SkillListing(f"s-{n}", "word " * 500) for n in range(MAX_LISTED_SKILLS + 10)]

    lines = [line for line in skills_prompt(skills, tool_name="t").splitlines() if line.startswith("- ")]

    assert len(lines) == MAX_LISTED_SKILLS
    assert all(len(line.split(": ", 1)[1]) <= DESCRIPTION_CHARS and line.endswith("…") for line in lines)
