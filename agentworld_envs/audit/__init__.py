"""Registry-wide checks: build many envs and summarise them (:mod:`.build_all`,
:mod:`.task_summary`), lint specs and tasks (:mod:`.lint`), validate envs by playing their
reference solutions (:mod:`.validation`), measure speed and memory (:mod:`.bench`).
"""
