"""Live training of the paper Transformer on a built-in task, from scratch, in seconds.

``train_live`` trains one model in the calling thread and reports every few steps (loss, held-out
exact match, the probe sentence's attention); ``LiveTrainer`` (``training.live.runs``) runs it
for a whole server in one background thread, with and without 1/sqrt(d_k) side by side. A run
is deterministic: the weights depend only on the task, size, seed, thread count and step count
(dropout is off, initialisation and batches draw from generators of the run's own).
"""

from __future__ import annotations

import contextlib
import math
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from viz_transformer.models.devices import default_device
from viz_transformer.models.paper import PaperModel
from viz_transformer.models.registry import forget_memory_models, offer_memory_model
from viz_transformer.models.spec import ModelSpec
from viz_transformer.networks.config import TransformerConfig
from viz_transformer.networks.paper import Transformer
from viz_transformer.networks.paper_decode import pad_batch, source_mask
from viz_transformer.records.progress import StopToken
from viz_transformer.records.trace import Trace
from viz_transformer.text.vocab import WordVocab
from viz_transformer.training.checkpoints import EVERY, CheckpointSaver
from viz_transformer.training.live.metrics import exact_match, greedy_text
from viz_transformer.training.tasks.catalog import TASKS, pairs

MAX_SECONDS = 600  # the hard limit of one run (a classroom server must get its CPU back)
# model sizes: "tiny" learns reversal in under a minute on one CPU thread; "small" is the
# shipped paper-* models' size
SIZES: dict[str, dict[str, int]] = {
    "tiny": {"d_model": 64, "n_heads": 2, "n_encoder_layers": 2, "n_decoder_layers": 2,
             "d_ff": 256},
    "small": {"d_model": 128, "n_heads": 4, "n_encoder_layers": 2, "n_decoder_layers": 2,
              "d_ff": 512},
}  # fmt: skip
N_HELD_OUT = 64  # the fixed held-out sample exact match is measured on
PREFIX = "live:"  # names of the models live training offers (in memory only)
# each task's probe sentence (its example) and the right output, forced so maps keep their shape
PROBES = {
    "reverse": ("happy king red ship blue sea", "sea blue ship red king happy"),
    "dates": ("the twenty-first of November 2026", "2026-11-21"),
    "sov": ("the old farmers feed a small black cat", "gabrin vesun le miro nero piki un nutran"),
}


def probe_tokens(task: str) -> int:
    """Most tokens of the probe's greedy output (its reference's words + 4): the Watch it learn
    page reserves the room of the longest one, so its maps stay put as the output changes."""
    return len(PROBES[task][1].split()) + 4


@dataclass(frozen=True)
class LiveSettings:
    """Optimisation of a live run: Adam with section 5.3's warmup schedule, sized for seconds."""

    batch_size: int = 64
    warmup: int = 100  # section 5.3's warmup_steps, for a run of a few hundred steps
    lr_factor: float = 1.0  # multiplies section 5.3's rate
    label_smoothing: float = 0.1  # section 5.4
    report_every: int = 20  # steps between two on_step calls


@dataclass(frozen=True)
class LiveStep:
    """What a run reports every few steps.

    Attributes:
        step: updates done; seconds: training time so far (reports excluded).
        loss: mean label-smoothed loss of the steps since the previous report.
        exact_match: share of the fixed held-out sample translated exactly (greedy).
        trace: the probe sentence teacher-forced with its reference (maps keep their shape).
        output: the probe's greedy output now.
    """

    step: int
    seconds: float
    loss: float
    exact_match: float
    trace: Trace
    output: str


def _config(vocab: WordVocab, size: str, scale_scores: bool) -> TransformerConfig:
    if size not in SIZES:
        raise ValueError(f"size={size!r}: choose one of {', '.join(SIZES)}.")
    return TransformerConfig(
        vocab_size=len(vocab), dropout=0.0, max_len=64, scale_scores=scale_scores, **SIZES[size]
    )


def _seeded(cfg: TransformerConfig, seed: int) -> Transformer:
    """``Transformer(cfg)`` initialised from a generator of its own (no global RNG, which other
    threads share): Xavier matrices, zero biases, the tied embedding at N(0, 1/d_model)."""
    module, gen = Transformer(cfg), torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p, generator=gen)
            elif name.endswith("bias") and ".norm" not in name:
                p.zero_()
        if cfg.tie_embeddings:
            nn.init.normal_(module.src_embed.weight, std=cfg.d_model**-0.5, generator=gen)
    return module


