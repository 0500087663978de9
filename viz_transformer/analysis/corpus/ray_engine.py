"""The Ray engine of ``vt.corpus_stats``: the same shards computed by actors on a Ray cluster.

Each actor loads the model once by name and runs ``shard_rows`` on whole shards; the driver
writes every shard as it returns (workers need no shared disk). ``ray.init()`` starts a local
cluster unless ``RAY_ADDRESS`` names one. Ray is optional (``requirements-cluster.txt``).
"""

from __future__ import annotations

import os
from typing import Any

import pandas as pd

from viz_transformer.analysis.corpus.plan import ShardWork
from viz_transformer.analysis.corpus.rows import shard_rows
from viz_transformer.models.base import LoadedModel
from viz_transformer.models.registry import available_models, model_info


class ShardWorker:
    """One Ray actor: a model loaded once, computing the rows of whole shards on one thread."""

    def __init__(self, model_name: str) -> None:
        import torch

        from viz_transformer.models.registry import load_model

        torch.set_num_threads(1)  # one core per actor: Ray schedules the cores
        self.model = load_model(model_name, "cpu")

    def rows(self, texts: list[str], ids: list[int], batch_size: int) -> pd.DataFrame:
        return shard_rows(self.model, texts, ids, batch_size)


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ValueError(
            "engine='ray' needs Ray: `pip install -r requirements-cluster.txt`, or use "
            "engine='local'."
        ) from None
    return ray


class RayEngine:
    """Whole shards on Ray actors, one core each; a Stop is seen before each shard is sent."""

    def run(self, work: ShardWork) -> None:
        """Compute the shards ``work.plan.todo`` on Ray actors and write each as it arrives
        (``engines.Engine.run``).

        Raises:
            ValueError: Ray is not installed, or the model is not one a worker can load by name.
        """
        ray = _start_ray(work.model)
        plan = work.plan
        n_actors = max(1, min(len(plan.todo), int(ray.available_resources().get("CPU", 1))))
        actor = ray.remote(num_cpus=1)(ShardWorker)
        pool = [actor.remote(work.model.name) for _ in range(n_actors)]
        add = plan.tally(work.report)
        queue, running = list(plan.todo), {}
        try:
            while queue or running:
                while queue and len(running) < n_actors and not work.stopped():
                    shard = queue.pop(0)
                    free = _idle(pool, running)
                    ref = free.rows.remote(work.texts(shard), plan.ids(shard), work.batch_size)
                    running[ref] = (shard, free, len(plan.ids(shard)))
                if not running:
                    return
                (ready,), _ = ray.wait(list(running), num_returns=1)
                shard, _actor, n = running.pop(ready)
                work.store.write(shard, ray.get(ready))
                add(n)
        finally:
            for a in pool:
                ray.kill(a)


def _start_ray(model: LoadedModel) -> Any:
    """Ray, initialised (``RAY_ADDRESS`` names a cluster), once the model is one it can load."""
    ray = _import_ray()
    try:
        model_info(model.name)
    except ValueError:
        raise ValueError(
            f"engine='ray' loads the model by name in each worker; {model.name!r} is not one of "
            f"{', '.join(available_models())}."
        ) from None
    if not ray.is_initialized():
        ray.init(
            address=os.environ.get("RAY_ADDRESS"), include_dashboard=False, log_to_driver=False
        )
    return ray


def _idle(pool: list[Any], running: dict[Any, tuple[int, Any, int]]) -> Any:
    """An actor with no shard in flight."""
    busy = {id(a) for _, a, _ in running.values()}
    return next(a for a in pool if id(a) not in busy)
