"""An agent's example questions: what the chat offers to ask in an empty conversation.

One rule set for the model, the admin (one question per line) and the API (a list of strings): at most
``MAX_EXAMPLE_QUESTIONS``, each one line of at most ``MAX_EXAMPLE_QUESTION_CHARS`` characters, no blank
ones, none twice.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

MAX_EXAMPLE_QUESTIONS = 8
MAX_EXAMPLE_QUESTION_CHARS = 200


def example_questions_clean(value: Any) -> list[str]:
    """The questions stripped, or :class:`ValidationError` saying what is wrong."""
    if not isinstance(value, list):
        raise ValidationError(_("Example questions must be a list of questions."), code="invalid")
    if len(value) > MAX_EXAMPLE_QUESTIONS:
        raise ValidationError(
            ngettext(
                "Give at most %(limit)d example question.",
                "Give at most %(limit)d example questions.",
                MAX_EXAMPLE_QUESTIONS,
            )
            % {"limit": MAX_EXAMPLE_QUESTIONS},
            code="too_many",
        )
    cleaned: list[str] = []
    seen: set[str] = set()
    for number, item in enumerate(value, start=1):
        if not isinstance(item, str):
            raise ValidationError(
                _("Example question %(number)d must be a string.") % {"number": number}, code="invalid"
            )
        question = " ".join(item.split())
        if not question:
            raise ValidationError(
                _("Example question %(number)d is blank.") % {"number": number}, code="blank"
            )
        if len(question) > MAX_EXAMPLE_QUESTION_CHARS:
            raise ValidationError(
                _("Example question %(number)d is longer than %(limit)d characters.")
                % {"number": number, "limit": MAX_EXAMPLE_QUESTION_CHARS},
                code="too_long",
            )
        if question.casefold() in seen:
            raise ValidationError(
                _("Example question %(number)d is there twice.") % {"number": number}, code="duplicate"
            )
        seen.add(question.casefold())
        cleaned.append(question)
    return cleaned


def validate_example_questions(value: Any) -> None:
    """Model field validator."""
    example_questions_clean(value)


class ExampleQuestionsFormField(forms.CharField):
    """The admin's field: one question per line in a text box, a list of strings once cleaned."""

    widget = forms.Textarea(attrs={"rows": 4})

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list):
            return "\n".join(str(item) for item in value)
        return value

    def to_python(self, value: Any) -> list[str]:  # type: ignore[override]  # text edited, a list cleaned
        text = super().to_python(value)
        if text is None:  # CharField answers None only for empty_value=None, which this field leaves at ""
            return []
        return [line for line in text.splitlines() if line.strip()]

    def clean(self, value: Any) -> list[str]:
        questions = self.to_python(value)
        self.validate(questions)
        return example_questions_clean(questions)