class LiveRun:
    """One model being trained: ``step()`` makes one update, ``report()`` measures it."""

    def __init__(
        self,
        task: str,
        seed: int = 0,
        scale_scores: bool = True,
        size: str = "tiny",
        settings: LiveSettings = LiveSettings(),
        device: torch.device | None = None,
    ) -> None:
        if task not in TASKS:
            raise ValueError(f"task={task!r}: choose one of {', '.join(TASKS)}.")
        self.task, self.settings = TASKS[task], settings
        self.vocab = WordVocab.build(self.task.lexicon, self.task.detok)
        cfg = _config(self.vocab, size, scale_scores)
        dev = device if device is not None else default_device()
        self.module = _seeded(cfg, seed).to(dev).train()
        self.opt = torch.optim.Adam(self.module.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
        rate = settings.lr_factor * cfg.d_model**-0.5
        self.sched = torch.optim.lr_scheduler.LambdaLR(
            self.opt, lambda s: rate * min((s + 1) ** -0.5, (s + 1) * settings.warmup**-1.5)
        )
        self.data = pairs(self.task, 20_000, seed, "train")
        self.held_out = pairs(self.task, N_HELD_OUT, seed + 1, "held_out")
        self.rng = random.Random(seed)
        self.step_count, self.seconds, self._losses = 0, 0.0, []
        suffix = "" if scale_scores else "-unscaled"
        self.model = PaperModel(self._spec(f"{PREFIX}{task}{suffix}"), dev, self.module, self.vocab)

    def _spec(self, name: str) -> ModelSpec:
        scale = "with" if self.module.cfg.scale_scores else "without"
        return ModelSpec(
            name=name,
            family="paper",
            description=f"Trained live on this server ({scale} 1/√d_k). {self.task.description}",
            example=self.task.example,
            shows=("encoder", "decoder", "cross"),
            positions="sinusoidal",
            path=Path("."),
            task=self.task.name,
            patching=self.task.patching,
        )

    @property
    def variant(self) -> str:
        """``scaled`` or ``unscaled``: the folder of this run's checkpoints."""
        return "scaled" if self.module.cfg.scale_scores else "unscaled"

    def checkpoint_meta(self) -> dict:
        """What a checkpoint's ``meta.json`` records (``training.checkpoints``)."""
        return {
            "name": self.model.name,
            "task": self.task.name,
            "description": self.model.spec.description,
            "example": self.task.example,
            **self.task.meta_examples(),
            "config": self.module.cfg.to_dict(),
            "seconds": round(self.seconds, 2),
            "variant": self.variant,
        }

    def step(self) -> float:
        """One teacher-forced Adam update on a fresh batch; returns its loss."""
        start = time.perf_counter()
        vocab, dev = self.vocab, self.model.device
        chunk = self.rng.sample(self.data, self.settings.batch_size)
        src = pad_batch([vocab.encode(s) for s, _ in chunk], vocab.pad_id, dev)
        tgt = pad_batch([[vocab.bos_id, *vocab.encode(t)] for _, t in chunk], vocab.pad_id, dev)
        logits = self.module(src, tgt[:, :-1], source_mask(src, vocab.pad_id))  # (B, T-1, V)
        loss = F.cross_entropy(
            logits.reshape(-1, logits.shape[-1]),
            tgt[:, 1:].reshape(-1),
            ignore_index=vocab.pad_id,
            label_smoothing=self.settings.label_smoothing,
        )
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        self.sched.step()
        self.step_count += 1
        self._losses.append(loss.item())  # one transfer to the CPU per step
        self.seconds += time.perf_counter() - start
        return self._losses[-1]

    @torch.no_grad()
    def report(self) -> LiveStep:
        """Loss since the last report, held-out exact match and the probe's trace (eval mode)."""
        probe, reference = PROBES[self.task.name]
        self.module.eval()
        try:
            trace = self.model.trace(probe, reference).validate()
            output = greedy_text(self.model, probe, probe_tokens(self.task.name))
            match = exact_match(self.model, self.held_out)
        finally:
            self.module.train()
        loss = float(np.mean(self._losses)) if self._losses else math.nan
        self._losses = []
        return LiveStep(self.step_count, self.seconds, loss, match, trace, output)

    def finish(self) -> PaperModel:
        """The trained model in eval mode, offered by ``load_model`` under its ``live:`` name."""
        self.module.eval()
        offer_memory_model(self.model)
        return self.model


@contextlib.contextmanager
def torch_threads(threads: int) -> Iterator[None]:
    """Run torch in this thread with ``threads`` intra-op threads, leaving other threads alone.

    ``torch.set_num_threads`` sets the calling thread's OpenMP and MKL counts (per thread) and a
    process-wide value that threads started later adopt; a short helper thread puts that value
    back at once, so Streamlit's script threads keep the server's count while this one trains.
    """
    if threads < 1:
        raise ValueError(f"threads={threads}: use at least 1 training thread.")
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    restorer = threading.Thread(target=torch.set_num_threads, args=(before,))
    restorer.start()
    restorer.join()
    try:
        yield
    finally:
        torch.set_num_threads(before)


def check_arguments(task: str, seconds: float, threads: int, size: str) -> float:
    """The run's time limit in seconds, or a ValueError that says what to choose instead."""
    if task not in TASKS:
        raise ValueError(f"task={task!r}: choose one of {', '.join(TASKS)}.")
    if size not in SIZES:
        raise ValueError(f"size={size!r}: choose one of {', '.join(SIZES)}.")
    if threads < 1:
        raise ValueError(f"threads={threads}: use at least 1 training thread.")
    if not 0 < seconds <= MAX_SECONDS:
        raise ValueError(
            f"seconds={seconds}: a live run lasts more than 0 and at most "
            f"{MAX_SECONDS} s; train longer with `python -m "
            "viz_transformer.training.tasks.train`."
        )
    return float(seconds)


def train_live(
    task: str = "reverse",
    seconds: float = 60,
    threads: int = 1,
    seed: int = 0,
    scale_scores: bool = True,
    size: str = "tiny",
    on_step: Callable[[LiveStep], None] | None = None,
    stop: StopToken | None = None,
    max_steps: int | None = None,
    save_to: Path | None = None,
    save_every: int = EVERY,
) -> PaperModel:
    """Train the paper Transformer on ``task`` from scratch in this thread.

    Args:
        task: one of ``training.tasks.catalog.TASKS`` (reverse, dates, sov).
        seconds: training time (reports excluded), at most ``MAX_SECONDS``.
        threads: torch threads of this run (the rest of the process keeps its own count).
        seed: initialisation, batches and the held-out sample.
        scale_scores: divide q.k by sqrt(d_k) (Eq. 1); False trains the unscaled variant.
        size: ``"tiny"`` or ``"small"`` (``SIZES``).
        on_step: called with a ``LiveStep`` every ``report_every`` steps and at the end.
        stop: set it (from any thread) to end the run after the current step.
        max_steps: end after this many updates (deterministic runs for tests).
        save_to: a run folder: checkpoints go to ``save_to/<scaled|unscaled>/step-NNNNNN``
            every ``save_every`` steps (thinned past ``KEEP``) and at the end, each loadable
            as ``paper:<folder>``; None saves nothing.

    Returns:
        the model, named ``live:<task>`` (``live:<task>-unscaled`` without the scale), which
        ``vt.load_model`` and every page find until a new live run replaces it.
    """
    limit, stop = check_arguments(task, seconds, threads, size), stop or StopToken()
    with torch_threads(threads):
        run = LiveRun(task, seed, scale_scores, size)
        forget_memory_models(PREFIX)
        every = run.settings.report_every
        saver = None if save_to is None else CheckpointSaver(save_to / run.variant, save_every)
        while run.seconds < limit and not stop.is_set():
            if max_steps is not None and run.step_count >= max_steps:
                break
            run.step()
            if saver is not None:
                saver.maybe_save(run.step_count, run.module, run.vocab, run.checkpoint_meta())
            if on_step is not None and run.step_count % every == 0:
                on_step(run.report())
        if on_step is not None and run.step_count % every:
            on_step(run.report())
        if saver is not None:
            saver.final(run.step_count, run.module, run.vocab, run.checkpoint_meta())
        return run.finish()
