"""viz-transformer: see inside the Transformer of "Attention Is All You Need".

Public API::

    import viz_transformer as vt
    vt.available_models()
    vt.compare("paper-en-pt", "bergamot-en-pt", ["I am a student."], kind="encoder").matching
    m = vt.load_model("paper-reverse")
    tr = vt.trace(m, "happy king red ship", target=None)
    lesson = vt.load_lesson(vt.lessons()[0]); vt.grade(lesson.steps[1].question, "L1 H3").correct
    store = vt.classroom(); code, key = store.teacher.create(lesson)  # one object per role:
    token = store.students.join(code, "Ana")  # .teacher, .students, .access, .lessons
    with vt.hooks(m.module, {"encoder.layers.0.self_attn.hook_pattern": fn}): ...
    vt.head_view(tr), vt.model_view(tr, "cross")  # notebook widgets (requirements-notebook.txt)
    vt.retrieval_heads(vt.load_model("smollm2"), long_text, "a needle sentence").table

Every public name loads its module when first read (PEP 562): the ``if TYPE_CHECKING:``
imports below are the one list of them (``exports.lazy`` derives ``__all__`` and ``LAZY``). ``import
viz_transformer`` imports no PyTorch, so the class commands (``python -m viz_transformer class``)
start in well under 2 s (bench/bench_class_commands.py). Those of heavy libraries stay unloaded
until used: the class store (SQLAlchemy), comparison and attention flow (SciPy), corpus
statistics (pandas, Parquet), the score splits and a head's writes (pandas tables), the
notebook widgets (anywidget). A user who only traces imports none of those libraries.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

from viz_transformer import exports

if TYPE_CHECKING:  # the public API, the one list: what an editor sees, what is loaded lazily
    from viz_transformer.analysis.capture import trace
    from viz_transformer.analysis.comparison.drift import drift
    from viz_transformer.analysis.comparison.model_pair import Comparison, compare
    from viz_transformer.analysis.corpus.api import corpus_stats, read_corpus_stats
    from viz_transformer.analysis.corpus.stats import head_summary
    from viz_transformer.analysis.flow import attention_flow
    from viz_transformer.analysis.heads import head_importance, value_weighted
    from viz_transformer.analysis.lens import Lens, logit_lens
    from viz_transformer.analysis.patching import patch_heads, patch_set
    from viz_transformer.analysis.retrieval.api import compare_forms as compare_retrieval
    from viz_transformer.analysis.retrieval.api import retrieval_heads
    from viz_transformer.analysis.roles import head_roles
    from viz_transformer.analysis.why import attention_scores, score_parts
    from viz_transformer.analysis.writes import head_writes
    from viz_transformer.classroom import ClassStore, classroom
    from viz_transformer.course import (
        Grade,
        Lesson,
        Question,
        Step,
        grade,
        lessons,
        load_lesson,
        validate_lesson,
    )
    from viz_transformer.models.base import LoadedModel
    from viz_transformer.models.devices import default_device
    from viz_transformer.models.hf.smollm2 import prepare as prepare_model
    from viz_transformer.models.registry import (
        DEFAULT_MODEL,
        available_models,
        default_model,
        load_model,
        model_info,
    )
    from viz_transformer.models.spec import ModelFacts, ModelSpec
    from viz_transformer.networks.hooks import hooks
    from viz_transformer.notebook import head_view, model_view
    from viz_transformer.records.kinds import KIND_TITLES, KINDS, AttentionKind
    from viz_transformer.records.progress import StopToken
    from viz_transformer.records.trace import Trace
    from viz_transformer.training.live.train import train_live

__getattr__, __dir__, __all__, LAZY = exports.lazy(__name__, __file__)


class _Package(types.ModuleType):
    """This package's module: ``vt.classroom`` stays the function when the subpackage of the same
    name is first imported later (the import system then sets the parent's attribute to the
    subpackage; an eager import used to run before the function's name was bound)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in LAZY and isinstance(value, types.ModuleType):
            return  # ``sys.modules`` still holds the subpackage for every import of it
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
