"""viz-transformer: see inside the Transformer of "Attention Is All You Need".

Public API::

    import viz_transformer as vt
    vt.available_models()
    vt.compare("paper-en-pt", "bergamot-en-pt", ["I am a student."], kind="encoder").matching
    m = vt.load_model("paper-reverse")
    tr = vt.trace(m, "happy king red ship", target=None)
    lesson = vt.load_lesson(vt.lessons()[0]); vt.grade(lesson.steps[1].question, "L1 H3").correct
    store = vt.classroom(); code, key = store.create(lesson); token = store.join(code, "Ana")
    with vt.hooks(m.module, {"encoder.layers.0.self_attn.hook_pattern": fn}): ...
    vt.head_view(tr), vt.model_view(tr, "cross")  # notebook widgets (requirements-notebook.txt)
    vt.retrieval_heads(vt.load_model("smollm2"), long_text, "a needle sentence").table

Every public name loads its module when first read (``LAZY``, PEP 562): ``import
viz_transformer`` imports no PyTorch, so the class commands (``python -m viz_transformer class``)
start in well under 2 s (bench/bench_class_commands.py). Those of heavy libraries stay unloaded
until used: the class store (SQLAlchemy), comparison and attention flow (SciPy), corpus
statistics (pandas, Parquet), the score splits and a head's writes (pandas tables), the
notebook widgets (anywidget). A user who only traces imports none of those libraries.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

# public name -> the module that defines it (under the name ``ALIASES`` gives, else its own),
# imported on first use (``__getattr__``): ``import viz_transformer`` loads none of them, so a
# command that needs only the class store (``python -m viz_transformer class``) starts without
# PyTorch
LAZY = {
    "trace": "viz_transformer.analysis.capture",
    "head_importance": "viz_transformer.analysis.heads",
    "value_weighted": "viz_transformer.analysis.heads",
    "Lens": "viz_transformer.analysis.lens",
    "logit_lens": "viz_transformer.analysis.lens",
    "patch_heads": "viz_transformer.analysis.patching",
    "patch_set": "viz_transformer.analysis.patching",
    "head_roles": "viz_transformer.analysis.roles",
    "Grade": "viz_transformer.course",
    "Lesson": "viz_transformer.course",
    "Question": "viz_transformer.course",
    "Step": "viz_transformer.course",
    "grade": "viz_transformer.course",
    "lessons": "viz_transformer.course",
    "load_lesson": "viz_transformer.course",
    "validate_lesson": "viz_transformer.course",
    "LoadedModel": "viz_transformer.models.base",
    "default_device": "viz_transformer.models.devices",
    "prepare_model": "viz_transformer.models.hf.smollm2",
    "DEFAULT_MODEL": "viz_transformer.models.registry",
    "available_models": "viz_transformer.models.registry",
    "default_model": "viz_transformer.models.registry",
    "load_model": "viz_transformer.models.registry",
    "model_info": "viz_transformer.models.registry",
    "ModelFacts": "viz_transformer.models.spec",
    "ModelSpec": "viz_transformer.models.spec",
    "hooks": "viz_transformer.networks.hooks",
    "KIND_TITLES": "viz_transformer.records.kinds",
    "KINDS": "viz_transformer.records.kinds",
    "AttentionKind": "viz_transformer.records.kinds",
    "StopToken": "viz_transformer.records.progress",
    "Trace": "viz_transformer.records.trace",
    "train_live": "viz_transformer.training.live.train",
    "ClassStore": "viz_transformer.classroom",
    "classroom": "viz_transformer.classroom",
    "Comparison": "viz_transformer.analysis.comparison.model_pair",
    "compare": "viz_transformer.analysis.comparison.model_pair",
    "drift": "viz_transformer.analysis.comparison.drift",
    "corpus_stats": "viz_transformer.analysis.corpus.api",
    "read_corpus_stats": "viz_transformer.analysis.corpus.api",
    "head_summary": "viz_transformer.analysis.corpus.stats",
    "attention_flow": "viz_transformer.analysis.flow",  # SciPy's maximum flow
    "attention_scores": "viz_transformer.analysis.why",  # pandas tables
    "score_parts": "viz_transformer.analysis.why",
    "head_writes": "viz_transformer.analysis.writes",  # pandas tables
    "retrieval_heads": "viz_transformer.analysis.retrieval.api",  # pandas tables
    "compare_retrieval": "viz_transformer.analysis.retrieval.api",
    # the notebook widgets (anywidget): a peer of ui/, above this API, never loaded by an import
    "head_view": "viz_transformer.notebook",
    "model_view": "viz_transformer.notebook",
}

ALIASES = {"prepare_model": "prepare", "compare_retrieval": "compare_forms"}

if TYPE_CHECKING:  # what a type checker and an editor see: the names as if imported
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

__all__ = [
    "DEFAULT_MODEL",
    "KINDS",
    "KIND_TITLES",
    "AttentionKind",
    "ClassStore",
    "Comparison",
    "Grade",
    "Lens",
    "Lesson",
    "LoadedModel",
    "ModelFacts",
    "ModelSpec",
    "Question",
    "Step",
    "StopToken",
    "Trace",
    "attention_flow",
    "attention_scores",
    "available_models",
    "classroom",
    "compare",
    "compare_retrieval",
    "corpus_stats",
    "default_device",
    "default_model",
    "drift",
    "grade",
    "head_importance",
    "head_roles",
    "head_summary",
    "head_view",
    "head_writes",
    "hooks",
    "lessons",
    "load_lesson",
    "load_model",
    "logit_lens",
    "model_info",
    "model_view",
    "patch_heads",
    "patch_set",
    "prepare_model",
    "read_corpus_stats",
    "retrieval_heads",
    "score_parts",
    "trace",
    "train_live",
    "validate_lesson",
    "value_weighted",
]


def __getattr__(name: str) -> Any:
    """A name of ``LAZY``, imported from its module on first use and kept in this module."""
    if name not in LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(LAZY[name]), ALIASES.get(name, name))
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


class _Package(types.ModuleType):
    """This package's module: ``vt.classroom`` stays the function when the subpackage of the same
    name is first imported later (the import system then sets the parent's attribute to the
    subpackage; an eager import used to run before the function's name was bound)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in LAZY and isinstance(value, types.ModuleType):
            return  # ``sys.modules`` still holds the subpackage for every import of it
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
