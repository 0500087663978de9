"""viz-transformer: see inside the Transformer of "Attention Is All You Need".

Public API::

    import viz_transformer as vt
    vt.available_models()
    vt.compare("paper-en-pt", "bergamot-en-pt", ["I am a student."], kind="encoder").matching
    m = vt.load_model("paper-reverse")
    tr = vt.trace(m, "happy king red ship", target=None)
    lesson = vt.load_lesson(vt.lessons()[0]); vt.grade(lesson.steps[1].check, "L1 H3").correct
    store = vt.classroom(); code, key = store.create(lesson); token = store.join(code, "Ana")
    with vt.hooks(m.module, {"encoder.layers.0.self_attn.hook_pattern": fn}): ...
"""

from viz_transformer.analysis.capture import trace
from viz_transformer.analysis.comparison.drift import drift
from viz_transformer.analysis.comparison.model_pair import Comparison, compare
from viz_transformer.analysis.corpus.api import corpus_stats, read_corpus_stats
from viz_transformer.analysis.corpus.stats import head_summary
from viz_transformer.analysis.flow import attention_flow
from viz_transformer.analysis.heads import head_importance, value_weighted
from viz_transformer.analysis.lens import Lens, logit_lens
from viz_transformer.analysis.lessons import (
    Check,
    Grade,
    Lesson,
    Step,
    grade,
    lessons,
    load_lesson,
    validate_lesson,
)
from viz_transformer.analysis.patching import patch_heads, patch_set
from viz_transformer.analysis.roles import head_roles
from viz_transformer.analysis.why import attention_scores, score_parts
from viz_transformer.analysis.writes import head_writes
from viz_transformer.classroom import ClassStore, classroom
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
from viz_transformer.records.kinds import KIND_TITLES, KINDS, AttentionKind
from viz_transformer.records.progress import StopToken
from viz_transformer.records.trace import Trace
from viz_transformer.training.live.train import train_live

__all__ = [
    "DEFAULT_MODEL",
    "KINDS",
    "KIND_TITLES",
    "AttentionKind",
    "Check",
    "ClassStore",
    "Comparison",
    "Grade",
    "Lens",
    "Lesson",
    "LoadedModel",
    "ModelFacts",
    "ModelSpec",
    "Step",
    "StopToken",
    "Trace",
    "attention_flow",
    "attention_scores",
    "available_models",
    "classroom",
    "compare",
    "corpus_stats",
    "default_device",
    "default_model",
    "drift",
    "grade",
    "head_importance",
    "head_roles",
    "head_summary",
    "head_writes",
    "hooks",
    "lessons",
    "load_lesson",
    "load_model",
    "logit_lens",
    "model_info",
    "patch_heads",
    "patch_set",
    "prepare_model",
    "read_corpus_stats",
    "score_parts",
    "trace",
    "train_live",
    "validate_lesson",
    "value_weighted",
]
