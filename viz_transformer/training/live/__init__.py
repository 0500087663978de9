"""Live training: the paper's Transformer learns a built-in task from scratch in seconds.

``train`` runs one model in the calling thread (``vt.train_live``), ``runs`` shares one run per
server between every session (the *Watch it learn* page), ``metrics`` measures it (held-out exact
match, anti-diagonal attention). Run it from the app's *Watch it learn* page, or::

    import viz_transformer as vt
    model = vt.train_live("reverse", seconds=10, on_step=lambda s: print(s.step, s.loss))
"""
