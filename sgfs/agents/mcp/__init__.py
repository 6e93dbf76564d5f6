"""The paper's read-only filesystem tools over ``MountSource``, and ``sgfs mcp`` serving them over MCP.

``sgfs.agents.mcp.tools`` is framework-free (the Inspect task and the benchmark use it too); only
``sgfs.agents.mcp.server`` imports the MCP SDK (the ``mcp`` extra).
"""
