"""The benchmarks' shared harness, apart from the scripts that measure: ``server`` (the app
served for a run: one ``streamlit run``, ``serve``'s replicas behind HAProxy, a fresh class-store
database), ``server_cpu`` (CPU seconds of a server's processes), ``browser`` (headless Chromium,
a figure drawn by plotly.js, a page's first chart), ``ws`` (a Streamlit session over websockets,
no browser) and ``stats`` (the nearest-rank percentile and peak memory). A script imports these,
never another script."""
