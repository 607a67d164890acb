"""The environments to other programs: MCP (:mod:`.mcp_server`), TRL (:mod:`.trl_adapter`),
env workers in processes or on Ray (:mod:`.workers`), datasets of tasks and trajectories
(:mod:`.export`) and the framework adapters in :mod:`.integrations`.
"""
