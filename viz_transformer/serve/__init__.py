"""Serve a classroom: several ``streamlit run app.py`` replicas behind HAProxy with sticky
sessions (``python -m viz_transformer serve``). A process supervisor: it imports no page code."""
