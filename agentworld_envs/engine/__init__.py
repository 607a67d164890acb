"""The engine: one environment at run time, and the spec language it runs.

A spec (:mod:`.spec`) becomes a golden SQLite state (:mod:`.state`, :mod:`.datagen`,
:mod:`.textgen`); tools (:mod:`.tools`, :mod:`.argcheck`, :mod:`.sqlcheck`) act on it through text
actions (:mod:`.actions`, :mod:`.spaces`, :mod:`.episode`); ``submit`` (:mod:`.submission`,
:mod:`.answers`) ends the episode and the task's checks (:mod:`.verifiers`,
:mod:`.program_checks`, :mod:`.statediff`) give the reward. :mod:`.language` and :mod:`.rules`
are the English and business rules shared with synthesis, tasks and lint. Imports only ``util``.
"""
