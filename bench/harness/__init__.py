"""What the benchmark scripts share, apart from the scripts that measure; a script imports these,
never another script, and nothing here imports a script. ``common`` (the environment, timing, the
report in benchmarks.md), ``models`` (the benchmark models and texts), ``llama`` (the
Llama-3-8B-size folder and its rows), ``memory`` (one operation's memory in a process of its own),
``page_memory`` (one page's memory, seconds and largest update in a process of its own), ``rss``
(the resident set both read: the peak reset, one run measured above it), ``bergamot_timing``,
``capture_cases``, ``retrieval_sweeps`` (what one script times, kept apart), ``synthetic``
(attention and tokens of any length), ``counting`` (calls during a run), ``notebook_traces`` (the
notebook benchmark's traces), ``ws_classroom`` and ``lesson_ws`` (a classroom of websocket sessions
and its lesson mode), ``tab_classroom`` (a classroom of browser tabs), ``server`` (the app served
for a run: one ``streamlit run``, ``serve``'s replicas behind HAProxy, a fresh class-store
database), ``server_cpu`` (CPU seconds of a server's processes), ``browser`` (headless Chromium, a
figure drawn by plotly.js, a page's first chart), ``ws`` (a Streamlit session over websockets, no
browser) and ``stats`` (the nearest-rank percentile and peak memory)."""
