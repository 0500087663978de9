"""Grading an answer against the lesson's model, at answer time (``vt.grade``): the question's
kind names its grader in ``question_kinds.QUESTION_KINDS``; the right answer is read from the trace
of the question's sentence, or from the paper's formula, never stored.

Traces come from the caller (``traces``: ``(model name, sentence) -> Trace``, or ``GradingCaches``,
which also give the ablations, head roles and logit lenses a course quantity reads). The app passes
its pages' caches (``ui/head_caches.grading_caches``), so a class's sentence is traced once per
server, shared with the pages, and dropped with them when a live model is retrained; ``vt.grade``
alone traces (``traced``), and a class store made by a script traces once per answer unless
given a cache.
"""

from __future__ import annotations

from collections.abc import Callable

from viz_transformer.course.grading_caches import GradingCaches, TraceOf, caches_of, traced
from viz_transformer.course.lesson import Grade, Lesson, Question
from viz_transformer.course.quantities import COURSE_QUANTITIES, course_value
from viz_transformer.course.question_kinds import rule

__all__ = ["GradingCaches", "TraceOf", "grade", "question_sentence", "traced", "warm_traces"]


def question_sentence(question: Question) -> str | None:
    """The sentence a question is graded on (None for ``choice``, ``text`` and ``pe_value``)."""
    return rule(question).sentence(question)


def warm_traces(
    lesson: Lesson, traces: TraceOf, keep_going: Callable[[], bool] = lambda: True
) -> None:
    """Ask ``traces`` (a cache) for every sentence the lesson's questions are graded on, so the
    first answers to each step wait for no forward pass (a server calls it in the background
    when it opens a class); a sentence the model cannot read is left for ``validate_lesson`` to
    report. Then computes each course quantity a number question asks for (an ablation of every
    head, a beam search: ``quantities``), kept for the answers. Stops before the next sentence
    or quantity once ``keep_going()`` is False."""
    sentences = {question_sentence(s.question) for s in lesson.steps if s.question is not None}
    for sentence in sorted(s for s in sentences if s is not None):
        if not keep_going():
            return
        try:
            traces(lesson.model, sentence)
        except (ValueError, RuntimeError):
            continue
    for question in (s.question for s in lesson.steps if s.question is not None):
        quantity = question.args.get("quantity") if question.kind == "number" else None
        if quantity in COURSE_QUANTITIES:
            if not keep_going():
                return
            try:
                course_value(lesson.model, quantity, question.args["args"], caches_of(traces))
            except (ValueError, RuntimeError):
                continue


def grade(question: Question, answer: str, traces: TraceOf = traced) -> Grade:
    """Grade ``answer`` (a string as the student typed it) against the lesson's model.

    ``head``: "L1 H3" (also "l1h3", "L1, H3", "layer 1 head 3", "1 3"); right when that head's
    weight from row ``query`` to column ``key`` is at least 0.9 x the largest over the heads of
    that kind (of ``layers``, if given). ``token``: the decoder's input token at ``step``,
    ignoring case and the marks ``##`` and ``▁``. ``number``: within ``tolerance`` (relative,
    default 0.02; and at most 0.005 apart always counts, for answers rounded to two decimals).
    ``choice``: an option's text (or its letter, A for the first). ``text``: stored, ``correct``
    None.

    Args:
        question: the step's question.
        answer: the answer as given.
        traces: ``(model name, sentence) -> Trace``; by default each call traces
            (``traced``); a server passes its caches as ``GradingCaches`` (a course quantity reads
            its ablations, roles and lenses there too).

    Raises:
        ValueError: a question its model cannot compute, such as an attention kind it does not
            show (``vt.validate_lesson`` reports these first), with what is wrong.
    """
    answer, kind = str(answer).strip(), rule(question)
    if not answer:
        expected = kind.grade(question, "?", traces).expected if kind.graded else ""
        correct = False if kind.graded else None
        return Grade(correct, expected, "Type an answer first.", readable=False)
    return kind.grade(question, answer, traces)
