"""Head statistics over a corpus (``vt.corpus_stats``), one module per part.

- ``stats``: the per-sentence statistics of a batch's patterns, and their per-head summary;
- ``rows``: ``shard_rows``, the one function every engine calls (sentences in, rows out);
- ``shards``: the folder of Parquet shards and its manifest, written atomically;
- ``plan``: ``ShardPlan``, each shard's sentences, the shards left and where a resumed run starts;
- ``engines``: the ``Engine`` interface (where batches run) and the local engine;
- ``ray_engine``: the same shards computed by Ray actors;
- ``api``: ``vt.corpus_stats``, ``compute``, ``read_corpus_stats``, the cache folder;
- ``tables``: what the page draws from the tables (grids, ranked heads, a head's top sentences);
- ``qk``: the joint query/key view of one head over a sample of sentences.
"""
