"""Tools to and from elsewhere: a chart as one tool, the tools an MCP server lists, and trackway
tools served over MCP.

Imports: ``define`` and ``results`` (and the engine).
"""
