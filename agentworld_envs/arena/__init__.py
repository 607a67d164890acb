"""The arena: held-out evaluation (:mod:`.evaluation`), diagnosis of weaknesses
(:mod:`.diagnosis`), tasks targeted at them (:mod:`.targeting`) and the ``eval`` / ``diagnose``
commands (:mod:`.cli`). The trainer's policies plug in through entry points only.
"""
